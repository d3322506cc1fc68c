"""EKS / UKS (gpexplorer.linearized.kitchen_sinks) against exact Bayesian linear regression, the plain-numpy
reference (tests/reference_kitchen_sinks.py), finite differences and the full-GP EGP/UGP."""

import math

import numpy as np
import pytest
from scipy import stats

import reference_kitchen_sinks as ref
from gpexplorer import kernels
from gpexplorer.likelihoods.forward_models import get_forward_model
from gpexplorer.linearized.kitchen_sinks import LinearizedKitchenSinks
from gpexplorer.optimize import TraceEntry

LINEARIZATIONS = ["taylor", "unscented"]


def _sin_data(n=40, seed=0, noise=0.1):
    rng = np.random.default_rng(seed)
    X = np.sort(rng.uniform(-4, 4, n))[:, None]
    f = np.sin(0.9 * X[:, 0]) + 0.3 * np.cos(2.1 * X[:, 0])
    return X, f, np.sin(f) + noise * rng.standard_normal(n)


def _multitask_problem(name, n=22, seed=1):
    """(X, Y, options, weight variances, noise variances) for a 3-class softmax or a 2-layer seismic model."""
    rng = np.random.default_rng(seed)
    X = rng.uniform(-2, 2, size=(n, 2))
    if name == "softmax":
        F = 2 * np.stack([np.sin(X[:, 0]), np.cos(X[:, 1]), 0.5 * X[:, 0]], 1)
        probs = get_forward_model("softmax", n_classes=3).value(F)
        Y = np.eye(3)[[rng.choice(3, p=p) for p in probs]]
        return X, Y, {"n_classes": 3}, np.array([1.0, 0.7, 1.3]), np.array([0.05])
    options = {"n_layers": 2, "depth_offset": [1.0, 2.5], "velocity_offset": [2.0, 3.0]}
    F = np.stack([0.2 * np.sin(X[:, 0]), 0.3 * np.cos(X[:, 1]), 0.2 * X[:, 0], 0.1 * X[:, 1]], 1)
    Y = get_forward_model("seismic", **options).value(F) + 0.1 * rng.standard_normal((n, 2))
    return X, Y, options, np.array([0.05, 0.08, 0.1, 0.06]), np.array([0.01, 0.02])


# --- exact limit: g = identity ---------------------------------------------------------------
@pytest.mark.parametrize("linearization", LINEARIZATIONS)
@pytest.mark.parametrize("n_features", [16, 60])  # primal (D < N) and dual (D > N) factorisations
def test_identity_is_exact_bayesian_linear_regression(linearization, n_features):
    rng = np.random.default_rng(2)
    X = rng.uniform(-3, 3, size=(30, 1))
    c, w2, s2 = 0.3, 0.8, 0.05
    y = c + np.sin(X[:, 0]) + np.sqrt(s2) * rng.standard_normal(30)
    m = LinearizedKitchenSinks(X, y, forward="identity", linearization=linearization, n_features=n_features,
                               kernel="se", lengthscale=1.2, weight_variance=w2, noise_variance=s2, prior_mean=c)
    m.fit_posterior()
    Phi = m.features(X)
    precision = np.eye(n_features) / w2 + Phi.T @ Phi / s2
    mean = np.linalg.solve(precision, Phi.T @ (y - c) / s2)
    np.testing.assert_allclose(m.posterior_mean[0], mean, rtol=1e-8, atol=1e-10)
    np.testing.assert_allclose(m.posterior_covariance(0), np.linalg.inv(precision), rtol=1e-7, atol=1e-10)
    # eq. 20 is the exact log marginal likelihood of y ~ N(c, w2 Phi Phi^T + s2 I)
    exact = stats.multivariate_normal(mean=np.full(30, c), cov=w2 * Phi @ Phi.T + s2 * np.eye(30)).logpdf(y)
    assert m.free_energy() == pytest.approx(exact, rel=1e-10, abs=1e-8)
    # predictions eq. 35-36 at new points
    Xs = np.linspace(-4, 4, 9)[:, None]
    Ps = m.features(Xs)
    mf, vf = m.predict_f(Xs)
    np.testing.assert_allclose(mf[:, 0], c + Ps @ mean, rtol=1e-8, atol=1e-10)
    np.testing.assert_allclose(vf[:, 0], np.einsum("nd,dk,nk->n", Ps, np.linalg.inv(precision), Ps),
                               rtol=1e-6, atol=1e-12)
    # the linearisation is exact, so one full Newton step reaches the optimum
    assert [r.status for r in m.trace] == ["start", "accepted"]
    assert m.trace[1].alpha == 1.0 and m.converged


