"""When a SAVIGP fit has converged, and when it merely ended on its budget (issue 23).

A fit by :func:`gpexplorer.variational.fitting.fit` records its verdict as plain data in
``FitResult.details["convergence"]`` (:func:`assess`):

    {"converged": bool or None, "reason": "converged" | "budget" | "stalled" | "stopped" |
     "not assessed", "last_change": nats, "last_change_per_iteration": nats per iteration,
     "tolerance": nats, "iterations": L-BFGS iterations of the last round, "rounds": rounds run,
     "budget": rounds allowed (``max_iter``), "exact_gradient": bool,
     "exact_round_gain": nats or None}

**The rule (block-cyclic L-BFGS, the labs' optimiser).** A round runs L-BFGS over every block
(q(u), hyperparameters, likelihood); each block ends at the best point seen, so the traced
ELBO's best value never falls between rounds. A round's *rate* is its gain divided by its
accepted L-BFGS iterations (all blocks; the whole gain when none was accepted). The fit has
converged when each of its last SETTLED_ROUNDS = 2 rounds had a rate of at most

    tolerance = CONVERGENCE_TOL x N nats per iteration   (1e-5 per data point: 0.001 on 100 bins)

and ended on its **budget** when its ``max_iter`` rounds ran out before that.
``last_change_per_iteration`` is the last round's rate. Why these choices:

* per data point: the ELBO is a sum over the N points, so one rule serves 100 bins and 1000
  images; per iteration: a round's size is the user's (evaluations per block), its rate is not;
* two rounds: one can be a pause (on the binary toy a round at 1.4e-3 nats per iteration was
  followed by one at 2.6e-3); with 5 evaluations per block rounds are erratic enough that even
  two in a row can pause (FG on the binary toy: "converged" at -76.7 where 10 per block went on
  to -70.7), so small blocks weaken the test, and the lab's default is 10;
* what it does not promise: a slow tail. Measured on the lab's data
  (``tests/benchmarks/black_box_convergence.py``), converged fits were 0.1-1 nat below where 80
  rounds took them (MoG's diagonal q(u) and the lengthscale move together along a shallow
  valley): the verdict says the fit no longer moves at a rate that matters, not that no higher
  ELBO exists.

**Why no comparison with the Monte Carlo noise.** The value each estimator hands L-BFGS is
deterministic: quadrature is; the reparameterised estimator reuses one eps draw (the paper's
optimiser, :mod:`.savigp`), so its value is a fixed function of the parameters; the score
estimator's traced value is the quadrature ELBO for Q <= 3 (:mod:`.fitting`). A change between
rounds is therefore a real change of the objective, however small, and no noise floor is needed
to read it.

**Stalled.** What is noisy is the *score gradient*: an estimate, not the derivative of the value.
Where it points nowhere uphill, L-BFGS's line search fails (scipy's "ABNORMAL_TERMINATION_IN_
LNSRCH") or crawls, and the ELBO stops rising without the fit being at a maximum: on the coal
data FG with S = 20 stopped at -216 where the same fit by quadrature reaches -163, and on the
binary toy FG with S = 200 came to a standstill 5 nats short. So a score-function fit that
comes to a standstill is checked: one round of the same block optimiser with the *exact*
gradient of quadrature runs from its end point on the side (:func:`.fitting.exact_round_gain`;
the model is left where the fit ended). If that round's rate is at most the tolerance the fit
has converged; otherwise it **stalled**, and ``exact_round_gain`` says by how much it fell short
in one round. (Without quadrature, Q > 3 or a likelihood without d log p / df, a failed line
search at a standstill counts as stalled, a clean one as converged.) For exact gradients
(quadrature, reparameterisation) a failed line search at a standstill is the usual end at a
maximum, limited by rounding, and counts as converged.

**Joint L-BFGS** (``method="lbfgs"``, and ``"natgrad"``, whose L-BFGS-B runs over everything but
q(u)): scipy's own test decides (its message "CONVERGENCE: ..."),
a stop on ``max_iter`` is the budget, and a standstill of a score-function fit is checked as
above; the last change is that of the last iteration. **Adam** has no convergence test here (its
minibatch steps are noisy by design): "not assessed", ``converged`` None.
"""

from __future__ import annotations

import math

__all__ = ["CONVERGENCE_TOL", "REASONS", "SETTLED_ROUNDS", "assess", "at_rest", "exact_check_possible",
           "needs_exact_check", "per_iteration", "round_record", "settled", "tolerance"]

#: the ELBO's gain per L-BFGS iteration over the last round, in nats per data point, at or below
#: which a fit has converged
CONVERGENCE_TOL = 1e-5
#: rounds in a row that must each gain at most the tolerance (one alone can be a pause: measured
#: on the binary toy, a round gaining 1.4e-3 nats per iteration was followed by one gaining 2.6e-3)
SETTLED_ROUNDS = 2
REASONS = ("converged", "budget", "stalled", "stopped", "not assessed")
LINE_SEARCH_FAILED = "ABNORMAL"


