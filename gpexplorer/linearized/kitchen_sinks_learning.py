"""Hyperparameter learning of the kitchen-sinks models (EKS section 4.4): maximise the approximate
bound eq. 20 over the log noise variances, log weight variances omega_q^2 and log feature
lengthscales with a derivative-free optimiser, re-running the Newton loop (eq. 16-19) at every
evaluation. Used by :meth:`gpexplorer.linearized.kitchen_sinks.LinearizedKitchenSinks.fit`.

Measurements behind the defaults (EGP paper Table 1 toy problems, 200 points, D = 200, start at
1.0): cold Newton starts (every evaluation from the prior, so eq. 20 is a function of the
hyperparameters alone) against warm ones (from the best posterior so far, variational-EM
style) over 5 folds x sin/exp/tanh2/poly3 x EKS/UKS: warm starts were hardly faster (35 s against
37 s in total) and twice carried the sin inversion into the mirrored branch f -> pi - f (NLPD f* 57
and 37 where cold starts gave -0.35 and 0.04); cold starts did worse in two other folds (UKS exp
and tanh2: NLPD 3.2 and 6.4 against -0.7 and 1.1). Warm starts pay off where the Newton loop is
long (USPS, D ~ 1000). Optimisers (4 forward models x 2 linearisations x 2 data sets): COBYQA (the
trust-region successor of the BOBYQA the paper suggests) reached the highest eq. 20 in most
cases with 30-90 evaluations; COBYLA stopped earlier at lower values; Powell's line searches ran
to the bounds (weight variance 1e3) in 4 of 16 cases; Nelder-Mead stalled far from the optimum in
half.

**Why a lengthscale scan after the local search.** With random features the bound is a rugged
function of the lengthscale: the base frequencies are fixed and only rescaled by 1 / l, so which
of them line up with the data changes as l moves. Measured on the EGP paper's toy problems
(Matern 5/2 latents, D = 200, noise and weight variance held): eq. 20 jumps by 10-30 nats
between lengthscales 9% apart, with many local maxima, where the exact-GP bound of the EGP is
smooth and unimodal. It does so for g = identity too, where eq. 20 is the exact evidence of the
random-feature model, so the ripples belong to the model, not to the Newton loop. A local search
(COBYQA's quadratic models, step 0.5 in log l) therefore ends in whichever ripple is nearest its
start: on the sin problem, fold 1, COBYQA from the paper's start (all hyperparameters 1.0)
stopped at l = 0.56 with eq. 20 = -26.6, started at the true hyperparameters at l = 0.31 with
-6.0 (NLPD f* 1.44 against -0.46). So once the local search has converged, the
bound is evaluated on a log grid of lengthscales around the best point (the other
hyperparameters held at their best values); if a grid point beats the best bound, the local
search restarts from it, at most ``SCAN_ROUNDS`` times. All evaluations count against
``max_iter``. The search box of every parameter is the model's (``parameter_specs``).
"""

from __future__ import annotations

import math
import time

import numpy as np

from gpexplorer.linalg import CholeskyError
from gpexplorer.linearized.fitting import best_of_starts, check_count
from gpexplorer.optimize import FAILED_OBJECTIVE, FitResult, TraceEntry, derivative_free

__all__ = ["fit_hyperparameters", "OPTIMISERS", "SCAN_FACTORS", "SCAN_ROUNDS"]

OPTIMISERS = ("powell", "nelder-mead", "cobyla", "cobyqa")
#: lengthscale multipliers of the scan: 1/10 .. 10 around the best lengthscale, neighbours 1.21 apart
#: (coarse against the ripples: the scan picks a basin, the restarted local search refines it)
SCAN_FACTORS = np.exp(np.linspace(math.log(0.1), math.log(10.0), 25))
#: how many times a better scan point may restart the local search
SCAN_ROUNDS = 2


class _StopSearch(Exception):
    """Raised inside the objective when the fit callback asks to stop."""


class _BudgetSpent(Exception):
    """Raised when max_iter bound evaluations have been made."""


def _free_names(model, fixed):
    fixed = (fixed,) if isinstance(fixed, str) else tuple(fixed)
    unknown = set(fixed) - set(model.parameters)
    if unknown:
        raise ValueError(f"cannot fix unknown parameter(s) {sorted(unknown)}; choose from {list(model.parameters)}")
    return [n for n in model.parameters if n not in fixed]


