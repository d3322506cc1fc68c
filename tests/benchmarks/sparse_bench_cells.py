"""The cells of ``bench_sparse.py``: the issue's data and settings, gpexplorer's and GPy's models
on it and their timed sides (single calls for ``equal_timing.alternate``), finite-difference
checks, the GEMM reference side and the Snelson optimisations (all in this process). Imported by
``bench_sparse.py`` after it has pinned the thread pools."""

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

import equal_timing
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
OPTIMISATION_CALLS = 10  # whole optimisations per library, alternating (GPy takes ~0.1-1 s each)

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
# sides for equal_timing.alternate
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
        probe.set_parameters(**{"lengthscale": ell * (1.0 + 1e-14 * i)})
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
        probe.set_parameters(**params)
        value = -probe.log_marginal_likelihood()
        probe.set_parameters(**base)
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
# the in-process sides of one cell (timed by equal_timing.alternate, with the workers' sides)
def gpexplorer_side(X, y, Z, approximation):
    """(side, model): ``side(i)`` times one objective + gradient of gpexplorer (ms), lengthscale and
    noise nudged by call index; the model is left at the nudged values (``reset_gpexplorer``)."""
    m = gpexplorer_model(X, y, Z, approximation)

    def call(i):
        s = _nudge(i)
        m.set_parameters(**{"lengthscale": LENGTHSCALE * s, "noise_variance": NOISE_VARIANCE * s})
        return m.objective_and_gradient()

    return equal_timing.local(call), m


def reset_gpexplorer(m):
    m.set_parameters(**{"lengthscale": LENGTHSCALE, "noise_variance": NOISE_VARIANCE})
    return m


def check_gpexplorer(N, M, approximation, *, seed=SEED, fd_check=True):
    """gpexplorer's log marginal likelihood at the start and the finite-difference check (untimed)."""
    X, y, Z = make_problem(N, M, seed)
    m = gpexplorer_model(X, y, Z, approximation)
    out = {"library": "gpexplorer", "approximation": approximation, "N": N, "M": M,
           "log_marginal_likelihood": float(m.log_marginal_likelihood()), "jitter_used": m.jitter_used}
    if fd_check:
        out["fd_check"] = finite_difference_check(m)
    return out


def gpy_side(X, y, Z, approximation):
    """(side, log ML at the start): ``side(i)`` times one GPy ``_objective_grads(x)`` (ms), the
    lengthscale and noise of x nudged by call index."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        m = gpy_model(X, y, Z, approximation)
        x0 = m.optimizer_array.copy()
        lml = gpy_log_marginal_likelihood(m)
    names = list(m.parameter_names_flat())
    moved = [j for j, n in enumerate(names)
             if n.endswith("lengthscale") or (n.endswith("variance") and "Gaussian_noise" in n)]
    if len(moved) != 2:
        raise RuntimeError(f"unexpected GPy parameter names {names}")

    def call(i):
        x = x0.copy()
        x[moved] *= _nudge(i)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return m._objective_grads(x)

    return equal_timing.local(call), lml


def gemm_side(n=MATMUL_N):
    """``side(i)`` times one float64 n x n @ n x n (ms): the machine-speed reference, timed in the
    same rounds as the cells it is compared with. Rate: :func:`gemm_gflops`."""
    rng = np.random.default_rng(1)
    a, b = rng.standard_normal((n, n)), rng.standard_normal((n, n))
    c = np.empty((n, n))
    return equal_timing.local(lambda i: np.matmul(a, b, out=c))


def gemm_gflops(ms, n=MATMUL_N):
    """GFLOP/s of one n x n @ n x n (2 n^3 flops) that took ``ms``."""
    return 2.0 * n**3 / (ms * 1e-3) / 1e9


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


def optimise_snelson(approximation, max_iter, with_gpy=True, calls=10):
    """Joint L-BFGS-B over variance, lengthscale, noise and Z from the same start in both.

    Whole optimisations, each from a fresh model (built untimed), ``calls`` per library, alternating
    one gpexplorer fit with one GPy fit (``equal_timing.alternate``), after one untimed fit each;
    min and median reported.
    """
    ds = datasets.load("snelson")
    X, y = np.asarray(ds.X, dtype=float), np.asarray(ds.y, dtype=float)
    Z = np.linspace(X.min(), X.max(), SNELSON_M)[:, None]
    start_nlml = -float(gpexplorer_model(X, y, Z, approximation).log_marginal_likelihood())
    last = {}

    def fit_side(name, build, run):
        def side(i):
            model = build()
            gc.collect()
            t0 = time.perf_counter()
            result = run(model)
            ms = 1e3 * (time.perf_counter() - t0)
            last[name] = (model, result)
            return ms

        return side

    sides = {"gpexplorer": fit_side("gpexplorer", lambda: gpexplorer_model(X, y, Z, approximation),
                                    lambda model: model.fit(max_iter=max_iter))}
    if with_gpy:
        LBFGSB = _gpy_lbfgsb()

        def gpy_run(g):
            opt = LBFGSB(max_iters=max_iter)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                g.optimize(optimizer=opt, max_iters=max_iter, messages=False, ipython_notebook=False)
            return opt

        def gpy_build():
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                return gpy_model(X, y, Z, approximation)

        sides["gpy"] = fit_side("gpy", gpy_build, gpy_run)
    times = equal_timing.alternate(sides, calls, warmup=1)
    m, res = last["gpexplorer"]
    out = {"approximation": approximation, "max_iter": max_iter, "N": len(y), "M": SNELSON_M,
           "start_nlml": start_nlml, "calls": calls,
           "gpexplorer": {**_seconds(times["gpexplorer"]), "nlml": float(res.objective), "n_iter": int(res.n_iter),
                          "n_eval": int(res.n_eval), "message": str(res.message),
                          "params": {k: (v.ravel().tolist() if isinstance(v, np.ndarray) else v)
                                     for k, v in m.parameters.items()}}}
    if with_gpy:
        g, opt = last["gpy"]
        out["gpy"] = {**_seconds(times["gpy"]), "nlml": -gpy_log_marginal_likelihood(g), "n_iter": opt.nit,
                      "n_eval": int(opt.funct_eval), "message": str(opt.status),
                      "params": {"variance": _scalar(g.kern.variance),
                                 "lengthscale": _scalar(g.kern.lengthscale),
                                 "noise_variance": _scalar(g.likelihood.variance),
                                 "Z": np.asarray(g.Z).ravel().tolist()}}
        r = equal_timing.ratios(times, "gpy", "gpexplorer")
        out["speedup"], out["speedup_median"] = r["min"], r["median"]
        per_eval = (out["gpy"]["min_seconds"] / max(out["gpy"]["n_eval"], 1)) / (
            out["gpexplorer"]["min_seconds"] / max(res.n_eval, 1))
        out["speedup_per_eval"] = per_eval
        out["target"] = OPTIMISATION_TARGET
        out["target_met"] = bool(out["speedup"] >= OPTIMISATION_TARGET)
    return out


def _seconds(ms):
    """min / median of whole-fit timings given in ms, in seconds, and how many."""
    s = equal_timing.summary(ms)
    return {"min_seconds": 1e-3 * s["min"], "seconds": 1e-3 * s["median"], "repeats": s["n"]}

