#!/usr/bin/env python
"""gpexplorer EGP/UGP against the original ``linearizedGP`` 1.0 (Steinberg, 2015), same folds.

    python tests/benchmarks/bench_original_linearizedgp.py [--python /work/lgp-venv/bin/python]
        [--forwards identity poly3 exp sin tanh2] [--methods EGP UGP] [--folds 5]
        [--original-runs 1] [--ugp-inner-loop map-search] [--json out.json]

The issue asks for a 200-point EGP/UGP fit *including hyperparameter learning* at least 20x
faster than the original package. The original (PyPI ``linearizedGP`` 1.0, needs ``nlopt``)
lives in its own virtual environment, because it does not run on numpy >= 2.2:

    python3 -m venv /work/lgp-venv
    /work/lgp-venv/bin/pip install "numpy<2" "scipy<1.14" "nlopt<2.8" linearizedGP

(it is Python-3 clean, but with numpy 2.x ``GP._learn``'s ``assert not grad`` raises on nlopt's
empty gradient array and the prediction loops assign (1, 1) arrays into scalar slots; with
numpy 1.26 it runs unmodified; ``nlopt<2.8`` because newer wheels declare numpy >= 2).

For every forward model of EGP paper Table 1 the script builds the toy data and the five
200-train / 800-test folds with :mod:`gpexplorer.experiments.linearized_papers`, writes them to a temporary
.npz, and runs a small driver (``DRIVER`` below, our own code) in the original package's
interpreter, one fit per request, so that its fits and gpexplorer's alternate fold by fold (one
timed fit per side and fold, ``equal_timing.alternate``, the benchmarks' one timing helper). The driver uses the package's public API as its README and docstrings describe
it: ``extendedGP(nlfunc, dnlfunc, kernels.kern_m52)`` / ``unscentedGP(nlfunc, kernels.kern_m52)``,
``learnLB((0.1, 0.1), ynoise=0.01)``, ``learn(x, y, (1.0, 1.0), ynoise=1.0)`` (Matern 5/2, kernel
hyperparameters *and* noise learnt by BOBYQA; initial values and bounds of EGP paper section 4.1
and of its experiment script), then ``predict`` (EGP) / ``quadpredict`` (UGP) by quadrature as
for Table 1. Only ``learn`` is timed. gpexplorer's ``LinearizedGP`` runs in this process on
the same folds, with the same start (1.0) and the same bounds (variance >= 0.01 i.e. amplitude
>= 0.1, lengthscale >= 0.1, noise variance >= 1e-4 i.e. std >= 0.01) and its default search
(Fisher scoring, :mod:`gpexplorer.linearized.learning`); construction + ``fit`` is timed, after
one untimed warm-up fit per method so that numba compilation is excluded. Both sides'
predictions are scored with the same :mod:`gpexplorer.metrics` code (NLPD f*, SMSE f*, SMSE y*),
and both report the learnt free energy (eq. 41). Every BLAS/OpenMP pool is pinned to one thread
in both processes. Other processes on the same cores inflate both sides' times; the load average
is printed at the start and the end.

The original is not deterministic: every inner loop starts at a random mean (``randn(N) / 100``),
and on a saturating g (tanh2) its BOBYQA path, and so its learnt hyperparameters and scores,
change with that seed. ``--original-runs R`` repeats each of its fits with R seeds and prints the
range of its fold-averaged scores, so that a fold-by-fold difference can be read against the
original's own run-to-run spread. gpexplorer starts every inner loop at the prior mean and is
deterministic.
"""

from __future__ import annotations

import os
import sys

THREAD_VARS = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "NUMBA_NUM_THREADS",
               "VECLIB_MAXIMUM_THREADS")
if "numpy" not in sys.modules:  # only effective before numpy is first imported (script use)
    for _name in THREAD_VARS:
        os.environ[_name] = "1"

