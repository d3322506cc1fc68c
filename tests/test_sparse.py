"""Sparse GP objectives, gradients and predictions against the dense reference.

The specification is van der Wilk's thesis: eq. 2.8-2.13 (SoR/DTC), 2.14-2.17 (FITC),
2.37-2.39 (VFE bound, upper bound), 3.1-3.3 (common form). ``tests/reference.py`` implements
these densely (N x N matrices, plain solves); the library uses Woodbury and Cholesky.

The reference is fed Kuu = K(Z) + jitter I with the same jitter (1e-6) as the model.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import reference
from gpexplorer import kernels, models
from gpexplorer.kernels import KERNELS

JITTER = 1e-6
APPROXIMATIONS = ("sor", "dtc", "fitc", "vfe")
TERM_KEYS = ("constant", "complexity", "data_fit", "trace")
REF_OBJECTIVE = {
    "sor": reference.ref_sor,
    "dtc": reference.ref_dtc,
    "fitc": reference.ref_fitc,
    "vfe": reference.ref_vfe,
}





# ---------------------------------------------------------------------------------------------
# Problems
# ---------------------------------------------------------------------------------------------


def make_kernel(kind, D):
    if kind == "se":
        return kernels.SquaredExponential(variance=1.3, lengthscale=0.9)
    if kind == "se-ard":
        return kernels.SquaredExponential(variance=1.2, lengthscale=np.linspace(0.8, 2.0, D))
    if kind == "matern32":
        return kernels.Matern32(variance=0.9, lengthscale=1.1)
    if kind == "matern52":
        return kernels.Matern52(variance=1.1, lengthscale=np.linspace(0.9, 1.8, D) if D > 1 else 0.8)
    if kind == "rq":
        return kernels.RationalQuadratic(variance=1.2, lengthscale=0.8, alpha=1.7)
    if kind == "periodic":
        return kernels.Periodic(variance=1.0, lengthscale=0.9, period=2.3)
    if kind == "sum":
        ls = np.linspace(0.9, 1.6, D) if D > 1 else 1.2
        return kernels.SquaredExponential(variance=0.8, lengthscale=ls) + kernels.Matern12(variance=0.3, lengthscale=1.5)
    raise AssertionError(kind)


def make_problem(D, N=30, M=7, seed=0, noise=0.15):
    """Data from a smooth function; inducing inputs scattered (never on a data point)."""
    rng = np.random.default_rng(seed)
    X = rng.uniform(-3.0, 3.0, size=(N, D))
    y = np.sin(X.sum(axis=1)) + 0.3 * np.cos(2.0 * X[:, 0]) + 0.3 * rng.normal(size=N)
    if D == 1:
        Z = np.linspace(-2.7, 2.9, M)[:, None] + 0.05 * rng.normal(size=(M, 1))
    else:
        Z = rng.uniform(-2.5, 2.5, size=(M, D))
    return X, y, Z, noise


def make_model(kind, D, approximation, **kw):
    X, y, Z, noise = make_problem(D, **kw)
    if kind == "periodic":
        # inducing inputs a period apart would be near-duplicates: keep them within one period
        M = Z.shape[0]
        Z = np.linspace(-1.0, 1.1, M)[:, None] + 0.03 * np.random.default_rng(M).normal(size=(M, 1))
    return models.SparseGPR(X, y, make_kernel(kind, D), Z=Z, approximation=approximation,
                            noise_variance=noise, jitter=JITTER)


def ref_matrices(model):
    k = model.kernel
    Kff = reference.ref_K(k, model.X, model.X)
    Kuf = reference.ref_K(k, model.Z, model.X)
    Kuu = reference.ref_K(k, model.Z, model.Z) + JITTER * np.eye(model.Z.shape[0])
    return Kff, Kuf, Kuu


def ref_g(model, Kff, Kuf, Kuu):
    """Diagonal of G (eq. 3.2) for the model's approximation."""
    N = model.X.shape[0]
    if model.approximation == "fitc":
        return np.diag(Kff - reference.ref_qff(Kuf, Kuu)) + model.noise_variance
    return np.full(N, model.noise_variance)


VALUE_CASES = [("se", 1), ("se-ard", 4), ("matern52", 1), ("matern52", 4), ("sum", 1), ("sum", 4)]