# --- the fast code against the literal transcription ------------------------------------------
@pytest.mark.parametrize("linearization", LINEARIZATIONS)
@pytest.mark.parametrize("problem", ["softmax", "seismic"])
@pytest.mark.parametrize("newton_step,n_features", [("coupled", 12), ("per_task", 12), ("coupled", 40)])
def test_fast_code_matches_the_reference(problem, linearization, newton_step, n_features):
    X, Y, options, w2, s2 = _multitask_problem(problem)
    m = LinearizedKitchenSinks(X, Y, forward=problem, linearization=linearization, n_features=n_features,
                               kernel="matern52", lengthscale=[1.0, 1.5], weight_variance=w2, noise_variance=s2,
                               tol=1e-12, max_iter=15, newton_step=newton_step, **options)
    m.fit_posterior()
    forward = get_forward_model(problem, **options)
    r = ref.fit(X, Y, forward, m.features.frequencies, m.weight_variance, m.noise_variance, method=linearization,
                tol=1e-12, max_iter=15, newton_step=newton_step)
    np.testing.assert_allclose(m.features(X), r["Phi"], atol=1e-13)
    assert [t.status for t in m.trace] == r["statuses"]
    np.testing.assert_allclose([t.map_objective for t in m.trace], r["objectives"], rtol=1e-9)
    np.testing.assert_allclose(m.posterior_mean, r["M"], rtol=1e-7, atol=1e-9)
    for q in range(m.n_latent):
        np.testing.assert_allclose(m.posterior_covariance(q), r["C"][q], rtol=1e-7, atol=1e-10)
    assert m.free_energy() == pytest.approx(ref.free_energy_eq20(Y, r, m.noise_variance, m.weight_variance),
                                            rel=1e-9)
    # eq. 20 is eq. 15 - eq. 12 once C_q is eq. 19's (the trace terms cancel, section 4.4)
    assert ref.free_energy_eq20(Y, r, m.noise_variance, m.weight_variance) == pytest.approx(
        ref.elbo_eq11(Y, r, m.noise_variance, m.weight_variance), rel=1e-10)
    Xs = np.random.default_rng(9).uniform(-2, 2, size=(7, 2))
    mean, var = m.predict_f(Xs)
    ref_mean, ref_var = ref.predict_f(Xs, m.features.frequencies, r)
    np.testing.assert_allclose(mean, ref_mean, rtol=1e-7, atol=1e-9)
    np.testing.assert_allclose(var, ref_var, rtol=1e-6, atol=1e-10)
    # the unfactorised ("coupled") variances: dense inverse of the all-task Gauss-Newton precision
    coupled_mean, coupled_var = m.predict_f(Xs, covariance="coupled")
    np.testing.assert_array_equal(coupled_mean, mean)
    np.testing.assert_allclose(coupled_var, ref.coupled_predict_var(Xs, m.features.frequencies, r, m.noise_variance,
                                                                    m.weight_variance), rtol=1e-6, atol=1e-10)


def test_coupled_steps_converge_much_faster_than_per_task_steps_on_seismic():
    X, Y, options, w2, s2 = _multitask_problem("seismic")
    runs = {}
    for step in ("coupled", "per_task"):
        m = LinearizedKitchenSinks(X, Y, forward="seismic", n_features=12, lengthscale=[1.0, 1.5],
                                   weight_variance=w2, noise_variance=s2, tol=1e-10, max_iter=60,
                                   newton_step=step, **options)
        runs[step] = m.fit_posterior()
    assert runs["coupled"].converged and len(runs["coupled"].trace) <= 12
    assert len(runs["per_task"].trace) > 3 * len(runs["coupled"].trace)
    # both head for the same fixed point; per-task steps have not reached it after 60 iterations
    gap = runs["coupled"].map_objective() - runs["per_task"].map_objective()
    assert 0.0 <= gap < 1e-2


