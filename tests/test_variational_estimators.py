"""The expected-log-likelihood estimators of SAVIGP (eq. 12-13, 17): Monte Carlo estimates agree
with Gauss-Hermite quadrature within their standard errors, the reparameterised objective is
deterministic and differentiable, and the held-out control variate reduces the score
estimator's variance without bias."""

import numpy as np
import pytest

from gpexplorer import kernels
from gpexplorer.inducing import InducingPoints
from gpexplorer.variational import elbo, estimate, estimator_variance, variance_curve
from gpexplorer.variational.estimators import draw_eps, gauss_hermite_grid
from gpexplorer.variational.families import make_posterior
from test_variational_likelihoods import (BernoulliLogitStandIn, GaussianStandIn, HeteroscedasticStandIn,
                                          data_for)


def moments(lik, K=2, N=6, seed=0):
    rng = np.random.default_rng(seed)
    Q = lik.n_latent
    b = rng.normal(0, 1, size=(K, N, Q))
    var = rng.uniform(0.2, 1.0, size=(K, N, Q))
    return b, var, data_for(lik, N, rng)


LIKS = [GaussianStandIn, BernoulliLogitStandIn, HeteroscedasticStandIn]


def test_gauss_hermite_grid_integrates_gaussian_moments():
    nodes, w = gauss_hermite_grid(2, 8)
    assert nodes.shape == (64, 2) and np.isclose(w.sum(), 1.0)
    np.testing.assert_allclose(w @ nodes ** 2, [1.0, 1.0])
    np.testing.assert_allclose(w @ (nodes[:, 0] ** 2 * nodes[:, 1] ** 4), 3.0)


def test_quadrature_is_exact_for_the_gaussian_likelihood():
    lik = GaussianStandIn(variance=0.7)
    b, var, Y = moments(lik)
    est = estimate(lik, b, var, Y, "quadrature")
    y = Y[:, 0]
    closed = -0.5 * (np.log(2 * np.pi * 0.7) + ((y - b[..., 0]) ** 2 + var[..., 0]) / 0.7)
    np.testing.assert_allclose(est.value, closed, rtol=1e-12)
    np.testing.assert_allclose(est.dmean[..., 0], (y - b[..., 0]) / 0.7, rtol=1e-10)
    np.testing.assert_allclose(est.dvar[..., 0], -0.5 / 0.7, rtol=1e-10)


@pytest.mark.parametrize("likcls", LIKS, ids=lambda c: c.__name__)
@pytest.mark.parametrize("method,cv", [("reparam", False), ("score", False), ("score", True)])
def test_monte_carlo_estimates_agree_with_quadrature_within_their_error(likcls, method, cv):
    lik = likcls()
    b, var, Y = moments(lik)
    ref = estimate(lik, b, var, Y, "quadrature")
    est = estimate(lik, b, var, Y, method, num_samples=4000, seed=3, control_variate=cv)
    for name in ("value", "dmean", "dvar"):
        se = np.sqrt(est.report[name])
        assert np.all(se > 0)
        z = (getattr(est, name) - getattr(ref, name)) / se
        assert np.max(np.abs(z)) < 5.0, (name, np.max(np.abs(z)))
    for name, g in ref.dparams.items():
        np.testing.assert_allclose(est.dparams[name], g, rtol=0.2, atol=0.2)


