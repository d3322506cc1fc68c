"""The fit convention of the linearised models, shared by :meth:`LinearizedGP.fit
<gpexplorer.linearized.gp.LinearizedGP.fit>` (EGP paper section 3.2: maximise the free energy,
eq. 41) and :meth:`LinearizedKitchenSinks.fit
<gpexplorer.linearized.kitchen_sinks.LinearizedKitchenSinks.fit>` (EKS section 4.4: maximise the
bound, eq. 20), the same as :func:`gpexplorer.optimize.fit` for ExactGPR / SparseGPR:

    model.fit(max_iter=..., fixed=(...), restarts=..., seed=..., callback=..., method=...)

returns one :class:`gpexplorer.optimize.FitResult` whose ``trace`` holds a
:class:`gpexplorer.optimize.TraceEntry` per evaluation (objective = -F, its terms, the
parameters); ``callback(entry)`` returning True stops the fit. ``max_iter`` is the budget of
evaluations of F (each one an inner loop). The search box of every parameter is the model's
(``model.parameter_specs``, changed with ``model.set_bounds``). ``restarts`` extra searches start
from the log-parameters moved by N(0, 0.5^2) each (:func:`gpexplorer.optimize.perturb_log`); the
best search is kept (:func:`gpexplorer.optimize.best_of_starts`). The derivative-free searches are
the optimiser core's (:func:`gpexplorer.optimize.derivative_free`).
"""

from __future__ import annotations

import numpy as np

from gpexplorer import optimize
from gpexplorer.optimize import RESTART_SPREAD, perturb_log

__all__ = ["RESTART_SPREAD", "check_count", "best_of_starts"]


def check_count(name, value, minimum):
    """``value`` as an int >= ``minimum``, else a ValueError naming ``name``."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < minimum:
        raise ValueError(f"{name} must be an integer >= {minimum}; got {value!r}")
    return int(value)


def best_of_starts(search, x0, lo, hi, restarts, seed):
    """Run ``search(x_start)`` from x0 and from ``restarts`` starts perturbed by
    :func:`gpexplorer.optimize.perturb_log` (``seed``); each run returns a dict with at least
    "objective" (-F of its best point), "n_iter", "message" and "stopped" (the callback asked to
    stop: no further starts). Returns (the run with the lowest objective, a summary {"start",
    "objective", "n_iter", "message"} per run)."""
    restarts = check_count("restarts", restarts, 0)
    rng = np.random.default_rng(seed)

    def starts():
        yield x0
        for _ in range(restarts):
            yield perturb_log(x0, lo, hi, rng)

    best, runs = optimize.best_of_starts(search, starts())
    return best, optimize.summaries(runs)


def fit_free_energy(model, max_iter, fixed, restarts, seed, callback, *, method, xtol, ftol, initial_step):
    """The search of :meth:`gpexplorer.linearized.gp.LinearizedGP.fit` (arguments checked there):
    maximise the free energy (EGP paper eq. 41) over the log-parameters of ``model`` in the box of
    its ``parameter_specs``, by Fisher scoring or a scipy derivative-free method
    (:mod:`gpexplorer.linearized.learning`), from ``restarts`` + 1 starts; the model is left at
    the best evaluation, with its posterior. Returns a FitResult."""
    import time

    from gpexplorer import _threads
    from gpexplorer.linearized.gauss_newton import NumericalFailure
    from gpexplorer.linearized.learning import (FAILED, FisherScore, FreeEnergyObjective, StopSearch,
                                                fisher_scoring, variance_like)
    from gpexplorer.optimize import FitResult, Packer, derivative_free, expand_fixed

    initial = model.parameters
    packer = Packer(model.parameter_specs, initial, expand_fixed(model, fixed))
    lo, hi = packer.box()
    fixed_values = {k: v for k, v in initial.items() if k not in packer.names}
    bests = []  # the best evaluation of every search so far

    def search(x_start):
        model.set_parameters(**initial)
        objective = FreeEnergyObjective(model, packer, lo, hi, fixed_values, callback)
        success, message, iterations, stopped = True, "nothing to optimise: every parameter is fixed", None, False
        try:
            if x_start.size == 0:
                objective(x_start)
            elif method == "fisher":
                score = FisherScore(model.kernel, model.X, model.y, model.forward, packer, fixed_values,
                                    exact_implicit=model.linearization_method == "taylor")
                success, message, iterations = fisher_scoring(objective, score, x_start, lo, hi,
                                                              variance_like(packer), max_evals=max_iter, ftol=ftol)
            else:
                run = derivative_free(objective, x_start, lo, hi, method=method, max_evals=max_iter, xtol=xtol,
                                      ftol=ftol if method == "nelder-mead" else 1e-8, initial_step=initial_step)
                success, message = run.success, run.message
        except StopSearch:
            success, message, stopped = False, "stopped by the callback", True
        except BaseException:  # e.g. a callback cancelling the fit: leave the model at the best point
            _adopt(model, min(bests + [objective.best], key=lambda b: b["objective"]))
            raise
        bests.append(objective.best)
        trace = objective.trace
        return {"best": objective.best, "objective": objective.best["objective"], "success": success,
                "message": message, "n_iter": len(trace) if iterations is None else iterations,
                "n_eval": len(trace), "trace": trace, "stopped": stopped}

    t0 = time.perf_counter()
    with _threads.single_threaded():
        run, summaries = best_of_starts(search, np.clip(packer.pack(initial), lo, hi), lo, hi, restarts, seed)
    best = run["best"]
    _adopt(model, best)
    if best["post"] is None or best["objective"] >= FAILED:
        raise NumericalFailure("no evaluation of the free energy succeeded; the forward model overflows "
                               "at every hyperparameter setting tried (check the data scale and bounds)")
    return FitResult(success=run["success"], message=run["message"], objective=best["objective"],
                     n_iter=run["n_iter"], n_eval=run["n_eval"], trace=run["trace"], restarts=summaries,
                     elapsed=time.perf_counter() - t0)


def _adopt(model, best):
    """Leave a LinearizedGP at a search's best evaluation: its parameters and posterior."""
    model.set_parameters(**best["params"])
    if best["post"] is not None:
        model.adopt_posterior(best["post"], best["K"])