def _vid(c):
    return f"{c[0]}-D{c[1]}"


# ---------------------------------------------------------------------------------------------
# (a) values and terms against the dense reference
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("approximation", APPROXIMATIONS)
@pytest.mark.parametrize("kc", VALUE_CASES, ids=_vid)
def test_objective_and_terms_match_reference(kc, approximation):
    kind, D = kc
    m = make_model(kind, D, approximation)
    Kff, Kuf, Kuu = ref_matrices(m)
    ref = REF_OBJECTIVE[approximation](Kff, Kuf, Kuu, m.y, m.noise_variance)
    terms = m.objective_terms()
    assert set(terms) == set(TERM_KEYS)
    for key in TERM_KEYS:
        np.testing.assert_allclose(terms[key], ref[key], rtol=1e-8, atol=1e-12, err_msg=key)
    lml = m.log_marginal_likelihood()
    np.testing.assert_allclose(-lml, ref["neg_lml"], rtol=1e-8, atol=1e-12)
    np.testing.assert_allclose(sum(terms.values()), -lml, rtol=1e-12, atol=1e-12)
    # the value returned together with the gradient is the same number
    lml2, _ = m.log_marginal_likelihood(eval_gradient=True)
    np.testing.assert_allclose(lml2, lml, rtol=1e-12)
    assert m.jitter_used == JITTER


@pytest.mark.parametrize("kc", VALUE_CASES, ids=_vid)
def test_exact_objective_matches_reference(kc):
    kind, D = kc
    X, y, _, noise = make_problem(D)
    m = models.ExactGPR(X, y, make_kernel(kind, D), noise_variance=noise)
    ref = reference.ref_exact(reference.ref_K(m.kernel, X, X), y, noise)
    terms = m.objective_terms()
    for key in TERM_KEYS:
        np.testing.assert_allclose(terms[key], ref[key], rtol=1e-8, atol=1e-12, err_msg=key)
    np.testing.assert_allclose(-m.log_marginal_likelihood(), ref["neg_lml"], rtol=1e-8)


def test_sor_and_dtc_share_the_training_objective():
    a = make_model("se", 1, "sor").log_marginal_likelihood()
    b = make_model("se", 1, "dtc").log_marginal_likelihood()
    assert a == pytest.approx(b, rel=1e-12)
    # ...but VFE subtracts a strictly positive trace term when Z does not cover the data
    m = make_model("se", 1, "vfe")
    assert m.objective_terms()["trace"] > 0
    assert m.log_marginal_likelihood() < b


# ---------------------------------------------------------------------------------------------
# (b) upper bound
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("kc", VALUE_CASES, ids=_vid)
def test_upper_bound_matches_reference(kc):
    kind, D = kc
    m = make_model(kind, D, "vfe")
    Kff, Kuf, Kuu = ref_matrices(m)
    ref = reference.ref_upper_bound(Kff, Kuf, Kuu, m.y, m.noise_variance)
    np.testing.assert_allclose(m.upper_bound(), ref, rtol=1e-8, atol=1e-12)
    val, _ = m.upper_bound(eval_gradient=True)
    np.testing.assert_allclose(val, ref, rtol=1e-8, atol=1e-12)


def test_upper_bound_does_not_depend_on_approximation():
    vals = [make_model("se", 1, a).upper_bound() for a in APPROXIMATIONS]
    np.testing.assert_allclose(vals, vals[0], rtol=1e-12)


# ---------------------------------------------------------------------------------------------
# (c) finite-difference gradient checks
# ---------------------------------------------------------------------------------------------


def _fd(model, name, fun):
    """Central differences of fun(model with parameter ``name`` set to v) at the current value."""

    def f(v):
        mm = model.copy()
        mm.set_parameters(**{name: v if np.ndim(v) else float(v)})
        return fun(mm)

    return reference.numerical_grad(f, np.asarray(model.parameters[name], dtype=float))


def _check_model_grads(model, grads, fun, rtol=1e-5, atol=1e-6):
    assert set(grads) == set(model.parameters), (sorted(grads), sorted(model.parameters))
    for name, value in model.parameters.items():
        a = np.asarray(grads[name], dtype=float)
        assert a.shape == np.shape(value), f"{name}: gradient shape {a.shape} vs {np.shape(value)}"
        num = _fd(model, name, fun)
        try:
            reference.check_grad_close(a, num, rtol=rtol, atol=atol)
        except AssertionError as err:
            raise AssertionError(f"parameter {name!r}: {err}") from None