def test_reparameterised_objective_is_deterministic_and_its_gradient_exact():
    """With eps drawn once, the ELBO is a smooth deterministic function whose analytic gradient
    equals finite differences of the Monte Carlo value itself (the paper's optimiser set-up)."""
    lik = BernoulliLogitStandIn()
    rng = np.random.default_rng(2)
    N, M = 10, 4
    X = rng.uniform(-2, 2, size=(N, 1))
    Y = data_for(lik, N, rng)
    k = kernels.Matern52(variance=1.2, lengthscale=0.8)
    Z = InducingPoints(np.linspace(-2, 2, M))
    post = make_posterior("mog2", M)
    post.set_free(0.3 * rng.standard_normal(post.num_free))
    eps = draw_eps(300, N, 1, seed=9)
    kw = dict(estimator="reparam", eps=eps)
    r = elbo(X, Y, [k], [Z], lik, post, eval_gradient=True, **kw)
    assert r.value == elbo(X, Y, [k], [Z], lik, post, **kw).value
    assert r.value == elbo(X, Y, [k], [Z], lik, post, estimator="reparam", num_samples=300, seed=9).value
    h = 1e-6
    for i in range(post.num_free):
        e = np.zeros(post.num_free)
        e[i] = h
        up = elbo(X, Y, [k], [Z], lik, post.copy().set_free(post.free + e), **kw).value
        down = elbo(X, Y, [k], [Z], lik, post.copy().set_free(post.free - e), **kw).value
        assert np.isclose(r.grads["posterior"][i], (up - down) / (2 * h), rtol=1e-5, atol=1e-6)
    for name in ("variance", "lengthscale"):
        v = k.parameters[name]
        up = elbo(X, Y, [k.copy().set_parameters(**{name: v + h})], [Z], lik, post, **kw).value
        down = elbo(X, Y, [k.copy().set_parameters(**{name: v - h})], [Z], lik, post, **kw).value
        assert np.isclose(r.grads["kernels"][0][name], (up - down) / (2 * h), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("likcls,offset,factor", [(BernoulliLogitStandIn, 0.0, 0.8), (GaussianStandIn, 2.0, 0.5)],
                         ids=["bernoulli-logit", "gaussian"])
def test_control_variate_reduces_the_score_estimator_variance(likcls, offset, factor):
    lik = likcls()
    b, var, Y = moments(lik, K=1, N=8, seed=4)
    b = b + offset  # the Gaussian case: means away from the data, where l is large
    plain = estimator_variance(lik, b, var, Y, "score", 500, n_repeats=30, seed=0)
    cv = estimator_variance(lik, b, var, Y, "score", 500, n_repeats=30, seed=0, control_variate=True)
    reparam = estimator_variance(lik, b, var, Y, "reparam", 500, n_repeats=30, seed=0)
    for name in ("dmean", "dvar"):
        assert cv["summary"][name] < factor * plain["summary"][name], (name, cv["summary"], plain["summary"])
        assert reparam["summary"][name] < plain["summary"][name]
    # unbiased: the across-seed mean of the control-variate estimator is within its error of quadrature
    ref = estimate(lik, b, var, Y, "quadrature")
    for name in ("dmean", "dvar"):
        se = np.sqrt(cv["variance"][name] / 30)
        assert np.max(np.abs(cv["mean"][name] - getattr(ref, name)) / se) < 5.0


def test_the_control_variate_coefficient_uses_held_out_samples_only():
    """The estimate with a control variate depends on the held-out draws only through c: for a
    likelihood with l constant in f, c = l exactly and the estimate is zero (no bias term)."""
    lik = GaussianStandIn(variance=1e6)  # l nearly constant in f
    b, var, Y = moments(lik, K=1, N=4, seed=1)
    est = estimate(lik, b, var, Y, "score", num_samples=1000, seed=0, control_variate=True)
    plain = estimate(lik, b, var, Y, "score", num_samples=1000, seed=0)
    ref = estimate(lik, b, var, Y, "quadrature")
    assert np.max(np.abs(est.dmean - ref.dmean)) < 0.05 * np.max(np.abs(plain.dmean - ref.dmean))


def test_variance_curve_falls_with_the_number_of_samples():
    lik = BernoulliLogitStandIn()
    b, var, Y = moments(lik, K=1, N=5, seed=6)
    curve = variance_curve(lik, b, var, Y, [50, 400], n_repeats=10)
    assert curve["S"] == [50, 400]
    for label in ("score", "score+cv", "reparam"):
        assert curve[label]["dmean"][1] < curve[label]["dmean"][0]


def test_estimate_validates_its_inputs():
    lik = GaussianStandIn()
    b, var, Y = moments(lik)
    with pytest.raises(ValueError, match="method"):
        estimate(lik, b, var, Y, "nope")
    with pytest.raises(ValueError, match="control variate"):
        estimate(lik, b, var, Y, "reparam", control_variate=True)
    with pytest.raises(ValueError, match="positive"):
        estimate(lik, b, -var, Y)
    with pytest.raises(ValueError, match="shape"):
        estimate(lik, b[:, :3], var[:, :3], Y)
    with pytest.raises(ValueError, match="eps"):
        estimate(lik, b, var, Y, "reparam", eps=np.zeros((10, 3, 1)))
