"""SAVIGP fits say whether they converged or ended on their budget (issue 23): the verdict in
``FitResult.details["convergence"]`` (gpexplorer/variational/convergence.py), the early stop,
the exact-gradient check of a score-function fit's standstill, and continuing a fit."""

import numpy as np
import pytest

from gpexplorer import kernels
from gpexplorer.variational import SparseVariationalGP

TOL_PER_POINT, SETTLED_ROUNDS = 1e-5, 2  # gpexplorer.variational.convergence's


def toy(N=60, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.uniform(-3, 3, size=(N, 1))
    y = (rng.uniform(size=N) < 1 / (1 + np.exp(-2.5 * np.sin(1.5 * X[:, 0])))).astype(float)
    return X, y


def model(posterior="fg", estimator="quadrature", num_samples=200, N=60, control_variate=False):
    X, y = toy(N)
    return SparseVariationalGP(X, y, kernels.SquaredExponential(), 6, "bernoulli_logit", posterior=posterior,
                               estimator=estimator, num_samples=num_samples, seed=0, control_variate=control_variate)


def test_the_rule_s_constants_are_the_module_s():
    from gpexplorer.variational import convergence

    assert (convergence.CONVERGENCE_TOL, convergence.SETTLED_ROUNDS) == (TOL_PER_POINT, SETTLED_ROUNDS)


def test_a_fit_cut_short_by_its_budget_says_so_with_its_last_change_per_iteration():
    result = model().fit(max_iter=1, method="block-lbfgs", evals_per_block=3)
    c = result.details["convergence"]
    assert c["reason"] == "budget" and c["converged"] is False
    assert c["rounds"] == c["budget"] == 1 and c["iterations"] == result.details["round_history"][0]["iterations"]
    assert c["tolerance"] == pytest.approx(TOL_PER_POINT * 60)
    assert c["last_change_per_iteration"] == pytest.approx(c["last_change"] / c["iterations"])
    assert c["last_change_per_iteration"] > c["tolerance"]
    assert c["last_change"] == pytest.approx(result.trace[0].objective - result.objective)


@pytest.mark.parametrize("posterior", ["fg", "mog1"])
def test_a_converged_fit_stops_early_and_its_last_rounds_gained_at_most_the_tolerance(posterior):
    m = model(posterior)
    result = m.fit(max_iter=200, method="block-lbfgs", evals_per_block=10, stop_when_converged=True)
    c, history = result.details["convergence"], result.details["round_history"]
    assert c["reason"] == "converged" and c["converged"] is True
    assert c["rounds"] == len(history) == len(result.details["round_objectives"]) < 200
    for r in history[-SETTLED_ROUNDS:]:
        assert r["gain"] / max(r["iterations"], 1) <= c["tolerance"]
    # the rule, not the early stop, decides: the same fit without stopping says so too
    again = model(posterior).fit(max_iter=len(history), method="block-lbfgs", evals_per_block=10)
    assert again.details["convergence"]["reason"] == "converged"
    assert again.objective == pytest.approx(result.objective, rel=1e-12)


def test_without_the_early_stop_every_round_is_run_and_the_library_default_is_unchanged():
    result = model().fit(max_iter=4, method="block-lbfgs", evals_per_block=5)
    assert len(result.details["round_objectives"]) == 4 and result.details["convergence"]["rounds"] == 4


def test_continuing_a_fit_starts_where_it_stopped_and_never_lowers_the_elbo():
    m = model("mog1")
    first = m.fit(max_iter=2, method="block-lbfgs", evals_per_block=5)
    kept = m.parameters
    assert first.details["convergence"]["reason"] == "budget"
    second = m.fit(max_iter=3, method="block-lbfgs", evals_per_block=5)
    assert second.trace[0].objective == pytest.approx(first.objective, rel=1e-12)  # q(u), kernel, Z as left
    np.testing.assert_array_equal(second.trace[0].params["feature0.Z"], kept["feature0.Z"])
    assert second.objective <= first.objective


@pytest.mark.parametrize("posterior, control_variate", [("fg", False), ("mog1", True)])
def test_a_score_fit_that_comes_to_a_standstill_short_of_the_maximum_has_stalled(posterior, control_variate):
    """S = 20: the score gradient is noise, L-BFGS's line search finds no way up, the ELBO stops
    changing; one round with quadrature's exact gradient from there gains far more (the control
    variate, a score-only device, is off for that round and on again afterwards)."""
    m = model(posterior, "score", num_samples=20, control_variate=control_variate)
    result = m.fit(max_iter=30, method="block-lbfgs", evals_per_block=10, stop_when_converged=True)
    c = result.details["convergence"]
    assert c["reason"] == "stalled" and c["converged"] is False and c["exact_gradient"] is False
    assert c["rounds"] < 30  # it stopped: more rounds with the same samples repeat the standstill
    assert c["exact_round_gain"] > 10 * c["tolerance"]
    exact = model(posterior, "quadrature").fit(max_iter=30, method="block-lbfgs", evals_per_block=10,
                                          stop_when_converged=True)
    assert exact.details["convergence"]["reason"] == "converged"
    assert -exact.objective > -result.objective + c["exact_round_gain"] / 2
    # the check ran on the side: the model is where the fit left it, with its own estimator
    assert m.estimator == "score" and m.control_variate is control_variate
    best = min(result.trace, key=lambda e: e.objective)
    np.testing.assert_array_equal(m.parameters["posterior"], best.params["posterior"])


def test_exact_gradients_converge_where_the_noisy_ones_stall():
    for estimator in ("quadrature", "reparam"):
        result = model("fg", estimator).fit(max_iter=100, method="block-lbfgs", evals_per_block=10,
                                            stop_when_converged=True)
        c = result.details["convergence"]
        assert c["reason"] == "converged" and c["exact_gradient"] and c["exact_round_gain"] is None


def test_redrawn_samples_let_a_stalled_score_fit_go_on():
    m = model("fg", "score", num_samples=20)
    stalled = m.fit(max_iter=30, method="block-lbfgs", evals_per_block=10, stop_when_converged=True)
    eps = m.eps.copy()
    m.redraw_samples(7)
    assert m.eps.shape == eps.shape and not np.array_equal(m.eps, eps)
    on = m.fit(max_iter=30, method="block-lbfgs", evals_per_block=10, stop_when_converged=True)
    assert on.trace[0].objective == pytest.approx(stalled.objective, rel=1e-12)  # the value is quadrature's
    assert on.objective < stalled.objective
    assert model("fg", "quadrature").redraw_samples(3).eps is None


def test_joint_lbfgs_and_adam_verdicts():
    joint = model().fit(max_iter=2, method="lbfgs")
    assert joint.details["convergence"]["reason"] == "budget"
    done = model().fit(max_iter=5000, method="lbfgs")
    assert done.details["convergence"]["reason"] == "converged" and done.message.startswith("CONVERGENCE")
    adam = model().fit(max_iter=4, method="adam", trace_every=2)
    assert adam.details["convergence"]["reason"] == "not assessed" and adam.details["convergence"]["converged"] is None


def test_a_stopped_fit_is_neither_converged_nor_on_budget():
    result = model().fit(max_iter=10, method="block-lbfgs", evals_per_block=5, callback=lambda e: e.iteration >= 3)
    assert result.details["convergence"]["reason"] == "stopped"
