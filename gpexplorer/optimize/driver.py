"""The fit of the models with an objective and gradient (ExactGPR, SparseGPR): joint L-BFGS-B
(:func:`gpexplorer.optimize.lbfgsb.lbfgsb`) on the packed vector, restarts, one FitResult.

The driver stays lean because small fits are dominated by what surrounds the objective (at
N = 200 dict packing and trace copies cost as much as the evaluations): the objective maps the
vector to natural values with one ``exp`` and assigns views of that array, the last few
evaluations are kept by x (the accepted iterate is the last one evaluated), and trace entries
are built only once a run ends (or as they come, for a callback). What remains is scipy's own
wrapping of each evaluation (``minimize``'s ScalarFunction, ~50 us): the sparse lab's Snelson fit
(VFE, M = 15, 65 evaluations) took 13.0 ms CPU at best and 15.4 ms in the median against 9.9 /
11.4 ms for the former loop on scipy's private ``setulb`` (150 alternating fits each).
"""

from __future__ import annotations

import math
import time

import numpy as np

from gpexplorer import _threads
from gpexplorer.linalg import CholeskyError
from gpexplorer.optimize.lbfgsb import lbfgsb
from gpexplorer.optimize.packing import Packer, expand_fixed, feature_parameter_names
from gpexplorer.optimize.restarts import best_of_starts, summaries
from gpexplorer.optimize.results import FAILED_OBJECTIVE, FitResult, TraceEntry, snapshot

__all__ = ["fit", "ModelObjective"]


def _perturbed_start(model, packer, params, rng):
    """A restart: log-parameters perturbed (sd 0.5), the inducing feature redrawn from the data."""
    start = dict(params)
    feature_names = feature_parameter_names(model)
    redrawn = model.inducing.restart_from(model.X, rng) if feature_names else {}
    for n in packer.names:
        if n in redrawn:
            start[n] = redrawn[n]
            continue
        v = np.asarray(params[n], dtype=float)
        if packer.specs[n].is_log:
            v = v * np.exp(rng.normal(0.0, 0.5, size=v.shape))
        else:
            v = v + rng.normal(0.0, 0.5, size=v.shape) * (np.abs(v) + 1.0)
        start[n] = v if v.shape else float(v)
    return start


def fit(model, max_iter=200, fixed=(), restarts=0, seed=None, callback=None, tol=None, cancel=None, *, memory=None):
    """Minimise F = -log_marginal_likelihood over the free parameters with L-BFGS-B.

    ``restarts`` extra starts perturb the log-hyperparameters (sd 0.5) and redraw the inducing
    feature from the data; the best run is kept and its trace returned. ``callback(entry)`` is
    called with each TraceEntry; returning True stops the fit (no further starts). ``cancel``
    (an Event-like object or a callable) ends the fit between evaluations
    (``details["cancelled"]``). The model is left at the best parameters found. BLAS runs on one
    thread except inside evaluations whose work (``model.evaluation_work``) is above
    :data:`gpexplorer._threads.THREADED_WORK`. ``tol``: L-BFGS-B's ftol and gtol (default scipy's);
    ``memory``: its number of stored corrections (maxcor, default scipy's 10).
    """
    if int(max_iter) < 0:
        raise ValueError(f"max_iter must be non-negative; got {max_iter}")
    fixed = expand_fixed(model, fixed)
    rng = np.random.default_rng(seed) if restarts else None  # seeding from the OS costs ~10 us
    initial = snapshot(model.parameters)
    packer = Packer(model.parameter_specs, initial, fixed)
    t0 = time.perf_counter()
    threads = _threads.blas_thread_count()
    settings = {"ftol": tol, "gtol": tol, "memory": memory}

    def starts():
        yield initial  # the first run starts where the model is
        for _ in range(int(restarts)):
            params = _perturbed_start(model, packer, initial, rng)
            model.set_parameters(**params)
            yield params

    def search(params):
        return _single_run(model, packer, params, max_iter, callback, settings, threads, cancel)

    with _threads.single_threaded():  # L-BFGS-B's own length-P vectors never want threads
        best, runs = best_of_starts(search, starts())
    if best is not runs[-1]:  # each run leaves the model at its own best
        model.set_parameters(**best["params"])
    return FitResult(
        success=best["success"], message=best["message"], objective=best["objective"],
        n_iter=best["n_iter"], n_eval=best["n_eval"], trace=best["trace"], restarts=summaries(runs),
        elapsed=time.perf_counter() - t0, details={"cancelled": True} if runs[-1]["cancelled"] else {},
    )