import argparse  # noqa: E402
import json  # noqa: E402
import statistics  # noqa: E402
import subprocess  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from gpexplorer.experiments import linearized_papers as lx  # noqa: E402
from gpexplorer.datasets import toy_inversion  # noqa: E402
from gpexplorer import metrics  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))  # equal_timing, beside this file
import equal_timing  # noqa: E402

DEFAULT_PYTHON = "/work/lgp-venv/bin/python"
TARGET_SPEEDUP = 20.0
FORWARDS = ("identity", "poly3", "exp", "sin", "tanh2")

#: Runs inside the original package's interpreter: python -c DRIVER in.npz, then one task per line on
#: stdin, "METHOD FOLD RUN OUT.npz": one fit (only ``learn`` timed) and its predictions into OUT.npz,
#: answered by "ok" on stdout. It stays up, so the parent can alternate its fits with gpexplorer's.
DRIVER = r'''
import sys, time, warnings
import numpy as np
from linearizedGP import extendedGP, unscentedGP, kernels

warnings.simplefilter("ignore")  # numpy 1.26 DeprecationWarnings from the 2014 code
FORWARDS = {  # g and dg/df, as the package expects them (vectorised callables)
    "identity": (lambda f: f, lambda f: np.ones_like(f)),
    "poly3": (lambda f: f**3 + f**2 + f, lambda f: 3 * f**2 + 2 * f + 1),
    "exp": (np.exp, np.exp),
    "sin": (np.sin, np.cos),
    "tanh2": (lambda f: np.tanh(2 * f), lambda f: 2 - 2 * np.tanh(2 * f)**2),
}
data = np.load(sys.argv[1])
g, dg = FORWARDS[str(data["forward"])]
x, y, seed = data["x"], data["y"], int(data["seed"])
for line in sys.stdin:
    if not line.strip():
        continue
    method, k, r, path = line.split()
    k, r = int(k), int(r)
    train, test = data["train"][k], data["test"][k]
    # learn() starts each inner loop's posterior mean at randn(N) / 100: run r reseeds it
    np.random.seed(seed + k + 1000 * r)
    if method == "EGP":
        gp = extendedGP.extendedGP(g, dg, kernels.kern_m52)
    else:
        gp = unscentedGP.unscentedGP(g, kernels.kern_m52)
    gp.learnLB((0.1, 0.1), ynoise=0.01)
    t0 = time.perf_counter()
    F = gp.learn(x[train], y[train], (1.0, 1.0), ynoise=1.0)
    fit = time.perf_counter() - t0
    Ey, _, Em, Vm = gp.predict(x[test]) if method == "EGP" else gp.quadpredict(x[test])
    np.savez(path, seconds=fit, free_energy=F, mean_f=Em, var_f=Vm, mean_y=Ey, numpy_version=np.__version__,
             params=np.array([gp.kparams[0] ** 2, gp.kparams[1], gp.ynoise ** 2]))
    print("ok", flush=True)
'''


def scores(f_test, y_test, mean_f, var_f, mean_y):
    """NLPD f*, SMSE f*, SMSE y* (gpexplorer.metrics; the same code scores both sides)."""
    return {"nlpd_f": metrics.nlpd(f_test, mean_f, np.maximum(var_f, 1e-300)),
            "smse_f": metrics.smse(f_test, mean_f), "smse_y": metrics.smse(y_test, mean_y)}


def run_driver(python, driver, timeout, **inputs):
    """Run ``driver`` (python -c driver in.npz out.npz) in the original package's interpreter, one
    BLAS thread, with ``inputs`` saved to in.npz; returns out.npz as a dict."""
    env = dict(os.environ, **{name: "1" for name in THREAD_VARS})
    env.pop("PYTHONPATH", None)
    with tempfile.TemporaryDirectory() as tmp:
        inp, out = Path(tmp) / "in.npz", Path(tmp) / "out.npz"
        np.savez(inp, **inputs)
        proc = subprocess.run([python, "-c", driver, str(inp), str(out)], env=env, capture_output=True,
                              text=True, timeout=timeout)
        if proc.returncode != 0:
            raise RuntimeError(f"the original linearizedGP driver failed ({python}):\n{proc.stderr[-3000:]}")
        return dict(np.load(out))