# --- the Newton loop -------------------------------------------------------------------------
@pytest.mark.parametrize("forward,linearization", [("poly3", "taylor"), ("poly3", "unscented"),
                                                   ("tanh2", "taylor"), ("tanh2", "unscented"),
                                                   ("sign_cubic", "unscented"), ("exp", "unscented")])
def test_map_objective_never_decreases(forward, linearization):
    rng = np.random.default_rng(4)
    X = np.sort(rng.uniform(-5, 5, 60))[:, None]
    f = 1.2 * np.sin(X[:, 0])
    y = get_forward_model(forward).value(f[:, None])[:, 0] + 0.2 * rng.standard_normal(60)
    m = LinearizedKitchenSinks(X, y, forward=forward, linearization=linearization, n_features=30, lengthscale=0.8,
                               weight_variance=1.0, noise_variance=0.04).fit_posterior()
    values = np.array([t.map_objective for t in m.trace])
    assert m.trace[0].status == "start" and len(m.trace) >= 3
    assert np.all(np.diff(values) >= 0.0)
    assert m.map_objective() == values[-1]  # the kept mean is the last good one
    for t in m.trace[1:]:
        assert 0 <= t.step_cuts <= m.max_cuts and t.alpha == pytest.approx(0.5 ** t.step_cuts)


def test_diverge_keeps_the_last_good_mean():
    """poly3 with a far-off start needs step cuts; with none allowed the search stops as 'diverged'."""
    X, f, _ = _sin_data(50, seed=3)
    y = get_forward_model("poly3").value(2.5 * f[:, None])[:, 0]
    free = LinearizedKitchenSinks(X, y, forward="poly3", n_features=20, lengthscale=1.0, weight_variance=4.0,
                                  noise_variance=0.01).fit_posterior()
    assert any(t.step_cuts > 0 for t in free.trace)
    m = LinearizedKitchenSinks(X, y, forward="poly3", n_features=20, lengthscale=1.0, weight_variance=4.0,
                               noise_variance=0.01, max_cuts=0).fit_posterior()
    assert m.diverged and m.trace[-1].status == "diverged"
    assert m.trace[-1].map_objective == m.trace[-2].map_objective == m.map_objective()
    assert all(t.status == "accepted" for t in m.trace[1:-1])


def test_gradient_matches_finite_differences_of_the_map_objective():
    """For the Taylor linearisation eq. 17 (full residual) is the exact gradient of the MAP objective
    (EGP eq. 31), including the cross-task terms; at the EKS fixed point it vanishes."""
    X, Y, options, w2, s2 = _multitask_problem("seismic")
    m = LinearizedKitchenSinks(X, Y, forward="seismic", n_features=10, lengthscale=[1.0, 1.5], weight_variance=w2,
                               noise_variance=s2, tol=1e-12, **options)
    M = np.random.default_rng(5).normal(scale=0.05, size=m.posterior_mean.shape)
    grad = m._linearized_gradient(m._linearize(M, None), M)
    h = 1e-6
    fd = np.zeros_like(M)
    for idx in np.ndindex(*M.shape):
        E = np.zeros_like(M)
        E[idx] = h
        fd[idx] = (m._map_objective(M + E) - m._map_objective(M - E)) / (2 * h)
    np.testing.assert_allclose(grad, fd, rtol=1e-6, atol=1e-6 * np.abs(fd).max())
    m.fit_posterior()
    M = m.posterior_mean
    assert np.abs(m._linearized_gradient(m._linearize(M, None), M)).max() < 1e-5 * np.abs(fd).max()


