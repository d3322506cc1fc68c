"""Joint maximisation of a model's objective over hyperparameters, noise and inducing features.

The optimiser sees one flat vector: each parameter through its own transform
(:class:`gpexplorer.parameters.Parameter`: log of every positive parameter, real ones such as
inducing inputs as they are), with the parameter's bounds. Gradients are chained analytically
(dF/dlog t = t dF/dt). Any subset can be frozen by name; the group names ``"kernel"`` (all
kernel hyperparameters), ``"hyperparameters"`` (the same) and ``"inducing"`` (every parameter
of the inducing feature) are accepted. Each accepted L-BFGS-B iterate is recorded (objective,
terms, parameters) for replay.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field

import numpy as np

from gpexplorer import _threads
from gpexplorer.linalg import CholeskyError

#: objective returned where the model cannot be evaluated (pushes L-BFGS-B back)
FAILED_OBJECTIVE = 1e25


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


def _snapshot(params):
    return {k: (v.copy() if isinstance(v, np.ndarray) else v) for k, v in params.items()}


class Packer:
    """Maps a model's parameter dict to and from the optimiser's flat vector.

    ``specs`` maps every name to its :class:`gpexplorer.parameters.Parameter` (transform and
    bounds); names in ``fixed`` are left out of the vector.
    """

    def __init__(self, specs, values, fixed=()):
        self.names = [n for n in values if n not in fixed]
        self.specs = {n: specs[n] for n in self.names}
        self.shapes = {n: np.shape(values[n]) for n in self.names}
        self.sizes = {n: int(np.prod(self.shapes[n], dtype=int)) for n in self.names}
        self.bounds = []  # per entry, (low, high) in optimiser coordinates, None where unbounded
        for n in self.names:
            self.bounds += [self.specs[n].free_bounds()] * self.sizes[n]

    def box(self):
        """(low, high) arrays of the bounds in optimiser coordinates (-inf / inf where unbounded)."""
        lo = np.array([-math.inf if b[0] is None else b[0] for b in self.bounds])
        hi = np.array([math.inf if b[1] is None else b[1] for b in self.bounds])
        return lo, hi

    def pack(self, params):
        parts = [self.specs[n].to_free(params[n]) for n in self.names]
        return np.concatenate(parts) if parts else np.zeros(0)

    def unpack(self, x):
        out, i = {}, 0
        for n in self.names:
            out[n] = self.specs[n].from_free(x[i:i + self.sizes[n]], self.shapes[n])  # never a view of x
            i += self.sizes[n]
        return out

    def chain(self, values, grads):
        """Flat gradient in optimiser coordinates from natural-parameter gradients."""
        parts = [self.specs[n].chain(values[n], grads[n]) for n in self.names]
        return np.concatenate(parts) if parts else np.zeros(0)


def feature_parameter_names(model):
    """Names of the model's inducing-feature parameters (none for a model without one)."""
    feature = getattr(model, "inducing", None)
    return tuple(feature.parameter_names) if feature is not None else ()


def expand_fixed(model, fixed):
    """The set of parameter names that ``fixed`` (names or groups) freezes."""
    if isinstance(fixed, str):
        fixed = (fixed,)
    names = set(model.parameters)
    groups = {"kernel": set(model.kernel.param_names), "hyperparameters": set(model.kernel.param_names),
              "inducing": set(feature_parameter_names(model))}
    out = set()
    for f in fixed:
        if f in groups:
            out |= groups[f]
        elif f in names:
            out.add(f)
        else:
            raise ValueError(f"cannot fix {f!r}: the model's parameters are {sorted(names)} "
                             "(or the groups 'kernel'/'hyperparameters'/'inducing')")
    return out


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


