"""Self-consistency tests of the dense reference implementation (tests/reference.py).

These tests deliberately import only numpy, scipy, hypothesis and ``reference``
(never the engine), so they stay meaningful while ``gpexplorer`` is in flux.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import scipy.stats
from hypothesis import given, settings
from hypothesis import strategies as st

from reference import (
    KERNELS,
    check_grad_close,
    numerical_grad,
    ref_dtc,
    ref_exact,
    ref_fitc,
    ref_gh_split,
    ref_kernel,
    ref_predict_exact,
    ref_predict_sparse,
    ref_product,
    ref_qff,
    ref_qu,
    ref_sum,
    ref_upper_bound,
    ref_vfe,
)

TERM_KEYS = ("constant", "complexity", "data_fit", "trace")


# --------------------------------------------------------------------------
# An independent, one-pair-at-a-time scalar implementation of the kernels
# --------------------------------------------------------------------------
def _per_dim(value, D):
    arr = np.asarray(value, dtype=float)
    if arr.ndim == 0:
        return [float(arr)] * D
    assert arr.shape == (D,)
    return [float(v) for v in arr]


def scalar_k(name, x, xp, params):
    """k(x, x') for ONE pair of points, using plain Python floats and `math`."""
    D = len(x)
    if name == "linear":
        v = _per_dim(params.get("variance", 1.0), D)
        total = 0.0
        for d in range(D):
            total += v[d] * float(x[d]) * float(xp[d])
        return total

    s = float(params.get("variance", 1.0))
    ell = _per_dim(params.get("lengthscale", 1.0), D)

    if name == "periodic":
        per = _per_dim(params.get("period", 1.0), D)
        acc = 0.0
        for d in range(D):
            acc += math.sin(math.pi * (float(x[d]) - float(xp[d])) / per[d]) ** 2 / ell[d] ** 2
        return s * math.exp(-2.0 * acc)

    r2 = 0.0
    for d in range(D):
        r2 += ((float(x[d]) - float(xp[d])) / ell[d]) ** 2
    r = math.sqrt(r2)
    if name == "se":
        return s * math.exp(-0.5 * r2)
    if name == "matern12":
        return s * math.exp(-r)
    if name == "matern32":
        return s * (1.0 + math.sqrt(3.0) * r) * math.exp(-math.sqrt(3.0) * r)
    if name == "matern52":
        return s * (1.0 + math.sqrt(5.0) * r + 5.0 * r2 / 3.0) * math.exp(-math.sqrt(5.0) * r)
    if name == "rq":
        a = float(params["alpha"])
        return s * (1.0 + r2 / (2.0 * a)) ** (-a)
    raise ValueError(name)


def scalar_loop_matrix(name, X1, X2, params):
    K = np.empty((X1.shape[0], X2.shape[0]))
    for i in range(X1.shape[0]):
        for j in range(X2.shape[0]):
            K[i, j] = scalar_k(name, X1[i], X2[j], params)
    return K


# (name, params, D)
KERNEL_CASES = [
    ("se", {"variance": 1.3, "lengthscale": 0.7}, 1),
    ("se", {"variance": 0.8, "lengthscale": [0.5, 1.7]}, 2),
    ("matern12", {"variance": 1.1, "lengthscale": 0.9}, 2),
    ("matern12", {"variance": 0.6, "lengthscale": [0.4, 1.0, 2.5]}, 3),
    ("matern32", {"variance": 2.0, "lengthscale": 1.2}, 1),
    ("matern32", {"variance": 1.0, "lengthscale": [0.6, 2.0]}, 2),
    ("matern52", {"variance": 0.7, "lengthscale": 0.5}, 3),
    ("matern52", {"variance": 1.5, "lengthscale": [1.4, 0.8]}, 2),
    ("rq", {"variance": 1.2, "lengthscale": 0.8, "alpha": 0.7}, 1),
    ("rq", {"variance": 0.9, "lengthscale": [0.5, 1.5], "alpha": 3.0}, 2),
    ("periodic", {"variance": 1.4, "lengthscale": 0.9, "period": 1.3}, 1),
    ("periodic", {"variance": 1.0, "lengthscale": [0.7, 1.6], "period": 2.1}, 2),
    ("linear", {"variance": 0.8}, 1),
    ("linear", {"variance": [0.5, 1.5, 2.0]}, 3),
]
CASE_IDS = [f"{n}-D{D}-{'ard' if np.ndim(p.get('lengthscale', p.get('variance'))) else 'iso'}"
            for n, p, D in KERNEL_CASES]


def _inputs(N, D, seed):
    rng = np.random.default_rng(seed)
    return rng.uniform(-2.0, 2.0, size=(N, D))


# --------------------------------------------------------------------------
# Kernels
# --------------------------------------------------------------------------
def test_all_kernels_covered():
    assert {c[0] for c in KERNEL_CASES} == set(KERNELS)


@pytest.mark.parametrize("name,params,D", KERNEL_CASES, ids=CASE_IDS)
def test_kernel_symmetric_psd(name, params, D):
    X = _inputs(25, D, seed=1)
    K = ref_kernel(name, X, X, **params)
    assert K.shape == (25, 25)
    np.testing.assert_allclose(K, K.T, rtol=0, atol=1e-14 * np.abs(K).max())
    eig = np.linalg.eigvalsh(0.5 * (K + K.T))
    assert eig.min() > -1e-8 * eig.max(), (eig.min(), eig.max())


@pytest.mark.parametrize("name,params,D", KERNEL_CASES, ids=CASE_IDS)
def test_kernel_matches_scalar_loop(name, params, D):
    X = _inputs(12, D, seed=2)
    X2 = _inputs(7, D, seed=3)
    np.testing.assert_allclose(ref_kernel(name, X, X, **params),
                               scalar_loop_matrix(name, X, X, params), rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(ref_kernel(name, X, X2, **params),
                               scalar_loop_matrix(name, X, X2, params), rtol=1e-12, atol=1e-14)


def test_stationary_kernel_diagonal_is_variance():
    X = _inputs(10, 2, seed=4)
    for name in ("se", "matern12", "matern32", "matern52", "rq", "periodic"):
        extra = {"alpha": 2.0} if name == "rq" else {"period": 1.5} if name == "periodic" else {}
        K = ref_kernel(name, X, X, variance=1.7, lengthscale=[0.6, 1.1], **extra)
        np.testing.assert_allclose(np.diag(K), 1.7, rtol=1e-15)


def test_one_dimensional_inputs_are_columns():
    x = np.linspace(-1, 1, 6)
    np.testing.assert_array_equal(ref_kernel("se", x, x, variance=1.0, lengthscale=0.5),
                                  ref_kernel("se", x[:, None], x[:, None], variance=1.0, lengthscale=0.5))


def test_unknown_kernel_and_parameter_rejected():
    X = _inputs(3, 1, seed=0)
    with pytest.raises(ValueError):
        ref_kernel("nope", X, X)
    with pytest.raises(TypeError):
        ref_kernel("se", X, X, lenghtscale=1.0)


def test_sum_and_product_match_scalar_loop():
    X = _inputs(9, 2, seed=5)
    X2 = _inputs(4, 2, seed=6)
    specs = [
        ("se", {"variance": 1.2, "lengthscale": [0.5, 1.0]}),
        ("periodic", {"variance": 0.7, "lengthscale": 1.1, "period": 1.9}),
        ("linear", {"variance": [0.3, 0.9]}),
    ]
    loops = [scalar_loop_matrix(n, X, X2, p) for n, p in specs]
    np.testing.assert_allclose(ref_sum(specs, X, X2), loops[0] + loops[1] + loops[2], rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(ref_product(specs, X, X2), loops[0] * loops[1] * loops[2], rtol=1e-12, atol=1e-14)
    Ks = ref_sum(specs, X, X)
    Kp = ref_product(specs, X, X)
    for K in (Ks, Kp):
        eig = np.linalg.eigvalsh(0.5 * (K + K.T))
        assert eig.min() > -1e-8 * eig.max()


# --------------------------------------------------------------------------
# Objectives
# --------------------------------------------------------------------------
def _problem(name, params, D, N=15, M=None, seed=7, jitter=1e-6, Z_is_X=False):
    rng = np.random.default_rng(seed)
    X = rng.uniform(-2.0, 2.0, size=(N, D))
    Z = X.copy() if Z_is_X else rng.uniform(-2.0, 2.0, size=(M, D))
    y = np.sin(2.0 * X.sum(axis=1)) + 0.3 * rng.normal(size=N)
    Kff = ref_kernel(name, X, X, **params)
    Kuf = ref_kernel(name, Z, X, **params)
    Kuu = ref_kernel(name, Z, Z, **params) + jitter * np.eye(Z.shape[0])
    return X, Z, y, Kff, Kuf, Kuu


def _rel_close(a, b, rtol):
    return abs(a - b) <= rtol * max(1.0, abs(b))


@pytest.mark.parametrize("name,params,D", KERNEL_CASES, ids=CASE_IDS)
def test_sparse_objectives_recover_exact_when_Z_equals_X(name, params, D):
    noise = 0.1
    X, Z, y, Kff, Kuf, Kuu = _problem(name, params, D, N=20, jitter=1e-10, Z_is_X=True)
    ex = ref_exact(Kff, y, noise)["neg_lml"]
    for fn in (ref_dtc, ref_fitc, ref_vfe):
        val = fn(Kff, Kuf, Kuu, y, noise)["neg_lml"]
        assert _rel_close(val, ex, 1e-5), (fn.__name__, val, ex)
    ub = ref_upper_bound(Kff, Kuf, Kuu, y, noise)
    assert _rel_close(ub, -ex, 1e-5), (ub, -ex)


@pytest.mark.parametrize("name,params,D", KERNEL_CASES[::3], ids=CASE_IDS[::3])
def test_objectives_match_scipy_logpdf(name, params, D):
    """Independent check of the Gaussian log-density arithmetic."""
    noise = 0.3
    X, Z, y, Kff, Kuf, Kuu = _problem(name, params, D, N=12, M=5)
    N = len(y)
    Qff = Kuf.T @ np.linalg.solve(Kuu, Kuf)
    mvn = scipy.stats.multivariate_normal
    exp_exact = -mvn(np.zeros(N), Kff + noise * np.eye(N)).logpdf(y)
    exp_dtc = -mvn(np.zeros(N), Qff + noise * np.eye(N)).logpdf(y)
    exp_fitc = -mvn(np.zeros(N), Qff + np.diag(np.diag(Kff - Qff)) + noise * np.eye(N)).logpdf(y)
    exp_vfe = exp_dtc + np.trace(Kff - Qff) / (2 * noise)
    assert ref_exact(Kff, y, noise)["neg_lml"] == pytest.approx(exp_exact, rel=1e-10)
    assert ref_dtc(Kff, Kuf, Kuu, y, noise)["neg_lml"] == pytest.approx(exp_dtc, rel=1e-10)
    assert ref_fitc(Kff, Kuf, Kuu, y, noise)["neg_lml"] == pytest.approx(exp_fitc, rel=1e-10)
    assert ref_vfe(Kff, Kuf, Kuu, y, noise)["neg_lml"] == pytest.approx(exp_vfe, rel=1e-10)
    np.testing.assert_allclose(ref_qff(Kuf, Kuu), Qff, rtol=1e-12, atol=1e-14)
    # individual terms
    d = ref_vfe(Kff, Kuf, Kuu, y, noise)
    assert d["constant"] == pytest.approx(0.5 * N * math.log(2 * math.pi), rel=1e-14)
    assert d["trace"] == pytest.approx(np.trace(Kff - Qff) / (2 * noise), rel=1e-12)
    assert ref_exact(Kff, y, noise)["trace"] == 0.0
    assert ref_dtc(Kff, Kuf, Kuu, y, noise)["trace"] == 0.0
    assert ref_fitc(Kff, Kuf, Kuu, y, noise)["trace"] == 0.0


@st.composite
def problems(draw):
    N = draw(st.integers(5, 30))
    M = draw(st.integers(1, N))
    D = draw(st.integers(1, 3))
    name = draw(st.sampled_from(sorted(KERNELS)))
    ard = draw(st.booleans())
    unit = st.floats(0.3, 3.0)
    if name == "linear":
        v = draw(st.lists(st.floats(0.3, 2.0), min_size=D, max_size=D)) if ard else draw(st.floats(0.3, 2.0))
        params = {"variance": v}
    else:
        ls = draw(st.lists(unit, min_size=D, max_size=D)) if ard else draw(unit)
        params = {"variance": draw(st.floats(0.5, 2.0)), "lengthscale": ls}
        if name == "rq":
            params["alpha"] = draw(st.floats(0.5, 5.0))
        if name == "periodic":
            params["period"] = draw(st.floats(0.5, 3.0))
    noise = draw(st.floats(0.01, 1.0))
    z_from_x = draw(st.booleans())
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    X = rng.uniform(-2.0, 2.0, size=(N, D))
    Z = X[rng.choice(N, size=M, replace=False)] if z_from_x else rng.uniform(-2.0, 2.0, size=(M, D))
    y = rng.normal(size=N)
    Xs = rng.uniform(-2.5, 2.5, size=(6, D))
    Kff = ref_kernel(name, X, X, **params)
    Kuf = ref_kernel(name, Z, X, **params)
    Kuu = ref_kernel(name, Z, Z, **params) + 1e-6 * np.eye(M)
    return dict(name=name, params=params, X=X, Z=Z, Xs=Xs, y=y, noise=noise,
                Kff=Kff, Kuf=Kuf, Kuu=Kuu)


@settings(max_examples=25, deadline=None)
@given(problems())
def test_bound_ordering_and_term_sums(p):
    Kff, Kuf, Kuu, y, noise = p["Kff"], p["Kuf"], p["Kuu"], p["y"], p["noise"]
    ex = ref_exact(Kff, y, noise)
    dtc = ref_dtc(Kff, Kuf, Kuu, y, noise)
    fitc = ref_fitc(Kff, Kuf, Kuu, y, noise)
    vfe = ref_vfe(Kff, Kuf, Kuu, y, noise)
    ub = ref_upper_bound(Kff, Kuf, Kuu, y, noise)

    for d in (ex, dtc, fitc, vfe):
        assert set(d) == set(TERM_KEYS) | {"neg_lml"}
        total = sum(d[k] for k in TERM_KEYS)
        assert total == pytest.approx(d["neg_lml"], rel=1e-12, abs=1e-12)
        assert all(np.isfinite(d[k]) for k in d)

    lml = -ex["neg_lml"]
    tol = 1e-7 * (1.0 + abs(lml))
    assert -vfe["neg_lml"] <= lml + tol, (-vfe["neg_lml"], lml)
    assert lml <= ub + tol, (lml, ub)
    assert -fitc["neg_lml"] >= -vfe["neg_lml"] - tol, (-fitc["neg_lml"], -vfe["neg_lml"])
    # VFE = DTC minus a non-negative trace penalty
    assert vfe["trace"] >= -tol
    assert vfe["neg_lml"] == pytest.approx(dtc["neg_lml"] + vfe["trace"], rel=1e-12, abs=1e-12)


@settings(max_examples=25, deadline=None)
@given(problems())
def test_gh_split_and_sor_posterior(p):
    name, params, X, Z, Xs = p["name"], p["params"], p["X"], p["Z"], p["Xs"]
    Kff, Kuf, Kuu, y, noise = p["Kff"], p["Kuf"], p["Kuu"], p["y"], p["noise"]
    N = len(y)
    Kss = ref_kernel(name, Xs, Xs, **params)
    Ksu = ref_kernel(name, Xs, Z, **params)
    Qff = ref_qff(Kuf, Kuu)
    for g in (np.full(N, noise), np.diag(Kff - Qff) + noise):
        mu, Sigma = ref_qu(Kuf, Kuu, y, g)
        np.testing.assert_allclose(Sigma, Sigma.T, atol=1e-12 * np.abs(Sigma).max())
        mean, cov = ref_predict_sparse(Kss, Ksu, Kuu, mu, Sigma)
        (g_mean, g_cov), h_cov = ref_gh_split(Kss, Ksu, Kuu, mu, Sigma)
        scale = max(1.0, np.abs(Kss).max())
        np.testing.assert_allclose(g_mean, mean, rtol=1e-10, atol=1e-10 * scale)
        np.testing.assert_allclose(g_cov + h_cov, cov, rtol=0, atol=1e-8 * scale)
        _, det_cov = ref_predict_sparse(Kss, Ksu, Kuu, mu, Sigma, conditional="deterministic")
        np.testing.assert_allclose(det_cov, g_cov, rtol=0, atol=1e-10 * scale)
        # h is the prior conditional: PSD (up to jitter effects)
        assert np.linalg.eigvalsh(0.5 * (h_cov + h_cov.T)).min() > -1e-6 * scale

    # SoR / DTC q(u) pushed through the deterministic conditional at the training
    # inputs is exact GP regression with the degenerate kernel Qff.
    mu, Sigma = ref_qu(Kuf, Kuu, y, np.full(N, noise))
    m_tr, c_tr = ref_predict_sparse(None, Kuf.T, Kuu, mu, Sigma, conditional="deterministic")
    C = Qff + noise * np.eye(N)
    scale = max(1.0, np.abs(Kff).max())
    np.testing.assert_allclose(m_tr, Qff @ np.linalg.solve(C, y), rtol=0,
                               atol=1e-6 * scale * max(1.0, np.abs(y).max()))
    np.testing.assert_allclose(c_tr, Qff - Qff @ np.linalg.solve(C, Qff), rtol=0, atol=1e-6 * scale)


@pytest.mark.parametrize("name,params,D", KERNEL_CASES, ids=CASE_IDS)
@pytest.mark.parametrize("method", ["vfe", "fitc"])
def test_sparse_prediction_recovers_exact_when_Z_equals_X(name, params, D, method):
    noise = 0.1
    X, Z, y, Kff, Kuf, Kuu = _problem(name, params, D, N=20, jitter=1e-10, Z_is_X=True)
    Xs = _inputs(8, D, seed=11) * 1.2
    Kss = ref_kernel(name, Xs, Xs, **params)
    Ksu = ref_kernel(name, Xs, Z, **params)
    if method == "vfe":
        g = np.full(len(y), noise)
    else:
        g = np.diag(Kff - ref_qff(Kuf, Kuu)) + noise
    mu, Sigma = ref_qu(Kuf, Kuu, y, g)
    mean, cov = ref_predict_sparse(Kss, Ksu, Kuu, mu, Sigma)
    m_ex, c_ex = ref_predict_exact(Kss, Ksu, Kff, y, noise)
    scale = np.abs(Kss).max()
    np.testing.assert_allclose(mean, m_ex, rtol=1e-5, atol=1e-5 * max(1.0, np.abs(m_ex).max()))
    np.testing.assert_allclose(cov, c_ex, rtol=1e-5, atol=1e-5 * scale)


def test_predict_exact_at_training_inputs_small_noise_interpolates():
    X = _inputs(10, 1, seed=12)
    y = np.cos(3 * X[:, 0])
    K = ref_kernel("se", X, X, variance=1.0, lengthscale=0.7)
    mean, cov = ref_predict_exact(K, K, K, y, 1e-9)
    np.testing.assert_allclose(mean, y, atol=1e-5)
    assert np.abs(np.diag(cov)).max() < 1e-5


def test_predict_sparse_rejects_bad_conditional():
    K = np.eye(2)
    with pytest.raises(ValueError):
        ref_predict_sparse(K, K, K, np.zeros(2), K, conditional="fitc")


# --------------------------------------------------------------------------
# Gradient checking helpers
# --------------------------------------------------------------------------
def test_numerical_grad_of_quadratic_is_exact():
    rng = np.random.default_rng(13)
    A = rng.normal(size=(6, 6))
    A = A @ A.T
    b = rng.normal(size=6)
    x = rng.normal(size=(2, 3)) * 3.0

    def f(z):
        v = z.reshape(-1)
        return 0.5 * v @ A @ v + b @ v + 4.0

    g = numerical_grad(f, x)
    assert g.shape == x.shape
    expected = (A @ x.reshape(-1) + b).reshape(x.shape)
    np.testing.assert_allclose(g, expected, rtol=1e-7, atol=1e-7)
    check_grad_close(expected, g)

    # 0-d input
    g0 = numerical_grad(lambda t: 3.0 * t**2 - t, 1.5)
    assert np.shape(g0) == ()
    assert float(g0) == pytest.approx(8.0, rel=1e-8)


def test_numerical_grad_does_not_mutate_input():
    x = np.array([1.0, -2.0, 0.5])
    x_copy = x.copy()
    numerical_grad(lambda z: float(np.sum(z**3)), x)
    np.testing.assert_array_equal(x, x_copy)


def test_check_grad_close_reports_worst_entry():
    a = np.array([[1.0, 2.0], [3.0, 4.0]])
    n = a.copy()
    n[1, 0] += 1e-3
    n[0, 1] += 1e-4
    with pytest.raises(AssertionError) as info:
        check_grad_close(a, n)
    msg = str(info.value)
    assert "(1, 0)" in msg and "analytic=3" in msg and "2/4" in msg
    with pytest.raises(AssertionError, match="shape"):
        check_grad_close(a, a[0])
    check_grad_close(a, a + 1e-9)
