"""What the optimiser core hands back: a fit's :class:`FitResult` with its trace of
:class:`TraceEntry`, and a strategy's :class:`Run`; the stop and cancel convention.

A fit's ``callback(entry)`` receives each :class:`TraceEntry` and stops the fit by returning
True. A ``cancel`` is a ``threading.Event``-like object (``is_set()``) or a callable returning
True once the fit should end; strategies check it before each evaluation of the objective and
end with ``Run.cancelled`` set (no exception escapes).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

__all__ = ["FAILED_OBJECTIVE", "TraceEntry", "FitResult", "Run", "Cancelled", "as_cancel", "checked", "snapshot",
           "CANCELLED_MESSAGE", "STOPPED_MESSAGE"]

#: objective returned where the model cannot be evaluated (pushes L-BFGS-B back)
FAILED_OBJECTIVE = 1e25
CANCELLED_MESSAGE = "cancelled"
STOPPED_MESSAGE = "stopped by the callback"


@dataclass
class TraceEntry:
    iteration: int
    objective: float  # F = -log marginal likelihood (or -bound)
    terms: dict
    params: dict

    @property
    def log_marginal_likelihood(self):
        return -self.objective


@dataclass
class FitResult:
    success: bool
    message: str
    objective: float
    n_iter: int
    n_eval: int
    trace: list = field(default_factory=list)
    restarts: list = field(default_factory=list)  # per start: {"start", "objective", "n_iter", "message"}
    elapsed: float = 0.0
    details: dict = field(default_factory=dict)  # model-specific facts (e.g. the kitchen sinks' "scan_restarts")

    @property
    def log_marginal_likelihood(self):
        return -self.objective


@dataclass
class Run:
    """One strategy's outcome on a flat vector: where it ended (``x``), scipy's or the strategy's
    verdict, accepted iterations (steps for Adam, rounds' iterations for block-cyclic), whether a
    callback stopped it or a cancel ended it, and the objective at x where the strategy knows it
    (L-BFGS-B; else NaN)."""
    x: np.ndarray
    success: bool
    message: str
    n_iter: int
    stopped: bool = False
    cancelled: bool = False
    objective: float = float("nan")


class Cancelled(Exception):
    """Raised by :func:`as_cancel`'s check inside a strategy; strategies turn it into a Run."""


def as_cancel(cancel):
    """A zero-argument check raising :class:`Cancelled` once ``cancel`` (an Event-like object or
    a callable returning True) is set; None for None."""
    if cancel is None:
        return None
    is_set = cancel.is_set if hasattr(cancel, "is_set") else cancel
    if not callable(is_set):
        raise ValueError(f"cancel must be an Event-like object or a callable; got {cancel!r}")

    def check():
        if is_set():
            raise Cancelled

    return check


def checked(fun, check):
    """``fun`` behind ``check`` (from :func:`as_cancel`), called before each evaluation; ``fun``
    itself where there is no check."""
    if check is None:
        return fun

    def guarded(x):
        check()
        return fun(x)

    return guarded


def snapshot(params):
    """A copy of a parameter dict whose arrays do not share memory with the model's."""
    return {k: (v.copy() if isinstance(v, np.ndarray) else v) for k, v in params.items()}