GRAD_CASES = [("se", 1), ("matern32", 1), ("rq", 1), ("periodic", 1), ("se-ard", 4)]


@pytest.mark.parametrize("approximation", APPROXIMATIONS)
@pytest.mark.parametrize("kc", GRAD_CASES, ids=_vid)
def test_lml_gradients_finite_difference(kc, approximation):
    kind, D = kc
    m = make_model(kind, D, approximation, N=25, M=6, seed=1)
    _, grads = m.log_marginal_likelihood(eval_gradient=True)
    _check_model_grads(m, grads, lambda mm: mm.log_marginal_likelihood())


@pytest.mark.parametrize("kc", GRAD_CASES, ids=_vid)
def test_upper_bound_gradients_finite_difference(kc):
    kind, D = kc
    m = make_model(kind, D, "vfe", N=25, M=6, seed=2)
    _, grads = m.upper_bound(eval_gradient=True)
    _check_model_grads(m, grads, lambda mm: mm.upper_bound())


@pytest.mark.parametrize("kc", GRAD_CASES + [("sum", 4), ("matern52", 4)], ids=_vid)
def test_exact_gradients_finite_difference(kc):
    kind, D = kc
    X, y, _, noise = make_problem(D, N=25, seed=3)
    m = models.ExactGPR(X, y, make_kernel(kind, D), noise_variance=noise)
    _, grads = m.log_marginal_likelihood(eval_gradient=True)
    _check_model_grads(m, grads, lambda mm: mm.log_marginal_likelihood())


@pytest.mark.parametrize("approximation", APPROXIMATIONS)
def test_gradients_with_sum_kernel_4d(approximation):
    m = make_model("sum", 4, approximation, N=20, M=5, seed=4)
    _, grads = m.log_marginal_likelihood(eval_gradient=True)
    _check_model_grads(m, grads, lambda mm: mm.log_marginal_likelihood())


def test_fitc_gradient_where_Z_sits_on_data_points():
    """FITC with some inducing inputs on data points: diag(Kff - Qff) is ~0 there."""
    X, y, Z, noise = make_problem(1, N=20, M=6, seed=5)
    Z = np.vstack([Z[:3], X[:2] + 1e-3])
    m = models.SparseGPR(X, y, make_kernel("se", 1), Z=Z, approximation="fitc", noise_variance=noise,
                         jitter=JITTER)
    _, grads = m.log_marginal_likelihood(eval_gradient=True)
    _check_model_grads(m, grads, lambda mm: mm.log_marginal_likelihood(), rtol=1e-4, atol=1e-5)


# ---------------------------------------------------------------------------------------------
# (d) the Z = X limit recovers the exact GP
# ---------------------------------------------------------------------------------------------


def _limit_problem():
    rng = np.random.default_rng(11)
    X = np.sort(rng.uniform(-3.0, 3.0, 16))[:, None]
    X[:, 0] += np.arange(16) * 0.05  # keep points apart: Kuu must be well conditioned
    y = np.sin(1.5 * X[:, 0]) + 0.3 * rng.normal(size=16)
    kern = kernels.SquaredExponential(variance=1.2, lengthscale=0.6)
    Xs = np.linspace(-3.5, 4.5, 9)[:, None]
    return X, y, kern, Xs


@pytest.mark.parametrize("approximation", ["vfe", "fitc", "dtc", "sor"])
def test_Z_equal_X_recovers_exact_lml(approximation):
    X, y, kern, _ = _limit_problem()
    exact = models.ExactGPR(X, y, kern.copy(), noise_variance=0.1)
    m = models.SparseGPR(X, y, kern.copy(), Z=X.copy(), approximation=approximation,
                         noise_variance=0.1, jitter=1e-10)
    np.testing.assert_allclose(m.log_marginal_likelihood(), exact.log_marginal_likelihood(), rtol=1e-6)
    assert m.jitter_used == 1e-10
    if approximation == "vfe":
        assert abs(m.objective_terms()["trace"]) < 1e-6


