#!/usr/bin/env python
"""Timing of EKS / UKS (gpexplorer.kitchen_sinks.LinearizedKitchenSinks), one BLAS thread.

    python tests/benchmarks/bench_kitchen_sinks.py [--quick] [--threads N] [--part toy|usps|all]

1. The EKS paper's Table 1 setting (the EGP paper's Table 1 toy data): latent f from a GP with a
   Matern 5/2 kernel (variance 0.8^2, lengthscale 0.6) at 1000 points evenly spaced on
   [-2 pi, 2 pi], y = g(f) + N(0, 0.2^2), 5 folds of 200 training / 800 test points, D = 200
   features, hyperparameters started at 1.0 (EGP paper section 4.1). For every forward model and
   linearisation: the wall time of one posterior fit at the starting hyperparameters (the Newton
   loop) and of the full fit with hyperparameter learning (``fit()``), with SMSE f*, NLPD f*
   (latent) and SMSE g* (Monte Carlo predictive mean, EKS eq. 37, against the noiseless
   g(f*)) beside the paper's EKS/UKS numbers. D counts columns of Phi (D/2 frequencies); the
   paper's eq. 6 makes 2D columns from D frequencies, so its "D = 200" may mean 400 columns:
   ``--features`` changes D.
2. USPS 3-vs-5 (767 x 256, logistic forward model, squared-exponential features): the Newton loop
   at the EGP paper's learnt hyperparameters (Table 2: log sigma = 2.9134, log l = 1.7872, noise
   variance 1e-6) for D = 100 .. 1000, and the hyperparameter search (COBYQA, at most 40
   evaluations, warm-started Newton loops) for D = 200; error rate and NLP on the 773 test images.

Each timing is the median of ``--repeats`` runs (first run excluded from nothing: there is no
compilation; everything is numpy/LAPACK). Numbers are printed, nothing is asserted.
"""

from __future__ import annotations

import os
import sys

THREAD_VARS = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "VECLIB_MAXIMUM_THREADS")


def _pin_threads(argv):
    threads = "1"
    if "--threads" in argv:
        threads = argv[argv.index("--threads") + 1]
    if "numpy" not in sys.modules:  # only effective before numpy loads BLAS
        for name in THREAD_VARS:
            os.environ[name] = threads
    return int(threads)


if __name__ == "__main__":
    _pin_threads(sys.argv)

import argparse  # noqa: E402
import platform  # noqa: E402
import statistics  # noqa: E402
import time  # noqa: E402
import warnings  # noqa: E402

import numpy as np  # noqa: E402

from gpexplorer import datasets, kernels, metrics  # noqa: E402
from gpexplorer.forward_models import get_forward_model  # noqa: E402
from gpexplorer.kitchen_sinks import LinearizedKitchenSinks  # noqa: E402

#: EKS paper Table 1 (D = 200): (SMSE f*, NLPD f*, SMSE g*) means
PAPER_TABLE1 = {
    ("identity", "taylor"): (0.03, -0.99, 0.03), ("identity", "unscented"): (0.04, -0.97, 0.04),
    ("poly3", "taylor"): (0.02, -1.39, 0.01), ("poly3", "unscented"): (0.06, 0.41, 0.02),
    ("exp", "taylor"): (0.03, -1.29, 0.01), ("exp", "unscented"): (0.02, -1.26, 0.01),
    ("sin", "taylor"): (0.03, -1.05, 0.03), ("sin", "unscented"): (0.03, -1.13, 0.03),
    ("tanh2", "taylor"): (0.05, -1.14, 0.02), ("tanh2", "unscented"): (0.04, -0.85, 0.03),
}
TOY_MODELS = [("identity", "taylor"), ("identity", "unscented"), ("poly3", "taylor"), ("poly3", "unscented"),
              ("exp", "taylor"), ("exp", "unscented"), ("sin", "taylor"), ("sin", "unscented"),
              ("tanh2", "taylor"), ("tanh2", "unscented"), ("sign_cubic", "unscented")]


def toy_data(forward, seed=0, n=1000):
    """EGP Table 1 toy inversion data: f ~ GP(0, Matern52(0.64, 0.6)), y = g(f) + N(0, 0.04)."""
    rng = np.random.default_rng(seed)
    x = np.linspace(-2 * np.pi, 2 * np.pi, n)[:, None]
    K = kernels.Matern52(variance=0.64, lengthscale=0.6).K(x)
    f = np.linalg.cholesky(K + 1e-8 * np.eye(n)) @ rng.standard_normal(n)
    g = get_forward_model(forward).value(f[:, None])[:, 0]
    y = g + 0.2 * rng.standard_normal(n)
    folds = np.array_split(rng.permutation(n), 5)
    return x, f, g, y, folds


def median_time(fn, repeats):
    times, result = [], None
    for _ in range(repeats):
        t0 = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times), result


