"""Tiny stand-in likelihoods with the pointwise-likelihood interface (n_latent, parameter_specs,
parameters, set_parameters, validate, log_density, dlog_density_df, dlog_density_dparams) for the SAVIGP
tests, their own derivative checks, and a cross-check against the real likelihoods when present."""

import importlib

import numpy as np
import pytest

from gpexplorer.parameters import Parameter

LOG_2PI = np.log(2 * np.pi)


class StandIn:
    n_latent = 1
    defaults = {}

    def __init__(self, **values):
        self._values = {**self.defaults, **values}

    @property
    def parameter_specs(self):
        return {n: Parameter(n) for n in self.defaults}

    @property
    def parameters(self):
        return dict(self._values)

    def set_parameters(self, **values):
        for n, v in values.items():
            if n not in self.defaults or not v > 0:
                raise ValueError(n)
            self._values[n] = float(v)
        return self

    def assign_unchecked(self, values):
        self._values.update(values)
        return self

    def validate(self, Y):
        Y = np.asarray(Y, dtype=float)
        return Y[:, None] if Y.ndim == 1 else Y


class GaussianStandIn(StandIn):
    """y ~ N(f, variance)."""

    defaults = {"variance": 0.3}

    def log_density(self, F, Y):
        s2 = self._values["variance"]
        return -0.5 * (LOG_2PI + np.log(s2) + (Y[:, 0] - F[..., 0]) ** 2 / s2)

    def dlog_density_df(self, F, Y):
        return ((Y[:, 0] - F[..., 0]) / self._values["variance"])[..., None]

    def dlog_density_dparams(self, F, Y):
        s2 = self._values["variance"]
        return {"variance": -0.5 / s2 + 0.5 * (Y[:, 0] - F[..., 0]) ** 2 / s2 ** 2}


class BernoulliLogitStandIn(StandIn):
    """p(y = 1 | f) = 1 / (1 + exp(-f)), y in {0, 1}."""

    def log_density(self, F, Y):
        s = 2 * Y[:, 0] - 1
        return -np.logaddexp(0.0, -s * F[..., 0])

    def dlog_density_df(self, F, Y):
        s = 2 * Y[:, 0] - 1
        return (s / (1 + np.exp(s * F[..., 0])))[..., None]

    def dlog_density_dparams(self, F, Y):
        return {}


class HeteroscedasticStandIn(StandIn):
    """Q = 2: y ~ N(f_1, scale exp(f_2))."""

    n_latent = 2
    defaults = {"scale": 0.5}

    def log_density(self, F, Y):
        v = self._values["scale"] * np.exp(F[..., 1])
        return -0.5 * (LOG_2PI + np.log(v) + (Y[:, 0] - F[..., 0]) ** 2 / v)

    def dlog_density_df(self, F, Y):
        v = self._values["scale"] * np.exp(F[..., 1])
        r2 = (Y[:, 0] - F[..., 0]) ** 2
        return np.stack([(Y[:, 0] - F[..., 0]) / v, -0.5 + 0.5 * r2 / v], axis=-1)

    def dlog_density_dparams(self, F, Y):
        c = self._values["scale"]
        v = c * np.exp(F[..., 1])
        return {"scale": (-0.5 + 0.5 * (Y[:, 0] - F[..., 0]) ** 2 / v) / c}


STANDINS = [GaussianStandIn, BernoulliLogitStandIn, HeteroscedasticStandIn]


def data_for(lik, N, rng):
    if isinstance(lik, BernoulliLogitStandIn):
        return rng.integers(0, 2, size=(N, 1)).astype(float)
    return rng.normal(size=(N, 1))


@pytest.mark.parametrize("cls", STANDINS, ids=lambda c: c.__name__)
def test_standin_derivatives_match_finite_differences(cls):
    rng = np.random.default_rng(0)
    lik = cls()
    N = 5
    Y = data_for(lik, N, rng)
    F = rng.normal(size=(3, N, lik.n_latent))
    h = 1e-6
    g = lik.dlog_density_df(F, Y)
    for q in range(lik.n_latent):
        E = np.zeros_like(F)
        E[..., q] = h
        fd = (lik.log_density(F + E, Y) - lik.log_density(F - E, Y)) / (2 * h)
        np.testing.assert_allclose(g[..., q], fd, rtol=1e-6, atol=1e-8)
    for name, d in lik.dlog_density_dparams(F, Y).items():
        v = lik.parameters[name]
        up = cls(**{name: v + h}).log_density(F, Y)
        down = cls(**{name: v - h}).log_density(F, Y)
        np.testing.assert_allclose(d, (up - down) / (2 * h), rtol=1e-6, atol=1e-8)


def _real_module():
    for name in ("gpexplorer.likelihoods.pointwise", "gpexplorer.likelihoods.pointwise_zoo"):
        try:
            return importlib.import_module(name)
        except ImportError:
            continue
    return None