@pytest.mark.parametrize("approximation", ["vfe", "fitc", "dtc"])
def test_Z_equal_X_recovers_exact_predictions(approximation):
    X, y, kern, Xs = _limit_problem()
    exact = models.ExactGPR(X, y, kern.copy(), noise_variance=0.1)
    m = models.SparseGPR(X, y, kern.copy(), Z=X.copy(), approximation=approximation,
                         noise_variance=0.1, jitter=1e-10)
    ref_mean, ref_cov = reference.ref_predict_exact(reference.ref_K(kern, Xs, Xs), reference.ref_K(kern, Xs, X),
                                                    reference.ref_K(kern, X, X), y, 0.1)
    for pred in ("predict_f", "predict_y"):
        add = 0.1 if pred == "predict_y" else 0.0
        mean, var = getattr(m, pred)(Xs)
        emean, evar = getattr(exact, pred)(Xs)
        np.testing.assert_allclose(mean, emean, atol=1e-6)
        np.testing.assert_allclose(var, evar, atol=1e-6)
        np.testing.assert_allclose(mean, ref_mean, atol=1e-6)
        np.testing.assert_allclose(var, np.diag(ref_cov) + add, atol=1e-6)
        mean_c, cov = getattr(m, pred)(Xs, full_cov=True)
        emean_c, ecov = getattr(exact, pred)(Xs, full_cov=True)
        np.testing.assert_allclose(mean_c, emean_c, atol=1e-6)
        np.testing.assert_allclose(cov, ecov, atol=1e-6)
        np.testing.assert_allclose(cov, ref_cov + add * np.eye(len(Xs)), atol=1e-6)


# ---------------------------------------------------------------------------------------------
# (e) ordering of the objectives on random problems
# ---------------------------------------------------------------------------------------------


@st.composite
def problems(draw):
    N = draw(st.integers(5, 40))
    M = draw(st.integers(1, N))
    D = draw(st.integers(1, 3))
    seed = draw(st.integers(0, 2**32 - 1))
    ls = draw(st.floats(0.3, 3.0))
    var = draw(st.floats(0.5, 2.0))
    noise = draw(st.floats(0.01, 1.0))
    kind = draw(st.sampled_from(["se", "matern32", "matern52", "rq"]))
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(N, D))
    y = np.sin(2.0 * X[:, 0]) + 0.3 * rng.normal(size=N)
    Z = rng.normal(size=(M, D))
    kern = KERNELS[kind](variance=var, lengthscale=ls)
    return X, y, Z, kern, noise


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(problems())
def test_bound_ordering_on_random_problems(problem):
    X, y, Z, kern, noise = problem
    exact = models.ExactGPR(X, y, kern.copy(), noise_variance=noise).log_marginal_likelihood()
    sparse = {a: models.SparseGPR(X, y, kern.copy(), Z=Z, approximation=a, noise_variance=noise,
                                  jitter=JITTER) for a in APPROXIMATIONS}
    vfe = sparse["vfe"].log_marginal_likelihood()
    fitc = sparse["fitc"].log_marginal_likelihood()
    upper = sparse["vfe"].upper_bound()
    tol = 1e-7 * abs(exact)
    assert vfe <= exact + tol, (vfe, exact)
    assert exact <= upper + tol, (exact, upper)
    assert fitc >= vfe - tol, (fitc, vfe)
    for a, m in sparse.items():
        lml = m.log_marginal_likelihood()
        assert np.isfinite(lml)
        terms = m.objective_terms()
        np.testing.assert_allclose(sum(terms[k] for k in TERM_KEYS), -lml, rtol=1e-10, atol=1e-10)
        if a != "vfe":
            assert terms["trace"] == 0.0
        else:
            assert terms["trace"] >= -1e-9


# ---------------------------------------------------------------------------------------------
# (f) q(u) and predictions
# ---------------------------------------------------------------------------------------------


PRED_CASES = [("se", 1), ("se-ard", 4), ("matern52", 1), ("sum", 4)]


def _test_points(D, S=8, seed=21):
    rng = np.random.default_rng(seed)
    return rng.uniform(-4.0, 4.0, size=(S, D))


