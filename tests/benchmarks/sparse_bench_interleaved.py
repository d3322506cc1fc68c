"""The interleaved side-by-side part of ``bench_sparse.py``: peer worker processes (GPflow 2.11,
GPyTorch, gpexplorer from another checkout; ``sparse_peers.py`` is the worker), the interleaved
rounds per cell and for the Snelson fit, the N = 10^6 runs, and the assessment against the
issue's targets."""

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
from sparse_bench_cells import (APPROXIMATIONS, FLOPS_PER_M2N, LENGTHSCALE, NOISE_VARIANCE, SIZES, SNELSON_M,  # noqa: F401
                                _nudge, gpexplorer_model, make_problem)

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
