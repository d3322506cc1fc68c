"""The linearised comparison back end (gpexplorer.linearized.comparison) on plain data, no UI.

Numerical checks against plain numpy written here: with g(f) = f EGP and UGP are exact GP
regression (EGP paper section 3); the close-up's lines are the linearisations of eq. 36 (tangent,
by central differences) and eq. 37 (literal sigma-point regression); the predicted y of eq. 39
matches the closed-form moments of sin(f) under a Gaussian and both models' own ``predict_y``.
Learning goes through the models' one fit convention (``fit(max_iter=..., callback=...)``)
with the paper's box on the GP methods, and its progress and cancellation are plain callables.
"""

import math
import warnings

import numpy as np
import pytest

from gpexplorer import kernels
from gpexplorer.datasets import toy_inversion
from gpexplorer.likelihoods.forward_models import get_forward_model
from gpexplorer.linearized import comparison
from gpexplorer.linearized.comparison import ComparisonSettings, InversionProblem
from gpexplorer.linearized.gp import PAPER_BOUNDS, LinearizedGP
from reference_linearized import exact_gp

ALL = list(comparison.METHODS)


def toy_problem(forward="sin", n_train=60, n_points=300, seed=0):
    """EGP paper 4.1's problem on a coarser grid: n_train random training points, the rest test."""
    g = get_forward_model(forward)
    d = toy_inversion(g, seed=seed, n_points=n_points)
    order = np.random.default_rng(seed).permutation(n_points)
    train, test = np.sort(order[:n_train]), np.sort(order[n_train:])
    return InversionProblem(d.X[train], d.y[train], d.X[:, 0], f"toy {forward}", f_true=d.f, y_grid=d.y,
                            test=test), g


def test_the_method_table_and_settings():
    assert [m.label for m in comparison.METHODS.values()] == ["EGP", "UGP", "EKS", "UKS"]
    assert {(m.family, m.linearization) for m in comparison.METHODS.values()} == {
        ("gp", "taylor"), ("gp", "unscented"), ("ks", "taylor"), ("ks", "unscented")}
    s = ComparisonSettings(n_features=41, variance=2.0)
    assert s.features == 40 and s.hyperparameters == {"variance": 2.0, "lengthscale": 0.6, "noise_variance": 0.04}

    class Source:  # e.g. the page's Param object
        pass

    source = Source()
    source.__dict__.update(vars(s), kappa=1.5, extra="ignored")
    assert ComparisonSettings.from_object(source) == ComparisonSettings(n_features=41, variance=2.0, kappa=1.5)
    assert comparison.search_label("egp", "cobyla") == "COBYLA" and comparison.search_label("uks") == "COBYQA"


def test_taylor_methods_are_refused_for_a_non_differentiable_g():
    sign_cubic, sin = get_forward_model("sign_cubic"), get_forward_model("sin")
    assert comparison.active_methods(["uks", "egp", "eks"], sign_cubic) == (["uks"], ["egp", "eks"])
    assert comparison.active_methods(["uks", "egp"], sin) == (["egp", "uks"], [])


def test_identity_forward_model_makes_egp_and_ugp_exact_gp_regression():
    data, g = toy_problem("identity")
    s = ComparisonSettings()
    results = {m: comparison.evaluate(m, data, g, s) for m in ALL}
    kernel = kernels.Matern52(variance=s.variance, lengthscale=s.lengthscale)
    mean, var = exact_gp(data.X, data.y, data.grid[:, None], kernel, s.noise_variance)
    for m in ("egp", "ugp"):
        r = results[m]
        assert r.error is None and r.status == "converged" and r.params == s.hyperparameters
        np.testing.assert_allclose(r.mean_f, mean, atol=1e-8)
        np.testing.assert_allclose(r.var_f, var, atol=1e-8)
        np.testing.assert_allclose(r.mean_y, mean, atol=1e-8)  # g = f: y* has f*'s mean ...
        np.testing.assert_allclose(r.var_y, var + s.noise_variance, atol=1e-8)  # ... and variance + noise
        assert set(r.metrics) == {"nlpd_f", "smse_f", "smse_y"} and len(r.trace) >= 1
    # EKS and UKS linearise g(f) = f exactly too: the same Bayesian linear model on the features
    np.testing.assert_allclose(results["eks"].mean_f, results["uks"].mean_f, atol=1e-8)