def test_warm_start_resumes_at_the_fixed_point():
    X, _, y = _sin_data()
    m = LinearizedKitchenSinks(X, y, forward="sin", n_features=24, lengthscale=1.0, noise_variance=0.01,
                               tol=1e-10).fit_posterior()
    M, F = m.posterior_mean.copy(), m.free_energy()
    m.fit_posterior(warm_start=True)
    assert len(m.trace) <= 2  # converged at once (at most one rounding-level step)
    np.testing.assert_allclose(m.posterior_mean, M, atol=1e-6)
    assert m.free_energy() == pytest.approx(F, abs=1e-6)


@pytest.mark.parametrize("n_features", [16, 60])
def test_blas_threads_follow_the_dense_work_of_the_form_used(monkeypatch, n_features):
    """The thread decision sees N D min(N, D) flops: with D > N the dual N x N form is used, whose
    work is N^2 D, not N D^2 (which had a 200-point, D = 400 UKS fit run threaded BLAS on tiny
    matrices: 5.1 s against 1.0 s single-threaded, interleaved medians on a loaded 2-core machine)."""
    from gpexplorer.linearized import kitchen_sinks

    seen = []
    real = kitchen_sinks.threads_for
    monkeypatch.setattr(kitchen_sinks, "threads_for", lambda work: seen.append(work) or real(work))
    X, _, y = _sin_data(30)
    LinearizedKitchenSinks(X, y, forward="sin", n_features=n_features).fit_posterior()
    assert seen == [30 * n_features * min(30, n_features)]


# --- factorised (eq. 36) against coupled variances --------------------------------------------
@pytest.mark.parametrize("linearization", LINEARIZATIONS)
def test_coupled_variances_equal_eq36_for_one_task(linearization):
    X, _, y = _sin_data(40)
    m = LinearizedKitchenSinks(X, y, forward="sin", linearization=linearization, n_features=24, lengthscale=1.0,
                               noise_variance=0.02).fit_posterior()
    Xs = np.linspace(-5, 5, 11)[:, None]
    np.testing.assert_allclose(m.predict_f(Xs, covariance="coupled")[1], m.predict_f(Xs)[1], rtol=1e-7, atol=1e-12)


def test_factorised_variances_understate_the_coupled_ones_when_tasks_trade_off():
    """Seismic: only thickness / velocity is observed. The factorised C_q (eq. 19) hold the other
    tasks fixed, so their variances are conditional ones, never above the coupled marginals and
    here several times smaller; without observations both are the prior's."""
    X, Y, options, w2, s2 = _multitask_problem("seismic", n=40)
    m = LinearizedKitchenSinks(X, Y, forward="seismic", n_features=16, lengthscale=[1.0, 1.5], weight_variance=w2,
                               noise_variance=[1e-5, 1e-5], **options).fit_posterior()
    Xs = X[:10]
    factorised, coupled = m.predict_f(Xs)[1], m.predict_f(Xs, covariance="coupled")[1]
    assert np.all(factorised <= coupled * (1 + 1e-9))
    assert np.median(coupled / factorised) > 4.0
    prior = np.outer(np.sum(m.features(Xs) ** 2, axis=1), m.weight_variance)
    assert np.all(coupled <= prior * (1 + 1e-9))
    with pytest.raises(ValueError, match="covariance"):
        m.predict_f(Xs, covariance="full")


# --- against the full-GP EGP / UGP -----------------------------------------------------------
class _FeatureKernel(kernels.Kernel):
    """The degenerate kernel variance * phi(x)^T phi(x') of a feature map (the EKS prior on f)."""

    param_names = ("variance",)

    def __init__(self, features, variance):
        self.features, self.variance = features, variance

    def K(self, X, X2=None):
        P1 = self.features(X)
        return self.variance * P1 @ (P1 if X2 is None else self.features(X2)).T

    def Kdiag(self, X):
        P = self.features(X)
        return self.variance * np.sum(P * P, axis=1)


