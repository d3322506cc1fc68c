"""StandardLinearModel: the evidence in both of its forms against N(y | 0, K) computed directly,
the posterior against the normal equations, analytic gradients against finite differences,
random-feature regression approaching the exact GP, fitting, predictions and refusals."""

import numpy as np
import pytest
from scipy import stats

from gpexplorer import kernels
from gpexplorer.models import ExactGPR
from gpexplorer.random_features import StandardLinearModel, basis
from gpexplorer.random_features.evidence import log_evidence, weight_posterior

RNG = np.random.default_rng(3)
X = RNG.normal(size=(50, 3))
Y = np.sin(X[:, 0]) + 0.3 * X[:, 1] + 0.1 * RNG.normal(size=50)


def _model(n_features, **kw):
    b = basis("rbf", 3, n_features, lengthscale=[1.0, 2.0, 0.7], seed=1) + basis("linear", 3)
    return StandardLinearModel(X, Y, b, weight_variance=[1.4, 0.3], noise_variance=0.15, **kw)


@pytest.mark.parametrize("n_features", [20, 200], ids=["weight-form", "data-form"])
def test_evidence_and_posterior_against_direct_computation(n_features):
    m = _model(n_features)
    Phi, lam = m.features(), m.prior_variances()
    K = 0.15 * np.eye(50) + (Phi * lam) @ Phi.T
    assert m.log_evidence() == pytest.approx(stats.multivariate_normal(np.zeros(50), K).logpdf(Y), rel=1e-10)
    assert log_evidence(Phi, Y, lam, 0.15).form == ("weight" if n_features + 3 <= 50 else "data")
    C = np.linalg.inv(np.diag(1 / lam) + Phi.T @ Phi / 0.15)
    mean, cov = weight_posterior(Phi, Y, lam, 0.15)
    assert np.allclose(cov, C, atol=1e-10) and np.allclose(mean, C @ Phi.T @ Y / 0.15, atol=1e-8)
    assert np.allclose(log_evidence(Phi, Y, lam, 0.15).weight_mean, mean, atol=1e-8)


@pytest.mark.parametrize("n_features", [20, 200], ids=["weight-form", "data-form"])
def test_gradients_against_finite_differences(n_features):
    m = _model(n_features)
    _, grads, _ = m.objective_and_gradient()
    for name, value in m.parameters.items():
        v = np.atleast_1d(np.asarray(value, dtype=float))
        for i in range(v.size):
            h = 1e-6 * v[i]
            up, down = v.copy(), v.copy()
            up[i] += h
            down[i] -= h
            shape = (lambda a: a) if np.ndim(value) else (lambda a: float(a[0]))
            fp = m.set_parameters(**{name: shape(up)}).objective_and_gradient()[0]
            fm = m.set_parameters(**{name: shape(down)}).objective_and_gradient()[0]
            m.set_parameters(**{name: value})
            assert np.ravel(grads[name])[i] == pytest.approx((fp - fm) / (2 * h), rel=1e-5, abs=1e-7), (name, i)


def test_random_feature_regression_approaches_the_exact_gp():
    """SE features with the GP's hyperparameters: predictions and evidence converge to the exact
    GP's as the number of features grows."""
    ls, var, noise = np.array([1.0, 2.0, 0.7]), 1.4, 0.15
    gp = ExactGPR(X, Y[:, None], kernels.SquaredExponential(variance=var, lengthscale=ls), noise_variance=noise)
    Xs = RNG.normal(size=(30, 3))
    mu_gp, var_gp = gp.predict_f(Xs)
    mu_gp, var_gp = np.ravel(mu_gp), np.ravel(var_gp)
    errors = []
    for n in (100, 1600, 12800):
        slm = StandardLinearModel(X, Y, basis("rbf", 3, n, lengthscale=ls, seed=0), weight_variance=var,
                                  noise_variance=noise)
        mu, v = slm.predict_f(Xs)
        errors.append((np.max(np.abs(mu - mu_gp)), np.max(np.abs(v - var_gp)),
                       abs(slm.log_evidence() - gp.log_marginal_likelihood())))
    errors = np.array(errors)
    assert np.all(errors[2] < errors[0] / 4), errors
    assert errors[2, 0] < 0.05 and errors[2, 1] < 0.05 and errors[2, 2] < 1.0, errors


def test_fit_raises_the_evidence_and_random_starts_keep_the_best():
    m = _model(40)
    before = m.log_evidence()
    result = m.fit(max_iter=200)
    assert -result.objective == pytest.approx(m.log_evidence()) and m.log_evidence() > before + 1.0
    g = m.evidence_gradients()
    assert max(abs(np.ravel(v)).max() for v in g.values()) < 1e-2 * abs(m.log_evidence()) + 1e-2
    fixed = _model(40)
    fixed.fit(max_iter=50, fixed=("basis",))
    assert np.allclose(fixed.parameters["0.lengthscale"], [1.0, 2.0, 0.7])
    screened = _model(40)
    start = screened.log_evidence()
    screened.fit(max_iter=0, random_starts=30, seed=0)
    assert screened.log_evidence() >= start


def test_predictions():
    m = _model(40)
    Xs = RNG.normal(size=(7, 3))
    mean_f, var_f = m.predict_f(Xs)
    mean_y, var_y = m.predict_y(Xs)
    assert np.allclose(mean_f, mean_y) and np.allclose(var_y, var_f + 0.15)
    full_mean, full_cov = m.predict_f(Xs, full_cov=True)
    assert np.allclose(np.diag(full_cov), var_f)
    ys = RNG.normal(size=7)
    assert np.allclose(m.predict_log_density(Xs, ys), stats.norm(mean_y, np.sqrt(var_y)).logpdf(ys))
    q = m.predict_quantiles(Xs, (0.1, 0.5, 0.9))
    assert np.allclose(q, stats.norm(mean_y[:, None], np.sqrt(var_y)[:, None]).ppf([0.1, 0.5, 0.9]))


def test_refusals():
    with pytest.raises(ValueError, match="NaN"):
        StandardLinearModel(np.full((5, 3), np.nan), np.zeros(5), basis("rbf", 3, 10))
    with pytest.raises(ValueError, match="input column"):
        StandardLinearModel(X, Y, basis("rbf", 2, 10))
    with pytest.raises(ValueError, match="weight_variance"):
        StandardLinearModel(X, Y, basis("rbf", 3, 10) + basis("bias", 3), weight_variance=[1.0, 2.0, 3.0])
    with pytest.raises(ValueError, match="noise_variance"):
        StandardLinearModel(X, Y, basis("rbf", 3, 10), noise_variance=-1.0)
    with pytest.raises(ValueError, match="Xnew"):
        StandardLinearModel(X, Y, basis("rbf", 3, 10)).predict_y(np.zeros((2, 2)))
    with pytest.raises(ValueError, match="cannot fix"):
        StandardLinearModel(X, Y, basis("rbf", 3, 10)).fit(fixed=("nothing",))


def test_both_predictive_forms_agree():
    m = _model(200)  # D = 203 > N = 50: the data form
    Xs = RNG.normal(size=(6, 3))
    mean, cov = m.predict_f(Xs, full_cov=True)
    P = m.basis(Xs)
    w_mean, C = m.posterior
    assert m._predictive().form == "data"
    assert np.allclose(mean, P @ w_mean, atol=1e-9) and np.allclose(cov, P @ C @ P.T, atol=1e-9)