@pytest.mark.parametrize("approximation", APPROXIMATIONS)
@pytest.mark.parametrize("kc", PRED_CASES, ids=_vid)
def test_q_u_matches_reference(kc, approximation):
    kind, D = kc
    m = make_model(kind, D, approximation)
    Kff, Kuf, Kuu = ref_matrices(m)
    mu_ref, Sigma_ref = reference.ref_qu(Kuf, Kuu, m.y, ref_g(m, Kff, Kuf, Kuu))
    mu, Sigma = m.q_u()
    np.testing.assert_allclose(mu, mu_ref, rtol=1e-7, atol=1e-9)
    np.testing.assert_allclose(Sigma, Sigma_ref, rtol=1e-7, atol=1e-9)


def _reference_posterior(kc, approximation):
    """A model, its dense reference Kuu and q(u), and test inputs with their reference
    covariances K(Xs, Xs) and K(Xs, Z)."""
    kind, D = kc
    m = make_model(kind, D, approximation)
    Kff, Kuf, Kuu = ref_matrices(m)
    mu, Sigma = reference.ref_qu(Kuf, Kuu, m.y, ref_g(m, Kff, Kuf, Kuu))
    Xs = _test_points(D)
    return m, Kuu, mu, Sigma, Xs, reference.ref_K(m.kernel, Xs, Xs), reference.ref_K(m.kernel, Xs, m.Z)


@pytest.mark.parametrize("approximation", APPROXIMATIONS)
@pytest.mark.parametrize("kc", PRED_CASES, ids=_vid)
def test_predictions_match_reference(kc, approximation):
    m, Kuu, mu, Sigma, Xs, Kss, Ksu = _reference_posterior(kc, approximation)
    conditional = "deterministic" if approximation == "sor" else "exact"
    ref_mean, ref_cov = reference.ref_predict_sparse(Kss, Ksu, Kuu, mu, Sigma, conditional=conditional)
    mean, var = m.predict_f(Xs)
    np.testing.assert_allclose(mean, ref_mean, rtol=1e-7, atol=1e-9)
    np.testing.assert_allclose(var, np.diag(ref_cov), rtol=1e-7, atol=1e-9)
    mean_c, cov = m.predict_f(Xs, full_cov=True)
    np.testing.assert_allclose(mean_c, ref_mean, rtol=1e-7, atol=1e-9)
    np.testing.assert_allclose(cov, ref_cov, rtol=1e-7, atol=1e-9)
    ymean, yvar = m.predict_y(Xs)
    np.testing.assert_allclose(ymean, ref_mean, rtol=1e-7, atol=1e-9)
    np.testing.assert_allclose(yvar, np.diag(ref_cov) + m.noise_variance, rtol=1e-7, atol=1e-9)
    ymean_c, ycov = m.predict_y(Xs, full_cov=True)
    np.testing.assert_allclose(ycov, ref_cov + m.noise_variance * np.eye(len(Xs)), rtol=1e-7, atol=1e-9)


def test_sor_variance_collapses_away_from_inducing_inputs():
    """SoR's deterministic conditional: far from Z the predictive f variance goes to 0, while
    DTC/VFE revert to the prior variance (fig. 2.3)."""
    far = np.array([[40.0]])
    sor = make_model("se", 1, "sor")
    dtc = make_model("se", 1, "dtc")
    assert sor.predict_f(far)[1][0] < 1e-8
    assert dtc.predict_f(far)[1][0] == pytest.approx(dtc.kernel.variance, rel=1e-6)


@pytest.mark.parametrize("approximation", APPROXIMATIONS)
@pytest.mark.parametrize("kc", PRED_CASES, ids=_vid)
def test_predict_components_match_gh_split(kc, approximation):
    m, Kuu, mu, Sigma, Xs, Kss, Ksu = _reference_posterior(kc, approximation)
    (g_mean_ref, g_cov_ref), h_cov_ref = reference.ref_gh_split(Kss, Ksu, Kuu, mu, Sigma)
    g_mean, g_var, h_var = m.predict_components(Xs)
    np.testing.assert_allclose(g_mean, g_mean_ref, rtol=1e-7, atol=1e-9)
    np.testing.assert_allclose(g_var, np.diag(g_cov_ref), rtol=1e-7, atol=1e-9)
    np.testing.assert_allclose(h_var, np.diag(h_cov_ref), rtol=1e-7, atol=1e-9)
    if approximation in ("vfe", "dtc", "fitc"):
        _, f_var = m.predict_f(Xs)
        np.testing.assert_allclose(g_var + h_var, f_var, rtol=1e-10, atol=1e-12)


