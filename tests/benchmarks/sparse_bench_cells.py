"""The cells of ``bench_sparse.py``: the issue's data and settings, gpexplorer's and GPy's models
on it, timing, finite-difference checks, the matmul rate and the Snelson optimisations (all in
this process). Imported by ``bench_sparse.py`` after it has pinned the thread pools."""

from __future__ import annotations

import gc
import json
import math
import os
import statistics
import sys
import time
import warnings
from pathlib import Path

import numpy as np

from gpexplorer import datasets, kernels, models

# ------------------------------------------------------------------------------------------
# the set-up of the issue
DOMAIN = (0.0, 6.0)
VARIANCE = 1.0
LENGTHSCALE = 0.5
NOISE_VARIANCE = 0.09  # also the variance of the noise in the generated data
JITTER = 1e-6  # added to diag(Kuu) by both libraries
SEED = 0

#: (N, M, required speed-up of gpexplorer over GPy for one objective + gradient)
SIZES = ((200, 10, 15.0), (2000, 50, 5.0), (20000, 200, 2.0))
QUICK_MAX_N = 2000
APPROXIMATIONS = ("vfe", "fitc")
#: dominant dense work of one objective + gradient, in units of M^2 N flops
FLOPS_PER_M2N = {"vfe": 4, "fitc": 6}
FLOP_FORMULA = {"vfe": "4 M^2 N (trsm M^2N + syrk M^2N + gemm 2M^2N)",
                "fitc": "6 M^2 N (2 trsm M^2N + 2 syrk M^2N + gemm 2M^2N)"}
MATMUL_N = 2000

SNELSON_M = 15
OPTIMISATION_RUNS = (("vfe", 1000, "to convergence"), ("fitc", 200, "200 iterations"))
OPTIMISATION_TARGET = 10.0

LML_RTOL = 1e-6
FD_TOL = 1e-4  # max relative error of a central difference against the analytic gradient
FD_STEP = 3e-3  # Richardson steps h and 2h; in log space for positive parameters, absolute for Z
FD_NOISE_FACTOR = 5.0  # allowance, in units of (round-off of F) / step


# ------------------------------------------------------------------------------------------
# data and models
def make_problem(N, M, seed=SEED):
    """X ~ U(0, 6) [N, 1], y = sin 3x + 0.3 cos 7x + N(0, 0.09) [N], Z evenly spaced [M, 1]."""
    rng = np.random.default_rng(seed)
    X = rng.uniform(*DOMAIN, size=(N, 1))
    x = X[:, 0]
    y = np.sin(3.0 * x) + 0.3 * np.cos(7.0 * x) + rng.normal(0.0, math.sqrt(NOISE_VARIANCE), size=N)
    Z = np.linspace(*DOMAIN, M)[:, None]
    return X, y, Z


def gpexplorer_model(X, y, Z, approximation, variance=VARIANCE, lengthscale=LENGTHSCALE,
                     noise_variance=NOISE_VARIANCE):
    return models.SparseGPR(X, y, kernel=kernels.SquaredExponential(variance=variance, lengthscale=lengthscale),
                            Z=Z.copy(), approximation=approximation, noise_variance=noise_variance, jitter=JITTER)


def gpy_available():
    try:
        import GPy  # noqa: F401
    except Exception:  # ImportError, or a GPy that cannot load against this numpy
        return False
    return True


def gpy_model(X, y, Z, approximation, variance=VARIANCE, lengthscale=LENGTHSCALE, noise_variance=NOISE_VARIANCE):
    """The same model in GPy 1.15 with Z free and the same jitter on Kuu.

    VFE: ``SparseGPRegression`` (VarDTC inference; its class default jitter is 1e-8, so the
    instance's ``const_jitter`` is set to JITTER). FITC: ``SparseGPRegression`` has no switch
    for it, so ``GPy.core.SparseGP`` with ``FITC()`` inference (jitter 1e-6, set explicitly).
    """
    import GPy
    from GPy.inference.latent_function_inference import FITC

    kern = GPy.kern.RBF(X.shape[1], variance=variance, lengthscale=lengthscale)
    Y = y[:, None].copy()
    if approximation == "vfe":
        m = GPy.models.SparseGPRegression(X.copy(), Y, Z=Z.copy(), kernel=kern)
        m.Gaussian_noise.variance = noise_variance
    elif approximation == "fitc":
        m = GPy.core.SparseGP(X.copy(), Y, Z.copy(), kern, GPy.likelihoods.Gaussian(variance=noise_variance),
                              inference_method=FITC())
    else:
        raise ValueError(f"no GPy peer for approximation {approximation!r}")
    m.inference_method.const_jitter = JITTER
    m.parameters_changed()  # recompute with the jitter just set
    if m.Z.is_fixed or m.optimizer_array.size != Z.size + 3:
        raise RuntimeError("GPy model does not have Z and the three hyperparameters free")
    return m


