"""Fastfood features against dense random Fourier features of the RBF kernel at input dimension 1,000.

Fastfood (Le, Sarlos & Smola 2013) replaces the dense projection X W [N, d] x [d, m] (O(N d m)) by
ceil(m / d') structured blocks S H G Pi H B, two fast Walsh-Hadamard transforms each
(O(N m log d')); the issue's target is a speed-up of at least 3x at d = 1,000. Both sides compute
the same thing: Phi [N, D] = [cos(XW), sin(XW)] / sqrt(m), D = 2m columns (``FastfoodBasis``
against ``RandomFourierBasis(kernel="rbf")``), and, separately, the projection alone (Fastfood's
``projections`` against the BLAS product X @ W), since the cos/sin pass is the same on both sides.
A third line, "output allocation" (``np.ones`` of Phi's shape: the first-touch page faults of a
new [N, D] array, 640 MB at N = 10,000 and 8,000 columns), is the floor both feature sides pay
on every call; on a loaded machine it varies several-fold from call to call.

Timing (:mod:`equal_timing`): the same number of timed calls per side, alternating single calls,
warm-up calls (numba compilation) untimed; min and median per side and their ratios. Both sides run
with one BLAS thread (threadpoolctl; the Walsh-Hadamard transform is a serial numba loop).

    python tests/benchmarks/bench_fastfood.py [--quick] [--calls 10] [--json out.json]

``--quick``: N = 2,000 points instead of 10,000.
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parents[1]))

import numpy as np  # noqa: E402
from equal_timing import alternate, loadavg, local, ratios, summary  # noqa: E402
from threadpoolctl import threadpool_info, threadpool_limits  # noqa: E402

from gpexplorer.random_features.fastfood import FastfoodBasis  # noqa: E402
from gpexplorer.random_features.spectral import RandomFourierBasis  # noqa: E402

INPUT_DIM = 1000
COLUMNS = (2000, 8000)
LENGTHSCALE = 30.0  # ~ sqrt(d): features of standard normal inputs neither all 1 nor white noise


def blas_threads():
    return sorted({lib["num_threads"] for lib in threadpool_info() if lib.get("user_api") == "blas"})


def compare(X, n_features, calls):
    """Timings of one column count: features and projections, each side ``calls`` times."""
    d = X.shape[1]
    ff = FastfoodBasis(d, n_features, lengthscale=LENGTHSCALE, seed=0)
    dense = RandomFourierBasis(d, n_features, kernel="rbf", lengthscale=LENGTHSCALE, seed=0)
    W = np.ascontiguousarray(dense.frequencies.T)  # [d, m]: the dense projection alone
    sides = {"fastfood features": local(lambda i: ff(X)), "dense features": local(lambda i: dense(X)),
             "fastfood projection": local(lambda i: ff.projections(X)),
             "dense projection": local(lambda i: X @ W),
             "output allocation": local(lambda i: np.ones((X.shape[0], n_features)))}
    times = alternate(sides, calls)
    out = {name: summary(t) for name, t in times.items()}
    out["features speed-up"] = ratios(times, "dense features", "fastfood features")
    out["projection speed-up"] = ratios(times, "dense projection", "fastfood projection")
    out["fastfood blocks"] = f"{ff.n_blocks} x d' = {ff.padded_dim}"
    return out


def show(n_features, N, res):
    print(f"\nD = {INPUT_DIM}, N = {N}, {n_features} columns ({n_features // 2} frequencies; "
          f"Fastfood {res['fastfood blocks']}), {res['dense features']['n']} calls per side")
    for name in ("fastfood features", "dense features", "fastfood projection", "dense projection",
                 "output allocation"):
        s = res[name]
        print(f"  {name:<20} min {s['min']:9.1f} ms   median {s['median']:9.1f} ms")
    for name in ("features speed-up", "projection speed-up"):
        r = res[name]
        print(f"  {name:<20} {r['min']:.2f}x by min, {r['median']:.2f}x by median, "
              f"{r['paired_median']:.2f}x paired median")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="N = 2,000 points (default 10,000)")
    ap.add_argument("--calls", type=int, default=None, help="timed calls per side (default 10, quick 5)")
    ap.add_argument("--json", default=None, help="write the report here")
    a = ap.parse_args(argv)
    N = 2000 if a.quick else 10_000
    calls = a.calls or (5 if a.quick else 10)
    X = np.random.default_rng(0).standard_normal((N, INPUT_DIM))
    report = {"N": N, "input_dim": INPUT_DIM, "calls": calls, "load_start": loadavg(),
              "machine": platform.processor() or platform.machine()}
    with threadpool_limits(limits=1, user_api="blas"):
        report["blas_threads"] = blas_threads()
        print(f"BLAS threads {report['blas_threads']}, load {report['load_start']}")
        for n in COLUMNS:
            report[n] = compare(X, n, calls)
            show(n, N, report[n])
    report["load_end"] = loadavg()
    print(f"\nload at the end {report['load_end']}")
    if a.json:
        Path(a.json).write_text(json.dumps(report, indent=1, default=float))


if __name__ == "__main__":
    main()
