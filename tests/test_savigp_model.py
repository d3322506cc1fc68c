"""SparseVariationalGP as a model (issue 16): the issue's API for every posterior x estimator,
likelihoods by name, the three optimisers (joint L-BFGS, the paper's block L-BFGS, minibatch
Adam) under the FitResult / TraceEntry / callback convention, and predictions checked against
closed forms (Gaussian, Poisson, probit) and Monte Carlo."""

import numpy as np
import pytest
from scipy import special, stats

from gpexplorer import kernels, metrics, models
from gpexplorer.optimize import FitResult, TraceEntry
from gpexplorer.variational import SparseVariationalGP

POSTERIORS = ("fg", "mog1", "mog2", ("mog", 3))
ESTIMATORS = ("quadrature", "reparam", "score")


def classification_data(N=40, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.uniform(-3, 3, size=(N, 1))
    y = (np.sin(X[:, 0]) + 0.3 * rng.standard_normal(N) > 0).astype(float)
    return X, y


def regression_data(N=40, s2=0.1, seed=7):
    rng = np.random.default_rng(seed)
    X = np.sort(rng.uniform(-3, 3, size=(N, 1)), axis=0)
    return X, np.sin(2 * X[:, 0]) + np.sqrt(s2) * rng.standard_normal(N)


def randomised(model, seed=1, scale=0.3):
    """The model with its q(u) moved away from the prior (a non-trivial posterior to predict from)."""
    rng = np.random.default_rng(seed)
    model.posterior.set_free(model.posterior.free + scale * rng.standard_normal(model.posterior.num_free))
    return model


def test_models_exports_the_class():
    assert models.SparseVariationalGP is SparseVariationalGP
    assert "SparseVariationalGP" in models.__all__


@pytest.mark.parametrize("posterior", POSTERIORS, ids=str)
@pytest.mark.parametrize("estimator", ESTIMATORS)
def test_the_issue_api_runs_for_every_posterior_and_estimator(posterior, estimator):
    X, y = classification_data()
    k = kernels.SquaredExponential()
    m = SparseVariationalGP(X, y, kernel=k, Z=6, likelihood="bernoulli_logit", posterior=posterior,
                            estimator=estimator, num_samples=200, num_latent=1, seed=0)
    start = m.elbo()
    value, grads = m.elbo(eval_gradient=True)
    assert value == start and set(grads) == set(m.parameters)
    result = m.fit(max_iter=2, method="block-lbfgs", evals_per_block=5)
    assert isinstance(result, FitResult) and m.fit_result is result
    assert -result.objective > start
    adam = m.fit(max_iter=6, method="adam", batch_size=10, learning_rate=0.02, trace_every=3)
    assert [e.iteration for e in adam.trace] == [0, 1, 2]
    Xs = np.linspace(-3, 3, 7)[:, None]
    mean, var = m.predict_f(Xs)
    ym, yv = m.predict_y(Xs)
    assert mean.shape == var.shape == ym.shape == yv.shape == (7, 1)
    assert np.all((ym > 0) & (ym < 1)) and np.allclose(yv, ym * (1 - ym))  # Bernoulli: Var = p (1 - p)
    lp = m.predict_log_density(Xs, np.ones(7))
    assert lp.shape == (7,) and np.allclose(np.exp(lp), ym[:, 0])


def test_likelihood_by_name_with_options_aliases_and_instances():
    X, y = regression_data(N=20)
    counts = np.round(np.exp(np.sin(X[:, 0])))
    m = SparseVariationalGP(X, counts, kernel=kernels.Matern32(), Z=5, likelihood="poisson",
                            likelihood_options={"offset": 0.5, "binsize": 2.0})
    assert (m.likelihood.offset, m.likelihood.binsize) == (0.5, 2.0)
    g = SparseVariationalGP(X, y, kernels.SquaredExponential(), 5, "Normal", likelihood_options={"variance": 0.2})
    assert g.likelihood.name == "gaussian" and g.parameters["likelihood.variance"] == 0.2
    assert SparseVariationalGP(X, y > 0, kernels.SquaredExponential(), 5, "logit").likelihood.name == "bernoulli_logit"
    with pytest.raises(ValueError, match="did you mean"):
        SparseVariationalGP(X, y, kernels.SquaredExponential(), 5, "gausian")
    with pytest.raises(ValueError, match="options"):
        SparseVariationalGP(X, y, kernels.SquaredExponential(), 5, g.likelihood, likelihood_options={"variance": 1.0})
    with pytest.raises(ValueError, match="does not accept"):
        SparseVariationalGP(X, y, kernels.SquaredExponential(), 5, "gaussian", likelihood_options={"offset": 1.0})
    with pytest.raises(ValueError, match="registered name"):
        SparseVariationalGP(X, y, kernels.SquaredExponential(), 5, object())


@pytest.mark.parametrize("estimator", ["quadrature", "reparam"])
def test_block_lbfgs_raises_the_elbo_monotonically_over_rounds(estimator):
    X, y = regression_data(N=30)
    m = SparseVariationalGP(X, y, kernels.SquaredExponential(), 6, "gaussian", estimator=estimator,
                            num_samples=300, seed=2)
    start = -m.elbo()
    result = m.fit(max_iter=4, method="block-lbfgs", evals_per_block=10)
    rounds = result.details["round_objectives"]
    assert len(rounds) == 4 and result.details["blocks"].keys() == {"posterior", "hyperparameters", "likelihood"}
    assert rounds[0] < start and all(b <= a for a, b in zip(rounds, rounds[1:]))
    assert result.objective == pytest.approx(rounds[-1]) == pytest.approx(-m.elbo(), rel=1e-12)
    assert result.objective < start - 10
    # the objective is deterministic: the same fit again gives the same numbers
    again = SparseVariationalGP(X, y, kernels.SquaredExponential(), 6, "gaussian", estimator=estimator,
                                num_samples=300, seed=2).fit(max_iter=4, method="block-lbfgs", evals_per_block=10)
    assert again.details["round_objectives"] == rounds


def test_block_lbfgs_respects_fixed_blocks():
    X, y = regression_data(N=30)
    m = SparseVariationalGP(X, y, kernels.SquaredExponential(), 6, "gaussian")
    before = m.parameters
    result = m.fit(max_iter=2, method="block-lbfgs", evals_per_block=5, fixed=("kernel", "inducing"))
    assert set(result.details["blocks"]) == {"posterior", "likelihood"}
    assert m.parameters["kernel0.lengthscale"] == before["kernel0.lengthscale"]
    np.testing.assert_array_equal(m.parameters["feature0.Z"], before["feature0.Z"])


@pytest.mark.parametrize("estimator", ["quadrature", "reparam"])
def test_adam_with_minibatches_improves_the_full_elbo(estimator):
    rng = np.random.default_rng(3)
    X = rng.uniform(-3, 3, size=(100, 1))
    y = (np.sin(1.5 * X[:, 0]) > 0).astype(float)
    m = SparseVariationalGP(X, y, kernels.SquaredExponential(), 8, "bernoulli_logit", estimator=estimator,
                            num_samples=50, seed=0)
    start = m.elbo()
    result = m.fit(max_iter=150, method="adam", batch_size=20, learning_rate=0.05, trace_every=25, seed=1)
    assert result.details["batch_size"] == 20 and result.details["trace_objective"] == "full-data ELBO"
    assert len(result.trace) == 1 + 150 // 25
    assert m.elbo() > start + 10
    assert result.objective == pytest.approx(-m.elbo(), rel=1e-12)  # left at the best traced point
    assert m.error_rate(X, y) < 0.1


@pytest.mark.parametrize("method", ["lbfgs", "block-lbfgs", "adam"])
def test_the_callback_gets_trace_entries_and_cancels_the_fit(method):
    X, y = classification_data()
    seen = []

    def cancel_at_three(entry):
        seen.append(entry)
        return len(seen) == 3

    m = SparseVariationalGP(X, y, kernels.SquaredExponential(), 6, "bernoulli_logit")
    result = m.fit(max_iter=50, method=method, callback=cancel_at_three, trace_every=1, evals_per_block=5)
    assert len(seen) == 3 and all(isinstance(e, TraceEntry) for e in seen)
    assert result.trace[1:4] == seen and len(result.trace) <= 5
    assert not result.success and result.details["stopped"] and "callback" in result.message
    assert result.objective == pytest.approx(-m.elbo(), rel=1e-12)


@pytest.mark.parametrize("method", ["lbfgs", "block-lbfgs", "adam"])
@pytest.mark.parametrize("estimator", ["quadrature", "score"])
def test_trace_terms_are_the_three_elbo_terms_and_sum_to_the_objective(method, estimator):
    X, y = classification_data(N=30)
    m = SparseVariationalGP(X, y, kernels.SquaredExponential(), 5, "bernoulli_logit", posterior="mog2",
                            estimator=estimator, num_samples=200)
    result = m.fit(max_iter=3, method=method, evals_per_block=5, trace_every=1)
    assert result.objective == pytest.approx(min(e.objective for e in result.trace))
    for e in result.trace:
        assert set(e.terms) == {"neg_ell", "neg_entropy", "neg_cross"}
        assert sum(e.terms.values()) == pytest.approx(e.objective, rel=1e-12)
        assert set(e.params) == set(m.parameters)
    # the traced objective is the quadrature ELBO, also for the score estimator (its L-BFGS value)
    assert result.details["objective"] == "quadrature"
    q = SparseVariationalGP(X, y, kernels.SquaredExponential(), 5, "bernoulli_logit", posterior="mog2")
    last = result.trace[-1]
    q.set_parameters(**last.params)
    r = q.evaluate()
    assert -last.objective == pytest.approx(r.value, rel=1e-10)
    assert -last.terms["neg_entropy"] == pytest.approx(r.terms["entropy"])


def test_restarts_and_the_fit_convention():
    X, y = regression_data(N=30)
    m = SparseVariationalGP(X, y, kernels.SquaredExponential(), 5, "gaussian")
    result = m.fit(max_iter=15, restarts=2, seed=0)
    assert [r["start"] for r in result.restarts] == [0, 1, 2]
    assert result.objective == min(r["objective"] for r in result.restarts)
    assert result.objective == pytest.approx(-m.elbo(), rel=1e-12)
    assert set(m.parameter_specs) == set(m.parameters)
    m.set_bounds(**{"kernel0.lengthscale": (0.5, 0.6)})
    m.fit(max_iter=20)
    assert 0.5 * (1 - 1e-12) <= m.parameters["kernel0.lengthscale"] <= 0.6 * (1 + 1e-12)
    with pytest.raises(ValueError, match="cannot bound"):
        m.set_bounds(**{"feature0.Z": (0, 1)})


@pytest.mark.parametrize("posterior", ["fg", "mog2"])
def test_gaussian_predict_y_and_log_density_are_the_closed_forms(posterior):
    X, y = regression_data(N=30)
    m = SparseVariationalGP(X, y, kernels.SquaredExponential(), 6, "gaussian", likelihood_options={"variance": 0.1},
                            posterior=posterior)
    m.fit(max_iter=100)
    randomised(m, scale=0.05)
    Xs = np.linspace(-3.5, 3.5, 13)[:, None]
    noise = m.likelihood.variance
    mean, var = m.predict_f(Xs)
    ym, yv = m.predict_y(Xs)
    np.testing.assert_allclose(ym, mean, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(yv, var + noise, rtol=1e-10)
    ys = np.sin(2 * Xs[:, 0]) + 0.4
    pi, means, variances = m.predict_components(Xs)
    log_parts = stats.norm.logpdf(ys, means[..., 0], np.sqrt(variances[..., 0] + noise))
    exact = special.logsumexp(np.log(pi)[:, None] + log_parts, axis=0)
    np.testing.assert_allclose(m.predict_log_density(Xs, ys), exact, rtol=1e-8, atol=1e-9)
    if posterior == "fg":
        np.testing.assert_allclose(exact, stats.norm.logpdf(ys, mean[:, 0], np.sqrt(var[:, 0] + noise)), rtol=1e-12)
        assert m.nlpd(Xs, ys) == pytest.approx(metrics.nlpd(ys, ym, yv), rel=1e-8)
    assert m.sse(Xs, ys) == pytest.approx(metrics.smse(ys, ym), rel=1e-12)


def test_bernoulli_predictive_probability_against_monte_carlo_and_the_probit_closed_form():
    X, y = classification_data()
    for name in ("bernoulli_logit", "bernoulli_probit"):
        m = randomised(SparseVariationalGP(X, y, kernels.SquaredExponential(), 6, name, posterior="mog2"), scale=0.5)
        Xs = np.linspace(-3, 3, 9)[:, None]
        p1 = m.predict_class_probabilities(Xs)
        assert p1.shape == (9, 2) and np.allclose(p1.sum(axis=1), 1.0)
        pi, means, var = m.predict_components(Xs)
        rng = np.random.default_rng(0)
        S = 200_000
        comp = rng.choice(len(pi), size=S, p=pi)
        f = means[comp, :, 0] + np.sqrt(var[comp, :, 0]) * rng.standard_normal((S, 9))
        link = special.expit if name == "bernoulli_logit" else special.ndtr
        mc = link(f)
        np.testing.assert_allclose(p1[:, 1], mc.mean(axis=0), atol=4 * mc.std(axis=0).max() / np.sqrt(S))
        if name == "bernoulli_probit":  # E[Phi(f)] = sum_k pi_k Phi(b_k / sqrt(1 + sigma_k^2)), exactly
            exact = pi @ special.ndtr(means[..., 0] / np.sqrt(1 + var[..., 0]))
            np.testing.assert_allclose(p1[:, 1], exact, rtol=1e-9)
        assert np.exp(m.predict_log_density(Xs, np.zeros(9))) == pytest.approx(p1[:, 0], rel=1e-7)
        labels = (Xs[:, 0] > 0).astype(float)
        assert m.nlpd(Xs, labels) == pytest.approx(metrics.nlp(labels, p1[:, 1]), rel=1e-8)


def test_error_rate_on_a_separable_set_is_zero():
    rng = np.random.default_rng(5)
    X = np.concatenate([rng.uniform(-3, -0.5, 30), rng.uniform(0.5, 3, 30)])[:, None]
    y = (X[:, 0] > 0).astype(float)
    m = SparseVariationalGP(X, y, kernels.SquaredExponential(), 6, "bernoulli_logit")
    m.fit(max_iter=100)
    Xs = np.array([[-2.5], [-1.0], [-0.6], [0.6], [1.0], [2.5]])
    assert m.error_rate(X, y) == 0.0
    assert m.error_rate(Xs, (Xs[:, 0] > 0).astype(float)) == 0.0
    assert m.error_rate(Xs, (Xs[:, 0] < 0).astype(float)) == 1.0


def test_softmax_class_probabilities_and_error_rate():
    rng = np.random.default_rng(0)
    X = rng.uniform(-3, 3, size=(45, 1))
    y = np.digitize(X[:, 0], [-1.0, 1.0]).astype(float)
    m = SparseVariationalGP(X, y, kernels.SquaredExponential(), 5, "softmax", likelihood_options={"n_classes": 3},
                            posterior="fg", estimator="reparam", num_samples=100)
    m.fit(max_iter=3, method="block-lbfgs", evals_per_block=10)
    p = m.predict_class_probabilities(X)
    assert p.shape == (45, 3) and np.allclose(p.sum(axis=1), 1.0)
    assert m.error_rate(X, y) == pytest.approx(np.mean(np.argmax(p, axis=1) != y))
    assert m.error_rate(X, y) < 0.3
    picked = p[np.arange(45), y.astype(int)]
    np.testing.assert_allclose(np.exp(m.predict_log_density(X, y)), picked, rtol=1e-3)


@pytest.mark.parametrize("posterior", ["fg", "mog2"])
def test_poisson_predict_y_is_the_lognormal_closed_form(posterior):
    rng = np.random.default_rng(2)
    X = np.linspace(0, 10, 40)[:, None]
    counts = rng.poisson(2.0 * np.exp(np.sin(X[:, 0]) - 0.3)).astype(float)
    m = randomised(SparseVariationalGP(X, counts, kernels.SquaredExponential(lengthscale=2.0), 6, "poisson",
                                       likelihood_options={"offset": -0.3, "binsize": 2.0}, posterior=posterior),
                   scale=0.2)
    Xs = np.linspace(-1, 11, 9)[:, None]
    pi, means, var = m.predict_components(Xs)
    b, v = means[..., 0], var[..., 0]
    first = 2.0 * np.exp(b + v / 2 - 0.3)  # E[lambda] per component
    second = first + 4.0 * np.exp(2 * b + 2 * v - 0.6)  # E[Var[y|f]] + E[E[y|f]^2] = E[lambda] + E[lambda^2]
    mean = pi @ first
    ym, yv = m.predict_y(Xs)
    np.testing.assert_allclose(ym[:, 0], mean, rtol=1e-9)
    np.testing.assert_allclose(yv[:, 0], pi @ second - mean ** 2, rtol=1e-8)
    if posterior == "fg":
        f_mean, f_var = m.predict_f(Xs)
        np.testing.assert_allclose(ym[:, 0], 2.0 * np.exp(f_mean[:, 0] + f_var[:, 0] / 2 - 0.3), rtol=1e-9)


def test_bad_inputs_raise_value_errors():
    X, y = classification_data(N=20)
    m = SparseVariationalGP(X, y, kernels.SquaredExponential(), 4, "bernoulli_logit")
    for kwargs, match in [({"max_iter": 0}, "max_iter"), ({"max_iter": -3}, "max_iter"),
                          ({"method": "newton"}, "method"), ({"method": "adam", "batch_size": 21}, "batch_size"),
                          ({"method": "adam", "batch_size": 0}, "batch_size"),
                          ({"method": "lbfgs", "batch_size": 10}, "batch_size"),
                          ({"method": "adam", "learning_rate": 0.0}, "learning_rate"),
                          ({"restarts": -1}, "restarts"), ({"evals_per_block": 0}, "evals_per_block"),
                          ({"fixed": ("nonsense",)}, "cannot fix")]:
        with pytest.raises(ValueError, match=match):
            m.fit(**{"max_iter": 5, **kwargs})
    with pytest.raises(ValueError, match="rows"):
        m.predict_log_density(X[:3], y[:4])
    with pytest.raises(ValueError, match="column"):
        m.predict_y(np.zeros((3, 2)))
    with pytest.raises(ValueError, match="labels"):
        m.error_rate(X[:3], [0.0, 2.0, 1.0])
    g = SparseVariationalGP(X, np.sin(X[:, 0]), kernels.SquaredExponential(), 4, "gaussian")
    with pytest.raises(ValueError, match="classification"):
        g.predict_class_probabilities(X)
    with pytest.raises(ValueError, match="classification"):
        g.error_rate(X, y)


def test_many_classes_use_monte_carlo_and_the_score_line_search_warns():
    rng = np.random.default_rng(1)
    X = rng.uniform(-3, 3, size=(16, 1))
    y = np.digitize(X[:, 0], [-1.5, 0.0, 1.5]).astype(float)
    m = SparseVariationalGP(X, y, kernels.SquaredExponential(), 3, "softmax", likelihood_options={"n_classes": 4},
                            estimator="score", num_samples=50)
    with pytest.warns(RuntimeWarning, match="score gradient"):
        result = m.fit(max_iter=2)
    assert result.details["objective"].startswith("monte-carlo")
    assert result.objective == pytest.approx(-m.elbo(), rel=1e-12)  # the fixed-eps value
    p = m.predict_class_probabilities(X, num_samples=4000, seed=3)
    assert p.shape == (16, 4) and np.allclose(p.sum(axis=1), 1.0)
    again = m.predict_class_probabilities(X, num_samples=4000, seed=3)
    np.testing.assert_array_equal(p, again)  # seeded
    ym, yv = m.predict_y(X, num_samples=500)
    assert ym.shape == yv.shape == (16, 1) and np.all(yv >= 0)


@pytest.mark.parametrize("posterior", ["fg", "mog2"])
def test_the_minibatch_elbo_gradient_matches_finite_differences(posterior):
    from gpexplorer.variational.fitting import batch_elbo

    X, y = regression_data(N=24)
    m = randomised(SparseVariationalGP(X, y, kernels.SquaredExponential(), 4, "gaussian", posterior=posterior))
    rows = np.array([1, 5, 6, 11, 20])
    full_value, full_grads = batch_elbo(m, np.arange(24), None)
    assert full_value == pytest.approx(m.elbo(), rel=1e-12)
    value, grads = batch_elbo(m, rows, None)
    r = m.evaluate()
    assert value == pytest.approx(24 / 5 * m.evaluate().estimate.value[:, rows].sum(axis=1) @ m.posterior.pi
                                  + r.terms["entropy"] + r.terms["cross"], rel=1e-12)
    h = 1e-6
    for name in ("kernel0.lengthscale", "likelihood.variance"):
        v0 = m.parameters[name]
        m.set_parameters(**{name: v0 + h})
        up = batch_elbo(m, rows, None)[0]
        m.set_parameters(**{name: v0 - h})
        down = batch_elbo(m, rows, None)[0]
        m.set_parameters(**{name: v0})
        assert grads[name] == pytest.approx((up - down) / (2 * h), rel=1e-5, abs=1e-6)
    free = m.posterior.free.copy()
    for i in (0, 3, len(free) - 1):
        e = np.zeros_like(free)
        e[i] = h
        m.posterior.set_free(free + e)
        up = batch_elbo(m, rows, None)[0]
        m.posterior.set_free(free - e)
        down = batch_elbo(m, rows, None)[0]
        m.posterior.set_free(free)
        assert grads["posterior"][i] == pytest.approx((up - down) / (2 * h), rel=1e-5, abs=1e-6)
    Z = m.parameters["feature0.Z"]
    dZ = np.zeros_like(Z)
    dZ[2, 0] = h
    up = batch_elbo(m.set_parameters(**{"feature0.Z": Z + dZ}), rows, None)[0]
    down = batch_elbo(m.set_parameters(**{"feature0.Z": Z - dZ}), rows, None)[0]
    m.set_parameters(**{"feature0.Z": Z})
    assert grads["feature0.Z"][2, 0] == pytest.approx((up - down) / (2 * h), rel=1e-5, abs=1e-6)
