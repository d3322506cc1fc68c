"""GeneralizedLinearModel: every gradient against finite differences for both estimators and a
minibatch, the N/|B| scaling of every term (hyperparameters included), the entropy bound (eq. 24)
against its closed form and the true mixture entropy, the Gaussian case against the exact
posterior, the predictive log density as the log of the averaged density, and a classification
fit."""

import numpy as np
import pytest
from scipy import special, stats

from gpexplorer.random_features import GeneralizedLinearModel, basis
from gpexplorer.random_features.evidence import weight_posterior
from gpexplorer.random_features.mixture_elbo import entropy_bound

RNG = np.random.default_rng(11)
X = RNG.normal(size=(36, 3))
Y_BIN = (np.sin(2 * X[:, 0]) > 0).astype(float)
Y_COUNT = RNG.poisson(np.exp(0.5 * X[:, 0]))
Y_REAL = np.sin(2 * X[:, 0]) + 0.1 * RNG.normal(size=36)
Y_SUCCESSES = RNG.binomial(6, 1 / (1 + np.exp(-X[:, 1])))
CASES = {"gaussian": Y_REAL, "bernoulli_logit": Y_BIN, "poisson": Y_COUNT, "binomial": Y_SUCCESSES}
OPTIONS = {"binomial": {"trials": 6}}


def _model(likelihood, estimator="quadrature", **kw):
    b = basis("rbf", 3, 16, lengthscale=[1.0, 2.0, 0.5], seed=2) + basis("linear", 3)
    return GeneralizedLinearModel(X, CASES[likelihood], b, likelihood=likelihood, n_components=3,
                                  weight_variance=[1.5, 0.3], estimator=estimator, num_samples=4,
                                  likelihood_options=OPTIONS.get(likelihood), **kw)


def _check_gradients(m, rows, eps, names=None):
    _, grads, _ = m.elbo(rows=rows, eps=eps)
    rng = np.random.default_rng(0)
    for name, value in m.parameters.items():
        if names is not None and name not in names:
            continue
        v = np.asarray(value, dtype=float).ravel()
        for i in rng.choice(v.size, size=min(5, v.size), replace=False):
            h = 1e-6 * max(1.0, abs(v[i]))
            up, down = v.copy(), v.copy()
            up[i] += h
            down[i] -= h
            shape = (lambda a: a.reshape(np.shape(value))) if np.ndim(value) else (lambda a: float(a[0]))
            fp = m.set_parameters(**{name: shape(up)}).elbo(rows=rows, eps=eps, gradients=False)[0]
            fm = m.set_parameters(**{name: shape(down)}).elbo(rows=rows, eps=eps, gradients=False)[0]
            m.set_parameters(**{name: value})
            assert np.ravel(grads[name])[i] == pytest.approx((fp - fm) / (2 * h), rel=1e-5, abs=1e-6), (name, i)


@pytest.mark.parametrize("estimator", ["quadrature", "monte_carlo"])
@pytest.mark.parametrize("likelihood", sorted(CASES))
def test_gradients_against_finite_differences(likelihood, estimator):
    m = _model(likelihood, estimator)
    eps = np.random.default_rng(1).standard_normal((3, 4, m.n_features))
    _check_gradients(m, np.arange(0, 36, 4), eps)


def test_gaussian_closed_form_equals_the_quadrature_rule(monkeypatch):
    """The Gaussian likelihood's expected log likelihood in closed form (the fast path) against the
    Gauss-Hermite rule every other likelihood takes: value and every gradient to rounding."""
    m = _model("gaussian")
    rows = np.arange(0, 36, 3)
    value, grads, _ = m.elbo(rows)
    monkeypatch.setattr(type(m.likelihood), "conjugate", False)
    value_rule, grads_rule, _ = m.elbo(rows)
    assert value == pytest.approx(value_rule, rel=1e-12)
    for name, g in grads.items():
        assert np.allclose(g, grads_rule[name], rtol=1e-10, atol=1e-12), name


def test_the_optimiser_path_assigns_what_set_parameters_would():
    """``assign_in_box`` (the per-step path of fit, without re-validation) leaves the model exactly
    where ``set_parameters`` does."""
    a, b = _model("poisson"), _model("poisson")
    target = _model("poisson", seed=5)
    target.set_parameters(**{"0.lengthscale": [0.7, 1.1, 2.0], "weight_variance": [0.4, 2.0]})
    values = target.parameters
    a.set_parameters(**values)
    b.assign_in_box(values)
    for name, v in a.parameters.items():
        assert np.array_equal(np.asarray(v), np.asarray(b.parameters[name])), name
    assert a.elbo(gradients=False)[0] == b.elbo(gradients=False)[0]


def test_minibatch_terms_and_gradients_average_to_the_full_data_ones():
    """Disjoint minibatches covering the data, each scaled by N/|B|: their average is the full bound
    and its gradient for every parameter, the basis' and likelihood's hyperparameters included
    (revrand drops the factor for those)."""
    m = _model("gaussian")
    full_value, full_grads, _ = m.elbo()
    batches = np.arange(36).reshape(4, 9)
    values, grads = zip(*[m.elbo(rows=b)[:2] for b in batches])
    assert np.mean(values) == pytest.approx(full_value, rel=1e-12)
    for name in full_grads:
        avg = np.mean([np.asarray(g[name]) for g in grads], axis=0)
        assert np.allclose(avg, full_grads[name], rtol=1e-9, atol=1e-12), name
    assert {"0.lengthscale", "likelihood.variance", "weight_variance"} <= set(full_grads)


