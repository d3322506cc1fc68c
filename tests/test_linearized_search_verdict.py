"""Learning the linearised models' hyperparameters says whether each search converged or ended
on its budget (issue 23): gpexplorer/linearized/convergence.py's verdict in every learnt entry of
``comparison.learn_hyperparameters``, and continuing from the learnt values never lowers F."""

import numpy as np
import pytest

from gpexplorer.datasets import toy_inversion
from gpexplorer.likelihoods.forward_models import get_forward_model
from gpexplorer.linearized import comparison
from gpexplorer.optimize import FitResult, TraceEntry


@pytest.fixture(scope="module")
def problem():
    forward = get_forward_model("sin")
    d = toy_inversion(forward, n_points=80)
    train, test = np.arange(0, 80, 2), np.arange(1, 80, 2)
    data = comparison.InversionProblem(d.X[train], d.y[train], d.X[:, 0], "sin", f_true=d.f, y_grid=d.y, test=test)
    return data, forward


def settings(**values):
    return comparison.ComparisonSettings(**{"max_iter": 20, "n_features": 40, **values})


def result(objectives, n_eval, message, success=True):
    trace = [TraceEntry(i, v, {}, {}) for i, v in enumerate(objectives)]
    return FitResult(success=success, message=message, objective=min(objectives), n_iter=n_eval, n_eval=n_eval,
                     trace=trace)


def test_the_verdict_reads_the_budget_the_search_s_own_test_and_the_last_rise():
    from gpexplorer.linearized.convergence import search_verdict

    # -F per evaluation: F = 1, 2, 4, 4.5, 5: budget 5 spent; best F rose 3 over the last 3 (at least 3)
    budget = search_verdict(result([-1, -2, -4, -4.5, -5], 5, "Return from COBYLA because the objective function "
                                   "has been evaluated MAXFUN times.", success=False), 5)
    assert budget["reason"] == "budget" and budget["converged"] is False and budget["budget"] == 5
    assert budget["window"] == 3 and budget["last_change_per_evaluation"] == pytest.approx(1.0)
    wide = search_verdict(result([-1.0] * 10 + [-2.0, -4.0], 12, "converged: the trust region ..."), 50)
    assert wide["window"] == 5 and wide["last_change_per_evaluation"] == pytest.approx(3 / 5)  # a tenth of 50
    assert wide["reason"] == "converged"  # under budget: the search's own word
    done = search_verdict(result([-1, -2, -2], 3, "converged: the Fisher-scoring step would gain less than ftol / 10"),
                          3)
    assert done["reason"] == "converged" and done["converged"]  # its own test, even on the last evaluation
    failed = search_verdict(result([1e25], 1, "the free energy could not be evaluated", success=False), 10)
    assert failed["reason"] == "failed" and failed["last_change_per_evaluation"] == 0.0
    stopped = search_verdict(result([-1, -2], 2, "stopped by the callback", success=False), 10)
    assert stopped["reason"] == "stopped"


def test_a_tiny_budget_ends_the_searches_on_it_and_a_generous_one_lets_them_converge(problem):
    data, forward = problem
    short = comparison.learn_hyperparameters(["egp", "eks"], data, forward, settings(max_evals=3))
    for m, learnt in short.items():
        assert learnt["reason"] == "budget" and learnt["converged"] is False, m
        assert learnt["budget"] == 3 and learnt["evaluations"] == 3
        assert learnt["last_change_per_evaluation"] >= 0.0
    assert short["eks"]["last_change_per_evaluation"] > 0  # still rising when the budget ended
    long = comparison.learn_hyperparameters(["egp"], data, forward, settings(max_evals=150))
    assert long["egp"]["reason"] == "converged" and long["egp"]["evaluations"] < 150
    assert long["egp"]["message"].startswith("converged")


def test_continuing_never_lowers_the_free_energy_and_adds_up_the_evaluations(problem):
    data, forward = problem
    s = settings(max_evals=4)
    first = comparison.learn_hyperparameters(["egp", "uks"], data, forward, s)
    more = comparison.learn_hyperparameters(["egp", "uks"], data, forward, s, previous=first)
    for m in ("egp", "uks"):
        assert more[m]["free_energy"] >= first[m]["free_energy"] - 1e-9 * abs(first[m]["free_energy"]), m
        assert first[m]["evaluations"] < more[m]["evaluations"] <= first[m]["evaluations"] + s.max_evals + 1
        assert more[m]["seconds"] > first[m]["seconds"] and more[m]["reason"] in ("budget", "converged")
        assert more[m]["free_energy"] == pytest.approx(more[m]["model"].free_energy(), rel=1e-12)
        if more[m]["model"] is not first[m]["model"]:  # the new search won: it started at the learnt values
            start = more[m]["model"].fit_result.trace[0].params
            key = "noise_variance" if m == "egp" else "weight_variance"
            expected = first[m]["noise_variance"] if m == "egp" else first[m]["variance"]
            assert float(np.ravel(start[key])[0]) == pytest.approx(expected, rel=1e-9)