def test_numerical_failure_becomes_the_result_error():
    data, _ = toy_problem("sin")
    g = get_forward_model("f^64")
    r = comparison.evaluate("egp", data, g, ComparisonSettings(variance=1000.0))
    assert r.error.startswith("EGP failed") and r.mean_f is None and r.model is None


def test_observation_moments_match_closed_form_and_both_models_predict_y():
    rng = np.random.default_rng(3)
    m, v = rng.normal(size=50), rng.uniform(0.01, 2.0, size=50)
    g = get_forward_model("sin")  # E[sin f] = sin(m) e^{-v/2}, E[sin^2 f] = (1 - cos(2m) e^{-2v}) / 2
    mean, var = comparison.observation_moments(g, m, v, "quadrature", noise_variance=0.04)
    exact_mean = np.sin(m) * np.exp(-v / 2)
    np.testing.assert_allclose(mean, exact_mean, atol=1e-10)
    np.testing.assert_allclose(var, (1 - np.cos(2 * m) * np.exp(-2 * v)) / 2 - exact_mean ** 2 + 0.04, atol=1e-10)
    data, _ = toy_problem("sin")
    Xs = data.grid[::20, None]
    model = LinearizedGP(data.X, data.y, forward="sin", linearization="unscented",
                         kernel=kernels.Matern52(variance=0.64, lengthscale=0.6), noise_variance=0.04, kappa=1.3)
    mf, vf = model.predict_f(Xs)
    for how in ("quadrature", "unscented"):
        ours = comparison.observation_moments(g, mf, vf, how, kappa=1.3, noise_variance=0.04)
        np.testing.assert_allclose(ours, model.predict_y(Xs, method=how), rtol=1e-10, atol=1e-12)
    ks = comparison.build_model("uks", data, g, ComparisonSettings(kappa=1.3))
    mf, vf = ks.predict_f(Xs)
    ours = comparison.observation_moments(g, mf[:, 0], vf[:, 0], "unscented", kappa=1.3, noise_variance=0.04)
    np.testing.assert_allclose(ours, [a[:, 0] for a in ks.predict_y(Xs, method="unscented")], rtol=1e-10)
    with pytest.raises(ValueError, match="quadrature"):
        comparison.observation_moments(g, m, v, "monte_carlo")


def test_closeup_lines_are_the_linearisations_of_eq_36_and_37():
    data, g = toy_problem("tanh2")
    s = ComparisonSettings(kappa=0.7)
    x0 = float(data.X[17, 0])  # a training input: the close-up shows that point's a_n, b_n
    for m in ("egp", "ugp"):
        r = comparison.evaluate(m, data, g, s)
        m0, v0 = r.model.posterior_mean[17], r.model.posterior_var[17]
        c = comparison.closeup(r, g, x0, s.kappa)
        assert c.method == m and c.m0 == pytest.approx(m0, abs=1e-8) and c.v0 == pytest.approx(v0, rel=1e-6)
        if m == "egp":  # eq. 36: tangent at m0, slope by central differences
            h = 1e-5
            slope = (g.value(np.array([[m0 + h]])) - g.value(np.array([[m0 - h]])))[0, 0] / (2 * h)
            intercept = g.value(np.array([[m0]]))[0, 0] - slope * m0
            assert c.weights is None
        else:  # eq. 37 literally: a = Gamma_my / C, b = y-bar - a m over the sigma points (eq. 21-26)
            spread = math.sqrt((1 + s.kappa) * v0)
            M = np.array([m0, m0 + spread, m0 - spread])
            w = np.array([s.kappa, 0.5, 0.5]) / (1 + s.kappa)
            Y = g.value(M[:, None])[:, 0]
            y_bar = w @ Y
            slope = (w * (M - m0)) @ (Y - y_bar) / v0
            intercept = y_bar - slope * m0
            np.testing.assert_allclose(c.points, M, atol=1e-10)
            np.testing.assert_allclose(c.weights, w, atol=1e-12)
        assert c.slope == pytest.approx(slope, rel=1e-6) and c.intercept == pytest.approx(intercept, abs=1e-6)