def _size(model, name):
    """Entries of ``name`` in the packed vector: 1 if tied or scalar, else its length."""
    value = model.parameters[name]
    return 1 if (model.tied(name) or np.ndim(value) == 0) else int(np.size(value))


def _pack(model, names):
    blocks = [np.atleast_1d(model.parameters[name])[:_size(model, name)] for name in names]
    return np.log(np.concatenate(blocks)) if blocks else np.empty(0)


def _unpack(model, names, x):
    values, i = {}, 0
    for name in names:
        current, size = model.parameters[name], _size(model, name)
        chunk = np.exp(x[i:i + size])
        i += size
        values[name] = (float(chunk[0]) if np.ndim(current) == 0
                        else np.broadcast_to(chunk, np.shape(current)).copy())
    return values


def _log_box(model, names):
    """(lo, hi) per entry of the packed vector: the logs of each parameter's bounds."""
    specs = model.parameter_specs
    boxes = [specs[name].free_bounds() for name in names for _ in range(_size(model, name))]
    return np.array([b[0] for b in boxes]), np.array([b[1] for b in boxes])


def _lengthscale_slice(model, names):
    """Positions of the log lengthscale(s) in the packed vector."""
    start = 0
    for name in names:
        if name == "lengthscale":
            return slice(start, start + _size(model, name))
        start += _size(model, name)
    raise ValueError("the lengthscale is not a free parameter")


def _check(method, callback):
    if method not in OPTIMISERS:
        raise ValueError(f"method must be one of {OPTIMISERS}; got {method!r}")
    if callback is not None and not callable(callback):
        raise ValueError("callback must be callable")


def _local_search(objective, x0, lo, hi, method, budget, xtol):
    """One derivative-free minimisation of ``objective`` from x0 (:func:`gpexplorer.optimize.derivative_free`:
    first moves 0.5 in log units, Powell's the unit directions); returns (success, message)."""
    simplex = None
    if method == "nelder-mead":  # scipy's default simplex is tiny around log(1) = 0
        simplex = np.clip(np.vstack([x0] + [x0 + 0.5 * e for e in np.eye(x0.size)]), lo, hi)
    run = derivative_free(objective, x0, lo, hi, method=method, max_evals=budget, xtol=xtol, ftol=1e-9,
                          initial_step=1.0 if method == "powell" else 0.5, simplex=simplex)
    return run.success, run.message


class _BoundSearch:
    """One search of eq. 20 from one start: its evaluations (``trace``), its best point and budget."""

    def __init__(self, model, names, lo, hi, budget, *, warm_start, callback, best, trace):
        self.model, self.names, self.lo, self.hi = model, names, lo, hi
        self.budget, self.warm_start, self.callback = budget, warm_start, callback
        self.best, self.trace, self.n_eval = best, trace, 0
        self.base = model.parameters  # the fixed parameters' values
        self.scale = float(model.Y.size)

    def bound(self, x):
        """eq. 20 at log-parameters x (-inf where the Newton loop or the algebra fails)."""
        if self.n_eval >= self.budget:
            raise _BudgetSpent
        model, x = self.model, np.clip(x, self.lo, self.hi)
        values = _unpack(model, self.names, x)
        try:
            if self.warm_start:
                model.restore(self.best["snap"])  # warm start from the best posterior found so far
            model.set_parameters(**values)
            model.fit_posterior(warm_start=self.warm_start)
            F, terms = model.free_energy(), model.free_energy_terms()
        except (CholeskyError, np.linalg.LinAlgError, FloatingPointError, ValueError):
            F, terms = -math.inf, {}
        self.n_eval += 1
        entry = TraceEntry(len(self.trace), -F if math.isfinite(F) else FAILED_OBJECTIVE, terms,
                           {**self.base, **values})
        self.trace.append(entry)
        if F > self.best["F"]:
            self.best.update(F=F, x=x.copy(), snap=model.snapshot())
        if self.callback is not None and self.callback(entry):
            raise _StopSearch
        return F

    def negative_bound(self, x):
        try:
            F = self.bound(x)
        except _BudgetSpent:
            return -self.best["F"] / self.scale
        return -F / self.scale if math.isfinite(F) else 1e10

    def run(self, x0, method, xtol, scan_lengthscale):
        """Local search from x0, then (``scan_lengthscale``) the lengthscale scan and restarts;
        returns (success, message, scan restarts, stopped by the callback)."""
        success, message, restarts = True, "nothing to optimise", 0
        try:
            if x0.size:
                success, message = _local_search(self.negative_bound, x0, self.lo, self.hi, method, self.budget, xtol)
                if scan_lengthscale and "lengthscale" in self.names:
                    log_l = _lengthscale_slice(self.model, self.names)
                    for _ in range(SCAN_ROUNDS):
                        before = self.best["F"]
                        _scan(self.bound, self.best["x"], log_l, self.lo[log_l], self.hi[log_l])
                        if self.best["F"] <= before or self.n_eval >= self.budget:
                            break
                        restarts += 1
                        success, message = _local_search(self.negative_bound, self.best["x"], self.lo, self.hi,
                                                          method, self.budget - self.n_eval, xtol)
        except _StopSearch:
            return False, "stopped by the callback", restarts, True
        except _BudgetSpent:
            pass
        return success, message, restarts, False


