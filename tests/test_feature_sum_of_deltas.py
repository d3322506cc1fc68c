"""Sums of deltas as inducing features (thesis eq. 4.14-4.19), with any kernel.

* Kuf and Kuu against a plain double-loop numpy reference (tests/reference.py kernels, nothing
  from gpexplorer) for SE, Matern, RQ, periodic, linear, a sum and a product, 1-D and 2-D ARD;
* C = 1 is inducing points (covariances, gradient contraction, objective and its gradient);
* the gradient contraction with the rank-one form of dL/dKuf, against the corrected matrix and
  finite differences, for stationary (passed through) and other kernels (applied first);
* the fixed first weight: rescaling a member's weights leaves every approximation unchanged;
* Kuu positive semi-definite and VFE <= exact <= upper bound for random draws (hypothesis);
* finite-difference gradients of every approximation and the upper bound (Z, w, kernel, noise)
  in 1-D and 2-D ARD (the generic registry tests add every registered kernel in 3-D);
* fit and predict, the variants the labs use, bad input;
* the kernel matrices remembered between objective and gradient: every change recomputes them,
  two kernels of the same shape never share them, copies and pickles leave them behind, threads
  sharing one feature get the serial answers.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import reference
from gpexplorer import covariances
from gpexplorer.inducing import SumOfDeltas
from gpexplorer.inducing import InducingPoints
from gpexplorer.kernels import Linear, Matern32, Matern52, Periodic, RationalQuadratic, SquaredExponential
from gpexplorer.sparse.regression import ExactGPR, SparseGPR

APPROXIMATIONS = ("sor", "dtc", "fitc", "vfe")
KERNELS = {"se": lambda D: SquaredExponential(1.2, 0.8 if D == 1 else np.array([0.7, 1.3])),
           "matern32": lambda D: Matern32(0.9, 1.1 if D == 1 else np.array([1.1, 0.6])),
           "matern52": lambda D: Matern52(1.3, 0.7),
           "rq": lambda D: RationalQuadratic(0.8, 0.9, 1.7),
           "periodic": lambda D: Periodic(1.0, 0.9 if D == 1 else np.array([0.9, 1.4]), 2.5),
           "linear": lambda D: Linear(0.6 if D == 1 else np.array([0.6, 0.3])),
           "sum": lambda D: SquaredExponential(1.0, 0.6) + Linear(0.3),
           "product": lambda D: Matern52(1.1, 1.2) * Periodic(1.0, 1.1, 2.0)}


def random_feature(rng, M, C, D):
    return SumOfDeltas(rng.uniform(-2, 2, (M, C, D)), np.hstack([np.ones((M, 1)), rng.uniform(-1.5, 1.5, (M, C - 1))]))


def data(D, N=25, seed=1):
    rng = np.random.default_rng(seed)
    X = rng.uniform(-2.5, 2.5, (N, D))
    return X, np.sin(2 * X.sum(axis=1)) + 0.2 * rng.normal(size=N)


@pytest.mark.parametrize("kname", sorted(KERNELS))
@pytest.mark.parametrize("D", [1, 2])
def test_covariances_match_a_double_loop(kname, D):
    rng = np.random.default_rng(0)
    f, k = random_feature(rng, 3, 4, D), KERNELS[kname](D)
    X = rng.uniform(-2, 2, (5, D))
    w, Z = f.weights, f.Z

    def k1(a, b):  # the numpy reference kernel at one pair of points
        return reference.ref_K(k, a[None], b[None])[0, 0]

    Kuu = np.array([[sum(w[i, c] * w[j, d] * k1(Z[i, c], Z[j, d]) for c in range(4) for d in range(4))
                     for j in range(3)] for i in range(3)])
    Kuf = np.array([[sum(w[m, c] * k1(Z[m, c], X[n]) for c in range(4)) for n in range(5)] for m in range(3)])
    np.testing.assert_allclose(covariances.Kuu(f, k), Kuu, rtol=1e-12)
    np.testing.assert_allclose(covariances.Kuf(f, k, X), Kuf, rtol=1e-12)


@pytest.mark.parametrize("kname", ["se", "linear", "sum"])
def test_one_delta_per_member_has_the_covariances_and_contraction_of_inducing_points(kname):
    rng = np.random.default_rng(3)
    Z, X, k = rng.uniform(-2, 2, (4, 2)), rng.uniform(-2, 2, (7, 2)), KERNELS[kname](2)
    f, p = SumOfDeltas(Z[:, None, :]), InducingPoints(Z)
    Kuu, Kuf = covariances.Kuu(f, k), covariances.Kuf(f, k, X)
    np.testing.assert_array_equal(Kuu, covariances.Kuu(p, k))
    np.testing.assert_array_equal(Kuf, covariances.Kuf(p, k, X))
    dKuu, dKuf, a, b = rng.normal(size=(4, 4)), rng.normal(size=(4, 7)), rng.normal(size=4), rng.normal(size=7)
    for extra in ({}, {"rank_one": (a, b)}):
        gk, gf = covariances.gradients(f, k, X, dKuu, dKuf, Kuu=Kuu, Kuf=Kuf, **extra)
        pk, pf = covariances.gradients(p, k, X, dKuu, dKuf, **extra)
        assert set(gf) == {"Z"} and gf["Z"].shape == (4, 1, 2)
        np.testing.assert_allclose(gf["Z"][:, 0, :], pf["Z"], rtol=1e-12, atol=1e-14)
        for name in pk:
            np.testing.assert_allclose(gk[name], pk[name], rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("kname, D", [("se", 1), ("se", 2), ("matern32", 2), ("periodic", 1), ("linear", 2),
                                      ("sum", 1), ("product", 1)])
def test_contraction_with_the_rank_one_form_matches_finite_differences(kname, D):
    """L = <W1, Kuu> + <W2 - a b^T, Kuf>: the rank-one form equals the corrected matrix, and both
    equal finite differences in Z, the free weights and every kernel parameter."""
    rng = np.random.default_rng(7)
    f, k, X = random_feature(rng, 3, 3, D), KERNELS[kname](D), rng.uniform(-2, 2, (6, D))
    W1, W2, a, b = rng.normal(size=(3, 3)), rng.normal(size=(3, 6)), rng.normal(size=3), rng.normal(size=6)
    W = W2 - np.outer(a, b)
    gk, gf = covariances.gradients(f, k, X, W1, W2, rank_one=(a, b))
    ck, cf = covariances.gradients(f, k, X, W1, W)
    for got, want in ((gk, ck), (gf, cf)):
        assert set(got) == set(want)
        for name in got:
            np.testing.assert_allclose(got[name], want[name], rtol=1e-10, atol=1e-12)

    def L(feature, kernel):
        return np.sum(W1 * covariances.Kuu(feature, kernel)) + np.sum(W * covariances.Kuf(feature, kernel, X))

    for name, x in f.parameters.items():
        num = reference.numerical_grad(lambda v, name=name: L(f.copy().set_parameters(**{name: v}), k), x)
        reference.check_grad_close(gf[name], num, rtol=1e-6, atol=1e-8)
    for name, x in k.parameters.items():
        num = reference.numerical_grad(lambda v, name=name, x=x: L(f, k.copy().set_parameters(
            **{name: v if np.ndim(x) else float(v)})), x)
        reference.check_grad_close(gk[name], num, rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("approximation", APPROXIMATIONS)
def test_one_delta_per_member_is_an_inducing_point(approximation):
    X, y = data(2)
    Z = np.random.default_rng(2).uniform(-2, 2, (5, 2))
    k = KERNELS["se"](2)
    a = SparseGPR(X, y, k, Z=SumOfDeltas(Z[:, None, :]), approximation=approximation, noise_variance=0.2)
    b = SparseGPR(X, y, k.copy(), Z=Z, approximation=approximation, noise_variance=0.2)
    (va, ga), (vb, gb) = a.log_marginal_likelihood(True), b.log_marginal_likelihood(True)
    assert va == pytest.approx(vb, rel=1e-12)
    np.testing.assert_allclose(ga["Z"][:, 0, :], gb["Z"], rtol=1e-9, atol=1e-12)
    assert a.inducing.param_names == ("Z",)


@pytest.mark.parametrize("approximation", APPROXIMATIONS)
@pytest.mark.parametrize("kname", ["se", "matern32", "rq", "periodic", "linear", "sum"])
def test_single_deltas_take_the_fused_path_with_the_generic_answers(approximation, kname):
    """C = 1 with a stationary kernel goes through the inducing points' fused call
    (sparse/fused.py); value and every gradient equal the generic covariances path. Other
    kernels and C > 1 decline it."""
    from gpexplorer.kernels import Stationary
    from gpexplorer.sparse.fused import FUSED_OBJECTIVES

    X, y = data(2)
    k = KERNELS[kname](2)
    rng = np.random.default_rng(3)
    for C in (1, 3):
        m = SparseGPR(X, y, k, Z=random_feature(rng, 5, C, 2), approximation=approximation, noise_variance=0.2)
        fused = FUSED_OBJECTIVES.find(SumOfDeltas, type(k))
        declined = fused is None or fused(m.inducing, m.kernel, X, y, 0.2, m.jitter, approximation) is None
        assert declined == (C > 1 or not isinstance(k, Stationary))
        F, grads, _ = m.objective_and_gradient()
        r = m._objective(grad=True)
        generic = m._chain(r)
        assert F == pytest.approx(r.value, rel=1e-11)
        assert set(grads) == set(generic)
        for name in grads:
            np.testing.assert_allclose(grads[name], generic[name], rtol=1e-8, atol=1e-10, err_msg=name)


@pytest.mark.parametrize("approximation", APPROXIMATIONS)
def test_rescaling_a_members_weights_changes_nothing(approximation):
    """Why w_m1 is fixed: u_m -> c u_m leaves Q_ff = Kfu Kuu^-1 Kuf, hence every objective, unchanged."""
    X, y = data(1)
    f = random_feature(np.random.default_rng(4), 3, 3, 1)
    scaled = f.weights.copy()
    scaled[1] *= -2.5
    g = SumOfDeltas(f.Z, scaled)
    np.testing.assert_allclose(g.w, f.w)  # normalised to the same free weights
    k = KERNELS["se"](1)
    Kuu, Kuf = covariances.Kuu(f, k), covariances.Kuf(f, k, X)
    s = np.diag([1.0, -2.5, 1.0])
    assert SparseGPR(X, y, k, Z=f, approximation=approximation, noise_variance=0.2).log_marginal_likelihood() == \
        pytest.approx(SparseGPR(X, y, k, Z=g, approximation=approximation, noise_variance=0.2).log_marginal_likelihood())
    Qff = Kuf.T @ np.linalg.solve(Kuu, Kuf)
    np.testing.assert_allclose((s @ Kuf).T @ np.linalg.solve(s @ Kuu @ s, s @ Kuf), Qff, rtol=1e-8, atol=1e-10)


@pytest.mark.parametrize("kname, D", [("se", 1), ("se", 2), ("matern32", 2), ("sum", 1)])
@pytest.mark.parametrize("objective", APPROXIMATIONS + ("upper",))
def test_objective_gradients_match_finite_differences(kname, D, objective):
    """Stationary ARD kernels take the rank-one path, the sum the generic one."""
    X, y = data(D)
    m = SparseGPR(X, y, KERNELS[kname](D), Z=random_feature(np.random.default_rng(2), 3, 3, D),
                  approximation="vfe" if objective == "upper" else objective, noise_variance=0.15, jitter=1e-8)

    def value(model):
        return model.upper_bound() if objective == "upper" else model.log_marginal_likelihood()

    v, grads = m.upper_bound(eval_gradient=True) if objective == "upper" else m.log_marginal_likelihood(True)
    assert set(grads) == set(m.parameters) and "w" in grads
    for name, x in m.parameters.items():
        def at(val, name=name, x=x):
            probe = m.copy()
            probe.set_parameters(**{name: val if np.ndim(x) else float(val)})
            return value(probe)

        reference.check_grad_close(grads[name], reference.numerical_grad(at, x), rtol=2e-5, atol=1e-6)


@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 2 ** 31 - 1), M=st.integers(1, 5), C=st.integers(1, 4), noise=st.floats(0.05, 1.0))
def test_psd_and_vfe_below_exact_below_upper_bound(seed, M, C, noise):
    rng = np.random.default_rng(seed)
    X = rng.uniform(-3, 3, (30, 1))
    y = np.sin(2 * X[:, 0]) + 0.3 * rng.normal(size=30)
    kernel = SquaredExponential(rng.uniform(0.5, 2), rng.uniform(0.3, 2.0))
    f = SumOfDeltas(rng.uniform(-3, 3, (M, C, 1)), np.hstack([np.ones((M, 1)), rng.normal(size=(M, C - 1))]))
    Kuu = covariances.Kuu(f, kernel)
    assert np.linalg.eigvalsh(Kuu).min() > -1e-9 * np.abs(Kuu).max()
    m = SparseGPR(X, y, kernel, Z=f, approximation="vfe", noise_variance=noise, jitter=1e-10)
    exact = ExactGPR(X, y, kernel.copy(), noise_variance=noise).log_marginal_likelihood()
    tol = 1e-6 * max(1.0, abs(exact))
    assert m.log_marginal_likelihood() <= exact + tol <= m.upper_bound() + 2 * tol


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 2 ** 31 - 1), M=st.integers(1, 6), C=st.integers(1, 5), D=st.integers(1, 2),
       kname=st.sampled_from(sorted(KERNELS)))
def test_joint_covariance_of_u_and_f_is_psd_for_every_kernel(seed, M, C, D, kname):
    """[[Kuu, Kuf], [Kfu, Kff]] is the covariance of (u, f(X)): positive semi-definite."""
    rng = np.random.default_rng(seed)
    f, k, X = random_feature(rng, M, C, D), KERNELS[kname](D), rng.uniform(-3, 3, (8, D))
    Kuu, Kuf = covariances.Kuu(f, k), covariances.Kuf(f, k, X)
    assert Kuu.shape == (M, M) and Kuf.shape == (M, 8)
    np.testing.assert_allclose(Kuu, Kuu.T, rtol=1e-12, atol=1e-12)
    joint = np.block([[Kuu, Kuf], [Kuf.T, k.K(X)]])
    assert np.linalg.eigvalsh(joint).min() > -1e-9 * max(1.0, np.abs(joint).max())


def test_fit_predict_and_the_variants_the_labs_use():
    rng = np.random.default_rng(0)
    X = rng.uniform(0, 6, (100, 1))
    y = np.sin(X[:, 0]) + 0.1 * rng.normal(size=100)
    k = SquaredExponential(1.0, 0.8)
    f = SumOfDeltas.from_data(X, 5, k, C=3, seed=0)
    assert f.Z.shape == (5, 3, 1) and f.C == 3
    np.testing.assert_allclose(f.Z[:, 2, 0] - f.Z[:, 0, 0], 0.8)  # +-half a lengthscale
    m = SparseGPR(X, y, k, Z=f.copy(), approximation="vfe", noise_variance=0.05)
    before = m.log_marginal_likelihood()
    m.fit(max_iter=40)
    assert m.log_marginal_likelihood() > before and not np.allclose(m.inducing.w, f.w)
    assert np.all(np.isfinite(m.predict_y(X[:4])[0]))
    moved = f.moved(1, [3.3])
    assert moved.locations[1, 0] == pytest.approx(3.3)
    np.testing.assert_allclose(moved.Z[1] - moved.locations[1], f.Z[1] - f.locations[1], atol=1e-12)
    more = f.concatenate(f.at_locations(np.array([[0.5]])))
    assert len(more) == 6 and more.locations[5, 0] == pytest.approx(0.5)
    assert set(f.restart_from(X, rng)) == {"Z"}


@pytest.mark.parametrize("args, message", [
    ((np.zeros((2, 3, 1)), np.zeros((2, 3))), "first weight must be non-zero"),
    ((np.zeros((2, 3, 1)), np.ones((2, 2))), "shape"),
    ((np.full((1, 2, 1), np.nan),), "NaN"),
    ((np.zeros((0, 2, 1)),), "non-empty"),
    ((np.zeros((2, 0, 1)),), "C deltas per member"),
    ((np.zeros((2, 2, 0)),), "non-empty"),
    ((np.zeros((2, 2, 1, 1)),), r"\(M, C, D\)"),
    ((np.zeros((2, 2, 1)), np.array([[1.0, np.inf], [1.0, 0.0]])), "NaN or infinite"),
    ((np.zeros((2, 2, 1)), np.ones(2)), "shape"),
    ((np.array([[["a"]]]),), "numeric"),
])
def test_bad_input_is_refused_with_a_clear_message(args, message):
    with pytest.raises(ValueError, match=message):
        SumOfDeltas(*args)


@pytest.mark.parametrize("C", [0, -1, 1.5])
def test_from_data_refuses_a_bad_number_of_deltas(C):
    X = np.linspace(0, 1, 20)[:, None]
    with pytest.raises(ValueError, match="number of deltas per member"):
        SumOfDeltas.from_data(X, 3, SquaredExponential(), C=C)


def test_set_parameters_keeps_shapes_and_refuses_nan():
    f = random_feature(np.random.default_rng(0), 3, 2, 1)
    with pytest.raises(ValueError, match="keep shape"):
        f.set_parameters(Z=np.zeros((3, 3, 1)))
    with pytest.raises(ValueError, match="NaN"):
        f.set_parameters(w=np.full((3, 1), np.nan))
    with pytest.raises(ValueError, match="no parameter"):
        f.set_parameters(weights=np.ones((3, 2)))  # the first weight is not a parameter


def test_remembered_kernel_matrices_follow_every_change():
    """The objective's k(Z, X) is reused by the gradient contraction; any change must recompute."""
    rng = np.random.default_rng(5)
    f, k = random_feature(rng, 3, 4, 1), SquaredExponential(1.0, 0.7)
    X = rng.uniform(-2, 2, (6, 1))
    first = covariances.Kuf(f, k, X).copy()
    X[0, 0] += 0.5  # same array, same address, new values
    assert not np.allclose(covariances.Kuf(f, k, X), first)
    k.set_parameters(lengthscale=0.9)
    g = f.copy().set_parameters(Z=f.Z + 0.1)
    for feature, kernel in ((f, k), (g, k)):
        fresh = SumOfDeltas(feature.Z.copy(), feature.weights)  # nothing remembered
        np.testing.assert_allclose(covariances.Kuf(feature, kernel, X), covariances.Kuf(fresh, kernel, X), rtol=1e-14)
        np.testing.assert_allclose(covariances.Kuu(feature, kernel), covariances.Kuu(fresh, kernel), rtol=1e-14)