class OriginalDriver:
    """The original package's interpreter running DRIVER for one forward model (one BLAS thread):
    ``fit(method, k, r)`` runs one fit of fold k with numpy seed run r and returns its seconds (only
    ``learn``), free energy, hyperparameters and predictions."""

    def __init__(self, python, forward, n_folds, seed=0):
        env = dict(os.environ, **{name: "1" for name in THREAD_VARS})
        env.pop("PYTHONPATH", None)
        self.data = toy_inversion(forward, seed=seed)
        self.folds = lx.cv_folds(seed=seed)[:n_folds]
        self.tmp = tempfile.TemporaryDirectory()
        inp = Path(self.tmp.name) / "in.npz"
        np.savez(inp, x=self.data.X[:, 0], y=self.data.y, forward=forward, seed=seed,
                 train=np.array([tr for tr, _ in self.folds]), test=np.array([te for _, te in self.folds]))
        self.err = tempfile.TemporaryFile("w+")
        self.proc = subprocess.Popen([python, "-c", DRIVER, str(inp)], env=env, stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=self.err, text=True, bufsize=1)
        self.numpy_version = None

    def fit(self, method, k, r=0):
        out = Path(self.tmp.name) / f"{method}-{k}-{r}.npz"
        self.proc.stdin.write(f"{method} {k} {r} {out}\n")
        self.proc.stdin.flush()
        if self.proc.stdout.readline().strip() != "ok":
            self.err.seek(0)
            raise RuntimeError(f"the original linearizedGP driver failed:\n{self.err.read()[-3000:]}")
        res = dict(np.load(out))
        self.numpy_version = str(res["numpy_version"])
        test = self.folds[k][1]
        return {"seconds": float(res["seconds"]), "free_energy": float(res["free_energy"]),
                "params": res["params"].tolist(),
                **scores(self.data.f[test], self.data.y[test], res["mean_f"], res["var_f"], res["mean_y"])}

    def close(self):
        if self.proc.poll() is None:
            self.proc.stdin.close()
            self.proc.wait(timeout=60)
        self.err.close()
        self.tmp.cleanup()


def run_original(python, forward, methods, n_folds, seed=0, runs=1):
    """The original's fits alone, fold by fold; per (method, fold) seconds and scores.

    ``runs`` > 1 repeats every fit with another numpy seed (the original starts each inner loop
    at a random mean): the first run is the one compared and timed, ``"runs"`` holds every
    run's scores, free energy and hyperparameters.
    """
    driver = OriginalDriver(python, forward, n_folds, seed)
    try:
        results = {}
        for method in methods:
            for k in range(len(driver.folds)):
                per_run = [driver.fit(method, k, r) for r in range(runs)]
                results[(method, k)] = dict(per_run[0], runs=per_run)
        return results, driver.numpy_version
    finally:
        driver.close()


class Ours:
    """gpexplorer's LinearizedGP on the same folds: ``fit(method, k)`` times construction + fit of
    fold k (after one untimed warm-up fit per method, so numba compilation is excluded).

    ``ugp_inner_loop``: the UGP's inner loop ("map-search", the paper's, or "fixed-point")."""

    def __init__(self, forward, n_folds, seed=0, ugp_inner_loop="map-search"):
        self.forward, self.ugp_inner_loop = forward, ugp_inner_loop
        self.data = toy_inversion(forward, seed=seed)
        self.folds = lx.cv_folds(seed=seed)[:n_folds]
        self.warm = set()

    def fit(self, method, k):
        data, forward = self.data, self.forward
        options = {"inner_loop": self.ugp_inner_loop} if method == "UGP" else {}
        if method not in self.warm:
            train0 = self.folds[0][0]
            lx.fit_model(lx.make_model(method, data.X[train0], data.y[train0], forward, **options), method)
            self.warm.add(method)
        train, test = self.folds[k]
        t0 = time.perf_counter()
        model = lx.make_model(method, data.X[train], data.y[train], forward, **options)
        lx.fit_model(model, method)
        seconds = time.perf_counter() - t0
        mean_f, var_f = model.predict_f(data.X[test])
        mean_y, _ = model.predict_y(data.X[test], method="quadrature")
        p = model.parameters
        return {"seconds": seconds, "free_energy": model.free_energy(), "n_eval": model.fit_result.n_eval,
                "params": [float(p["variance"]), float(p["lengthscale"]), float(p["noise_variance"])],
                **scores(data.f[test], data.y[test], mean_f, var_f, mean_y)}