def fit_hyperparameters(model, *, max_iter=200, fixed=(), restarts=0, seed=None, callback=None, method="cobyqa",
                        xtol=1e-2, warm_start=False, scan_lengthscale=True):
    """Maximise eq. 20 of ``model`` (a LinearizedKitchenSinks); see
    :meth:`gpexplorer.linearized.kitchen_sinks.LinearizedKitchenSinks.fit` for the arguments.
    Returns a :class:`gpexplorer.optimize.FitResult`."""
    _check(method, callback)
    max_iter = check_count("max_iter", max_iter, 1)
    t0 = time.perf_counter()
    names = _free_names(model, fixed)
    x0 = _pack(model, names)
    lo, hi = _log_box(model, names)
    if np.any((x0 < lo) | (x0 > hi)):
        x0 = np.clip(x0, lo, hi)
        model.set_parameters(**_unpack(model, names, x0))
    initial = model.free_energy()
    start = {"F": initial, "x": x0.copy(), "snap": model.snapshot()}
    first = [TraceEntry(0, -initial, model.free_energy_terms(), model.parameters)]
    searches = []

    def search(x_start):
        first_search = not searches  # the first starts at x0, whose bound is already known
        best = dict(start) if first_search else {"F": -math.inf, "x": x_start.copy(), "snap": start["snap"]}
        searches.append(_BoundSearch(model, names, lo, hi, max_iter, warm_start=warm_start, callback=callback,
                                     best=best, trace=first if first_search else []))
        try:
            success, message, scans, stopped = searches[-1].run(x_start, method, xtol, scan_lengthscale)
        except BaseException:  # e.g. a callback cancelling the fit: leave the model at the best point
            model.restore(max((s.best for s in searches), key=lambda b: b["F"])["snap"])
            raise
        s = searches[-1]
        return {"search": s, "objective": -s.best["F"], "success": success, "message": message,
                "n_iter": s.n_eval, "stopped": stopped, "scan_restarts": scans}

    run, summaries = best_of_starts(search, x0, lo, hi, restarts, seed)
    best = run["search"]
    model.restore(best.best["snap"])
    return FitResult(success=run["success"], message=run["message"], objective=-best.best["F"],
                     n_iter=best.n_eval, n_eval=best.n_eval, trace=best.trace, restarts=summaries,
                     elapsed=time.perf_counter() - t0, details={"scan_restarts": run["scan_restarts"]})


def _scan(bound, x_best, log_l, lo, hi):
    """eq. 20 at the lengthscale factors SCAN_FACTORS around x_best, the other entries held
    (``lo``, ``hi``: the box of the log lengthscale(s)); ``bound`` records every evaluation and
    the best point."""
    for factor in SCAN_FACTORS:
        if abs(math.log(factor)) < 1e-12:
            continue  # x_best itself
        x = x_best.copy()
        x[log_l] = np.clip(x[log_l] + math.log(factor), lo, hi)
        bound(x)