def test_real_gaussian_likelihood_gives_the_same_expected_log_likelihood():
    """When the real pointwise likelihoods exist, the SAVIGP quadrature of their Gaussian equals
    the stand-in's (and the closed form)."""
    module = _real_module()
    if module is None or not hasattr(module, "Gaussian"):
        pytest.skip("gpexplorer.likelihoods.pointwise not available yet")
    from gpexplorer.variational.estimators import estimate

    real = module.Gaussian()
    real.set_parameters(variance=0.3)
    rng = np.random.default_rng(1)
    N = 7
    Y = rng.normal(size=(N, 1))
    b, var = rng.normal(size=(1, N, 1)), rng.uniform(0.1, 1.0, size=(1, N, 1))
    ours = estimate(GaussianStandIn(variance=0.3), b, var, Y)
    theirs = estimate(real, b, var, Y)
    closed = -0.5 * (LOG_2PI + np.log(0.3) + ((Y[:, 0] - b[0, :, 0]) ** 2 + var[0, :, 0]) / 0.3)
    np.testing.assert_allclose(theirs.value[0], closed, rtol=1e-10)
    np.testing.assert_allclose(theirs.dmean, ours.dmean, rtol=1e-10)
    np.testing.assert_allclose(theirs.dvar, ours.dvar, rtol=1e-10)
    np.testing.assert_allclose(theirs.dparams["variance"], ours.dparams["variance"], rtol=1e-10)


def test_quadrature_matches_the_likelihood_modules_expected_log_density():
    """SAVIGP's quadrature (K components at once) equals likelihoods.quadrature per component,
    for the real Bernoulli-logit (Q = 1) and softmax (Q = 3) likelihoods."""
    try:
        pointwise = importlib.import_module("gpexplorer.likelihoods.pointwise")
        quad = importlib.import_module("gpexplorer.likelihoods.quadrature")
    except ImportError:
        pytest.skip("gpexplorer.likelihoods.pointwise not available yet")
    from gpexplorer.variational.estimators import estimate

    rng = np.random.default_rng(2)
    N = 5
    for lik, Y, n in ((pointwise.BernoulliLogit(), rng.integers(0, 2, (N, 1)), 20),
                      (pointwise.Softmax(n_classes=3), rng.integers(0, 3, (N, 1)), 8)):
        Q = lik.n_latent
        b, var = rng.normal(size=(2, N, Q)), rng.uniform(0.2, 1.0, size=(2, N, Q))
        ours = estimate(lik, b, var, Y, "quadrature", n_points=n)
        for k in range(2):
            ref = quad.expected_log_density(lik, b[k], var[k], Y, n_points=n)
            np.testing.assert_allclose(ours.value[k], ref.value, rtol=1e-12)
            np.testing.assert_allclose(ours.dmean[k], ref.dmean, rtol=1e-10, atol=1e-14)
            np.testing.assert_allclose(ours.dvar[k], ref.dvar, rtol=1e-10, atol=1e-14)


def test_elbo_gradient_with_a_real_three_latent_softmax():
    try:
        pointwise = importlib.import_module("gpexplorer.likelihoods.pointwise")
    except ImportError:
        pytest.skip("gpexplorer.likelihoods.pointwise not available yet")
    from gpexplorer import kernels
    from gpexplorer.inducing import InducingPoints
    from gpexplorer.variational import elbo, make_posterior

    rng = np.random.default_rng(3)
    N, M = 7, 3
    X = rng.uniform(-2, 2, size=(N, 1))
    Y = rng.integers(0, 3, size=(N, 1))
    lik = pointwise.Softmax(n_classes=3)
    ks = [kernels.SquaredExponential(lengthscale=0.7 + 0.2 * j) for j in range(3)]
    feats = [InducingPoints(np.linspace(-2, 2, M) + 0.1 * j) for j in range(3)]
    for kind in ("fg", "mog2"):
        post = make_posterior(kind, M, 3)
        post.set_free(0.3 * rng.standard_normal(post.num_free))
        kw = dict(n_points=6, jitter=1e-6)
        r = elbo(X, Y, ks, feats, lik, post, eval_gradient=True, **kw)
        h = 1e-5
        for i in rng.choice(post.num_free, size=8, replace=False):
            e = np.zeros(post.num_free)
            e[i] = h
            up = elbo(X, Y, ks, feats, lik, post.copy().set_free(post.free + e), **kw).value
            down = elbo(X, Y, ks, feats, lik, post.copy().set_free(post.free - e), **kw).value
            assert np.isclose(r.grads["posterior"][i], (up - down) / (2 * h), rtol=1e-5, atol=1e-6)
        up = elbo(X, Y, [ks[0], ks[1], ks[2].copy().set_parameters(variance=1.0 + h)], feats, lik, post, **kw).value
        down = elbo(X, Y, [ks[0], ks[1], ks[2].copy().set_parameters(variance=1.0 - h)], feats, lik, post, **kw).value
        assert np.isclose(r.grads["kernels"][2]["variance"], (up - down) / (2 * h), rtol=1e-5, atol=1e-6)