def _scalar(value):
    return float(np.asarray(value).reshape(-1)[0])


def gpy_log_marginal_likelihood(m):
    return _scalar(m.log_likelihood())


# ------------------------------------------------------------------------------------------
# timing
def time_call(fn, target_seconds=1.5, min_repeats=5, max_repeats=2000, warmup=2):
    """Median wall time of ``fn(i)`` over enough repeats to fill ~``target_seconds``.

    ``warmup`` untimed calls first (numba compilation or cache loading, BLAS buffers); one
    more untimed call sizes the repeat count. Timings are in milliseconds.
    """
    for i in range(warmup):
        fn(-1 - i)
    t0 = time.perf_counter()
    fn(-1 - warmup)
    estimate = time.perf_counter() - t0
    repeats = int(min(max_repeats, max(min_repeats, math.ceil(target_seconds / max(estimate, 1e-9)))))
    times = []
    gc_was_enabled = gc.isenabled()
    gc.collect()
    gc.disable()
    try:
        for i in range(repeats):
            t0 = time.perf_counter()
            fn(i)
            times.append(time.perf_counter() - t0)
    finally:
        if gc_was_enabled:
            gc.enable()
    ms = sorted(t * 1e3 for t in times)
    q = statistics.quantiles(ms, n=4, method="inclusive") if len(ms) >= 2 else [ms[0]] * 3
    return {"median_ms": statistics.median(ms), "min_ms": ms[0], "q1_ms": q[0], "q3_ms": q[2],
            "repeats": repeats}


def _nudge(i):
    """A relative change of ~1e-12 per call index: numerically nothing, never a cache hit."""
    return 1.0 + 1e-12 * (i + 10)


# ------------------------------------------------------------------------------------------
# gradient sanity check
def objective_roundoff(model, samples=6):
    """Spread (max - min) of F over lengthscales 1e-14 relative apart: F's own round-off.

    The true change of F over such moves is ~1e-14 |dF/dlog l|, far below any round-off,
    so the spread measures how many digits of F the implementation delivers.
    """
    probe = model.copy()
    ell = float(probe.kernel.lengthscale)
    values = []
    for i in range(samples):
        probe.set_parameters({"lengthscale": ell * (1.0 + 1e-14 * i)})
        values.append(-probe.log_marginal_likelihood())
    return float(max(values) - min(values))


def finite_difference_check(model, step=FD_STEP, z_indices=None, tol=FD_TOL):
    """Finite differences of F = -log ML on variance, lengthscale, noise variance and two Z
    (by default the two inducing inputs with the largest |dF/dZ|).

    Positive parameters are stepped in log space (compared with theta dF/dtheta), inducing
    inputs additively. Each derivative is a Richardson-extrapolated central difference,
    (4 D(h) - D(2h)) / 3 with D(h) = (F(x + h) - F(x - h)) / 2h: truncation error O(h^4), so
    a step large enough to keep F's round-off small in the quotient can be used.

    Reported: per entry the relative error |fd - analytic| / max(|fd|, |analytic|) (its
    maximum is ``max_rel_err``) and the error relative to the largest checked gradient
    (``scaled_err``). The check passes if every error is within ``tol`` times the largest
    checked gradient plus FD_NOISE_FACTOR times what F's measured round-off alone can put into
    the difference (0.75 roundoff / step); entries where that allowance exceeds ``tol``
    relative to the entry itself are listed as ``noise_limited``. The model is not changed.
    """
    F, grads, _ = model.objective_and_gradient()
    M = model.Z.shape[0]
    if z_indices is None:
        z_indices = sorted(int(k) for k in np.argsort(-np.abs(grads["Z"][:, 0]))[:min(2, M)])
    base = model.parameters
    probe = model.copy()

    def objective(params):
        probe.set_parameters(params)
        value = -probe.log_marginal_likelihood()
        probe.set_parameters(base)
        return value

    def richardson(moved):  # moved(d) -> parameter dict displaced by d
        def central(h):
            return (objective(moved(h)) - objective(moved(-h))) / (2.0 * h)

        return (4.0 * central(step) - central(2.0 * step)) / 3.0

    def z_moved(k):
        def moved(d):
            Zd = base["Z"].copy()
            Zd[k, 0] += d
            return {"Z": Zd}

        return moved

    entries = []
    for name in ("variance", "lengthscale", "noise_variance"):
        theta = float(base[name])
        fd = richardson(lambda d, name=name, theta=theta: {name: theta * math.exp(d)})
        entries.append({"entry": f"log {name}", "analytic": theta * float(grads[name]), "finite_difference": fd})
    for k in z_indices:
        entries.append({"entry": f"Z[{k}]", "analytic": float(grads["Z"][k, 0]),
                        "finite_difference": richardson(z_moved(k))})
    roundoff = objective_roundoff(model)
    allowance = FD_NOISE_FACTOR * 0.75 * roundoff / step
    gscale = max(max(abs(e["analytic"]) for e in entries), 1e-300)
    for e in entries:
        err = abs(e["analytic"] - e["finite_difference"])
        own = max(abs(e["analytic"]), abs(e["finite_difference"]), 1e-300)
        e["rel_err"] = err / own
        e["scaled_err"] = err / gscale
        e["passed"] = bool(err <= tol * gscale + allowance)
        e["noise_limited"] = bool(allowance > tol * own)
    return {"max_rel_err": max(e["rel_err"] for e in entries),
            "max_scaled_err": max(e["scaled_err"] for e in entries), "tol": tol, "step": step,
            "objective": float(F), "roundoff": roundoff, "noise_allowance": allowance,
            "noise_limited": [e["entry"] for e in entries if e["noise_limited"]],
            "passed": all(e["passed"] for e in entries), "entries": entries}