@pytest.mark.parametrize("linearization", LINEARIZATIONS)
def test_eks_is_the_egp_with_the_feature_kernel(linearization):
    """f = Phi w, w ~ N(0, omega^2 I) is the GP with kernel omega^2 phi phi^T: EKS/UKS and EGP/UGP
    with that kernel are the same model and the same iteration, so they agree to rounding."""
    from gpexplorer.linearized.gp import LinearizedGP

    X, _, y = _sin_data(50)
    m = LinearizedKitchenSinks(X, y, forward="sin", linearization=linearization, n_features=30, kernel="matern52",
                               lengthscale=1.5, weight_variance=1.3, noise_variance=0.01, tol=1e-12).fit_posterior()
    gp = LinearizedGP(X, y, forward="sin", linearization=linearization, kernel=_FeatureKernel(m.features, 1.3),
                      noise_variance=0.01, tol=1e-12, step_shrink=0.5, max_step_cuts=m.max_cuts)
    gp.fit_posterior()
    Xs = np.linspace(-5, 5, 31)[:, None]
    (mf, vf), (gf, gv) = m.predict_f(Xs), gp.predict_f(Xs)
    np.testing.assert_allclose(mf[:, 0], gf, atol=1e-8)
    np.testing.assert_allclose(vf[:, 0], gv, rtol=1e-5, atol=1e-8)
    assert m.free_energy() == pytest.approx(gp.free_energy(), abs=1e-4)
    np.testing.assert_allclose([t.map_objective for t in m.trace if t.accepted],
                               [t.map_objective for t in gp.trace if t.accepted][:sum(t.accepted for t in m.trace)],
                               rtol=1e-9)


@pytest.mark.slow
@pytest.mark.parametrize("linearization", LINEARIZATIONS)
def test_many_features_approach_the_full_gp(linearization):
    """With D = 2000 features EKS/UKS approach EGP/UGP with the exact Matern 5/2 kernel. The tolerance
    comes from the random-feature error itself: the same discrepancy for g = identity (features vs
    exact GP regression, same inputs, noise and kernel) sets the scale, and the nonlinear model may
    not be much worse; and the discrepancy must shrink from D = 100 to D = 2000."""
    from gpexplorer.linearized.gp import LinearizedGP
    from gpexplorer.models import ExactGPR

    X, f, y = _sin_data(60, seed=5, noise=0.2)
    noise = y - np.sin(f)
    kern = kernels.Matern52(variance=1.0, lengthscale=1.5)
    Xs = np.linspace(-4, 4, 41)[:, None]
    gp = LinearizedGP(X, y, forward="sin", linearization=linearization, kernel=kern, noise_variance=0.04)
    gp.fit_posterior()
    g_mean, g_var = gp.predict_f(Xs)
    e_mean, e_var = ExactGPR(X, f + noise, kern, noise_variance=0.04).predict_f(Xs)

    def discrepancies(D, seed):
        common = dict(n_features=D, kernel="matern52", lengthscale=1.5, weight_variance=1.0, noise_variance=0.04,
                      seed=seed)
        mf, vf = LinearizedKitchenSinks(X, y, forward="sin", linearization=linearization, **common).predict_f(Xs)
        lf, lv = LinearizedKitchenSinks(X, f + noise, forward="identity", **common).predict_f(Xs)
        return (np.abs(mf[:, 0] - g_mean).max(), np.abs(np.sqrt(vf[:, 0]) - np.sqrt(g_var)).max(),
                np.abs(lf[:, 0] - e_mean).max(), np.abs(np.sqrt(lv[:, 0]) - np.sqrt(e_var)).max())

    few = np.mean([discrepancies(100, s) for s in range(3)], axis=0)
    many = np.mean([discrepancies(2000, s) for s in range(3)], axis=0)
    mean_err, sd_err, lin_mean_err, lin_sd_err = many
    assert mean_err < 2.0 * lin_mean_err + 0.01
    assert sd_err < 2.0 * lin_sd_err + 0.02
    assert mean_err < 0.1 and sd_err < 0.05
    assert few[0] > 1.5 * mean_err and few[1] > 1.5 * sd_err