def tolerance(n_points, per_point=CONVERGENCE_TOL):
    """The gain per iteration (nats) at or below which a fit of ``n_points`` data points has converged."""
    return float(per_point) * max(int(n_points), 1)


def round_record(gain, iterations, evaluations, messages):
    """One round of block-cyclic L-BFGS as plain data: the ELBO's gain (nats), accepted
    iterations, objective evaluations, and the blocks whose line search failed."""
    failed = sorted(b for b, m in messages.items() if str(m).startswith(LINE_SEARCH_FAILED))
    return {"gain": float(gain), "iterations": int(iterations), "evaluations": int(evaluations),
            "line_search_failed": failed}


def per_iteration(gain, iterations):
    """A round's gain per accepted iteration (the whole gain when none was accepted)."""
    return float(gain) / max(int(iterations), 1)


def settled(record, tau):
    """Whether a round gained at most ``tau`` nats per iteration (converged, or stalled: either
    way another round with the same gradients would hardly move the fit)."""
    return per_iteration(record["gain"], record["iterations"]) <= tau


def at_rest(history, tau):
    """Whether the last SETTLED_ROUNDS rounds of ``history`` (all, when fewer ran) each gained
    at most ``tau`` nats per iteration."""
    tail = history[-SETTLED_ROUNDS:]
    return bool(tail) and all(settled(r, tau) for r in tail)


def exact_check_possible(model):
    """Whether a score-function fit's standstill can be checked with exact gradients: quadrature
    needs Q <= 3 (its node grid) and the likelihood's slope d log p / df."""
    return model.Q <= 3 and hasattr(model.likelihood, "dlog_density_df")


def needs_exact_check(model, method, run, stopped, tau):
    """Whether a score-function fit's end is to be checked by an exact-gradient round: an
    L-BFGS fit that was not stopped and came to a standstill (block-cyclic: its last round
    gained at most ``tau``; joint: scipy stopped on its own), where quadrature exists.
    ``run``: the fit's chosen run ({"details", ...})."""
    if method in ("adam", "adam-natgrad") or stopped or model.estimator != "score" or not exact_check_possible(model):
        return False
    history = run["details"].get("round_history")
    return method == "lbfgs" or bool(history) and at_rest(history, tau)


def assess(method, details, trace, max_iter, tau, exact_gradient, stopped=False, exact_round=None):
    """The verdict of one fit (module docstring) from its ``details`` (``round_history`` of the
    block optimiser, ``lbfgs_message`` of the joint one), its ``trace`` (TraceEntry list,
    objective = -ELBO), the tolerance ``tau`` (nats per iteration) and, for an estimated gradient,
    ``exact_round`` ((the ELBO's rise, iterations) of one exact-gradient round from the end
    point; None where it was not measured)."""
    finite = [e for e in trace if math.isfinite(e.objective)]
    out = {"converged": None, "reason": "not assessed", "last_change": math.nan,
           "last_change_per_iteration": math.nan, "tolerance": float(tau), "iterations": 0,
           "rounds": 0, "budget": int(max_iter), "budget_unit": "round", "exact_gradient": bool(exact_gradient),
           "exact_round_gain": None if exact_round is None else float(exact_round[0])}
    if stopped:
        return {**out, "converged": False, "reason": "stopped"}
    if method == "block-lbfgs":
        history = details.get("round_history") or []
        if not history:
            return {**out, "converged": True, "reason": "converged"}  # nothing to optimise
        last = history[-1]
        out.update(last_change=last["gain"], iterations=last["iterations"], rounds=len(history),
                   last_change_per_iteration=per_iteration(last["gain"], last["iterations"]))
        if not at_rest(history, tau):
            return {**out, "converged": False, "reason": "budget"}
        failed = bool(last["line_search_failed"])
    elif method in ("lbfgs", "natgrad"):
        message = str(details.get("lbfgs_message", ""))
        change = _last_change(finite)
        out.update(last_change=change, last_change_per_iteration=change, iterations=max(len(trace) - 1, 0),
                   rounds=1, budget_unit="iteration")
        if not (message.startswith("CONVERGENCE") or message.startswith(LINE_SEARCH_FAILED)
                or message == "nothing to optimise"):
            return {**out, "converged": False, "reason": "budget"}
        failed = message.startswith(LINE_SEARCH_FAILED)
    else:
        return out
    if exact_gradient:
        return {**out, "converged": True, "reason": "converged"}
    ok = per_iteration(*exact_round) <= tau if exact_round is not None else not failed
    return {**out, "converged": ok, "reason": "converged" if ok else "stalled"}


def _last_change(entries):
    """The ELBO's change over the last traced iteration (0 for fewer than two entries)."""
    if len(entries) < 2:
        return 0.0
    return float(entries[-2].objective - entries[-1].objective)
