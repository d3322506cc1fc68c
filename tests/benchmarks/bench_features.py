"""One objective + gradient of SparseGPR for each inducing feature type against inducing points
at the same (N, M), one BLAS thread (issue 15's targets: multiscale and time-frequency within
2x of inducing points, a sum of C deltas within 1.2 C x).

A script, not a test (``tests/test_bench_smoke.py`` runs ``--quick`` so it cannot rot)::

    python tests/benchmarks/bench_features.py                 # N = 2000, M = 50, VFE and FITC
    python tests/benchmarks/bench_features.py --N 200 --M 10 --repeats 200
    python tests/benchmarks/bench_features.py --quick

The rounds interleave the feature types (each round times every type once, ``--repeats`` calls
each); the table gives the minimum over rounds of the median call, and the load average before
and after. Exit status 0 whether or not a target is met.
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np
from threadpoolctl import threadpool_limits

from gpexplorer import inducing, kernels, models

C_VALUES = (1, 2, 5, 10)


def problem(N, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.uniform(0, 10, (N, 1))
    return X, np.sin(X[:, 0]) + 0.1 * rng.normal(size=N)


def features(M):
    """name -> (feature, target ratio to inducing points or None)."""
    Z = np.linspace(0, 10, M)[:, None]
    out = {"inducing points": (Z, None), "multiscale": (inducing.Multiscale(Z, 0.3), 2.0),
           "time-frequency": (inducing.TimeFrequency(Z, np.full((M, 1), 1.0), 0.0, 0.3), 2.0),
           "frequency": (inducing.Frequency(np.linspace(0, 3, M)[:, None], 0.0, 3.0), 2.0)}
    for C in C_VALUES:
        out[f"sum of deltas, C = {C}"] = (inducing.SumOfDeltas(Z[:, None, :] + np.linspace(-0.2, 0.2, C)[None, :, None]),
                                          1.2 * C)
    return out


def time_call(model, repeats):
    model.objective_and_gradient()
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        model.objective_and_gradient()
        times.append(time.perf_counter() - t0)
    return float(np.median(times)) * 1e3


def run(N, M, approximations, rounds, repeats):
    X, y = problem(N)
    cases = features(M)
    rows = {}
    with threadpool_limits(1):
        models_ = {(a, name): models.SparseGPR(X, y, kernels.SquaredExponential(1.0, 0.7), Z=f, approximation=a,
                                               noise_variance=0.1)
                   for a in approximations for name, (f, _) in cases.items()}
        for _ in range(rounds):
            for key, model in models_.items():
                ms = time_call(model, repeats)
                rows[key] = min(rows.get(key, np.inf), ms)
    return [(a, name, rows[(a, name)], rows[(a, name)] / rows[(a, "inducing points")], cases[name][1])
            for a in approximations for name in cases]


def table(results, N, M, load_before, load_after):
    lines = [f"objective + gradient, N = {N}, M = {M}, one thread; load average {load_before} -> {load_after}", "",
             "| approximation | feature | ms | vs inducing points | target |", "|---|---|---:|---:|---|"]
    for a, name, ms, ratio, target in results:
        verdict = "" if target is None else f"< {target:g}x: {'met' if ratio < target else 'NOT met'}"
        lines.append(f"| {a} | {name} | {ms:.3f} | {ratio:.2f}x | {verdict} |")
    return "\n".join(lines)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--N", type=int, default=2000)
    p.add_argument("--M", type=int, default=50)
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--repeats", type=int, default=30)
    p.add_argument("--approximations", nargs="+", default=["vfe", "fitc"])
    p.add_argument("--quick", action="store_true", help="N = 200, M = 10, one round (a check, not a result)")
    args = p.parse_args(argv)
    if args.quick:
        args.N, args.M, args.rounds, args.repeats = 200, 10, 1, 3
    before = tuple(round(v, 2) for v in os.getloadavg())
    results = run(args.N, args.M, args.approximations, args.rounds, args.repeats)
    print(table(results, args.N, args.M, before, tuple(round(v, 2) for v in os.getloadavg())))
    return results


if __name__ == "__main__":
    main()