# --- hyperparameters -------------------------------------------------------------------------
@pytest.mark.parametrize("linearization", LINEARIZATIONS)
def test_hyperparameter_learning_increases_the_bound(linearization):
    X, _, y = _sin_data(60, seed=6)
    m = LinearizedKitchenSinks(X, y, forward="sin", linearization=linearization, n_features=30, lengthscale=3.0,
                               weight_variance=0.3, noise_variance=0.5)
    before = m.free_energy()
    result = m.fit(max_iter=80)
    assert -result.trace[0].objective == pytest.approx(before)
    assert -result.objective > before + 5.0
    assert m.free_energy() == pytest.approx(-result.objective, abs=1e-9)  # left at the best evaluation
    assert min(e.objective for e in result.trace) == pytest.approx(result.objective)
    assert m.noise_variance[0] < 0.2  # started at 0.5; the true noise variance is 0.01
    assert result.n_eval == len(result.trace) - 1 <= 80


def test_lengthscale_scan_escapes_the_ripple_the_local_search_ends_in():
    """EGP Table 1 sin problem (Matern 5/2 latent draw 0, fold 1), D = 200, start at 1.0: eq. 20 is
    rugged in the lengthscale and COBYQA alone stopped at l = 0.56, eq. 20 = -26.6 (NLPD f* 1.44);
    the scan finds the better basin near l = 0.25 (eq. 20 ~ -9.5, NLPD f* ~ -0.5)."""
    from gpexplorer.experiments import linearized_papers as lx
    from gpexplorer.datasets import toy_inversion
    from gpexplorer import metrics

    data = toy_inversion("sin", seed=0)
    train, test = lx.cv_folds(seed=0)[1]
    results = {}
    for scan in (False, True):
        m = lx.make_model("EKS", data.X[train], data.y[train], "sin", n_features=200, seed=1)
        fit = m.fit(scan_lengthscale=scan)
        mf, vf = m.predict_f(data.X[test])
        results[scan] = (fit, m.lengthscale, metrics.nlpd(data.f[test], mf[:, 0], vf[:, 0]))
    (plain, l_plain, nlpd_plain), (scanned, l_scan, nlpd_scan) = results[False], results[True]
    assert plain.details["scan_restarts"] == 0 and scanned.details["scan_restarts"] >= 1
    assert -scanned.objective > -plain.objective + 10.0, (plain.objective, scanned.objective)
    assert l_scan < 0.8 * l_plain
    assert nlpd_scan < nlpd_plain - 1.0
    # the scan starts after the same local search, so it can only add better points
    assert [e.objective for e in scanned.trace[:len(plain.trace)]] == [e.objective for e in plain.trace]
    assert scanned.n_eval <= 200


def test_scan_respects_the_budget_and_fixed_lengthscales():
    X, _, y = _sin_data(40, seed=8)
    m = LinearizedKitchenSinks(X, y, forward="sin", n_features=16, lengthscale=2.0, noise_variance=0.3)
    seen = []
    result = m.fit(max_iter=30, callback=lambda entry: seen.append(entry) and False)
    assert result.n_eval == len(seen) <= 30
    assert m.free_energy() == pytest.approx(-min(e.objective for e in result.trace), abs=1e-9)
    fixed = LinearizedKitchenSinks(X, y, forward="sin", n_features=16, lengthscale=2.0, noise_variance=0.3)
    result = fixed.fit(max_iter=60, fixed=("lengthscale",))
    assert fixed.lengthscale == 2.0 and result.details["scan_restarts"] == 0
    assert all(e.params["lengthscale"] == 2.0 for e in result.trace)


def test_fit_callback_sees_every_evaluation_and_can_stop_it():
    X, _, y = _sin_data(40, seed=7)
    m = LinearizedKitchenSinks(X, y, forward="sin", n_features=16, lengthscale=2.0, noise_variance=0.3)
    seen = []
    result = m.fit(callback=lambda entry: seen.append(entry) or len(seen) == 5)
    assert [e.iteration for e in seen] == [1, 2, 3, 4, 5] and all(isinstance(e, TraceEntry) for e in seen)
    assert result.n_eval == 5 and not result.success and "callback" in result.message
    assert result.trace[1:] == seen
    for e in seen:  # the terms of -eq. 20 add up to the objective
        assert e.terms and math.fsum(e.terms.values()) == pytest.approx(e.objective, rel=1e-12, abs=1e-9)
    assert m.free_energy() == pytest.approx(-min(e.objective for e in result.trace), abs=1e-9)


