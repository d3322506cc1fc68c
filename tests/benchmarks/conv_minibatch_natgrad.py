#!/usr/bin/env python
"""Minibatch natural gradients on a convolutional model (issue 26): ``fit(method="adam-natgrad")``
against ``fit(method="adam")`` on the joint problem from the default start: all 1,200 rectangles,
the weighted convolutional kernel ("mean" scaling, 3x3 patches), M = 16 inducing patches drawn from
U(0, 1), q(u) = p(u), the same seeded minibatches of 100, learning rate 0.01. Prints the traced
full-data ELBO, the final ELBO, the test error on the 2,000 test images and the fit's seconds.

    python tests/benchmarks/conv_minibatch_natgrad.py [--steps 500] [--natgrad-step 0.1]
"""

from __future__ import annotations

import argparse
import time

from gpexplorer import datasets
from gpexplorer.inducing import InducingPatches
from gpexplorer.kernels import Convolutional, SquaredExponential
from gpexplorer.variational.savigp import SparseVariationalGP


def run(steps=500, natgrad_step=0.1, batch_size=100, learning_rate=0.01, seed=0):
    ds = datasets.load("rectangles")
    X, y = ds.X, ds.y[:, None].astype(float)
    rows = []
    for method in ("adam", "adam-natgrad"):
        k = Convolutional(SquaredExponential(1.0, 1.0), (28, 28), (3, 3), scaling="mean", weighted=True)
        m = SparseVariationalGP(X, y, k, InducingPatches.from_images(X, k, 16, "random", seed=seed), "bernoulli_probit")
        t0 = time.perf_counter()
        m.fit(max_iter=steps, method=method, batch_size=batch_size, learning_rate=learning_rate, seed=seed,
              trace_every=max(1, steps // 5), natgrad_step=natgrad_step)
        rows.append({"method": method, "seconds": time.perf_counter() - t0, "elbo": m.elbo(),
                     "error": m.error_rate(ds.X_test, ds.y_test[:, None].astype(float)),
                     "trace": [-e.objective for e in m.fit_result.trace]})
    return rows


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=500)
    ap.add_argument("--natgrad-step", type=float, default=0.1)
    args = ap.parse_args(argv)
    for r in run(args.steps, args.natgrad_step):
        print(f"{r['method']:<13} ELBO {r['elbo']:9.1f}  test error {r['error']:.4f}  {r['seconds']:5.1f} s  trace "
              + " ".join(f"{v:.1f}" for v in r["trace"]))


if __name__ == "__main__":
    main()
