"""The Gaussian process regression network likelihood (Wilson et al. 2012; SAVIGP paper sec. 6.2):
p(y | f) = N(y; W g, sigma_y^2 I_P) with f = (g, vec W). The density normalises, the sampler
matches the conditional moments, derivatives match finite differences, the estimators match the
closed-form expected log density, bad inputs are refused, the registry builds it, and a small
two-output SparseVariationalGP fit improves its ELBO and predicts (N*, P) moments."""

import math

import numpy as np
import pytest
from scipy import integrate, stats

from gpexplorer import kernels
from gpexplorer.likelihoods import GPRN, LIKELIHOODS, MULTI_OUTPUT_LIKELIHOODS, PointwiseLikelihood, get_likelihood
from gpexplorer.parameters import Parameter
from gpexplorer.variational import estimators
from gpexplorer.variational.savigp import SparseVariationalGP


def latents(lik, shape, seed=0, scale=1.0):
    return scale * np.random.default_rng(seed).standard_normal(tuple(shape) + (lik.n_latent,))


def outputs(lik, N, seed=1):
    return np.random.default_rng(seed).standard_normal((N, lik.n_outputs))


# layout and density --------------------------------------------------------------------------------

def test_latent_layout_is_nodes_then_row_major_weights():
    lik = GPRN(n_outputs=3, n_nodes=2, variance=0.5)
    assert lik.n_latent == 2 + 3 * 2 and lik.n_outputs == 3 and lik.n_nodes == 2
    F = np.arange(8.0)[None, :]  # g = (0, 1), W = [[2, 3], [4, 5], [6, 7]]
    np.testing.assert_array_equal(lik.conditional_mean(F), [[3.0, 5.0, 7.0]])
    assert lik.latent_index("node", j=1) == 1 and lik.latent_index("weight", 2, 0) == 6
    np.testing.assert_array_equal(lik.conditional_variance(F), [[0.5, 0.5, 0.5]])


def test_log_density_is_the_isotropic_gaussian_around_w_g():
    lik = GPRN(n_outputs=2, n_nodes=2, variance=0.7)
    F, Y = latents(lik, (4,)), outputs(lik, 4)
    g, W = F[:, :2], F[:, 2:].reshape(4, 2, 2)
    expected = [stats.multivariate_normal(W[n] @ g[n], 0.7 * np.eye(2)).logpdf(Y[n]) for n in range(4)]
    np.testing.assert_allclose(lik.log_density(F, Y), expected, rtol=1e-12)


def test_density_normalises_over_y_for_one_output():
    lik = GPRN(n_outputs=1, n_nodes=2, variance=0.4)
    f = latents(lik, (1,), seed=3)
    mean = float(lik.conditional_mean(f)[0, 0])
    total, _ = integrate.quad(lambda y: math.exp(lik.log_density(f, [[y]])[0]), mean - 12, mean + 12,
                              points=[mean], limit=200)
    assert abs(total - 1.0) < 1e-8
    # a 1-D Y is one column when P = 1
    np.testing.assert_array_equal(lik.log_density(f, [0.3]), lik.log_density(f, [[0.3]]))


def test_density_normalises_over_y_for_two_outputs():
    lik = GPRN(n_outputs=2, n_nodes=1, variance=0.3)
    f = latents(lik, (1,), seed=4)
    mean = lik.conditional_mean(f)[0]
    # a fine grid (trapezoid in two dimensions) ...
    a = np.linspace(-5, 5, 801)
    y1, y2 = np.meshgrid(mean[0] + a, mean[1] + a, indexing="ij")
    Yg = np.stack([y1.ravel(), y2.ravel()], axis=1)
    dens = np.exp(lik.log_density(np.repeat(f, Yg.shape[0], axis=0), Yg)).reshape(y1.shape)
    grid_total = np.trapezoid(np.trapezoid(dens, a, axis=1), a)
    assert abs(grid_total - 1.0) < 1e-6
    # ... and importance sampling from a broad Gaussian: E_q[p(y | f) / q(y)] = 1
    rng = np.random.default_rng(5)
    q = stats.multivariate_normal(mean + 0.2, 1.5 * np.eye(2))
    ys = q.rvs(200_000, random_state=rng)
    ratio = np.exp(lik.log_density(np.repeat(f, ys.shape[0], axis=0), ys) - q.logpdf(ys))
    assert abs(ratio.mean() - 1.0) < 5 * ratio.std() / math.sqrt(ratio.size) + 1e-3