def test_fit_respects_fixed_and_tied_parameters():
    X, Y, options, w2, _ = _multitask_problem("seismic")
    m = LinearizedKitchenSinks(X, Y, forward="seismic", n_features=10, lengthscale=[1.0, 1.5], weight_variance=w2,
                               noise_variance=0.05, **options)  # scalar noise: one shared value
    before = m.free_energy()
    result = m.fit(max_iter=40, fixed=("lengthscale",))
    np.testing.assert_array_equal(m.lengthscale, [1.0, 1.5])
    assert m.noise_variance[0] == m.noise_variance[1] != 0.05
    assert len(set(m.weight_variance)) == 4  # given per task: learnt per task
    assert -result.objective >= before
    with pytest.raises(ValueError, match="unknown parameter"):
        m.fit(fixed=("kappa",))


def test_changing_the_lengthscale_rebuilds_the_features():
    X, _, y = _sin_data()
    m = LinearizedKitchenSinks(X, y, forward="sin", n_features=20, lengthscale=1.0)
    F1 = m.free_energy()
    m.set_parameters(lengthscale=2.0)
    np.testing.assert_allclose(m._Phi, m.features(X))
    other = LinearizedKitchenSinks(X, y, forward="sin", n_features=20, lengthscale=2.0)
    assert m.free_energy() == pytest.approx(other.free_energy(), abs=1e-6) and m.free_energy() != F1


# --- predictions -----------------------------------------------------------------------------
def test_predict_y_identity_is_the_latent_prediction_plus_noise():
    X, f, _ = _sin_data()
    m = LinearizedKitchenSinks(X, f, forward="identity", n_features=20, noise_variance=0.02)
    Xs = np.linspace(-3, 3, 5)[:, None]
    mf, vf = m.predict_f(Xs)
    my, vy = m.predict_y(Xs)
    np.testing.assert_allclose(my, mf, atol=1e-12)
    np.testing.assert_allclose(vy, vf + 0.02, atol=1e-12)


@pytest.mark.parametrize("forward", ["sin", "logistic"])
def test_unscented_and_monte_carlo_predictions_agree(forward):
    X, f, y = _sin_data()
    if forward == "logistic":
        y = (f > 0).astype(float)
    m = LinearizedKitchenSinks(X, y, forward=forward, linearization="unscented", n_features=20, lengthscale=1.0,
                               noise_variance=0.05, kappa=2.0)
    Xs = np.linspace(-6, 6, 7)[:, None]  # inside and outside the data: small and large latent variance
    mf, vf = m.predict_f(Xs)
    S = 40000
    mc_mean, mc_var = m.predict_y(Xs, method="monte_carlo", num_samples=S, seed=1)
    # Monte Carlo against an independent numpy estimate of E[g(f*)] with its own error bar
    g = get_forward_model(forward)
    draws = g.value(mf[:, 0] + np.sqrt(vf[:, 0]) * np.random.default_rng(2).standard_normal((S, 7)))
    sem = draws.std(axis=0) / np.sqrt(S)
    assert np.all(np.abs(mc_mean[:, 0] - draws.mean(axis=0)) < 6 * sem + 1e-12)
    assert np.all(np.abs(mc_var[:, 0] - 0.05 - draws.var(axis=0)) < 0.05 * draws.var(axis=0) + 1e-9)
    # the unscented transform with kappa = 2 (Q + kappa = 3) matches the Gaussian's 4th moment: close
    ut_mean, ut_var = m.predict_y(Xs, method="unscented")
    np.testing.assert_allclose(ut_mean, mc_mean, atol=0.03)
    np.testing.assert_allclose(ut_var, mc_var, atol=0.03)
    if forward == "logistic":  # predict_y's mean is the class probability
        assert np.all((mc_mean > 0) & (mc_mean < 1))