def test_entropy_bound_closed_form_and_bound():
    rng = np.random.default_rng(0)
    m1, v1 = rng.normal(size=(1, 4)), rng.uniform(0.2, 2, size=(1, 4))
    value, _, _ = entropy_bound(m1, v1)
    assert value == pytest.approx(0.5 * np.sum(np.log(4 * np.pi * v1)))  # -log N(m | m, 2 psi)
    means, variances = rng.normal(size=(3, 2)), rng.uniform(0.3, 1.0, size=(3, 2))
    bound, _, _ = entropy_bound(means, variances)
    k = rng.integers(3, size=400_000)
    w = means[k] + np.sqrt(variances[k]) * rng.standard_normal((400_000, 2))
    logq = special.logsumexp([stats.norm(means[j], np.sqrt(variances[j])).logpdf(w).sum(1) for j in range(3)],
                             axis=0) - np.log(3)
    assert bound <= -logq.mean() + 0.01
    far = means * 100.0  # well-separated components: the bound is log K above the components' own terms
    far_bound, _, _ = entropy_bound(far, variances)
    own = np.mean([0.5 * np.sum(np.log(4 * np.pi * variances[j])) for j in range(3)])
    assert far_bound == pytest.approx(own + np.log(3), abs=1e-9)


def test_gaussian_likelihood_with_one_component_reaches_the_exact_posterior():
    """K = 1, Gaussian likelihood: the optimal diagonal q has the exact posterior mean and the
    inverse diagonal of the posterior precision as variances (mean field)."""
    Xg = RNG.normal(size=(80, 2))
    yg = np.sin(2 * Xg[:, 0]) + 0.1 * RNG.normal(size=80)
    b = basis("rbf", 2, 20, lengthscale=1.0, seed=0)
    m = GeneralizedLinearModel(Xg, yg, b, likelihood="gaussian", n_components=1, weight_variance=1.0)
    m.set_parameters(**{"likelihood.variance": 0.05})
    m.fit(max_iter=2500, learning_rate=0.02, fixed=("basis", "weight_variance", "likelihood"), trace_every=500)
    mean, C = weight_posterior(b(Xg), yg, np.ones(20), 0.05)
    mf_var = 1.0 / np.diag(np.linalg.inv(C))
    assert np.max(np.abs(m.q_mean[0] - mean)) < 1e-3
    assert np.max(np.abs(m.q_variance[0] / mf_var - 1)) < 0.1  # Adam's steady-state jitter
    m.set_parameters(q_mean=mean[None, :], q_variance=mf_var[None, :])  # the bound is stationary there
    _, grads, _ = m.elbo()
    assert np.max(np.abs(grads["q_mean"])) < 1e-8 and np.max(np.abs(grads["q_variance"] * mf_var)) < 1e-8


def test_predictive_log_density_is_the_log_of_the_averaged_density():
    m = _model("bernoulli_logit")
    m.fit(max_iter=200, learning_rate=0.05, trace_every=100)
    Xs = RNG.normal(size=(5, 3))
    ys = np.array([0.0, 1.0, 1.0, 0.0, 1.0])
    ours = m.predict_log_density(Xs, ys)
    rng = np.random.default_rng(0)
    k = rng.integers(3, size=200_000)
    W = m.q_mean[k] + np.sqrt(m.q_variance[k]) * rng.standard_normal((200_000, m.n_features))
    F = W @ m.basis(Xs).T
    logp = ys * -np.logaddexp(0, -F) + (1 - ys) * -np.logaddexp(0, F)
    assert np.allclose(ours, special.logsumexp(logp, axis=0) - np.log(200_000), atol=5e-3)
    assert np.all(ours >= logp.mean(0))  # Jensen: revrand's average of log p is lower
    mean, _ = m.predict_y(Xs)
    assert np.allclose(mean, special.expit(F).mean(0), atol=5e-3)
    q = m.predict_quantiles(Xs, (0.5,))
    assert set(np.unique(q)) <= {0.0, 1.0}


def test_classification_fit_with_minibatches():
    Xc = RNG.normal(size=(200, 2))
    yc = (np.sin(2 * Xc[:, 0]) > 0).astype(float)
    m = GeneralizedLinearModel(Xc, yc, basis("rbf", 2, 100, lengthscale=1.0), likelihood="bernoulli_logit",
                               n_components=4, seed=0)
    result = m.fit(max_iter=800, batch_size=20, learning_rate=0.02, seed=1, trace_every=200)
    objectives = [e.objective for e in result.trace]
    assert objectives[-1] < objectives[0] - 20
    p, _ = m.predict_y(Xc)
    assert np.mean((p > 0.5) != yc) < 0.05


def test_random_starts_and_refusals():
    m = _model("poisson")
    start = m.elbo(gradients=False)[0]
    m.fit(max_iter=0, random_starts=20, seed=0)
    assert m.elbo(gradients=False)[0] >= start
    with pytest.raises(ValueError, match="estimator"):
        _model("gaussian", estimator="magic")
    with pytest.raises(ValueError, match="n_components"):
        GeneralizedLinearModel(X, Y_REAL, basis("rbf", 3, 10), n_components=0)
    with pytest.raises(ValueError, match="latent"):
        GeneralizedLinearModel(X, Y_COUNT, basis("rbf", 3, 10), likelihood="softmax")
    with pytest.raises(ValueError, match="batch_size"):
        _model("gaussian").fit(max_iter=1, batch_size=1000)
    with pytest.raises(ValueError, match="q_variance"):
        _model("gaussian").set_parameters(q_variance=-np.ones((3, 19)))
