"""SparseVariationalGP (SAVIGP as a model): L-BFGS from q(u) = p(u) reaches Titsias' bound for a
Gaussian likelihood, predictions match the sparse engine there, mixtures predict their moments,
and a full fit of a classifier improves the ELBO."""

import importlib

import numpy as np
import pytest

from gpexplorer import kernels
from gpexplorer.sparse.regression import SparseGPR
from gpexplorer.variational import SparseVariationalGP
from test_variational_likelihoods import BernoulliLogitStandIn, GaussianStandIn, HeteroscedasticStandIn


def regression_data(N=40, s2=0.1, seed=7):
    rng = np.random.default_rng(seed)
    X = np.sort(rng.uniform(-3, 3, size=(N, 1)), axis=0)
    y = np.sin(2 * X[:, 0]) + np.sqrt(s2) * rng.standard_normal(N)
    return X, y


def gaussian_likelihoods():
    out = [GaussianStandIn]
    try:
        zoo = importlib.import_module("gpexplorer.likelihoods.pointwise_zoo")
        out.append(zoo.Gaussian)
    except (ImportError, AttributeError):
        pass
    return out


@pytest.mark.parametrize("likcls", gaussian_likelihoods(), ids=lambda c: c.__module__.split(".")[-1])
def test_lbfgs_over_q_reaches_the_titsias_bound_and_its_predictions(likcls):
    s2 = 0.1
    X, y = regression_data(s2=s2)
    Z = np.linspace(-2.5, 2.5, 7)[:, None]
    k = kernels.SquaredExponential(variance=1.3, lengthscale=0.7)
    lik = likcls()
    lik.set_parameters(variance=s2)
    model = SparseVariationalGP(X, y, k.copy(), Z, lik, posterior="fg")
    start = model.elbo()
    titsias = SparseGPR(X, y, kernel=k, Z=Z, approximation="vfe", noise_variance=s2, jitter=1e-6)
    target = titsias.log_marginal_likelihood()
    assert start < target - 1.0
    model.fit(max_iter=500, fixed=("kernel", "inducing", "likelihood"))
    assert abs(model.elbo() - target) < 1e-5
    Xs = np.linspace(-3.5, 3.5, 11)[:, None]
    mean, var = model.predict_f(Xs)
    m_ref, v_ref = titsias.predict_f(Xs)
    np.testing.assert_allclose(mean[:, 0], m_ref, atol=1e-4)
    np.testing.assert_allclose(var[:, 0], v_ref, atol=1e-4)


def test_full_fit_of_a_classifier_improves_the_elbo_and_separates_the_classes():
    rng = np.random.default_rng(0)
    X = rng.uniform(-3, 3, size=(60, 1))
    y = (np.sin(X[:, 0]) + 0.3 * rng.standard_normal(60) > 0).astype(float)
    for posterior in ("fg", "mog2"):
        model = SparseVariationalGP(X, y, kernels.SquaredExponential(), 8, BernoulliLogitStandIn(),
                                    posterior=posterior, seed=1)
        start = model.elbo()
        model.fit(max_iter=150)
        assert model.elbo() > start + 5
        mean, _ = model.predict_f(X)
        assert np.mean((mean[:, 0] > 0) == (y > 0.5)) > 0.8
        assert np.isclose(model.posterior.pi.sum(), 1.0)


def test_reparam_fit_is_deterministic_and_tracks_the_quadrature_elbo():
    X, y = regression_data(N=30)
    lik = GaussianStandIn(variance=0.1)
    a = SparseVariationalGP(X, y, kernels.SquaredExponential(), 6, lik, estimator="reparam", num_samples=500, seed=3)
    b = SparseVariationalGP(X, y, kernels.SquaredExponential(), 6, GaussianStandIn(variance=0.1),
                            estimator="reparam", num_samples=500, seed=3)
    a.fit(max_iter=60)
    b.fit(max_iter=60)
    np.testing.assert_array_equal(a.posterior.free, b.posterior.free)
    q = SparseVariationalGP(X, y, a.kernels[0].copy(), a.features[0].copy(), GaussianStandIn(**a.likelihood.parameters))
    q.posterior.set_free(a.posterior.free)
    assert abs(q.elbo() - a.elbo()) < 0.05 * abs(q.elbo()) + 1.0


def test_mixture_prediction_returns_the_mixture_moments():
    X, y = regression_data(N=20)
    model = SparseVariationalGP(X, y, kernels.Matern32(), 5, GaussianStandIn(), posterior=("mog", 3), seed=2)
    rng = np.random.default_rng(1)
    model.posterior.set_free(rng.standard_normal(model.posterior.num_free))
    pi, means, var = model.predict_components(X[:4])
    mean, v = model.predict_f(X[:4])
    np.testing.assert_allclose(mean, np.einsum("k,knq->nq", pi, means))
    second = np.einsum("k,knq->nq", pi, var + means ** 2)
    np.testing.assert_allclose(v, second - mean ** 2)


def test_two_latents_parameters_and_validation():
    X, y = regression_data(N=20)
    model = SparseVariationalGP(X, y, kernels.SquaredExponential(), 4, HeteroscedasticStandIn(), posterior="mog2")
    names = set(model.parameters)
    assert {"posterior", "kernel0.variance", "kernel1.lengthscale", "feature0.Z", "feature1.Z",
            "likelihood.scale"} <= names
    value, grads = model.elbo(eval_gradient=True)
    assert set(grads) == names and np.isfinite(value)
    model.set_parameters(**{"kernel1.variance": 0.5})
    assert model.kernels[1].variance == 0.5 and model.kernels[0].variance != 0.5
    with pytest.raises(ValueError, match="unknown"):
        model.set_parameters(nonsense=1.0)
    with pytest.raises(ValueError, match="cannot fix"):
        model.fit(max_iter=1, fixed=("nonsense",))
    with pytest.raises(ValueError, match="latent"):
        SparseVariationalGP(X, y, kernels.SquaredExponential(), 4, HeteroscedasticStandIn(), num_latent=3)
    with pytest.raises(ValueError, match="estimator"):
        SparseVariationalGP(X, y, kernels.SquaredExponential(), 4, GaussianStandIn(), estimator="mcmc")
    with pytest.raises(ValueError, match="list of 2"):
        SparseVariationalGP(X, y, [kernels.SquaredExponential()] * 3, 4, HeteroscedasticStandIn())


def test_fit_returns_a_fit_result_also_with_a_duck_typed_likelihood():
    from gpexplorer.optimize import FitResult

    X, y = regression_data(N=20)
    model = SparseVariationalGP(X, y, kernels.SquaredExponential(), 4, GaussianStandIn(variance=0.2))
    result = model.fit(max_iter=10, method="block-lbfgs", evals_per_block=5)
    assert isinstance(result, FitResult) and model.fit_result is result
    assert result.objective == -model.elbo()
    mean, var = model.predict_f(X)
    assert mean.shape == var.shape == (20, 1)