def test_softmax_predictions_are_probabilities():
    X, Y, options, w2, s2 = _multitask_problem("softmax")
    m = LinearizedKitchenSinks(X, Y, forward="softmax", n_features=12, weight_variance=w2, noise_variance=s2,
                               **options)
    mean, var = m.predict_y(X[:5], method="unscented")
    np.testing.assert_allclose(mean.sum(axis=1), 1.0, atol=1e-12)
    assert mean.shape == var.shape == (5, 3) and np.all(var >= s2)
    mc, _ = m.predict_y(X[:5], method="monte_carlo", num_samples=200)
    np.testing.assert_allclose(mc.sum(axis=1), 1.0, atol=1e-12)


# --- bad input -------------------------------------------------------------------------------
@pytest.mark.parametrize("kwargs,match", [
    (dict(X=[[np.nan]] * 3), "NaN"),
    (dict(Y=[1.0, np.inf, 0.0]), "NaN or infinite"),
    (dict(X=np.zeros((0, 1)), Y=np.zeros(0)), "non-empty"),
    (dict(Y=[1.0, 2.0]), "rows"),
    (dict(Y=np.zeros((3, 2))), r"shape \(N, 1\)"),
    (dict(forward="softmax", n_classes=3), r"shape \(N, 3\)"),
    (dict(forward="sign_cubic"), "not differentiable"),
    (dict(linearization="laplace"), "linearization"),
    (dict(n_features=7), "even"),
    (dict(kernel="cosine"), "unknown kernel"),
    (dict(noise_variance=-1.0), "positive"),
    (dict(noise_variance=[0.1, 0.2]), "1 entries"),
    (dict(weight_variance=1e20), "outside"),
    (dict(lengthscale=[1.0, 2.0]), "1 entries"),
    (dict(kappa=-1.0), "kappa"),
    (dict(max_iter=0), "max_iter"),
    (dict(tol=-1.0), "tol"),
    (dict(newton_step="full"), "newton_step"),
    (dict(forward="nonexistent_model"), "unknown forward model"),
])
def test_bad_construction_is_refused(kwargs, match):
    args = dict(X=[[0.0], [1.0], [2.0]], Y=[0.0, 1.0, 0.5], forward="sin")
    args.update(kwargs)
    with pytest.raises(ValueError, match=match):
        LinearizedKitchenSinks(args.pop("X"), args.pop("Y"), **args)


def test_bad_prediction_and_fit_arguments_are_refused():
    m = LinearizedKitchenSinks([[0.0], [1.0], [2.0]], [0.0, 1.0, 0.5], forward="sin", n_features=4)
    with pytest.raises(ValueError, match=r"shape \(N\*, 1\)"):
        m.predict_f(np.zeros((2, 2)))
    with pytest.raises(ValueError, match="NaN"):
        m.predict_f([[np.nan]])
    with pytest.raises(ValueError, match="method"):
        m.predict_y([[0.0]], method="quadrature")
    with pytest.raises(ValueError, match="num_samples"):
        m.predict_y([[0.0]], method="monte_carlo", num_samples=1)
    with pytest.raises(ValueError, match="method"):
        m.fit(method="bfgs")
    with pytest.raises(ValueError, match="task index"):
        m.posterior_covariance(3)
    with pytest.raises(ValueError, match="unknown parameter"):
        m.set_parameters(variance=2.0)


def test_a_failed_factorisation_retries_with_jitter_on_the_matrix_itself():
    """LAPACK leaves a failed Cholesky's partial factor in its input; the jittered retry must start
    from the matrix (on this machine's rounding the seismic Newton system took that path and, retried
    on the debris, failed at any jitter)."""
    import warnings

    from gpexplorer.linearized.kitchen_sinks_algebra import _cholesky

    G = np.array([[1.0, 0.0, 0.0], [1.0, 1.0 - 1e-12, 0.0], [0.5, 0.5, 2.0]])  # lower triangle; singular to 1e-12
    full = np.tril(G) + np.tril(G, -1).T
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        L = _cholesky(np.asfortranarray(G), "a test matrix")  # Fortran order, as dsyrk makes it: LAPACK works in place
    assert np.max(np.abs(L @ L.T - full)) < 1e-6  # a small jitter, not a factor of something else