def test_kernels_of_the_same_shape_never_share_remembered_matrices():
    """Sum(SE, Matern) and Sum(Matern, SE) have the same parameter names and values."""
    rng = np.random.default_rng(6)
    f, X = random_feature(rng, 3, 3, 1), rng.uniform(-2, 2, (5, 1))
    k1, k2 = SquaredExponential(1.0, 0.7) + Matern32(1.0, 0.7), Matern32(1.0, 0.7) + SquaredExponential(1.0, 0.7)
    k3 = SquaredExponential(1.0, 0.7) + Matern52(1.0, 0.7)
    for k in (k1, k2, k3, k1):
        fresh = SumOfDeltas(f.Z, f.weights)
        np.testing.assert_allclose(covariances.Kuf(f, k, X), covariances.Kuf(fresh, k, X), rtol=1e-14)
        np.testing.assert_allclose(covariances.Kuu(f, k), covariances.Kuu(fresh, k), rtol=1e-14)


def test_copies_and_pickles_leave_the_memo_behind():
    import pickle

    rng = np.random.default_rng(8)
    f, k, X = random_feature(rng, 3, 4, 1), SquaredExponential(), rng.uniform(-2, 2, (50, 1))
    covariances.Kuu(f, k), covariances.Kuf(f, k, X)
    covariances.gradients(f, k, X, np.eye(3), np.ones((3, 50)))
    assert f.memo
    for other in (f.copy(), pickle.loads(pickle.dumps(f))):
        assert not other.memo
        np.testing.assert_array_equal(other.Z, f.Z)
        np.testing.assert_array_equal(other.weights, f.weights)
        np.testing.assert_array_equal(covariances.Kuf(other, k, X), covariances.Kuf(f, k, X))