class ModelObjective:
    """F and its flat gradient at x for one run of a model with ``objective_and_gradient``, with
    the last few evaluations kept by x."""

    def __init__(self, model, packer, threads):
        self.model, self.packer = model, packer
        self.work = model.evaluation_work
        self.threads = threads if threads > 1 and self.work >= _threads.THREADED_WORK else 0
        self.cache = {}  # x bytes -> (F, flat gradient, terms, natural vector)
        self.n_eval = 0

    def __call__(self, x):
        F, g, _, _ = self.at(x)
        return F, g

    def at(self, x):
        key = x.tobytes()
        hit = self.cache.get(key)
        if hit is not None:
            return hit
        nat = self.packer.natural(x)
        self.n_eval += 1
        try:
            self.model.set_parameters(**self.packer.values_of(nat))  # exp() of bounded logs: positive, finite
            if self.threads:
                with _threads.threads_for(self.work, self.threads):
                    F, grads, terms = self.model.objective_and_gradient()
            else:
                F, grads, terms = self.model.objective_and_gradient()
            g = self.packer.chain_natural(nat, grads)
            if not (math.isfinite(F) and math.isfinite(g.sum())):
                raise FloatingPointError
        except (CholeskyError, FloatingPointError, np.linalg.LinAlgError):
            F, g, terms = FAILED_OBJECTIVE, np.zeros_like(x), {}
        if len(self.cache) > 8:
            self.cache.pop(next(iter(self.cache)))
        hit = self.cache[key] = (F, g, terms, nat)
        return hit


def _single_run(model, packer, params, max_iter, callback, settings, threads, cancel):
    """One L-BFGS-B run from ``params`` (the model is already there); ``settings``: :func:`lbfgsb`'s
    ftol, gtol and memory."""
    objective = ModelObjective(model, packer, threads)
    order = list(params)
    fixed_values = {k: v for k, v in snapshot(params).items() if k not in packer.names}
    records = []  # (F, terms, natural vector) per accepted iterate, the start first
    handed_out = {}  # index -> the TraceEntry a callback received (the trace holds that object)

    def entry(i):
        F, terms, nat = records[i]
        values = packer.values_of(nat)
        return TraceEntry(i, F, dict(terms), {k: values[k] if k in values else fixed_values[k] for k in order})

    def record(x, F_accepted=None):  # F_accepted: from L-BFGS-B (then the callback hears of it), None at the start
        F, _, terms, nat = objective.at(x)
        records.append((F, terms, nat.copy()))  # a copy: the model holds views of nat
        if callback is None or F_accepted is None:
            return False
        i = len(records) - 1
        handed_out[i] = entry(i)
        return bool(callback(handed_out[i]))

    x0 = packer.pack(params)
    record(x0)  # the start is recorded, never passed to the callback
    if x0.size == 0 or max_iter == 0:
        res_x, success, message, nit, stopped, cancelled = x0, True, "nothing to optimise", 0, False, False
    else:
        lo, hi = packer.box()
        run = lbfgsb(objective, x0, lo, hi, max_iter=int(max_iter), on_iterate=record, cancel=cancel, **settings)
        res_x, success, message, nit = run.x, run.success, run.message, run.n_iter
        stopped, cancelled = run.stopped, run.cancelled
    trace = [handed_out[i] if i in handed_out else entry(i) for i in range(len(records))]
    # L-BFGS-B may end on a point that was not its best evaluation; keep the best iterate
    best = min(trace, key=lambda e: e.objective)
    F_final, _, terms, nat = objective.at(res_x)
    if best.objective < F_final:
        final_params, F_final = best.params, best.objective
    else:
        values = packer.values_of(nat.copy())
        final_params = {k: values[k] if k in values else fixed_values[k] for k in order}
    model.set_parameters(**final_params)
    return {"params": final_params, "objective": F_final, "success": success, "message": message,
            "n_iter": nit, "n_eval": objective.n_eval, "trace": trace, "stopped": stopped,
            "cancelled": cancelled}