def test_vfe_components_sum_to_predictive_variance_on_random_inputs():
    m = make_model("se-ard", 4, "vfe")
    Xs = _test_points(4, S=30, seed=5)
    g_mean, g_var, h_var = m.predict_components(Xs)
    mean, var = m.predict_f(Xs)
    np.testing.assert_allclose(g_mean, mean, rtol=1e-12)
    np.testing.assert_allclose(g_var + h_var, var, rtol=1e-10, atol=1e-12)
    assert np.all(g_var >= 0) and np.all(h_var >= 0)


def test_exact_predictions_match_reference():
    X, y, _, noise = make_problem(4)
    kern = make_kernel("se-ard", 4)
    m = models.ExactGPR(X, y, kern, noise_variance=noise)
    Xs = _test_points(4)
    ref_mean, ref_cov = reference.ref_predict_exact(reference.ref_K(kern, Xs, Xs), reference.ref_K(kern, Xs, X),
                                                    reference.ref_K(kern, X, X), y, noise)
    mean, var = m.predict_f(Xs)
    np.testing.assert_allclose(mean, ref_mean, rtol=1e-8, atol=1e-10)
    np.testing.assert_allclose(var, np.diag(ref_cov), rtol=1e-8, atol=1e-10)
    _, cov = m.predict_f(Xs, full_cov=True)
    np.testing.assert_allclose(cov, ref_cov, rtol=1e-8, atol=1e-10)


# ---------------------------------------------------------------------------------------------
# (g) monotonicity in the inducing set (thesis §3.2.2, Remark 3)
# ---------------------------------------------------------------------------------------------


@st.composite
def extra_point_problems(draw):
    D = draw(st.integers(1, 3))
    seed = draw(st.integers(0, 2**32 - 1))
    M = draw(st.integers(1, 8))
    extra = draw(st.lists(st.floats(-4.0, 4.0), min_size=D, max_size=D))
    duplicate = draw(st.booleans())
    return D, seed, M, np.array(extra), duplicate


@settings(max_examples=30, deadline=None)
@given(extra_point_problems())
def test_vfe_bound_does_not_decrease_when_adding_an_inducing_input(p):
    D, seed, M, extra, duplicate = p
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(25, D))
    y = np.sin(2.0 * X[:, 0]) + 0.2 * rng.normal(size=25)
    Z = rng.normal(size=(M, D))
    if duplicate:  # appending a copy of an existing inducing input can't lower the bound either
        extra = Z[rng.integers(M)].copy()
    kern = kernels.SquaredExponential(variance=1.1, lengthscale=0.8)
    m1 = models.SparseGPR(X, y, kern.copy(), Z=Z, approximation="vfe", noise_variance=0.1, jitter=JITTER)
    m2 = models.SparseGPR(X, y, kern.copy(), Z=np.vstack([Z, extra[None, :]]), approximation="vfe",
                          noise_variance=0.1, jitter=JITTER)
    before, after = m1.log_marginal_likelihood(), m2.log_marginal_likelihood()
    assert after >= before - 1e-9 * abs(before), (before, after)
    # and the trace term (the total conditional variance) can only shrink
    assert m2.objective_terms()["trace"] <= m1.objective_terms()["trace"] + 1e-9


def test_vfe_bound_increases_on_a_growing_inducing_set():
    X, y, _, noise = make_problem(1, N=40, seed=7)
    order = np.random.default_rng(7).permutation(40)
    kern = make_kernel("se", 1)
    values = [models.SparseGPR(X, y, kern.copy(), Z=X[order[:M]], approximation="vfe",
                               noise_variance=noise, jitter=JITTER).log_marginal_likelihood()
              for M in range(1, 16)]
    assert np.all(np.diff(values) >= -1e-9 * np.abs(values[1:])), values
    assert values[-1] > values[0] + 1.0
    exact = models.ExactGPR(X, y, kern.copy(), noise_variance=noise).log_marginal_likelihood()
    assert values[-1] <= exact + 1e-9 * abs(exact)