def test_threads_sharing_a_feature_get_the_serial_answers():
    """The remembered matrices and the work buffer are per feature; concurrent evaluations with
    different kernels and inputs must not read each other's."""
    from concurrent.futures import ThreadPoolExecutor

    rng = np.random.default_rng(9)
    f = random_feature(rng, 4, 3, 1)
    cases = [(SquaredExponential(1.0, 0.5 + 0.1 * i), rng.uniform(-2, 2, (300 + 10 * i, 1))) for i in range(6)]
    dKuu = rng.normal(size=(4, 4))

    def run(case):
        k, X = case
        dKuf = np.cos(X[:, 0])[None, :] * np.arange(1, 5)[:, None]
        out = []
        for _ in range(15):
            Kuu, Kuf = covariances.Kuu(f, k), covariances.Kuf(f, k, X)
            out.append((Kuu, Kuf, covariances.gradients(f, k, X, dKuu, dKuf, Kuu=Kuu, Kuf=Kuf)))
        return out

    serial = [run(c)[0] for c in cases]
    with ThreadPoolExecutor(4) as pool:
        parallel = list(pool.map(run, cases * 3))
    for i, results in enumerate(parallel):
        Kuu, Kuf, (gk, gf) = serial[i % len(cases)]
        for Kuu2, Kuf2, (gk2, gf2) in results:
            np.testing.assert_array_equal(Kuu2, Kuu)
            np.testing.assert_array_equal(Kuf2, Kuf)
            for name in gk:
                np.testing.assert_allclose(gk2[name], gk[name], rtol=1e-13)
            for name in gf:
                np.testing.assert_allclose(gf2[name], gf[name], rtol=1e-13)
