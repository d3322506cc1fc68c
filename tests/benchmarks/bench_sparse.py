#!/usr/bin/env python
"""gpexplorer vs GPy 1.15, GPflow 2.11 and GPyTorch: sparse GP objective + gradient and joint
optimisation, one thread.

    python tests/benchmarks/bench_sparse.py [--quick] [--json out.json] [--baseline /work/premove] [--big]

GPy runs in this process; GPflow and GPyTorch (and, with ``--baseline``, gpexplorer from another
checkout) run as worker processes in their own venvs (``sparse_peers.py``; see README.md for
the venvs), measured in interleaved rounds with this process's gpexplorer: each round gives
every side a short block of timed calls, in rotating order, and each side's minimum over all
rounds is compared (the machine is shared; minima of interleaved blocks are what is stable).
``--big`` adds one objective + gradient at N = 10^6, M = 200 per library, each in a fresh
process, with its peak memory.

Both libraries run in the same process on identical data (seeded), with the same kernel,
noise, inducing inputs and jitter on Kuu, and every BLAS / OpenMP / numba pool pinned to one
thread. What is measured:

1. One objective + gradient evaluation (with respect to every kernel hyperparameter, the noise
   variance and every inducing input Z) for VFE and FITC at (N, M) = (200, 10), (2000, 50),
   (20000, 200): gpexplorer ``SparseGPR.objective_and_gradient()`` against GPy's
   ``Model._objective_grads(x)`` (exactly one ``parameters_changed``: inference, the gradients
   of every parameter, Z free). Median of repeated ``time.perf_counter`` timings, after
   warm-up calls (so numba compilation is excluded), with the garbage collector paused. Every
   timed call moves the lengthscale and noise variance by ~1e-12 relative so that neither side
   can answer from a cache keyed on parameter values.
   The log marginal likelihoods of the two are compared (they must agree to 1e-6 relative).
   Gradients are *not* compared with GPy (GPy's FITC gradient is off in proportion to the
   jitter); instead gpexplorer's gradient is checked against Richardson-extrapolated central
   differences on five entries (variance, lengthscale, noise variance, two inducing inputs),
   allowing for the round-off of the objective itself, which is measured and printed.
2. At (20000, 200): the machine's one-thread float64 matmul rate (2000x2000 @ 2000x2000,
   2 n^3 flops) and the fraction of it the objective + gradient reaches, counting only the
   dominant O(M^2 N) dense work of gpexplorer's algorithm: VFE 4 M^2 N flops (trsm M^2 N +
   syrk M^2 N + gemm 2 M^2 N), FITC 6 M^2 N (2 trsm + 2 syrk + 1 gemm). The same count is
   used for GPy, so its column says how fast GPy does the same work.
3. Joint optimisation (hyperparameters, noise and Z) on Snelson's 200-point data with 15
   inducing inputs: VFE to convergence (max 1000 iterations) and FITC for 200 iterations,
   gpexplorer ``fit`` (L-BFGS-B) against GPy ``optimize('lbfgsb')``.

``--quick`` uses fewer repeats and skips N = 20000 (and the matmul rate): a smoke run.
The exit status is 1 if a VFE log marginal likelihood disagrees with GPy or a finite-difference
check fails; missed speed targets are reported, not fatal.
"""

from __future__ import annotations

import os
import sys

THREAD_VARS = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "NUMBA_NUM_THREADS",
               "VECLIB_MAXIMUM_THREADS")
# The pools read these when numpy / numba are first imported, so they only take effect when this
# file is run as a script. When it is imported by a process that already has numpy (the pytest
# smoke test), the environment is left alone: changing it then would pin nothing and would only
# leak into that process's children.
THREADS_PINNED_BY_ENV = "numpy" not in sys.modules and "numba" not in sys.modules
if THREADS_PINNED_BY_ENV:
    for _name in THREAD_VARS:
        os.environ[_name] = "1"
#: set on some machines of this workplace for old OpenBLAS builds; a current OpenBLAS then runs
#: slower kernels than its own choice. Unset for the run (peers inherit it) unless asked not to.
OPENBLAS_OVERRIDES = ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE")
REMOVED_OPENBLAS_ENV = {}
if THREADS_PINNED_BY_ENV and "--keep-openblas-env" not in sys.argv:
    REMOVED_OPENBLAS_ENV = {_name: os.environ.pop(_name) for _name in OPENBLAS_OVERRIDES if _name in os.environ}