# sampler ---------------------------------------------------------------------------------------------

def test_sampler_matches_the_conditional_moments_and_keeps_leading_axes():
    lik = GPRN(n_outputs=2, n_nodes=2, variance=0.6)
    F = latents(lik, (3,), seed=6)
    S = 100_000
    draws = lik.sample(np.broadcast_to(F, (S,) + F.shape), rng=7)
    assert draws.shape == (S, 3, 2)
    se = math.sqrt(0.6 / S)
    np.testing.assert_allclose(draws.mean(axis=0), lik.conditional_mean(F), atol=5 * se)
    np.testing.assert_allclose(draws.var(axis=0), lik.conditional_variance(F), rtol=0.03)
    r = draws - lik.conditional_mean(F)
    assert np.all(np.abs(np.mean(r[..., 0] * r[..., 1], axis=0)) < 5 * 0.6 / math.sqrt(S))  # independent outputs
    np.testing.assert_array_equal(lik.sample(F, 3), lik.sample(F, np.random.default_rng(3)))
    assert lik.sample(F[:1], 0).shape == (1, 2)


# derivatives -----------------------------------------------------------------------------------------

@pytest.mark.parametrize("P, Qf", [(1, 1), (2, 1), (2, 3)])
def test_dlog_density_df_matches_finite_differences(P, Qf):
    lik = GPRN(n_outputs=P, n_nodes=Qf, variance=0.45)
    F, Y = latents(lik, (2, 5), seed=8), outputs(lik, 5, seed=9)  # a leading sample axis
    g = lik.dlog_density_df(F, Y)
    assert g.shape == F.shape
    h = 1e-6
    for q in range(lik.n_latent):
        E = np.zeros_like(F)
        E[..., q] = h
        fd = (lik.log_density(F + E, Y) - lik.log_density(F - E, Y)) / (2 * h)
        np.testing.assert_allclose(g[..., q], fd, rtol=1e-6, atol=1e-6)


def test_dlog_density_dvariance_matches_finite_differences():
    lik = GPRN(n_outputs=3, n_nodes=2, variance=0.8)
    F, Y = latents(lik, (2, 4), seed=10), outputs(lik, 4, seed=11)
    d = lik.dlog_density_dparams(F, Y)
    assert set(d) == {"variance"} and d["variance"].shape == (2, 4)
    h = 1e-6
    up = lik.copy().set_parameters(variance=0.8 + h).log_density(F, Y)
    down = lik.copy().set_parameters(variance=0.8 - h).log_density(F, Y)
    np.testing.assert_allclose(d["variance"], (up - down) / (2 * h), rtol=1e-6, atol=1e-8)


def test_log_density_terms_agree_with_the_public_methods_and_need_every_column():
    lik = GPRN(n_outputs=2, n_nodes=2, variance=0.5)
    F, Y = latents(lik, (3, 4), seed=12), outputs(lik, 4, seed=13)
    lp, g, dp = lik.log_density_terms(F, lik.validate(Y))
    np.testing.assert_allclose(lp, lik.log_density(F, Y), rtol=1e-13)
    np.testing.assert_allclose(g, lik.dlog_density_df(F, Y), rtol=1e-13)
    np.testing.assert_allclose(dp["variance"], lik.dlog_density_dparams(F, Y)["variance"], rtol=1e-13)
    with pytest.raises(ValueError, match=r"all 2 output columns"):
        lik.log_density_terms(F, lik.validate(Y)[:, 0])


# expected log density and the estimators ----------------------------------------------------------

def moments(lik, N, seed=14):
    rng = np.random.default_rng(seed)
    return rng.standard_normal((N, lik.n_latent)), rng.uniform(0.1, 0.6, (N, lik.n_latent))


def test_exact_expected_log_density_derivatives_match_finite_differences():
    lik = GPRN(n_outputs=2, n_nodes=2, variance=0.35)
    m, v = moments(lik, 4)
    Y = outputs(lik, 4, seed=15)
    ex = lik.expected_log_density_exact(m, v, Y)
    h = 1e-6
    for q in range(lik.n_latent):
        E = np.zeros_like(m)
        E[:, q] = h
        fd_m = (lik.expected_log_density_exact(m + E, v, Y).value - lik.expected_log_density_exact(m - E, v, Y).value)
        fd_v = (lik.expected_log_density_exact(m, v + E, Y).value - lik.expected_log_density_exact(m, v - E, Y).value)
        np.testing.assert_allclose(ex.dmean[:, q], fd_m / (2 * h), rtol=1e-6, atol=1e-7)
        np.testing.assert_allclose(ex.dvar[:, q], fd_v / (2 * h), rtol=1e-6, atol=1e-7)
    up = lik.copy().set_parameters(variance=0.35 + h).expected_log_density_exact(m, v, Y).value
    down = lik.copy().set_parameters(variance=0.35 - h).expected_log_density_exact(m, v, Y).value
    np.testing.assert_allclose(ex.dparams["variance"], (up - down) / (2 * h), rtol=1e-6)


