"""Restarts: run one search per start and keep the best.

:func:`best_of_starts` takes the starts lazily (a generator draws each restart only when the
previous search has ended, so the draws interleave with any the searches make from the same
generator) and ends early once a search was stopped by its callback or cancelled.
"""

from __future__ import annotations

import numpy as np

__all__ = ["RESTART_SPREAD", "best_of_starts", "perturb_log", "summaries"]

#: standard deviation of the perturbation of the log-parameters at a restart
RESTART_SPREAD = 0.5


def perturb_log(x, lo, hi, rng, is_log=None, spread=RESTART_SPREAD):
    """x with its log-parameters (``is_log``; every entry if None) moved by N(0, spread^2) each,
    clipped into [lo, hi]; one normal draw per entry of x either way."""
    moved = np.clip(x + rng.normal(0.0, spread, size=np.shape(x)), lo, hi)
    return moved if is_log is None else np.where(is_log, moved, x)


def best_of_starts(search, starts):
    """Run ``search(start)`` for each of ``starts``; each run is a dict with at least "objective"
    (lower is better), "n_iter" and "message", and "stopped" / "cancelled" when the search ended
    that way (no further starts then). Each run gets its "start" index. Returns (the run with the
    lowest objective, every run in order)."""
    runs = []
    for i, start in enumerate(starts):
        run = search(start)
        run["start"] = i
        runs.append(run)
        if run.get("stopped") or run.get("cancelled"):
            break
    return min(runs, key=lambda r: r["objective"]), runs


def summaries(runs):
    """{"start", "objective", "n_iter", "message"} per run: a FitResult's ``restarts``."""
    return [{k: r[k] for k in ("start", "objective", "n_iter", "message")} for r in runs]