# ------------------------------------------------------------------------------------------
# the two sides of one cell
def measure_gpexplorer(N, M, approximation, *, seed=SEED, target_seconds=1.5, min_repeats=5,
                       max_repeats=2000, fd_check=True):
    """Time gpexplorer's objective + gradient (all hyperparameters, noise, Z) on the issue's data."""
    X, y, Z = make_problem(N, M, seed)
    m = gpexplorer_model(X, y, Z, approximation)

    def call(i):
        s = _nudge(i)
        m.set_parameters({"lengthscale": LENGTHSCALE * s, "noise_variance": NOISE_VARIANCE * s})
        return m.objective_and_gradient()

    timing = time_call(call, target_seconds, min_repeats, max_repeats)
    m.set_parameters({"lengthscale": LENGTHSCALE, "noise_variance": NOISE_VARIANCE})
    out = {"library": "gpexplorer", "approximation": approximation, "N": N, "M": M, **timing,
           "log_marginal_likelihood": float(m.log_marginal_likelihood()), "jitter_used": m.jitter_used}
    if fd_check:
        out["fd_check"] = finite_difference_check(m)
    return out


def measure_gpy(N, M, approximation, *, seed=SEED, target_seconds=1.5, min_repeats=5, max_repeats=2000):
    """Time GPy's ``_objective_grads`` (one full objective + gradient, Z free) on the same data."""
    X, y, Z = make_problem(N, M, seed)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        m = gpy_model(X, y, Z, approximation)
        x0 = m.optimizer_array.copy()
        names = list(m.parameter_names_flat())
        moved = [j for j, n in enumerate(names)
                 if n.endswith("lengthscale") or (n.endswith("variance") and "Gaussian_noise" in n)]
        if len(moved) != 2:
            raise RuntimeError(f"unexpected GPy parameter names {names}")

        def call(i):
            x = x0.copy()
            x[moved] *= _nudge(i)
            return m._objective_grads(x)

        timing = time_call(call, target_seconds, min_repeats, max_repeats)
        m.optimizer_array = x0
        lml = gpy_log_marginal_likelihood(m)
    return {"library": "GPy", "approximation": approximation, "N": N, "M": M, **timing,
            "log_marginal_likelihood": lml, "jitter_used": float(m.inference_method.const_jitter)}


def matmul_gflops(n=MATMUL_N, min_repeats=5, target_seconds=2.0):
    """One-thread float64 n x n @ n x n rate: 2 n^3 flops over the median time."""
    rng = np.random.default_rng(1)
    a, b = rng.standard_normal((n, n)), rng.standard_normal((n, n))
    c = np.empty((n, n))
    timing = time_call(lambda i: np.matmul(a, b, out=c), target_seconds, min_repeats, 50, warmup=1)
    gflops = 2.0 * n**3 / (timing["median_ms"] * 1e-3) / 1e9
    return {"n": n, "gflops": gflops, **timing}