def test_quadrature_is_exact_for_three_latents():
    """log p is a polynomial of degree 4 in f: the Gauss-Hermite product rule integrates it exactly."""
    lik = GPRN(n_outputs=2, n_nodes=1, variance=0.5)
    m, v = moments(lik, 5, seed=16)
    Y = outputs(lik, 5, seed=17)
    ex = lik.expected_log_density_exact(m, v, Y)
    est = estimators.estimate(lik, m, v, Y, "quadrature")
    np.testing.assert_allclose(est.value[0], ex.value, rtol=1e-10)
    np.testing.assert_allclose(est.dmean[0], ex.dmean, rtol=1e-9, atol=1e-10)
    np.testing.assert_allclose(est.dvar[0], ex.dvar, rtol=1e-9, atol=1e-10)
    np.testing.assert_allclose(est.dparams["variance"][0], ex.dparams["variance"], rtol=1e-10)


@pytest.mark.parametrize("method, cv", [("reparam", False), ("score", True)])
def test_monte_carlo_estimators_match_the_closed_form(method, cv):
    lik = GPRN(n_outputs=2, n_nodes=2, variance=0.4)
    m, v = moments(lik, 4, seed=18)
    Y = outputs(lik, 4, seed=19)
    ex = lik.expected_log_density_exact(m, v, Y)
    est = estimators.estimate(lik, m, v, Y, method, num_samples=20_000, seed=2, control_variate=cv)
    for name in ("value", "dmean", "dvar"):
        z = (getattr(est, name)[0] - getattr(ex, name)) / np.sqrt(est.report[name][0])
        assert np.abs(z).max() < 5.0, (name, np.abs(z).max())


def test_quadrature_beyond_three_latents_is_refused_with_a_clear_message():
    lik = GPRN(n_outputs=2, n_nodes=2)  # Q = 6
    m, v = moments(lik, 3)
    with pytest.raises(ValueError, match=r"quadrature with Q = 6 latents .*use 'reparam'"):
        estimators.estimate(lik, m, v, outputs(lik, 3), "quadrature")
    X = np.linspace(0, 1, 8)[:, None]
    model = SparseVariationalGP(X, outputs(lik, 8), kernels.SquaredExponential(), 3, "gprn",
                                likelihood_options={"n_outputs": 2, "n_nodes": 2})
    with pytest.raises(ValueError, match=r"quadrature with Q = 6 latents .*use 'reparam'"):
        model.elbo()


# validation and the registry -------------------------------------------------------------------------

@pytest.mark.parametrize("Y, message", [
    (np.zeros((4, 3)), r"n_outputs=2 expects observations Y of shape \(N, 2\); got shape \(4, 3\)"),
    (np.zeros((4, 1)), r"shape \(N, 2\); got shape \(4, 1\)"),
    (np.zeros(4), r"shape \(N, 2\); got shape \(4,\)"),
    (np.zeros((0, 2)), "empty"),
    ([[0.0, np.nan], [1.0, 2.0], [np.inf, 0.0]], r"2 NaN or infinite value\(s\) \(first at row 0\)"),
    ([["a", "b"]], "numeric"),
])
def test_bad_observations_are_refused(Y, message):
    lik = GPRN(n_outputs=2, n_nodes=1)
    with pytest.raises(ValueError, match=message):
        lik.validate(Y)
    with pytest.raises(ValueError, match=message):
        lik.log_density(np.zeros((np.shape(Y)[0], lik.n_latent)), Y)