import argparse  # noqa: E402
import gc  # noqa: E402
import json  # noqa: E402
import math  # noqa: E402
import platform  # noqa: E402
import statistics  # noqa: E402
import time  # noqa: E402
import warnings  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402

try:  # pins the BLAS pools at run time too (applied in main(), never on import)
    from threadpoolctl import threadpool_info, threadpool_limits
except ImportError:  # pragma: no cover - depends on the environment
    threadpool_info = threadpool_limits = None

_THREADPOOL_LIMITER = None  # set by pin_threads()


def pin_threads():
    """Limit every BLAS / OpenMP pool to one thread with threadpoolctl, if it is installed."""
    global _THREADPOOL_LIMITER
    if threadpool_limits is not None and _THREADPOOL_LIMITER is None:
        _THREADPOOL_LIMITER = threadpool_limits(limits=1)
    return _THREADPOOL_LIMITER is not None

REPO = Path(__file__).resolve().parents[2]
try:
    import gpexplorer  # noqa: F401
except ImportError:  # running from a checkout without `pip install -e .`
    sys.path.insert(0, str(REPO))
from gpexplorer import datasets, kernels, models  # noqa: E402


def _sibling(name):
    import importlib.util

    spec = importlib.util.spec_from_file_location(name, Path(__file__).resolve().parent / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


peers = _sibling("sparse_peers")

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
PEER_PYTHONS = {"gpflow": ("GPFLOW_PYTHON", "/work/peers/gpflow211/bin/python"),
                "gpytorch": ("GPYTORCH_PYTHON", "/work/peers/gpytorch/bin/python")}
PEER_APPROXIMATIONS = {"gpflow": ("vfe", "fitc"), "gpytorch": ("vfe",), "baseline": ("vfe", "fitc")}
BLOCK_SECONDS = 0.25  # timed calls per side and round: about this long
BIG_N, BIG_M = 1_000_000, 200
NO_REGRESSION = 1.05  # gpexplorer / baseline minimum at or below this counts as no regression
TARGETS = {"gemm_fraction": 0.5, "fitc_2000_over_gpflow": 2.0, "snelson_fit_over_gpflow": 10.0}


def peer_pythons(names):
    """{peer: python of its venv} for the requested peers whose python exists."""
    out = {}
    for name in names:
        var, default = PEER_PYTHONS[name]
        python = os.environ.get(var, default)
        if Path(python).exists():
            out[name] = python
    return out


def start_workers(pythons, baseline=None):
    workers = {name: peers.PeerProcess(name, python, name) for name, python in pythons.items()}
    if baseline:
        workers["baseline"] = peers.PeerProcess("baseline", sys.executable, "gpexplorer", pythonpath=baseline)
    for w in workers.values():
        w.info = w.ask({"kind": "info"})
    return workers


def write_data(directory, name, X, y, Z):
    path = Path(directory) / f"{name}.npz"
    if not path.exists():
        np.savez(path, X=X, y=y, Z=Z)
    return str(path)


def compare_cell(workers, N, M, approximation, rounds, directory):
    """Interleaved rounds of objective + gradient timings (ms): this process's gpexplorer and
    every worker that has the approximation; minimum and median per side, and each side's log
    marginal likelihood at the start."""
    X, y, Z = make_problem(N, M)
    data = write_data(directory, f"problem-{N}-{M}", X, y, Z)
    m = gpexplorer_model(X, y, Z, approximation)

    def local(repeats):
        def call(i):
            s = _nudge(i)
            m.set_parameters({"lengthscale": LENGTHSCALE * s, "noise_variance": NOISE_VARIANCE * s})
            return m.objective_and_gradient()

        return peers.timed(call, repeats, warmup=0)

    sides = {"gpexplorer": local}
    lml = {}
    for name, w in workers.items():
        if approximation in PEER_APPROXIMATIONS[name]:
            task = {"kind": "eval", "data": data, "approximation": approximation}
            sides[name] = lambda repeats, w=w, task=task: w.ask({**task, "repeats": repeats})["times_ms"]
            lml[name] = w.ask({**task, "repeats": 1})["log_marginal_likelihood"]  # builds, traces, warms up
    local(2)
    m.set_parameters({"lengthscale": LENGTHSCALE, "noise_variance": NOISE_VARIANCE})
    lml["gpexplorer"] = float(m.log_marginal_likelihood())
    block = {name: max(1, min(50, int(BLOCK_SECONDS / (1e-3 * min(side(1)))))) for name, side in sides.items()}
    times = peers.interleave(sides, rounds, block)
    return {"sides": {name: peers.summary(t) for name, t in times.items()}, "log_marginal_likelihood": lml,
            "block": block}


def compare_fits(workers, rounds, directory, max_iter=1000):
    """Snelson's VFE fit to convergence, whole fits (s) in interleaved rounds."""
    ds = datasets.load("snelson")
    X, y = np.asarray(ds.X, dtype=float), np.asarray(ds.y, dtype=float)
    Z = np.linspace(X.min(), X.max(), SNELSON_M)[:, None]
    data = write_data(directory, "snelson", X, y, Z)
    result = {}

    def local(repeats):
        times = []
        for _ in range(repeats):
            model = gpexplorer_model(X, y, Z, "vfe")
            gc.collect()
            t0 = time.perf_counter()
            res = model.fit(max_iter=max_iter)
            times.append(time.perf_counter() - t0)
        result["gpexplorer"] = {"nlml": float(res.objective), "n_iter": int(res.n_iter), "n_eval": int(res.n_eval)}
        return times

    def remote(name, w):
        def side(repeats):
            out = w.ask({"kind": "fit", "data": data, "approximation": "vfe", "max_iter": max_iter, "repeats": repeats})
            result[name] = {k: out[k] for k in ("nlml", "n_iter", "n_eval")}
            return out["times_s"]

        return side

    sides = {"gpexplorer": local, **{n: remote(n, w) for n, w in workers.items() if n in ("gpflow", "baseline")}}
    block = {name: max(1, min(20, int(4 * BLOCK_SECONDS / min(side(1))))) for name, side in sides.items()}
    times = peers.interleave(sides, rounds, block)
    return {"sides": {n: {**peers.summary(t), **result[n]} for n, t in times.items()}, "block": block,
            "N": len(y), "M": SNELSON_M, "max_iter": max_iter}


def compare_big(pythons, baseline, directory, n=BIG_N, M=BIG_M, approximation="vfe", log=print):
    """One objective + gradient at N = n per library, each in a fresh process: seconds and peak MB."""
    X, y, Z = make_problem(n, M)
    data = write_data(directory, f"problem-{n}-{M}", X, y, Z)
    del X, y
    here = str(Path(sys.modules["gpexplorer"].__file__).resolve().parents[1])  # the checkout imported here
    runs = [("gpexplorer", sys.executable, "gpexplorer", here)]
    if baseline:
        runs.append(("baseline", sys.executable, "gpexplorer", baseline))
    runs += [(name, pythons[name], name, None) for name in ("gpflow",) if name in pythons]
    out = {"N": n, "M": M, "approximation": approximation, "sides": {}}
    for name, python, library, path in runs:
        log(f"# N={n} M={M} {approximation.upper()}: {name} ...", file=sys.stderr)
        try:
            r = peers.big_run(python, library, data, approximation, pythonpath=path)
            out["sides"][name] = {"seconds": min(r["times_s"]), "first_seconds": r["first_seconds"],
                                  "peak_rss_mb": r["peak_rss_mb"], "rss_data_mb": r["rss_data_mb"]}
        except RuntimeError as err:
            out["sides"][name] = {"error": str(err)[-500:]}
    return out


def assess(results):
    """The issue's targets, each with its measured value."""
    out = []
    mm = results.get("matmul")
    for cell in results["cells"]:
        sides = cell.get("compare", {}).get("sides", {})
        a, N, M = cell["approximation"], cell["N"], cell["M"]
        if mm and N == SIZES[-1][0] and "gpexplorer" in sides:
            rate = FLOPS_PER_M2N[a] * M * M * N / (sides["gpexplorer"]["min"] * 1e-3) / 1e9
            out.append({"target": f"{a.upper()} N={N} M={M}: share of one-thread GEMM rate", "value": rate / mm["gflops"],
                        "threshold": TARGETS["gemm_fraction"], "met": rate / mm["gflops"] >= TARGETS["gemm_fraction"]})
        if (a, N, M) == ("fitc", 2000, 50) and "gpflow" in sides:
            v = sides["gpflow"]["min"] / sides["gpexplorer"]["min"]
            out.append({"target": "FITC N=2000 M=50: speed-up over GPflow", "value": v,
                        "threshold": TARGETS["fitc_2000_over_gpflow"], "met": v >= TARGETS["fitc_2000_over_gpflow"]})
        if "baseline" in sides:
            v = sides["gpexplorer"]["min"] / sides["baseline"]["min"]
            out.append({"target": f"{a.upper()} N={N} M={M}: time / pre-move time", "value": v,
                        "threshold": NO_REGRESSION, "met": v <= NO_REGRESSION, "at_most": True})
    fits = results.get("fits", {}).get("sides", {})
    if "gpflow" in fits:
        v = fits["gpflow"]["min"] / fits["gpexplorer"]["min"]
        out.append({"target": "Snelson VFE fit: speed-up over GPflow's compiled Scipy", "value": v,
                    "threshold": TARGETS["snelson_fit_over_gpflow"], "met": v >= TARGETS["snelson_fit_over_gpflow"]})
    if "baseline" in fits:
        v = fits["gpexplorer"]["min"] / fits["baseline"]["min"]
        out.append({"target": "Snelson VFE fit: time / pre-move time", "value": v, "threshold": NO_REGRESSION,
                    "met": v <= NO_REGRESSION, "at_most": True})
    return out


def format_comparison(results):
    """Markdown for the interleaved comparison, the targets and the N = 10^6 runs."""
    lines = []
    names = [n for n in ("gpexplorer", "baseline", "gpflow", "gpytorch")
             if any(n in c.get("compare", {}).get("sides", {}) for c in results["cells"])]
    if len(names) > 1:
        info = results.get("workers", {})
        label = {"gpexplorer": "gpexplorer", "baseline": "pre-move", "gpflow": f"GPflow {info.get('gpflow', '')}".strip(),
                 "gpytorch": f"GPyTorch {info.get('gpytorch', '')}".strip()}
        lines += ["", f"### Interleaved rounds (min / median ms over {results.get('rounds')} rounds of ~"
                  f"{BLOCK_SECONDS:g} s blocks per side)", "",
                  "| approx | N | M | " + " | ".join(label[n] for n in names) + " | speed-up over GPflow (min) "
                  "| log ML rel. diff vs GPflow |",
                  "|---|---:|---:|" + "---:|" * len(names) + "---:|---:|"]
        for c in results["cells"]:
            sides, lml = c.get("compare", {}).get("sides", {}), c.get("compare", {}).get("log_marginal_likelihood", {})
            cols = [f"{sides[n]['min']:.3f} / {sides[n]['median']:.3f}" if n in sides else "-" for n in names]
            su = f"{sides['gpflow']['min'] / sides['gpexplorer']['min']:.2f}x" if "gpflow" in sides else "-"
            diff = (f"{abs(lml['gpflow'] - lml['gpexplorer']) / abs(lml['gpexplorer']):.1e}" if "gpflow" in lml else "-")
            lines.append(f"| {c['approximation'].upper()} | {c['N']} | {c['M']} | " + " | ".join(cols) + f" | {su} | {diff} |")
    fits = results.get("fits")
    if fits:
        lines += ["", f"### Snelson VFE fit to convergence (N={fits['N']}, M={fits['M']}, max {fits['max_iter']} "
                  "iterations; whole fits, s, min / median)", "", "| side | min | median | fits | NLML | iters/evals |",
                  "|---|---:|---:|---:|---:|---:|"]
        for n, v in fits["sides"].items():
            lines.append(f"| {n} | {v['min']:.4f} | {v['median']:.4f} | {v['n']} | {v['nlml']:.6f} | "
                         f"{v['n_iter']}/{v['n_eval']} |")
    big = results.get("big")
    if big:
        lines += ["", f"### N={big['N']}, M={big['M']} {big['approximation'].upper()}: one objective + gradient, "
                  "fresh process each", "", "| side | seconds (min of 2 after the first) | first call s | peak RSS MB "
                  "| RSS with data loaded MB |", "|---|---:|---:|---:|---:|"]
        for n, v in big["sides"].items():
            if "error" in v:
                lines.append(f"| {n} | failed: {v['error'][-120:]} | | | |")
            else:
                lines.append(f"| {n} | {v['seconds']:.2f} | {v['first_seconds']:.2f} | {v['peak_rss_mb']:.0f} | "
                             f"{v['rss_data_mb']:.0f} |")
    if results.get("targets"):
        lines += ["", "### Targets (issue 13, item 11)", "", "| target | measured | required | met |", "|---|---:|---:|:---:|"]
        for t in results["targets"]:
            req = f"<= {t['threshold']:g}" if t.get("at_most") else f">= {t['threshold']:g}"
            lines.append(f"| {t['target']} | {t['value']:.3f} | {req} | {_yes(t['met'])} |")
    return lines


# ------------------------------------------------------------------------------------------
def environment():
    import numba
    import scipy

    info = {"python": platform.python_version(), "machine": platform.machine(), "cpu_count": os.cpu_count(),
            "numpy": np.__version__, "scipy": scipy.__version__, "numba": numba.__version__,
            "gpexplorer": getattr(sys.modules["gpexplorer"], "__version__", "?"),
            "threads_pinned_by_env": THREADS_PINNED_BY_ENV,
            "thread_env": {k: os.environ.get(k) for k in THREAD_VARS},
            "threadpoolctl": _THREADPOOL_LIMITER is not None, "numba_threads": numba.get_num_threads()}
    if threadpool_info is not None:
        info["threadpools"] = [{k: p.get(k) for k in ("internal_api", "num_threads", "version", "architecture")}
                               for p in threadpool_info()]
    info["openblas_env_removed"] = REMOVED_OPENBLAS_ENV
    info["openblas_env"] = {k: os.environ.get(k) for k in OPENBLAS_OVERRIDES}
    try:
        import subprocess

        def git(*args):  # read-only queries
            return subprocess.run(["git", *args], cwd=REPO, capture_output=True, text=True, timeout=10).stdout

        info["git_commit"] = git("rev-parse", "--short", "HEAD").strip()
        dirty = [line[3:] for line in git("status", "--porcelain", "--", "gpexplorer").splitlines() if line.strip()]
        info["gpexplorer_uncommitted_changes"] = dirty
    except Exception:  # not a checkout, or no git
        pass
    if gpy_available():
        import GPy

        info["GPy"] = GPy.__version__
    return info


def run(quick=False, with_gpy=None, log=print, pythons=None, baseline=None, rounds=None, big=False):
    """All measurements; returns the results dict that ``--json`` writes.

    ``pythons``: {peer: python of its venv} (:func:`peer_pythons`); ``baseline``: another gpexplorer
    checkout timed alongside; ``rounds``: interleaved rounds per cell; ``big``: the N = 10^6 runs.
    """
    import tempfile

    with_gpy = gpy_available() if with_gpy is None else with_gpy
    rounds = rounds or (2 if quick else 5)
    directory = tempfile.TemporaryDirectory(prefix="bench-sparse-")
    workers = start_workers(pythons or {}, baseline)
    try:
        results = _run(quick, with_gpy, log, workers, rounds, directory.name)
        if big:
            results["big"] = compare_big(pythons or {}, baseline, directory.name, log=log)
    finally:
        for w in workers.values():
            w.close()
        directory.cleanup()
    results["targets"] = assess(results)
    results["load_average_end"] = _loadavg()
    return results


def _run(quick, with_gpy, log, workers, rounds, directory):
    timing_kw = dict(target_seconds=0.3, min_repeats=3) if quick else dict(target_seconds=1.5, min_repeats=5)
    results = {"quick": quick, "environment": environment(), "load_average_start": _loadavg(), "setup": {
        "data": "X ~ U(0, 6), y = sin 3x + 0.3 cos 7x + N(0, 0.09), seed %d; Z evenly spaced on [0, 6]" % SEED,
        "kernel": {"variance": VARIANCE, "lengthscale": LENGTHSCALE}, "noise_variance": NOISE_VARIANCE,
        "jitter": JITTER, "flop_formula": FLOP_FORMULA}, "cells": [], "failures": [], "rounds": rounds,
        "workers": {n: w.info.get("version") for n, w in workers.items()},
        "worker_info": {n: w.info for n, w in workers.items()}}
    if not quick:
        log("# matmul rate ...", file=sys.stderr)
        first_matmul = matmul_gflops()
    for N, M, target in SIZES:
        if quick and N > QUICK_MAX_N:
            continue
        for approximation in APPROXIMATIONS:
            log(f"# {approximation.upper()} N={N} M={M}: gpexplorer ...", file=sys.stderr)
            cell = {"approximation": approximation, "N": N, "M": M, "target": target,
                    "gpexplorer": measure_gpexplorer(N, M, approximation, **timing_kw)}
            fd = cell["gpexplorer"]["fd_check"]
            if not fd["passed"]:
                bad = [e["entry"] for e in fd["entries"] if not e["passed"]]
                results["failures"].append(f"{approximation} N={N} M={M}: finite-difference check failed on "
                                           f"{', '.join(bad)} (max rel err {fd['max_rel_err']:.2e}, "
                                           f"F round-off {fd['roundoff']:.1e})")
            if with_gpy:
                log(f"# {approximation.upper()} N={N} M={M}: GPy ...", file=sys.stderr)
                cell["gpy"] = measure_gpy(N, M, approximation, **timing_kw)
                cell["speedup"] = cell["gpy"]["median_ms"] / cell["gpexplorer"]["median_ms"]
                cell["target_met"] = bool(cell["speedup"] >= target)
                l1, l2 = cell["gpexplorer"]["log_marginal_likelihood"], cell["gpy"]["log_marginal_likelihood"]
                cell["lml_rel_diff"] = abs(l1 - l2) / max(abs(l1), 1e-300)
                cell["lml_agree"] = bool(cell["lml_rel_diff"] < LML_RTOL)
                if approximation == "vfe" and not cell["lml_agree"]:
                    results["failures"].append(f"vfe N={N} M={M}: log ML {l1!r} (gpexplorer) vs {l2!r} (GPy)")
            if workers:
                log(f"# {approximation.upper()} N={N} M={M}: interleaved with {', '.join(workers)} ...", file=sys.stderr)
                cell["compare"] = compare_cell(workers, N, M, approximation, rounds, directory)
                lml = cell["compare"]["log_marginal_likelihood"]
                if "gpflow" in lml and abs(lml["gpflow"] - lml["gpexplorer"]) > LML_RTOL * abs(lml["gpexplorer"]):
                    results["failures"].append(f"{approximation} N={N} M={M}: log ML {lml['gpexplorer']!r} "
                                               f"(gpexplorer) vs {lml['gpflow']!r} (GPflow)")
            results["cells"].append(cell)
    if workers:
        log("# Snelson VFE fit, interleaved ...", file=sys.stderr)
        results["fits"] = compare_fits(workers, rounds, directory)
    if not quick:
        log("# matmul rate again ...", file=sys.stderr)
        second_matmul = matmul_gflops()  # the faster of two, before and after: the machine's rate
        peak = max(first_matmul, second_matmul, key=lambda r: r["gflops"])
        results["matmul"] = peak
        results["efficiency"] = []
        for cell in results["cells"]:
            if cell["N"] != SIZES[-1][0]:
                continue
            a, N, M = cell["approximation"], cell["N"], cell["M"]
            flops = FLOPS_PER_M2N[a] * M * M * N
            eff = {"approximation": a, "N": N, "M": M, "formula": FLOP_FORMULA[a], "gflop": flops / 1e9}
            for side in ("gpexplorer", "gpy"):
                if side in cell:
                    rate = flops / (cell[side]["median_ms"] * 1e-3) / 1e9
                    eff[side] = {"gflops": rate, "fraction_of_matmul": rate / peak["gflops"]}
            results["efficiency"].append(eff)
    results["optimisation"] = []
    for approximation, max_iter, label in OPTIMISATION_RUNS:
        log(f"# Snelson {approximation.upper()} optimisation ({label}) ...", file=sys.stderr)
        opt = optimise_snelson(approximation, max_iter, with_gpy=with_gpy,
                               target_seconds=timing_kw["target_seconds"], min_repeats=1 if quick else 3)
        opt["label"] = label
        results["optimisation"].append(opt)
    return results


def _loadavg():
    try:
        return list(os.getloadavg())
    except (AttributeError, OSError):
        return None


# ------------------------------------------------------------------------------------------
def _yes(flag):
    return "yes" if flag else "**NO**"


def format_markdown(results):
    env = results["environment"]
    lines = []
    gpy_v = env.get("GPy", "not installed")
    lines.append(f"## gpexplorer {env['gpexplorer']} vs GPy {gpy_v}: sparse GP objective + gradient")
    lines.append("")
    tp = "threadpoolctl limits=1" if env["threadpoolctl"] else "threadpoolctl not used (env vars only)"
    pinned = "OMP/OPENBLAS/MKL/NUMBA_NUM_THREADS=1" if env["threads_pinned_by_env"] else "env NOT pinned (numpy imported first)"
    lines.append(f"One thread ({pinned}; {tp}; numba threads {env['numba_threads']}). Python {env['python']}, "
                 f"numpy {env['numpy']}, scipy {env['scipy']}, numba {env['numba']}, {env['cpu_count']} CPUs.")
    la0, la1 = results.get("load_average_start"), results.get("load_average_end")
    if la0 and la1:
        lines.append(f"Load average (1/5/15 min) at start {la0[0]:.2f}/{la0[1]:.2f}/{la0[2]:.2f}, "
                     f"at end {la1[0]:.2f}/{la1[1]:.2f}/{la1[2]:.2f} (other processes share the CPUs).")
    if env.get("git_commit"):
        dirty = env.get("gpexplorer_uncommitted_changes")
        lines.append(f"gpexplorer at commit {env['git_commit']}"
                     + (f" plus uncommitted changes to {', '.join(dirty)}." if dirty else " (clean)."))
    lines.append(f"Objective + gradient w.r.t. variance, lengthscale, noise variance and every Z; "
                 f"median of `repeats` timings after warm-up; jitter {JITTER:g} on Kuu in both."
                 + (" QUICK MODE." if results["quick"] else ""))
    lines.append("")
    lines.append("| approx | N | M | gpexplorer ms | GPy ms | speed-up | target | met | repeats gpx/GPy "
                 "| log ML rel. diff | FD max rel. err | FD err / max grad | F round-off | FD check |")
    lines.append("|---|---:|---:|---:|---:|---:|---:|:---:|---:|---:|---:|---:|---:|:---:|")
    for c in results["cells"]:
        g = c["gpexplorer"]
        fdc = g["fd_check"]
        fd = f"{fdc['max_rel_err']:.1e} | {fdc['max_scaled_err']:.1e} | {fdc['roundoff']:.1e} | " + (
            ("ok" + (f" ({len(fdc['noise_limited'])}/{len(fdc['entries'])} noise-limited)"
                     if fdc["noise_limited"] else ""))
            if fdc["passed"] else "**FAIL**")
        if "gpy" in c:
            p = c["gpy"]
            lines.append(f"| {c['approximation'].upper()} | {c['N']} | {c['M']} | {g['median_ms']:.3f} | "
                         f"{p['median_ms']:.3f} | {c['speedup']:.2f}x | >={c['target']:g}x | {_yes(c['target_met'])} | "
                         f"{g['repeats']}/{p['repeats']} | {c['lml_rel_diff']:.1e} | {fd} |")
        else:
            lines.append(f"| {c['approximation'].upper()} | {c['N']} | {c['M']} | {g['median_ms']:.3f} | - | - | "
                         f">={c['target']:g}x | - | {g['repeats']}/- | - | {fd} |")
    if "matmul" in results:
        mm = results["matmul"]
        lines.append("")
        lines.append(f"### Dense-flop efficiency at N={SIZES[-1][0]}, M={SIZES[-1][1]}")
        lines.append("")
        lines.append(f"Machine: {mm['n']}x{mm['n']} @ {mm['n']}x{mm['n']} float64 np.matmul, one thread: "
                     f"**{mm['gflops']:.2f} GFLOP/s** (2 n^3 flops / median of {mm['repeats']}: {mm['median_ms']:.1f} ms).")
        lines.append("Flops counted: only the dominant O(M^2 N) dense work; "
                     + "; ".join(f"{a.upper()} ~ {f}" for a, f in FLOP_FORMULA.items()) + ".")
        lines.append("")
        lines.append("| approx | GFLOP counted | gpexplorer GFLOP/s | gpexplorer % of matmul | GPy GFLOP/s | GPy % of matmul |")
        lines.append("|---|---:|---:|---:|---:|---:|")
        for e in results["efficiency"]:
            g, p = e.get("gpexplorer"), e.get("gpy")
            gpy_cols = f"{p['gflops']:.2f} | {100 * p['fraction_of_matmul']:.1f}%" if p else "- | -"
            lines.append(f"| {e['approximation'].upper()} | {e['gflop']:.2f} | {g['gflops']:.2f} | "
                         f"{100 * g['fraction_of_matmul']:.1f}% | {gpy_cols} |")
    if results.get("optimisation"):
        lines.append("")
        lines.append(f"### Joint optimisation on Snelson (N=200, M={SNELSON_M}; variance, lengthscale, noise, Z)")
        lines.append("")
        lines.append("Start: variance 1, lengthscale 0.5, noise 0.09, Z evenly spaced over the data. "
                     "gpexplorer `fit(max_iter)` (L-BFGS-B, log-parameters) vs GPy `optimize('lbfgsb', max_iters)` "
                     "(L-BFGS-B, softplus-parameters; GPy also caps function evaluations at max_iters). "
                     "NLML = -log marginal likelihood (VFE: -bound) at the end. Wall time: median over repeated "
                     "whole optimisations, each from a fresh model.")
        lines.append("")
        lines.append("| approx | run | gpexplorer s | GPy s | speed-up | target | met | per-eval speed-up "
                     "| gpexplorer NLML | GPy NLML | gpexplorer iters/evals | GPy iters/evals | repeats gpx/GPy |")
        lines.append("|---|---|---:|---:|---:|---:|:---:|---:|---:|---:|---:|---:|---:|")
        for o in results["optimisation"]:
            g, p = o["gpexplorer"], o.get("gpy")
            if p:
                lines.append(f"| {o['approximation'].upper()} | {o['label']} (max {o['max_iter']}) | {g['seconds']:.3f} | "
                             f"{p['seconds']:.3f} | {o['speedup']:.1f}x | >={o['target']:g}x | {_yes(o['target_met'])} | "
                             f"{o['speedup_per_eval']:.1f}x | {g['nlml']:.4f} | {p['nlml']:.4f} | "
                             f"{g['n_iter']}/{g['n_eval']} | {p['n_iter']}/{p['n_eval']} | {g['repeats']}/{p['repeats']} |")
            else:
                lines.append(f"| {o['approximation'].upper()} | {o['label']} (max {o['max_iter']}) | {g['seconds']:.3f} | - | - | "
                             f">={OPTIMISATION_TARGET:g}x | - | - | {g['nlml']:.4f} | - | {g['n_iter']}/{g['n_eval']} | - | "
                             f"{g['repeats']}/- |")
    lines += format_comparison(results)
    lines.append("")
    lines.append(f"FD: Richardson-extrapolated central differences (steps {FD_STEP:g}, {2 * FD_STEP:g}; log space "
                 "for variance, lengthscale, noise; the two Z with the largest |gradient|) against gpexplorer's "
                 "analytic gradient. 'FD max rel. err' = max over the 5 entries of |fd - an| / max(|fd|, |an|); "
                 "'FD err / max grad' = max |fd - an| / max |an|. Pass: every |fd - an| <= "
                 f"{FD_TOL:g} max|an| + {FD_NOISE_FACTOR:g} x 0.75 (F round-off)/step. F round-off = spread of F "
                 "over lengthscales 1e-14 relative apart; 'noise-limited' = entries where that round-off allowance "
                 f"exceeds {FD_TOL:g} of the entry itself. Gradients are not compared with GPy.")
    if results["failures"]:
        lines.append("")
        lines.append("**Correctness failures:** " + "; ".join(results["failures"]))
    return "\n".join(lines)


def _jsonable(obj):
    if isinstance(obj, dict):
        return {k: _jsonable(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_jsonable(v) for v in obj]
    if isinstance(obj, np.generic):
        return obj.item()
    if isinstance(obj, float) and not math.isfinite(obj):
        return repr(obj)
    return obj


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="fewer repeats, skip N=20000: a smoke run")
    parser.add_argument("--json", metavar="PATH", help="write every number measured as JSON")
    parser.add_argument("--no-gpy", action="store_true", help="no GPy (in this process)")
    parser.add_argument("--peers", default="gpflow,gpytorch",
                        help="worker peers, comma-separated, each in its own venv (README.md); '' for none")
    parser.add_argument("--baseline", metavar="CHECKOUT", help="also time gpexplorer from this checkout "
                        "(e.g. the pre-move worktree), interleaved, with this venv")
    parser.add_argument("--rounds", type=int, help="interleaved rounds per measurement (default 5, quick 2)")
    parser.add_argument("--big", action="store_true", help=f"one evaluation at N={BIG_N}, M={BIG_M} per library, "
                        "fresh process each, with peak memory")
    parser.add_argument("--keep-openblas-env", action="store_true",
                        help="keep OPENBLAS_CORETYPE / OPENBLAS_L2_SIZE as set (they are unset by default)")
    args = parser.parse_args(argv)
    pin_threads()
    with_gpy = False if args.no_gpy else gpy_available()
    if not with_gpy and not args.no_gpy:
        print("GPy is not importable: no GPy column (pip install -e '.[bench]')", file=sys.stderr)
    wanted = [p for p in args.peers.split(",") if p]
    pythons = peer_pythons(wanted)
    for name in sorted(set(wanted) - set(pythons)):
        print(f"{name}: no venv at {os.environ.get(PEER_PYTHONS[name][0], PEER_PYTHONS[name][1])} "
              f"(set ${PEER_PYTHONS[name][0]}; see README.md): skipped", file=sys.stderr)
    results = run(quick=args.quick, with_gpy=with_gpy, pythons=pythons, baseline=args.baseline, rounds=args.rounds,
                  big=args.big)
    print(format_markdown(results))
    if args.json:
        Path(args.json).write_text(json.dumps(_jsonable(results), indent=2))
        print(f"\n(results written to {args.json})", file=sys.stderr)
    return 1 if results["failures"] else 0


if __name__ == "__main__":
    sys.exit(main())
