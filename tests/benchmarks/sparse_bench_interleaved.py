"""The side-by-side part of ``bench_sparse.py``: peer worker processes (GPflow 2.11, GPyTorch,
gpexplorer from another checkout; ``sparse_peers.py`` is the worker), the alternating rounds per
cell (with GPy and the GEMM reference in this process) and for the Snelson fit, all timed by
``equal_timing`` (the same number of single calls per side), the N = 10^6 runs, and the
assessment against the issue's targets."""

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

import sparse_peers as peers
from gpexplorer import datasets
import equal_timing
from sparse_bench_cells import (APPROXIMATIONS, FLOPS_PER_M2N, LENGTHSCALE, MATMUL_N, NOISE_VARIANCE, SIZES,  # noqa: F401
                                SNELSON_M, _nudge, gemm_gflops, gemm_side, gpexplorer_model, gpexplorer_side,
                                gpy_side, make_problem, reset_gpexplorer)

PEER_PYTHONS = {"gpflow": ("GPFLOW_PYTHON", "/work/peers/gpflow211/bin/python"),
                "gpytorch": ("GPYTORCH_PYTHON", "/work/peers/gpytorch/bin/python")}
PEER_APPROXIMATIONS = {"gpflow": ("vfe", "fitc"), "gpytorch": ("vfe",), "baseline": ("vfe", "fitc")}
#: timed calls per side and cell: the same for every side (equal_timing), as many as fit CELL_SECONDS of
#: alternating rounds, within [MIN_CALLS, MAX_CALLS]; whole Snelson fits: FIT_CALLS per side
CELL_SECONDS, MIN_CALLS, MAX_CALLS, FIT_CALLS = 6.0, 15, 400, 30
QUICK_CELL_SECONDS, QUICK_MIN_CALLS, QUICK_MAX_CALLS, QUICK_FIT_CALLS = 0.2, 3, 20, 3
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


def remote_side(worker, task):
    """``side(i)``: one call timed inside ``worker`` (ms); the pipe round trip is not counted."""
    return lambda i: worker.ask({**task, "repeats": 1, "start": i})["times_ms"][0]


def compare_cell(workers, N, M, approximation, directory, *, calls=None, budget_seconds=CELL_SECONDS,
                 min_calls=MIN_CALLS, max_calls=MAX_CALLS, with_gpy=False, gemm=False, log=None):
    """Objective + gradient timings (ms) of every side in alternating single calls, the same number
    per side (``equal_timing.alternate``): this process's gpexplorer, GPy (``with_gpy``), every worker
    that has the approximation, and with ``gemm`` the 2000 x 2000 GEMM (the machine-speed reference,
    in the same rounds). ``calls`` per side, or as many as fit ``budget_seconds`` of rounds (within
    [min_calls, max_calls]). Minimum and median per side, each side's log marginal likelihood at the
    start."""
    X, y, Z = make_problem(N, M)
    data = write_data(directory, f"problem-{N}-{M}", X, y, Z)
    side, m = gpexplorer_side(X, y, Z, approximation)
    sides = {"gpexplorer": side}
    lml = {}
    if with_gpy:
        sides["gpy"], lml["gpy"] = gpy_side(X, y, Z, approximation)
    for name, w in workers.items():
        if approximation in PEER_APPROXIMATIONS[name]:
            task = {"kind": "eval", "data": data, "approximation": approximation}
            lml[name] = w.ask({**task, "repeats": 1})["log_marginal_likelihood"]  # builds, traces, warms up
            sides[name] = remote_side(w, task)
    if gemm:
        sides["gemm"] = gemm_side()
    timed = equal_timing.compare(sides, calls, budget_seconds, min_calls, max_calls, log=log)
    lml["gpexplorer"] = float(reset_gpexplorer(m).log_marginal_likelihood())
    out = {"sides": timed["sides"], "log_marginal_likelihood": lml, "calls": timed["calls"], "times_ms": timed["times"]}
    if gemm:
        out["gemm"] = {"n": MATMUL_N, "gflops": gemm_gflops(out["sides"]["gemm"]["min"]),
                       "gflops_median": gemm_gflops(out["sides"]["gemm"]["median"])}
    return out


def compare_fits(workers, directory, calls=FIT_CALLS, max_iter=1000, log=None):
    """Snelson's VFE fit to convergence: whole fits (s), ``calls`` per side, one fit of each side in
    turn (``equal_timing.alternate``), after one untimed fit each."""
    ds = datasets.load("snelson")
    X, y = np.asarray(ds.X, dtype=float), np.asarray(ds.y, dtype=float)
    Z = np.linspace(X.min(), X.max(), SNELSON_M)[:, None]
    data = write_data(directory, "snelson", X, y, Z)
    result = {}

    def local(i):
        model = gpexplorer_model(X, y, Z, "vfe")
        gc.collect()
        t0 = time.perf_counter()
        res = model.fit(max_iter=max_iter)
        ms = 1e3 * (time.perf_counter() - t0)
        result["gpexplorer"] = {"nlml": float(res.objective), "n_iter": int(res.n_iter), "n_eval": int(res.n_eval)}
        return ms

    def remote(name, w):
        def side(i):
            out = w.ask({"kind": "fit", "data": data, "approximation": "vfe", "max_iter": max_iter, "repeats": 1})
            result[name] = {k: out[k] for k in ("nlml", "n_iter", "n_eval")}
            return 1e3 * out["times_s"][0]

        return side

    sides = {"gpexplorer": local, **{n: remote(n, w) for n, w in workers.items() if n in ("gpflow", "baseline")}}
    times = equal_timing.alternate(sides, calls, warmup=1, log=log)
    seconds = {n: [1e-3 * t for t in ts] for n, ts in times.items()}
    return {"sides": {n: {**equal_timing.summary(t), **result[n]} for n, t in seconds.items()}, "calls": calls,
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
    for cell in results["cells"]:
        sides = cell.get("compare", {}).get("sides", {})
        a, N, M = cell["approximation"], cell["N"], cell["M"]
        mm = cell.get("compare", {}).get("gemm")
        if mm and "gpexplorer" in sides:
            rate = FLOPS_PER_M2N[a] * M * M * N / (sides["gpexplorer"]["min"] * 1e-3) / 1e9
            out.append({"target": f"{a.upper()} N={N} M={M}: share of one-thread GEMM rate ({mm['gflops']:.1f} "
                        "GFLOP/s, same rounds)", "value": rate / mm["gflops"],
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
