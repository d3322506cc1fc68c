#!/usr/bin/env python
"""gpexplorer vs GPy 1.15, GPflow 2.11 and GPyTorch: sparse GP objective + gradient and joint
optimisation, one thread.

    python tests/benchmarks/bench_sparse.py [--quick] [--json out.json] [--baseline /work/premove] [--big]

GPy runs in this process; GPflow and GPyTorch (and, with ``--baseline``, gpexplorer from another
checkout) run as worker processes in their own venvs (``sparse_peers.py``; see README.md for
the venvs). Every comparison gives every side **the same number of timed calls, alternating
single calls** (``equal_timing.alternate``: gpexplorer, GPy, GPflow, ..., gpexplorer, GPy, ...),
and reports each side's minimum and median; a worker times its own call. (Blocks sized by time
gave the faster side far more samples, whose minimum approaches idle speed on a loaded machine:
issue 25, item 8.) ``--big`` adds one objective + gradient at N = 10^6, M = 200 per library,
each in a fresh process, with its peak memory.

All libraries run on identical data (seeded), with the same kernel, noise, inducing inputs and
jitter on Kuu, and every BLAS / OpenMP / numba pool pinned to one thread. What is measured:

1. One objective + gradient evaluation (with respect to every kernel hyperparameter, the noise
   variance and every inducing input Z) for VFE and FITC at (N, M) = (200, 10), (2000, 50),
   (20000, 200): gpexplorer ``SparseGPR.objective_and_gradient()``, GPy's
   ``Model._objective_grads(x)`` (exactly one ``parameters_changed``: inference, the gradients
   of every parameter, Z free), GPflow's and GPyTorch's in their workers. Warm-up calls (numba
   compilation, tracing) are never timed; the garbage collector is paused during timed calls.
   Every timed call moves the lengthscale and noise variance by ~1e-12 relative so that no side
   can answer from a cache keyed on parameter values. The calls per side: as many as fit the
   cell's budget of alternating rounds (``--calls`` to fix it), the same for every side.
   The log marginal likelihoods are compared (they must agree to 1e-6 relative).
   Gradients are *not* compared with GPy (GPy's FITC gradient is off in proportion to the
   jitter); instead gpexplorer's gradient is checked against Richardson-extrapolated central
   differences on five entries (variance, lengthscale, noise variance, two inducing inputs),
   allowing for the round-off of the objective itself, which is measured and printed.
2. At (20000, 200): the machine's one-thread float64 GEMM rate (2000x2000 @ 2000x2000, 2 n^3
   flops), measured as one more side **in the same alternating rounds** as the cell, and the
   fraction of it the objective + gradient reaches (min against min; medians beside), counting
   only the dominant O(M^2 N) dense work of gpexplorer's algorithm: VFE 4 M^2 N flops (trsm
   M^2 N + syrk M^2 N + gemm 2 M^2 N), FITC 6 M^2 N (2 trsm + 2 syrk + 1 gemm). The same count
   is used for GPy, so its column says how fast GPy does the same work.
3. Joint optimisation (hyperparameters, noise and Z) on Snelson's 200-point data with 15
   inducing inputs: VFE to convergence (max 1000 iterations) and FITC for 200 iterations,
   gpexplorer ``fit`` (L-BFGS-B) against GPy ``optimize('lbfgsb')``, whole fits alternating; and
   the VFE fit against GPflow's compiled ``Scipy`` optimiser (and ``--baseline``), alternating.

``--quick`` uses few calls and skips N = 20000 (and so the GEMM side): a smoke run.
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


sys.path.insert(0, str(Path(__file__).resolve().parent))  # the sibling modules below
import sparse_peers as peers  # noqa: E402,F401
from sparse_bench_cells import *  # noqa: E402,F401,F403
from sparse_bench_cells import _scalar  # noqa: E402,F401
from sparse_bench_interleaved import *  # noqa: E402,F401,F403
from sparse_bench_report import _jsonable, _yes, format_comparison, format_markdown  # noqa: E402,F401



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


def run(quick=False, with_gpy=None, log=print, pythons=None, baseline=None, calls=None, big=False):
    """All measurements; returns the results dict that ``--json`` writes.

    ``pythons``: {peer: python of its venv} (:func:`peer_pythons`); ``baseline``: another gpexplorer
    checkout timed alongside; ``calls``: timed calls per side and cell (default: as many as fit the
    cell's time budget, the same for every side); ``big``: the N = 10^6 runs.
    """
    import tempfile

    with_gpy = gpy_available() if with_gpy is None else with_gpy
    directory = tempfile.TemporaryDirectory(prefix="bench-sparse-")
    workers = start_workers(pythons or {}, baseline)
    try:
        results = _run(quick, with_gpy, log, workers, calls, directory.name)
        if big:
            results["big"] = compare_big(pythons or {}, baseline, directory.name, log=log)
    finally:
        for w in workers.values():
            w.close()
        directory.cleanup()
    results["targets"] = assess(results)
    results["load_average_end"] = _loadavg()
    return results


def _run(quick, with_gpy, log, workers, calls, directory):
    if quick:
        budget = dict(budget_seconds=QUICK_CELL_SECONDS, min_calls=QUICK_MIN_CALLS, max_calls=QUICK_MAX_CALLS)
    else:
        budget = dict(budget_seconds=CELL_SECONDS, min_calls=MIN_CALLS, max_calls=MAX_CALLS)
    results = {"quick": quick, "environment": environment(), "load_average_start": _loadavg(), "setup": {
        "data": "X ~ U(0, 6), y = sin 3x + 0.3 cos 7x + N(0, 0.09), seed %d; Z evenly spaced on [0, 6]" % SEED,
        "kernel": {"variance": VARIANCE, "lengthscale": LENGTHSCALE}, "noise_variance": NOISE_VARIANCE,
        "jitter": JITTER, "flop_formula": FLOP_FORMULA}, "cells": [], "failures": [], "calls": calls,
        "budget": budget, "workers": {n: w.info.get("version") for n, w in workers.items()},
        "worker_info": {n: w.info for n, w in workers.items()}, "efficiency": []}
    for N, M, target in SIZES:
        if quick and N > QUICK_MAX_N:
            continue
        for approximation in APPROXIMATIONS:
            log(f"# {approximation.upper()} N={N} M={M}: gpexplorer's log ML and gradient check ...", file=sys.stderr)
            cell = {"approximation": approximation, "N": N, "M": M, "target": target,
                    "gpexplorer": check_gpexplorer(N, M, approximation)}
            fd = cell["gpexplorer"]["fd_check"]
            if not fd["passed"]:
                bad = [e["entry"] for e in fd["entries"] if not e["passed"]]
                results["failures"].append(f"{approximation} N={N} M={M}: finite-difference check failed on "
                                           f"{', '.join(bad)} (max rel err {fd['max_rel_err']:.2e}, "
                                           f"F round-off {fd['roundoff']:.1e})")
            gemm = not quick and N == SIZES[-1][0]
            names = ["gpexplorer"] + (["GPy"] if with_gpy else []) + [
                n for n in workers if approximation in PEER_APPROXIMATIONS[n]] + (["GEMM"] if gemm else [])
            log(f"# {approximation.upper()} N={N} M={M}: alternating single calls of {', '.join(names)} ...",
                file=sys.stderr)
            cell["compare"] = compare_cell(workers, N, M, approximation, directory, calls=calls, with_gpy=with_gpy,
                                           gemm=gemm, log=lambda msg: log(msg, file=sys.stderr), **budget)
            sides, lml = cell["compare"]["sides"], cell["compare"]["log_marginal_likelihood"]
            if with_gpy:
                r = equal_timing.ratios(cell["compare"]["times_ms"], "gpy", "gpexplorer")
                cell["speedup"], cell["speedup_median"] = r["min"], r["median"]
                cell["target_met"] = bool(cell["speedup"] >= target)
                l1, l2 = lml["gpexplorer"], lml["gpy"]
                cell["lml_rel_diff"] = abs(l1 - l2) / max(abs(l1), 1e-300)
                cell["lml_agree"] = bool(cell["lml_rel_diff"] < LML_RTOL)
                if approximation == "vfe" and not cell["lml_agree"]:
                    results["failures"].append(f"vfe N={N} M={M}: log ML {l1!r} (gpexplorer) vs {l2!r} (GPy)")
            if "gpflow" in lml and abs(lml["gpflow"] - lml["gpexplorer"]) > LML_RTOL * abs(lml["gpexplorer"]):
                results["failures"].append(f"{approximation} N={N} M={M}: log ML {lml['gpexplorer']!r} "
                                           f"(gpexplorer) vs {lml['gpflow']!r} (GPflow)")
            if gemm:
                mm = cell["compare"]["gemm"]
                flops = FLOPS_PER_M2N[approximation] * M * M * N
                eff = {"approximation": approximation, "N": N, "M": M, "formula": FLOP_FORMULA[approximation],
                       "gflop": flops / 1e9, "gemm": mm}
                for side in ("gpexplorer", "gpy"):
                    if side in sides:
                        rate, rate_median = (flops / (sides[side][k] * 1e-3) / 1e9 for k in ("min", "median"))
                        eff[side] = {"gflops": rate, "fraction_of_matmul": rate / mm["gflops"],
                                     "fraction_of_matmul_median": rate_median / mm["gflops_median"]}
                results["efficiency"].append(eff)
            results["cells"].append(cell)
    if workers:
        log("# Snelson VFE fit, alternating whole fits ...", file=sys.stderr)
        results["fits"] = compare_fits(workers, directory, calls=QUICK_FIT_CALLS if quick else FIT_CALLS,
                                       log=lambda msg: log(msg, file=sys.stderr))
    results["optimisation"] = []
    for approximation, max_iter, label in OPTIMISATION_RUNS:
        log(f"# Snelson {approximation.upper()} optimisation ({label}), alternating with GPy ...", file=sys.stderr)
        opt = optimise_snelson(approximation, max_iter, with_gpy=with_gpy,
                               calls=QUICK_FIT_CALLS if quick else OPTIMISATION_CALLS)
        opt["label"] = label
        results["optimisation"].append(opt)
    return results


def _loadavg():
    try:
        return list(os.getloadavg())
    except (AttributeError, OSError):
        return None


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="fewer repeats, skip N=20000: a smoke run")
    parser.add_argument("--json", metavar="PATH", help="write every number measured as JSON")
    parser.add_argument("--no-gpy", action="store_true", help="no GPy (in this process)")
    parser.add_argument("--peers", default="gpflow,gpytorch",
                        help="worker peers, comma-separated, each in its own venv (README.md); '' for none")
    parser.add_argument("--baseline", metavar="CHECKOUT", help="also time gpexplorer from this checkout "
                        "(e.g. the pre-move worktree), alternating with the other sides, with this venv")
    parser.add_argument("--calls", type=int, help="timed calls per side and cell, the same for every side (default: "
                        f"as many as fit {CELL_SECONDS:g} s of alternating rounds, {MIN_CALLS}-{MAX_CALLS}; quick "
                        f"{QUICK_CELL_SECONDS:g} s, {QUICK_MIN_CALLS}-{QUICK_MAX_CALLS})")
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
    results = run(quick=args.quick, with_gpy=with_gpy, pythons=pythons, baseline=args.baseline, calls=args.calls,
                  big=args.big)
    print(format_markdown(results))
    if args.json:
        Path(args.json).write_text(json.dumps(_jsonable(results), indent=2))
        print(f"\n(results written to {args.json})", file=sys.stderr)
    return 1 if results["failures"] else 0


if __name__ == "__main__":
    sys.exit(main())