def test_learning_uses_the_fit_convention_and_the_paper_box():
    data, g = toy_problem("sin")
    s = ComparisonSettings(max_evals=10, variance=1.0, lengthscale=1.0, noise_variance=1.0)
    reports = []
    with warnings.catch_warnings():
        warnings.simplefilter("error", DeprecationWarning)  # no deprecated fit arguments
        learnt = comparison.learn_hyperparameters(["egp", "uks"], data, g, s,
                                                  progress=lambda f, msg: reports.append((f, msg)))
    assert set(learnt) == {"egp", "uks"}
    start = {m: comparison.evaluate(m, data, g, s).free_energy for m in learnt}
    for m, r in learnt.items():
        assert set(r) == {*comparison.HYPERPARAMETERS, "free_energy", "evaluations", "seconds", "search", "model",
                          *comparison.VERDICT}  # the search's verdict: converged or on its budget (issue 23)
        assert 1 <= r["evaluations"] <= s.max_evals + 2 and r["free_energy"] >= start[m] - 1e-6 * abs(start[m])
        assert comparison.model_parameters(r["model"]) == {k: r[k] for k in comparison.HYPERPARAMETERS}
    assert learnt["egp"]["search"] == "Fisher scoring" and learnt["uks"]["search"] == "COBYQA"
    specs = learnt["egp"]["model"].parameter_specs
    assert {n: (specs[n].lower, specs[n].upper) for n in PAPER_BOUNDS} == PAPER_BOUNDS
    fractions = [f for f, _ in reports]
    assert fractions == sorted(fractions) and fractions[0] == 0.0 and fractions[-1] <= 1.0
    assert reports[-1][1].startswith("UKS: ") and "(2 of 2 methods)" in reports[-1][1]


def test_learning_and_profiles_stop_when_cancelled():
    data, g = toy_problem("sin")
    s = ComparisonSettings(max_evals=500)
    calls = []

    def cancelled():
        calls.append(1)
        return len(calls) > 3

    learnt = comparison.learn_hyperparameters(["eks", "uks"], data, g, s, cancelled=cancelled)
    assert list(learnt) == ["eks"] and learnt["eks"]["evaluations"] <= 4  # the fit stopped, UKS never started
    calls.clear()
    profiles = comparison.profile_methods(["egp", "ugp"], data, g, s, {m: s.hyperparameters for m in ALL},
                                          "variance", cancelled=cancelled)
    assert profiles == {}  # stopped inside the first method's profile


def test_profile_is_centred_on_the_given_values_and_scores_the_test_points():
    data, g = toy_problem("tanh2")
    s = ComparisonSettings()
    parameters = {"egp": s.hyperparameters, "uks": dict(s.hyperparameters, lengthscale=0.9)}
    reports = []
    profiles = comparison.profile_methods(["egp", "uks"], data, g, s, parameters, "lengthscale",
                                          progress=lambda f, msg: reports.append(f))
    middle = comparison.PROFILE_POINTS // 2
    for m, p in profiles.items():
        centre = parameters[m]["lengthscale"]
        assert len(p.values) == comparison.PROFILE_POINTS and p.values[middle] == centre
        np.testing.assert_allclose([p.values[0], p.values[-1]], [centre / 10, centre * 10])
        shown = comparison.evaluate(m, data, g, s, parameters[m])
        assert p.free_energy[middle] == pytest.approx(shown.free_energy, rel=1e-9)
        assert p.scores[middle] == pytest.approx(shown.metrics["nlpd_f"], rel=1e-9)
    assert len(reports) == 2 * comparison.PROFILE_POINTS and reports[-1] == 1.0
    unscored = InversionProblem(data.X, data.y, data.grid, "no true f")
    p = comparison.profile_methods(["egp"], unscored, g, s, parameters, "variance")["egp"]
    assert np.all(np.isfinite(p.free_energy)) and np.all(np.isnan(p.scores))