def run_ours(forward, methods, n_folds, seed=0, ugp_inner_loop="map-search"):
    """gpexplorer's fits alone, fold by fold (warm-up fit first, then one timed fit per fold)."""
    ours = Ours(forward, n_folds, seed, ugp_inner_loop)
    return {(method, k): ours.fit(method, k) for method in methods for k in range(len(ours.folds))}


def run_alternating(python, forward, methods, n_folds, seed=0, runs=1, ugp_inner_loop="map-search"):
    """Both sides on the same folds, one timed fit each per (method, fold), alternating
    (``equal_timing.alternate``; the side that starts changes from fold to fold), so that a change of
    machine load falls on both. The original's further seeds (``runs`` > 1) run afterwards, untimed
    for the comparison. Returns (theirs, ours, the original's numpy version)."""
    driver = OriginalDriver(python, forward, n_folds, seed)
    ours_side = Ours(forward, n_folds, seed, ugp_inner_loop)
    theirs, ours = {}, {}
    try:
        for method in methods:
            for k in range(len(driver.folds)):
                got = {}

                def original(i):
                    got["original"] = driver.fit(method, k, 0)
                    return 1e3 * got["original"]["seconds"]

                def gpexplorer(i):
                    got["ours"] = ours_side.fit(method, k)
                    return 1e3 * got["ours"]["seconds"]

                if method not in ours_side.warm:  # the warm-up fit, outside the alternation
                    ours_side.fit(method, 0)
                equal_timing.alternate({"original": original, "gpexplorer": gpexplorer}, 1, warmup=0, first=k)
                per_run = [got["original"]] + [driver.fit(method, k, r) for r in range(1, runs)]
                theirs[(method, k)] = dict(per_run[0], runs=per_run)
                ours[(method, k)] = got["ours"]
        return theirs, ours, driver.numpy_version
    finally:
        driver.close()