# ------------------------------------------------------------------------------------------
# joint optimisation on Snelson's data
def _gpy_lbfgsb():
    """paramz's ``opt_lbfgsb`` unchanged, except that it keeps scipy's iteration count."""
    from paramz.optimization.optimization import opt_lbfgsb
    from scipy import optimize

    class LBFGSB(opt_lbfgsb):
        nit = None

        def opt(self, x_init, f_fp=None, f=None, fp=None):
            rcstrings = ["Converged", "Maximum number of f evaluations reached", "Error"]
            opt_dict = {}
            if self.gtol is not None:
                opt_dict["pgtol"] = self.gtol
            if self.bfgs_factor is not None:
                opt_dict["factr"] = self.bfgs_factor
            opt_result = optimize.fmin_l_bfgs_b(f_fp, x_init, maxfun=self.max_iters, maxiter=self.max_iters,
                                                **opt_dict)
            self.x_opt = opt_result[0]
            self.f_opt = f_fp(self.x_opt)[0]
            self.funct_eval = opt_result[2]["funcalls"]
            self.nit = int(opt_result[2]["nit"])
            self.status = rcstrings[opt_result[2]["warnflag"]]
            if opt_result[2]["warnflag"] == 2:
                self.status = "Error" + str(opt_result[2]["task"])

    return LBFGSB


def time_runs(build, run, target_seconds=1.5, min_repeats=3, max_repeats=50):
    """Median wall time (s) of ``run(build())`` over repeats filling ~``target_seconds``.

    ``build`` (untimed) makes a fresh model for each repeat, so every run starts from the
    same point and follows the same deterministic path. Returns (stats, model, result) of
    the last run.
    """
    times = []
    while len(times) < min_repeats or (sum(times) < target_seconds and len(times) < max_repeats):
        model = build()
        gc.collect()
        t0 = time.perf_counter()
        result = run(model)
        times.append(time.perf_counter() - t0)
    stats = {"seconds": statistics.median(times), "min_seconds": min(times), "repeats": len(times)}
    return stats, model, result


def optimise_snelson(approximation, max_iter, with_gpy=True, target_seconds=1.5, min_repeats=3):
    """Joint L-BFGS-B over variance, lengthscale, noise and Z from the same start in both.

    Each library's whole optimisation is timed ``min_repeats`` or more times from a fresh
    model (median reported) after an untimed warm-up evaluation.
    """
    ds = datasets.load("snelson")
    X, y = np.asarray(ds.X, dtype=float), np.asarray(ds.y, dtype=float)
    Z = np.linspace(X.min(), X.max(), SNELSON_M)[:, None]
    gpexplorer_model(X, y, Z, approximation).objective_and_gradient()  # numba warm-up, untimed
    start_nlml = -float(gpexplorer_model(X, y, Z, approximation).log_marginal_likelihood())
    stats, m, res = time_runs(lambda: gpexplorer_model(X, y, Z, approximation),
                              lambda model: model.fit(max_iter=max_iter), target_seconds, min_repeats)
    out = {"approximation": approximation, "max_iter": max_iter, "N": len(y), "M": SNELSON_M,
           "start_nlml": start_nlml,
           "gpexplorer": {**stats, "nlml": float(res.objective), "n_iter": int(res.n_iter),
                          "n_eval": int(res.n_eval), "message": str(res.message),
                          "params": {k: (v.ravel().tolist() if isinstance(v, np.ndarray) else v)
                                     for k, v in m.parameters.items()}}}
    if with_gpy:
        LBFGSB = _gpy_lbfgsb()

        def gpy_run(g):
            opt = LBFGSB(max_iters=max_iter)
            g.optimize(optimizer=opt, max_iters=max_iter, messages=False, ipython_notebook=False)
            return opt

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            g = gpy_model(X, y, Z, approximation)
            g._objective_grads(g.optimizer_array.copy())  # first-call overheads, untimed
            gstats, g, opt = time_runs(lambda: gpy_model(X, y, Z, approximation), gpy_run, target_seconds,
                                       min_repeats)
            out["gpy"] = {**gstats, "nlml": -gpy_log_marginal_likelihood(g), "n_iter": opt.nit,
                          "n_eval": int(opt.funct_eval), "message": str(opt.status),
                          "params": {"variance": _scalar(g.kern.variance),
                                     "lengthscale": _scalar(g.kern.lengthscale),
                                     "noise_variance": _scalar(g.likelihood.variance),
                                     "Z": np.asarray(g.Z).ravel().tolist()}}
        gpx_s, gpy_s = stats["seconds"], gstats["seconds"]
        out["speedup"] = gpy_s / gpx_s
        out["speedup_per_eval"] = (gpy_s / max(out["gpy"]["n_eval"], 1)) / (gpx_s / max(res.n_eval, 1))
        out["target"] = OPTIMISATION_TARGET
        out["target_met"] = bool(out["speedup"] >= OPTIMISATION_TARGET)
    return out


# ------------------------------------------------------------------------------------------
# peers in worker processes, interleaved with this process's gpexplorer
#: where README.md's install commands put the peers' venvs (or $GPFLOW_PYTHON / $GPYTORCH_PYTHON)
