#!/usr/bin/env python
"""Timing of EKS / UKS (gpexplorer.linearized.kitchen_sinks.LinearizedKitchenSinks), one BLAS thread.

    python tests/benchmarks/bench_kitchen_sinks.py [--quick] [--threads N] [--part toy|usps|all]
        [--latent se|matern52] [--kernel se|matern52] [--features D] [--folds K] [--compare-scan]

1. The EKS paper's Table 1 setting (section 7.1; the data of
   :func:`gpexplorer.datasets.toy_inversion`): latent f from a GP with a
   squared-exponential kernel (``--latent matern52``: the EGP paper's Matern 5/2), variance 0.8^2,
   lengthscale 0.6, at 1000 points evenly spaced on [-2 pi, 2 pi], y = g(f) + N(0, 0.2^2), 5 folds
   of 200 training / 800 test points, D = 200 columns of random features of the latent kernel
   (``--kernel`` to change), hyperparameters started at 1.0 (EGP paper section 4.1). For every
   forward model and linearisation: the wall time of one posterior fit at the starting
   hyperparameters (the Newton loop) and of the full fit with hyperparameter learning
   (``fit()``), with SMSE f*, NLPD f* (latent) and SMSE g* (Monte Carlo predictive mean, EKS
   eq. 37, against the noiseless g(f*)) beside the paper's EKS/UKS numbers. D counts columns of
   Phi (D/2 frequencies; the paper's "D = 200" is its 200-dimensional feature space, see
   gpexplorer.experiments.linearized_papers); ``--features`` changes D. ``--compare-scan`` runs, per
   fold, one ``fit(scan_lengthscale=False)`` and one ``fit()`` in turn (``equal_timing.alternate``; the
   first changes from fold to fold) and prints the bound,
   NLPD and time of both (the lengthscale scan of gpexplorer.linearized.kitchen_sinks_learning).
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

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # equal_timing, beside this file
import equal_timing  # noqa: E402
from gpexplorer import datasets, metrics  # noqa: E402
from gpexplorer.experiments import linearized_papers as lx  # noqa: E402
from gpexplorer.datasets import toy_inversion  # noqa: E402
from gpexplorer.linearized.kitchen_sinks import LinearizedKitchenSinks  # noqa: E402
from gpexplorer.experiments.reproduce import EKS_TABLE1  # noqa: E402

TOY_MODELS = [("identity", "taylor"), ("identity", "unscented"), ("poly3", "taylor"), ("poly3", "unscented"),
              ("exp", "taylor"), ("exp", "unscented"), ("sin", "taylor"), ("sin", "unscented"),
              ("tanh2", "taylor"), ("tanh2", "unscented"), ("sign_cubic", "unscented")]


def paper_table1(forward, linearization):
    """EKS paper Table 1 (D = 200) means (SMSE f*, NLPD f*, SMSE g*), or None."""
    ref = EKS_TABLE1.get((forward, "EKS" if linearization == "taylor" else "UKS"))
    return None if ref is None else tuple(ref[k].mean for k in ("smse_f", "nlpd_f", "smse_g"))


def median_time(fn, repeats):
    times, result = [], None
    for _ in range(repeats):
        t0 = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times), result


def _scores(m, data, test, seed):
    f = data.f[test]
    g = m.forward.value(f[:, None])[:, 0]
    mf, vf = m.predict_f(data.X[test])
    my, _ = m.predict_y(data.X[test], method="monte_carlo", num_samples=2000, seed=seed)
    return metrics.smse(f, mf[:, 0]), metrics.nlpd(f, mf[:, 0], vf[:, 0]), metrics.smse(g, my[:, 0])


def bench_toy(n_folds, repeats, n_features=200, latent="se", kernel=None, compare_scan=False):
    kernel = kernel or latent
    print(f"\n== Table 1 setting: latent {latent}, {kernel} features, 200 train / 800 test, D = {n_features}, "
          f"{n_folds} fold(s) ==")
    if compare_scan:
        print(f"{'g':<11}{'method':<7}{'fold':>4}{'F local':>10}{'F scan':>10}{'NLPD local':>11}{'NLPD scan':>10}"
              f"{'s local':>9}{'s scan':>8}")
    else:
        print(f"{'g':<11}{'method':<5}{'Newton ms':>10}{'iters':>6}{'fit s':>8}{'evals':>6}"
              f"{'SMSE f*':>9}{'NLPD f*':>9}{'SMSE g*':>9}   paper (SMSE f*, NLPD f*, SMSE g*)")
    for forward, linearization in TOY_MODELS:
        data = toy_inversion(forward, seed=0, latent_kernel=latent)
        folds = lx.cv_folds(seed=0)[:n_folds]
        inner, outer, iters, evals, scores = [], [], [], [], []
        name = "EKS" if linearization == "taylor" else "UKS"
        for k, (train, test) in enumerate(folds):
            def make():
                return LinearizedKitchenSinks(data.X[train], data.y[train], forward=forward,
                                              linearization=linearization, n_features=n_features, kernel=kernel,
                                              lengthscale=1.0, weight_variance=1.0, noise_variance=1.0, seed=k)

            if compare_scan:  # A/B on the same fold: one fit each, in turn (the first changes from fold to fold)
                fits = {}

                def side(scan):
                    def fit(i):
                        m = make()
                        t0 = time.perf_counter()
                        result = m.fit(scan_lengthscale=scan)
                        seconds = time.perf_counter() - t0
                        fits[scan] = (m, result, seconds)
                        return 1e3 * seconds

                    return fit

                equal_timing.alternate({False: side(False), True: side(True)}, 1, warmup=0, first=k)
                row = [(-fits[scan][1].objective, _scores(fits[scan][0], data, test, k)[1], fits[scan][2])
                       for scan in (False, True)]
                print(f"{forward:<11}{name:<7}{k:>4}{row[0][0]:>10.1f}{row[1][0]:>10.1f}{row[0][1]:>11.2f}"
                      f"{row[1][1]:>10.2f}{row[0][2]:>9.2f}{row[1][2]:>8.2f}", flush=True)
                continue
            t, m = median_time(lambda: make().fit_posterior(), repeats)
            inner.append(t)
            iters.append(len(m.trace) - 1)
            m = make()
            t0 = time.perf_counter()
            result = m.fit()
            outer.append(time.perf_counter() - t0)
            evals.append(result.n_eval)
            scores.append(_scores(m, data, test, k))
        if compare_scan:
            continue
        s = np.mean(scores, axis=0)
        paper = paper_table1(forward, linearization)
        print(f"{forward:<11}{name:<5}{1e3 * statistics.median(inner):>10.1f}{statistics.median(iters):>6.0f}"
              f"{statistics.median(outer):>8.2f}{statistics.median(evals):>6.0f}"
              f"{s[0]:>9.3f}{s[1]:>9.2f}{s[2]:>9.3f}   {paper if paper else '-'}", flush=True)


def bench_usps(feature_counts, repeats, search_features=200, max_iter=40):
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
    print(f"hyperparameter learning (COBYQA, <= {max_iter} evaluations), D = {search_features}, "
          "started at variance = lengthscale = 1, noise variance 1e-6:")
    for linearization in ("taylor", "unscented"):
        m = LinearizedKitchenSinks(ds.X, ds.y, forward="logistic", linearization=linearization,
                                   n_features=search_features, kernel="se", lengthscale=1.0, weight_variance=1.0,
                                   noise_variance=1e-6)
        t0 = time.perf_counter()
        result = m.fit(max_iter=max_iter, warm_start=True)
        seconds = time.perf_counter() - t0
        prob, _ = m.predict_y(ds.X_test, method="unscented")
        p = np.clip(prob[:, 0], 0.0, 1.0)
        print(f"  {'EKS' if linearization == 'taylor' else 'UKS'}: {seconds:.2f} s, {result.n_eval} "
              f"evaluations ({1e3 * seconds / max(result.n_eval, 1):.0f} ms each), bound "
              f"{-result.trace[0].objective:.1f} -> {-result.objective:.1f}, error "
              f"{metrics.error_rate(ds.y_test, p):.3f}, NLP {metrics.nlp(ds.y_test, p):.3f}", flush=True)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="1 fold, 1 repeat, D <= 400 for USPS")
    parser.add_argument("--threads", type=int, default=1, help="BLAS threads (set before numpy loads)")
    parser.add_argument("--part", choices=("toy", "usps", "all"), default="all")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--features", type=int, default=200, help="D (columns) for the Table 1 part")
    parser.add_argument("--latent", choices=("se", "matern52"), default="se",
                        help="latent GP of the toy data (EKS paper: se; EGP paper: matern52)")
    parser.add_argument("--kernel", choices=("se", "matern52", "matern32"), default=None,
                        help="random-feature kernel (default: the latent kernel)")
    parser.add_argument("--folds", type=int, default=None, help="toy folds (default 5, --quick 1)")
    parser.add_argument("--compare-scan", action="store_true",
                        help="toy part: fit() with and without the lengthscale scan, alternating per fold")
    args = parser.parse_args(argv)
    repeats = 1 if args.quick else args.repeats
    print(f"python {platform.python_version()}, numpy {np.__version__}, {platform.machine()}, "
          f"BLAS threads {os.environ.get('OPENBLAS_NUM_THREADS', 'default')}")
    warnings.simplefilter("ignore")
    if args.part in ("toy", "all"):
        bench_toy(args.folds or (1 if args.quick else 5), repeats, args.features, args.latent, args.kernel,
                  args.compare_scan)
    if args.part in ("usps", "all"):
        counts = (100, 200, 400) if args.quick else (100, 200, 400, 800, 1000)
        bench_usps(counts, repeats, max_iter=15 if args.quick else 40)


if __name__ == "__main__":
    main()
