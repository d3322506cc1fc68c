"""Did a hyperparameter search of a linearised model converge, or end on its budget? (issue 23)

:meth:`LinearizedGP.fit <gpexplorer.linearized.gp.LinearizedGP.fit>` and
:meth:`LinearizedKitchenSinks.fit <gpexplorer.linearized.kitchen_sinks.LinearizedKitchenSinks.fit>`
spend at most ``max_iter`` evaluations of the free energy F (EGP eq. 41, EKS eq. 20).
:func:`search_verdict` reads a search's :class:`gpexplorer.optimize.FitResult` as plain data:

    {"converged": bool, "reason": "converged" | "budget" | "stopped" | "failed",
     "last_change_per_evaluation": nats per evaluation, "window": evaluations,
     "budget": max_iter, "message": the search's own words}

* **budget**: the search used every evaluation it was given and did not stop on its own test
  (Fisher scoring's "converged: ..." is such a test; for the derivative-free searches a search
  that spent the whole budget was cut short: COBYLA and COBYQA say "evaluated MAXFUN times" or
  "maximum number of iterations", and the kitchen sinks' lengthscale scan counts against the
  same budget);
* **converged**: it stopped before the budget and reported success (Fisher scoring's predicted
  gain below ftol / 10, a trust region shrunk to its final radius);
* **stopped**: the callback asked to stop; **failed**: it stopped before the budget without
  success (F could not be evaluated).

``last_change_per_evaluation``: the rise of the best F found so far over the last ``window``
evaluations (a tenth of the budget, at least MIN_WINDOW = 3, at most the search), divided by
the window: what one more evaluation has recently been worth. Failed evaluations (F not finite) count as no rise.
"""

from __future__ import annotations

import math

__all__ = ["MIN_WINDOW", "REASONS", "search_verdict", "last_change_per_evaluation"]

REASONS = ("converged", "budget", "stopped", "failed")
#: the fewest evaluations the last change is measured over (a derivative-free search's single
#: evaluation is often a probe that improves nothing)
MIN_WINDOW = 3


def last_change_per_evaluation(trace, budget):
    """(rise of the best F over the last window of evaluations per evaluation, window) from a
    fit's trace (TraceEntry objectives are -F)."""
    best, running = [], -math.inf
    for entry in trace:
        F = -float(entry.objective)
        if math.isfinite(F) and abs(F) < 1e300:
            running = max(running, F)
        best.append(running)
    if len(best) < 2 or not math.isfinite(best[-1]):
        return 0.0, 0
    window = min(len(best) - 1, max(MIN_WINDOW, int(budget) // 10))
    before = best[-1 - window]
    rise = best[-1] - before if math.isfinite(before) else 0.0
    return float(rise) / window, window


def search_verdict(result, budget):
    """The verdict (module docstring) on a FitResult of a search given ``budget`` evaluations."""
    message = str(result.message)
    change, window = last_change_per_evaluation(result.trace, budget)
    out = {"last_change_per_evaluation": change, "window": window, "budget": int(budget), "message": message}
    if "stopped by the callback" in message:
        reason = "stopped"
    elif result.n_eval >= budget and not message.startswith("converged"):
        reason = "budget"
    elif result.success:
        reason = "converged"
    else:
        reason = "failed"
    return {**out, "converged": reason == "converged", "reason": reason}