def bench_toy(n_folds, repeats, n_features=200):
    print(f"\n== Table 1 setting: 200 train / 800 test, D = {n_features}, {n_folds} fold(s) ==")
    print(f"{'g':<11}{'method':<5}{'Newton ms':>10}{'iters':>6}{'fit s':>8}{'evals':>6}"
          f"{'SMSE f*':>9}{'NLPD f*':>9}{'SMSE g*':>9}   paper (SMSE f*, NLPD f*, SMSE g*)")
    for forward, linearization in TOY_MODELS:
        x, f, g, y, folds = toy_data(forward)
        inner, outer, iters, evals, scores = [], [], [], [], []
        for k in range(n_folds):
            train = folds[k]  # 200 points train, the other 800 test (EKS section 7.1)
            test = np.setdiff1d(np.arange(len(x)), train)

            def make():
                return LinearizedKitchenSinks(x[train], y[train], forward=forward, linearization=linearization,
                                              n_features=n_features, kernel="matern52", lengthscale=1.0,
                                              weight_variance=1.0, noise_variance=1.0, seed=k)

            t, m = median_time(lambda: make().fit_posterior(), repeats)
            inner.append(t)
            iters.append(len(m.trace) - 1)
            m = make()
            t0 = time.perf_counter()
            result = m.fit()
            outer.append(time.perf_counter() - t0)
            evals.append(result.n_evaluations)
            mf, vf = m.predict_f(x[test])
            my, _ = m.predict_y(x[test], method="monte_carlo", n_samples=2000, seed=k)
            scores.append((metrics.smse(f[test], mf[:, 0]), metrics.nlpd(f[test], mf[:, 0], vf[:, 0]),
                           metrics.smse(g[test], my[:, 0])))
        s = np.mean(scores, axis=0)
        paper = PAPER_TABLE1.get((forward, linearization))
        name = "EKS" if linearization == "taylor" else "UKS"
        print(f"{forward:<11}{name:<5}{1e3 * statistics.median(inner):>10.1f}{statistics.median(iters):>6.0f}"
              f"{statistics.median(outer):>8.2f}{statistics.median(evals):>6.0f}"
              f"{s[0]:>9.3f}{s[1]:>9.2f}{s[2]:>9.3f}   {paper if paper else '-'}", flush=True)


def bench_usps(feature_counts, repeats, search_features=200, max_evaluations=40):
    ds = datasets.load("usps_3vs5")
    variance, lengthscale = float(np.exp(2 * 2.9134)), float(np.exp(1.7872))  # EGP paper Table 2 (EGP)
    print(f"\n== USPS 3 vs 5: {ds.X.shape[0]} x {ds.X.shape[1]}, logistic, SE features ==")
    print("Newton loop at the EGP paper's learnt hyperparameters (noise variance 1e-6):")
    print(f"{'D':>6}{'method':>7}{'Newton s':>10}{'iters':>6}{'error':>8}{'NLP':>8}")
    for D in feature_counts:
        for linearization in ("taylor", "unscented"):
            def run():
                return LinearizedKitchenSinks(ds.X, ds.y, forward="logistic", linearization=linearization,
                                              n_features=D, kernel="se", lengthscale=lengthscale,
                                              weight_variance=variance, noise_variance=1e-6).fit_posterior()

            t, m = median_time(run, repeats)
            prob, _ = m.predict_y(ds.X_test, method="unscented")
            p = np.clip(prob[:, 0], 0.0, 1.0)
            print(f"{D:>6}{'EKS' if linearization == 'taylor' else 'UKS':>7}{t:>10.3f}{len(m.trace) - 1:>6}"
                  f"{metrics.error_rate(ds.y_test, p):>8.3f}{metrics.nlp(ds.y_test, p):>8.3f}", flush=True)
    print(f"hyperparameter learning (COBYQA, <= {max_evaluations} evaluations), D = {search_features}, "
          "started at variance = lengthscale = 1, noise variance 1e-6:")
    for linearization in ("taylor", "unscented"):
        m = LinearizedKitchenSinks(ds.X, ds.y, forward="logistic", linearization=linearization,
                                   n_features=search_features, kernel="se", lengthscale=1.0, weight_variance=1.0,
                                   noise_variance=1e-6)
        t0 = time.perf_counter()
        result = m.fit(max_evaluations=max_evaluations, warm_start=True)
        seconds = time.perf_counter() - t0
        prob, _ = m.predict_y(ds.X_test, method="unscented")
        p = np.clip(prob[:, 0], 0.0, 1.0)
        print(f"  {'EKS' if linearization == 'taylor' else 'UKS'}: {seconds:.2f} s, {result.n_evaluations} "
              f"evaluations ({1e3 * seconds / max(result.n_evaluations, 1):.0f} ms each), bound "
              f"{result.free_energy_initial:.1f} -> {result.free_energy:.1f}, error "
              f"{metrics.error_rate(ds.y_test, p):.3f}, NLP {metrics.nlp(ds.y_test, p):.3f}", flush=True)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="1 fold, 1 repeat, D <= 400 for USPS")
    parser.add_argument("--threads", type=int, default=1, help="BLAS threads (set before numpy loads)")
    parser.add_argument("--part", choices=("toy", "usps", "all"), default="all")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--features", type=int, default=200, help="D for the Table 1 part")
    args = parser.parse_args(argv)
    repeats = 1 if args.quick else args.repeats
    print(f"python {platform.python_version()}, numpy {np.__version__}, {platform.machine()}, "
          f"BLAS threads {os.environ.get('OPENBLAS_NUM_THREADS', 'default')}")
    warnings.simplefilter("ignore")
    if args.part in ("toy", "all"):
        bench_toy(1 if args.quick else 5, repeats, args.features)
    if args.part in ("usps", "all"):
        counts = (100, 200, 400) if args.quick else (100, 200, 400, 800, 1000)
        bench_usps(counts, repeats, max_evaluations=15 if args.quick else 40)


if __name__ == "__main__":
    main()
