"""Joint maximisation of a model's objective over hyperparameters, noise and inducing features.

The optimiser sees one flat vector: each parameter through its own transform
(:class:`gpexplorer.parameters.Parameter`: log of every positive parameter, real ones such as
inducing inputs as they are), with the parameter's bounds. Gradients are chained analytically
(dF/dlog t = t dF/dt). Any subset can be frozen by name; the group names ``"kernel"`` (all
kernel hyperparameters), ``"hyperparameters"`` (the same) and ``"inducing"`` (every parameter
of the inducing feature) are accepted. Each accepted L-BFGS-B iterate is recorded (objective,
terms, parameters) for replay.

The driver is lean because small fits are dominated by what surrounds the objective (at N = 200
about two thirds of a fit was scipy's ``minimize`` wrapper, dict packing and trace copies): it
calls scipy's L-BFGS-B routine ``setulb`` in its own loop, the same loop ``minimize`` runs, on
one packed vector (scipy >= 1.15; other versions go through ``minimize``), maps the vector to
natural values with one ``exp``, and builds trace entries only once a run ends (or as they
come, for a callback).
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

    # the flat forms the fit driver works with ---------------------------------------------------
    @property
    def _layout(self):
        if "_slices" not in self.__dict__:
            offsets = np.cumsum([0] + [self.sizes[n] for n in self.names])
            self._slices = [(n, int(offsets[i]), int(offsets[i + 1]), self.shapes[n]) for i, n in enumerate(self.names)]
            self._is_log = np.concatenate([np.full(self.sizes[n], self.specs[n].is_log) for n in self.names]
                                          ) if self.names else np.zeros(0, bool)
        return self._slices, self._is_log

    def natural(self, x):
        """The natural values of the flat vector x as one new flat array (exp where log)."""
        nat = x.copy()
        return np.exp(x, out=nat, where=self._layout[1])

    def values_of(self, nat):
        """{name: value} from a flat natural vector: floats for scalars, views of ``nat`` else
        (as :meth:`unpack`, but the arrays share ``nat``'s memory)."""
        out = {}
        for n, i, j, shape in self._layout[0]:
            out[n] = nat[i:j].reshape(shape) if shape else float(nat[i])
        return out

    def chain_natural(self, nat, grads):
        """:meth:`chain` from a flat natural vector: dF/du = t dF/dt for log parameters."""
        slices, is_log = self._layout
        flat = np.empty(nat.shape[0])
        for n, i, j, shape in slices:
            if shape:
                flat[i:j] = grads[n].reshape(-1) if isinstance(grads[n], np.ndarray) else np.ravel(grads[n])
            else:
                flat[i] = grads[n]
        return np.multiply(flat, nat, out=flat, where=is_log)


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
    rng = np.random.default_rng(seed) if restarts else None  # seeding from the OS costs ~10 us
    initial = _snapshot(model.parameters)
    packer = Packer(model.parameter_specs, initial, fixed)
    t0 = time.perf_counter()
    runs = []
    threads = _threads.blas_thread_count()
    with _threads.single_threaded():  # L-BFGS-B's own length-P vectors never want threads
        for start in range(int(restarts) + 1):
            params = initial if start == 0 else _perturbed_start(model, packer, initial, rng)
            if start > 0:  # the first run starts where the model is
                model.set_parameters(params)
            runs.append(_single_run(model, packer, params, max_iter, callback, tol, threads))
            runs[-1]["start"] = start
    best = min(runs, key=lambda r: r["objective"])
    if best is not runs[-1]:  # each run leaves the model at its own best
        model.set_parameters(best["params"])
    return FitResult(
        success=best["success"], message=best["message"], objective=best["objective"],
        n_iter=best["n_iter"], n_eval=best["n_eval"], trace=best["trace"],
        restarts=[{k: r[k] for k in ("start", "objective", "n_iter", "message")} for r in runs],
        elapsed=time.perf_counter() - t0,
    )


class _Objective:
    """F and its flat gradient at x for one run, with the last few evaluations kept by x."""

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
            self.model.assign_parameters(self.packer.values_of(nat))  # exp() of bounded logs: positive, finite
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


def _single_run(model, packer, params, max_iter, callback, tol, threads):
    """One L-BFGS-B run from ``params`` (the model is already there)."""
    objective = _Objective(model, packer, threads)
    order = list(params)
    fixed_values = {k: v for k, v in _snapshot(params).items() if k not in packer.names}
    records = []  # (F, terms, natural vector) per accepted iterate, the start first
    handed_out = {}  # index -> the TraceEntry a callback received (the trace holds that object)

    def entry(i):
        F, terms, nat = records[i]
        values = packer.values_of(nat)
        return TraceEntry(i, F, dict(terms), {k: values[k] if k in values else fixed_values[k] for k in order})

    def record(x, notify=True):
        F, _, terms, nat = objective.at(x)
        records.append((F, terms, nat.copy()))  # a copy: the model holds views of nat
        if callback is None or not notify:
            return False
        i = len(records) - 1
        handed_out[i] = entry(i)
        return bool(callback(handed_out[i]))

    x0 = packer.pack(params)
    record(x0, notify=False)  # the start is recorded, never passed to the callback
    if x0.size == 0 or max_iter == 0:
        res_x, success, message, nit = x0, True, "nothing to optimise", 0
    else:
        ftol, gtol = (tol, tol) if tol is not None else (2.2204460492503131e-09, 1e-5)
        res_x, success, message, nit = _lbfgsb(objective, x0, packer.box(), int(max_iter), ftol, gtol, record)
    trace = [handed_out[i] if i in handed_out else entry(i) for i in range(len(records))]
    # L-BFGS-B may end on a point that was not its best evaluation; keep the best iterate
    best = min(trace, key=lambda e: e.objective)
    F_final, _, terms, nat = objective.at(res_x)
    if best.objective < F_final:
        final_params, F_final = best.params, best.objective
    else:
        values = packer.values_of(nat.copy())
        final_params = {k: values[k] if k in values else fixed_values[k] for k in order}
    model.set_parameters(final_params)
    return {"params": final_params, "objective": F_final, "success": success, "message": message,
            "n_iter": nit, "n_eval": objective.n_eval, "trace": trace}


def _setulb():
    """scipy's L-BFGS-B routine if it has the signature of scipy >= 1.15 (the C translation),
    with scipy's status and task messages; else None (then ``minimize`` drives it)."""
    try:
        from scipy.optimize import _lbfgsb, _lbfgsb_py
    except ImportError:
        return None
    doc = (_lbfgsb.setulb.__doc__ or "").replace(" ", "")
    if not doc.startswith("setulb(m,x,l,u,nbd,f,g,factr,pgtol,wa,iwa,task,lsave,isave,dsave,maxls,ln_task)"):
        return None
    return _lbfgsb.setulb, _lbfgsb_py.status_messages, _lbfgsb_py.task_messages


def _lbfgsb(fun, x0, box, max_iter, ftol, gtol, on_iterate, maxcor=10, maxls=20, maxfun=15000):
    """Minimise ``fun(x) -> (F, gradient)`` within ``box`` = (low, high) from x0 with L-BFGS-B;
    ``on_iterate(x)`` after each accepted iterate stops the run by returning True.

    The loop of scipy's ``_minimize_lbfgsb`` (scipy 1.15-1.17) with its defaults, without
    its per-evaluation wrappers. Returns (x, success, message, number of iterations).
    """
    routine = _setulb()
    lo, hi = box
    if routine is None:
        return _lbfgsb_minimize(fun, x0, lo, hi, max_iter, ftol, gtol, on_iterate)
    setulb, status_messages, task_messages = routine
    n = x0.size
    nbd = np.where(np.isfinite(lo), np.where(np.isfinite(hi), 2, 1), np.where(np.isfinite(hi), 3, 0)).astype(np.int32)
    low, high = np.where(np.isfinite(lo), lo, 0.0), np.where(np.isfinite(hi), hi, 0.0)
    x = np.clip(np.array(x0, dtype=np.float64), lo, hi)
    f, g = np.array(0.0), np.zeros(n)
    wa = np.zeros(2 * maxcor * n + 5 * n + 11 * maxcor * maxcor + 8 * maxcor)
    iwa = np.zeros(3 * n, dtype=np.int32)
    task, ln_task, lsave = np.zeros(2, np.int32), np.zeros(2, np.int32), np.zeros(4, np.int32)
    isave, dsave = np.zeros(44, np.int32), np.zeros(29)
    factr = ftol / np.finfo(float).eps
    nit = nfev = 0
    while True:
        setulb(maxcor, x, low, high, nbd, f, g, factr, gtol, wa, iwa, task, lsave, isave, dsave, maxls, ln_task)
        if task[0] == 3:  # FG: evaluate at x
            value, grad = fun(x)
            f[...] = value
            g[:] = grad
            nfev += 1
        elif task[0] == 1:  # NEW_X: an accepted iterate
            nit += 1
            if on_iterate(x):
                task[0], task[1] = 5, 505
            if nit >= max_iter:
                task[0], task[1] = 5, 504
            elif nfev > maxfun:
                task[0], task[1] = 5, 502
        else:
            break
    message = status_messages[int(task[0])] + ": " + task_messages[int(task[1])]
    return x, bool(task[0] == 4), message, nit


def _lbfgsb_minimize(fun, x0, lo, hi, max_iter, ftol, gtol, on_iterate):
    from scipy.optimize import minimize  # on use: importing scipy.optimize takes 0.4 s of a page's start

    def stop_on(xk):
        if on_iterate(xk):
            raise StopIteration

    bounds = [(None if math.isinf(a) else a, None if math.isinf(b) else b) for a, b in zip(lo, hi)]
    res = minimize(fun, x0, jac=True, method="L-BFGS-B", bounds=bounds, callback=stop_on,
                   options={"maxiter": max_iter, "ftol": ftol, "gtol": gtol})
    return res.x, bool(res.success), str(res.message), int(res.nit)