def test_bad_latents_options_and_parameters_are_refused():
    lik = GPRN(n_outputs=2, n_nodes=2)
    with pytest.raises(ValueError, match=r"shape \(\.\.\., N=3, Q=6\); got shape \(3, 3\)"):
        lik.log_density(np.zeros((3, 3)), np.zeros((3, 2)))
    with pytest.raises(ValueError, match="NaN or inf"):
        lik.dlog_density_df(np.full((3, 6), np.nan), np.zeros((3, 2)))
    for bad in (0, -1, 1.5, True, "2"):
        with pytest.raises(ValueError, match="positive integer n_outputs"):
            GPRN(n_outputs=bad)
        with pytest.raises(ValueError, match="positive integer n_nodes"):
            GPRN(n_nodes=bad)
    for bad in (0.0, -1.0, np.inf):
        with pytest.raises(ValueError, match="must be (positive|finite)"):
            GPRN(variance=bad)
    spec = lik.parameter_specs["variance"]
    assert isinstance(spec, Parameter) and spec.transform == "log" and set(lik.parameter_specs) == {"variance"}
    assert lik.copy().set_parameters(variance=2.0).variance == 2.0 and lik.variance == 1.0


def test_registry_name_and_options():
    lik = get_likelihood("GPRN", n_outputs=3, n_nodes=2)
    assert type(lik) is GPRN and isinstance(lik, PointwiseLikelihood) and lik.name == "gprn"
    assert (lik.n_outputs, lik.n_nodes, lik.n_latent) == (3, 2, 8)
    assert get_likelihood("gprn", variance=0.2).variance == 0.2
    assert MULTI_OUTPUT_LIKELIHOODS == {"gprn": GPRN} and "gprn" not in LIKELIHOODS  # LIKELIHOODS: P = 1 only
    with pytest.raises(ValueError, match="does not accept the options \\['n_classes'\\]"):
        get_likelihood("gprn", n_classes=3)
    with pytest.raises(ValueError, match="did you mean 'gprn'.*Registered: .*gprn"):
        get_likelihood("gprm")


# end to end --------------------------------------------------------------------------------------------

def gprn_data(N=60, seed=0):
    """Two outputs sharing one node g(x) = sin(x) with input-dependent weights."""
    rng = np.random.default_rng(seed)
    X = np.sort(rng.uniform(-3, 3, N))[:, None]
    g = np.sin(X[:, 0])
    W = np.stack([1.0 + 0.3 * X[:, 0], np.cos(X[:, 0])], axis=1)
    return X, W * g[:, None] + 0.1 * rng.standard_normal((N, 2))


def test_sparse_variational_gp_fits_a_two_output_gprn():
    X, Y = gprn_data()
    model = SparseVariationalGP(X, Y, kernels.SquaredExponential(), 10, "gprn", estimator="reparam",
                                num_samples=50, seed=0, likelihood_options={"n_outputs": 2, "n_nodes": 1})
    assert model.Q == 3 and model.Y.shape == (60, 2)
    # q(u) = p(u) (zero means) is a saddle of the GPRN ELBO (E[W g] = 0): break the symmetry
    post = model.posterior
    rng = np.random.default_rng(1)
    post.set_moments([0.5 * rng.standard_normal(len(f)) for f in model.features],
                     [post.factor(j) for j in range(model.Q)])
    before = model.elbo()
    value, grads = model.elbo(eval_gradient=True)
    assert value == before and np.isfinite(grads["likelihood.variance"])
    model.fit(max_iter=60)
    after = model.elbo()
    assert np.isfinite(after) and after > before + 10.0
    assert model.parameters["likelihood.variance"] < 0.5  # from 1 towards the 0.01 of the data
    Xnew = np.linspace(-2.5, 2.5, 7)[:, None]
    mean, var = model.predict_y(Xnew)
    assert mean.shape == (7, 2) and var.shape == (7, 2)
    assert np.all(np.isfinite(mean)) and np.all(var > 0)
    sse = model.sse(X, Y)
    assert sse.shape == (2,) and np.all(sse < 0.8)
    lpd = model.predict_log_density(Xnew, np.zeros((7, 2)))
    assert lpd.shape == (7,) and np.all(np.isfinite(lpd))


def test_the_model_breaks_the_gprn_saddle_itself():
    """From the default start (no manual moments) the fit gets away from zero means."""
    X, Y = gprn_data()
    model = SparseVariationalGP(X, Y, kernels.SquaredExponential(), 10, "gprn", estimator="reparam",
                                num_samples=50, seed=0, likelihood_options={"n_outputs": 2, "n_nodes": 1})
    assert all(np.any(m != 0) for m in model.posterior.means)
    before = model.elbo()
    model.fit(max_iter=60)
    assert model.elbo() > before + 10.0 and np.all(model.sse(X, Y) < 0.8)