def fit(model, max_iter=200, fixed=(), restarts=0, seed=None, callback=None, tol=None):
    """Minimise F = -log_marginal_likelihood over the free parameters with L-BFGS-B.

    ``restarts`` extra starts perturb the log-hyperparameters (sd 0.5) and redraw the inducing
    feature from the data; the best run is kept and its trace returned. ``callback(entry)`` is
    called with each TraceEntry; returning True stops the run. The model is left at the best
    parameters found. BLAS runs on one thread except inside evaluations whose work
    (``model.evaluation_work``) is above :data:`gpexplorer._threads.THREADED_WORK`.
    """
    if int(max_iter) < 0:
        raise ValueError(f"max_iter must be non-negative; got {max_iter}")
    fixed = expand_fixed(model, fixed)
    rng = np.random.default_rng(seed)
    initial = _snapshot(model.parameters)
    packer = Packer(model.parameter_specs, initial, fixed)
    t0 = time.perf_counter()
    runs = []
    threads = _threads.blas_thread_count()
    with _threads.single_threaded():  # L-BFGS-B's own length-P vectors never want threads
        for start in range(int(restarts) + 1):
            params = initial if start == 0 else _perturbed_start(model, packer, initial, rng)
            runs.append(_single_run(model, packer, params, max_iter, callback, tol, threads))
            runs[-1]["start"] = start
    best = min(runs, key=lambda r: r["objective"])
    model.set_parameters(best["params"])
    return FitResult(
        success=best["success"], message=best["message"], objective=best["objective"],
        n_iter=best["n_iter"], n_eval=best["n_eval"], trace=best["trace"],
        restarts=[{k: r[k] for k in ("start", "objective", "n_iter", "message")} for r in runs],
        elapsed=time.perf_counter() - t0,
    )


def _single_run(model, packer, params, max_iter, callback, tol, threads):
    model.set_parameters(params)
    work = model.evaluation_work
    threaded = threads > 1 and work >= _threads.THREADED_WORK
    order = list(params)
    fixed_values = {k: v for k, v in _snapshot(params).items() if k not in packer.names}
    cache = {}  # x bytes -> (F, flat gradient, terms, parameter values); the last few only
    n_eval = [0]

    def evaluate(x):
        key = x.tobytes()
        hit = cache.get(key)
        if hit is not None:
            return hit[0], hit[1]
        values = packer.unpack(x)
        n_eval[0] += 1
        try:
            model.assign_parameters(values)  # exp() of bounded logs: positive, finite
            if threaded:
                with _threads.threads_for(work, threads):
                    F, grads, terms = model.objective_and_gradient()
            else:
                F, grads, terms = model.objective_and_gradient()
            g = packer.chain(values, grads)
            if not (math.isfinite(F) and math.isfinite(g.sum())):
                raise FloatingPointError
        except (CholeskyError, FloatingPointError, np.linalg.LinAlgError):
            F, g, terms = FAILED_OBJECTIVE, np.zeros_like(x), {}
        if len(cache) > 8:
            cache.pop(next(iter(cache)))
        cache[key] = (F, g, terms, values)
        return F, g

    def entry_at(x):
        F, _ = evaluate(x)
        _, _, terms, values = cache[x.tobytes()]
        snapshot = {k: _copied(values[k]) if k in values else fixed_values[k] for k in order}
        return TraceEntry(len(trace), F, dict(terms), snapshot)

    trace = []
    x0 = packer.pack(params)
    trace.append(entry_at(x0))

    def on_iterate(xk):
        entry = entry_at(xk)
        trace.append(entry)
        if callback is not None and callback(entry):
            raise StopIteration

    options = {"maxiter": int(max_iter)}
    if tol is not None:
        options.update(ftol=tol, gtol=tol)
    if x0.size == 0 or max_iter == 0:
        res_x, success, message, nit = x0, True, "nothing to optimise", 0
    else:
        from scipy.optimize import minimize  # on use: importing scipy.optimize takes 0.4 s of a page's start

        res = minimize(evaluate, x0, jac=True, method="L-BFGS-B", bounds=packer.bounds,
                       callback=on_iterate, options=options)
        res_x, success, message, nit = res.x, bool(res.success), str(res.message), int(res.nit)
    # L-BFGS-B may end on a point that was not its best evaluation; keep the best iterate
    best = min(trace, key=lambda e: e.objective)
    F_final, _ = evaluate(res_x)
    if best.objective < F_final:
        final_params = best.params
        F_final = best.objective
    else:
        final_params = entry_at(res_x).params
    model.set_parameters(final_params)
    return {"params": final_params, "objective": F_final, "success": success, "message": message,
            "n_iter": nit, "n_eval": n_eval[0], "trace": trace}


def _copied(value):
    return value.copy() if isinstance(value, np.ndarray) else value