def _load():
    try:
        return " ".join(f"{v:.2f}" for v in os.getloadavg())
    except OSError:
        return "n/a"


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--python", default=DEFAULT_PYTHON, help="interpreter with linearizedGP 1.0 installed")
    parser.add_argument("--forwards", nargs="+", default=list(FORWARDS), choices=FORWARDS)
    parser.add_argument("--methods", nargs="+", default=["EGP", "UGP"], choices=["EGP", "UGP"])
    parser.add_argument("--folds", type=int, default=5, choices=range(1, 6))
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--original-runs", type=int, default=1,
                        help="repeat every fit of the original with this many numpy seeds (its inner loop "
                             "starts at a random mean) and report the spread of its scores; the first run "
                             "is the one timed and compared fold by fold")
    parser.add_argument("--ugp-inner-loop", default="map-search", choices=["map-search", "fixed-point"],
                        help="gpexplorer's UGP inner loop (LinearizedGP(inner_loop=...))")
    parser.add_argument("--json", help="also write every number to this JSON file")
    args = parser.parse_args(argv)
    if not Path(args.python).exists():
        print(f"error: {args.python} not found; create the venv as the module docstring says", file=sys.stderr)
        return 2
    print(f"load average at start: {_load()}")
    header = (f"{'g(f)':<9}{'method':<7}{'fold':>4}  {'t orig s':>9}{'t ours s':>9}{'speed-up':>9}  "
              f"{'NLPD f* orig/ours':>20}  {'SMSE f* orig/ours':>20}  {'SMSE y* orig/ours':>20}")
    print(header)
    print("-" * len(header))
    records, ratios, numpy_version = [], {m: [] for m in args.methods}, None
    totals = {m: [0.0, 0.0] for m in args.methods}
    for forward in args.forwards:
        theirs, ours, numpy_version = run_alternating(args.python, forward, args.methods, args.folds, args.seed,
                                                      runs=args.original_runs, ugp_inner_loop=args.ugp_inner_loop)
        for method in args.methods:
            for k in range(args.folds):
                a, b = theirs[(method, k)], ours[(method, k)]
                ratio = a["seconds"] / b["seconds"]
                ratios[method].append(ratio)
                totals[method][0] += a["seconds"]
                totals[method][1] += b["seconds"]
                records.append({"forward": forward, "method": method, "fold": k, "original": a, "ours": b,
                                "speedup": ratio})
                print(f"{forward:<9}{method:<7}{k:>4}  {a['seconds']:>9.3f}{b['seconds']:>9.3f}{ratio:>8.1f}x  "
                      f"{a['nlpd_f']:>9.3f} /{b['nlpd_f']:>8.3f}  {a['smse_f']:>9.4f} /{b['smse_f']:>8.4f}  "
                      f"{a['smse_y']:>9.4f} /{b['smse_y']:>8.4f}")
    print()
    summary = {}
    for method in args.methods:
        med = statistics.median(ratios[method])
        total = totals[method][0] / totals[method][1]
        summary[method] = {"median_speedup": med, "min_speedup": min(ratios[method]), "total_speedup": total,
                           "original_seconds": totals[method][0], "ours_seconds": totals[method][1]}
        verdict = "met" if min(ratios[method]) >= TARGET_SPEEDUP else (
            "met in median" if med >= TARGET_SPEEDUP else "MISSED")
        print(f"{method}: speed-up per fold median {med:.1f}x (min {min(ratios[method]):.1f}x), total time "
              f"{totals[method][0]:.1f} s vs {totals[method][1]:.2f} s = {total:.1f}x; target {TARGET_SPEEDUP:.0f}x "
              f"{verdict}")
        for metric in ("nlpd_f", "smse_f", "smse_y", "free_energy"):
            orig = [r["original"][metric] for r in records if r["method"] == method]
            mine = [r["ours"][metric] for r in records if r["method"] == method]
            rows = {fw: [r for r in records if r["method"] == method and r["forward"] == fw] for fw in args.forwards}
            per_forward = "  ".join(f"{fw} {np.mean([r['original'][metric] for r in rows[fw]]):.3f}/"
                                    f"{np.mean([r['ours'][metric] for r in rows[fw]]):.3f}" for fw in args.forwards)
            print(f"    {metric}: original mean {np.mean(orig):.4f}, ours {np.mean(mine):.4f}  (per g, orig/ours: "
                  f"{per_forward})")
        if args.original_runs > 1:
            print(f"    the original over {args.original_runs} seeds: per g, mean of its fold averages "
                  f"[min, max over seeds] / ours")
            for metric in ("nlpd_f", "smse_f", "smse_y", "free_energy"):
                cells = []
                for fw in args.forwards:
                    rows = [r for r in records if r["method"] == method and r["forward"] == fw]
                    by_seed = np.mean([[run[metric] for run in r["original"]["runs"]] for r in rows], axis=0)
                    cells.append(f"{fw} {by_seed.mean():.3f} [{by_seed.min():.3f}, {by_seed.max():.3f}] / "
                                 f"{np.mean([r['ours'][metric] for r in rows]):.3f}")
                print(f"      {metric}: " + "  ".join(cells))
    print(f"original package ran with numpy {numpy_version}; load average at end: {_load()}")
    if args.json:
        Path(args.json).write_text(json.dumps({"records": records, "summary": summary,
                                               "original_numpy": numpy_version}, indent=1, default=float))
    return 0


if __name__ == "__main__":
    sys.exit(main())
