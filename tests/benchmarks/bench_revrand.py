"""gpexplorer's random-feature models against the original revrand 1.0 (issue 27), side by side.

revrand runs in its own venv (``REVRAND_PYTHON``, default ``/work/peers/revrand/venv/bin/python``:
revrand 1.0 on numpy 1.23 with ``np.asscalar`` replaced by ``np.asarray(a).item()``, its one use
removed from numpy) behind ``revrand_peer_timings.py --serve``, which builds each case once and times one call per request where
it runs (the pipe is not counted). Both sides get the same number of timed calls, alternating
single calls (:mod:`equal_timing`), one BLAS thread each; min and median per side.

Cases (the report's sizes; revrand's timed function is named in the peer's ``describe``):

* ``slm_boston``: the evidence and its gradient, Boston fold (404 x 13), 400 RBF frequencies with
  ARD lengthscales + a linear basis with a constant column (814 columns);
* ``glm_boston_step``: one minibatch Adam step of the GLM (200 RBF columns + linear, K = 10,
  20 samples, batch 10, Gaussian likelihood), ours with the report's estimator (Monte Carlo) and
  with our default (quadrature);
* ``glm_usps_step``: the same on USPS 3 vs 5 (767 x 256, 1,600 columns, isotropic lengthscale,
  50 samples, Bernoulli-logit).

Ours only: the Boston SLM fit as the report runs it (100 random starts, then L-BFGS-B); features
for N = 10^6 points in 10 dimensions with 2,000 columns (in blocks of 50,000 rows into one buffer,
and into a new array per block: the whole [10^6, 2000] array is 16 GB); Fastfood against dense RFF at input dimension 1,000.

    python tests/benchmarks/bench_revrand.py [--calls 20] [--json out.json] [--no-peer] [--memory-seeds 6]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parents[1]))

import numpy as np  # noqa: E402
from equal_timing import alternate, loadavg, local, ratios, summary  # noqa: E402

from gpexplorer import _threads  # noqa: E402
from gpexplorer.datasets import boston, usps_3vs5  # noqa: E402
from gpexplorer.random_features import GeneralizedLinearModel, StandardLinearModel, basis  # noqa: E402

#: the revrand side: its venv's python running revrand_peer_timings.py (beside this file) in serve mode
PEER_PYTHON = os.environ.get("REVRAND_PYTHON", "/work/peers/revrand/venv/bin/python")
PEER = [PEER_PYTHON, "-W", "ignore", str(HERE / "revrand_peer_timings.py"), "--serve"]


class RevrandPeer:
    """The revrand process: one timed call per request, timed where it runs."""

    def __init__(self, command):
        env = dict(os.environ, OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1", MKL_NUM_THREADS="1")
        self.p = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, bufsize=1,
                                  env=env)
        ready = self.p.stdout.readline()
        if not ready.startswith("READY"):
            raise RuntimeError(f"revrand peer did not start: {ready!r}")

    def ask(self, line):
        self.p.stdin.write(line + "\n")
        self.p.stdin.flush()
        out = self.p.stdout.readline().strip()
        if out.startswith("ERROR"):
            raise RuntimeError(out)
        return out

    def side(self, case):
        return lambda i: 1e3 * float(self.ask(case))

    def close(self):
        self.p.stdin.write("quit\n")
        self.p.stdin.flush()
        self.p.wait(timeout=30)


def boston_train():
    ds = boston()
    X, y = np.asarray(ds.X, dtype=float), np.ravel(ds.y).astype(float)
    rows = np.random.default_rng(100).permutation(len(y))[:404]
    X, y = X[rows], y[rows]
    return (X - X.mean(0)) / X.std(0), y - y.mean()


def our_slm():
    X, y = boston_train()
    b = basis("rbf", 13, 800, lengthscale=np.linspace(1, 20, 13), seed=0) + basis("linear", 13) + basis("bias", 13)
    m = StandardLinearModel(X, y, b, weight_variance=[3.3, 5.5, 5.5], noise_variance=0.78)
    ls = m.parameters["0.lengthscale"]

    def call(i):  # a new lengthscale each call, so the features are recomputed as in a fit
        m.set_parameters(**{"0.lengthscale": ls * (1 + 1e-6 * (i % 7))})
        m.objective_and_gradient()
    return call


def our_glm_step(X, y, b, likelihood, samples, estimator):
    m = GeneralizedLinearModel(X, y, b, likelihood, 10, estimator=estimator, num_samples=samples, seed=0)
    m.fit(max_iter=3, batch_size=10)
    rng = np.random.default_rng(0)
    N = X.shape[0]
    params = m.parameters

    def call(i):  # the body of one step of fit(): assign the parameters, a minibatch bound and its gradient
        m.assign_in_box(params)
        m.elbo(rng.choice(N, size=10, replace=False))
    return call


def glm_cases():
    X, y = boston_train()
    bos = basis("rbf", 13, 200, lengthscale=np.ones(13)) + basis("linear", 13) + basis("bias", 13)
    d = usps_3vs5()
    Xu, yu = np.asarray(d.X, dtype=float), np.ravel(d.y)
    usps = basis("rbf", 256, 1600, lengthscale=5.0)
    return {"glm_boston_step": [(X, y, bos, "gaussian", 20)], "glm_usps_step": [(Xu, yu, usps, "bernoulli_logit", 50)]}


def full_step_ms(X, y, b, likelihood, samples, estimator, steps=200):
    """A whole fit() step (parameter packing, minibatch, bound, gradient, Adam update), averaged."""
    m = GeneralizedLinearModel(X, y, b, likelihood, 10, estimator=estimator, num_samples=samples, seed=0)
    m.fit(max_iter=5, batch_size=10)
    t0 = time.perf_counter()
    m.fit(max_iter=steps, batch_size=10, trace_every=10 ** 9)
    return 1e3 * (time.perf_counter() - t0) / steps


def slm_fit(seed=0, memory=None):
    """One Boston SLM fit as the report runs it (100 random starts, then L-BFGS-B; ``memory``:
    L-BFGS-B's stored corrections, None for the model's default, revrand's 100): (seconds,
    evaluations, final log evidence)."""
    from gpexplorer.experiments.revrand_boston import _priors
    X, y = boston_train()
    b = basis("rbf", 13, 800, lengthscale=np.ones(13), seed=seed) + basis("linear", 13)
    m = StandardLinearModel(X, y, b)
    extra = {} if memory is None else {"memory": memory}
    t0 = time.perf_counter()
    result = m.fit(random_starts=100, seed=seed, start_distribution=_priors(13, 2), **extra)
    return time.perf_counter() - t0, result.n_eval, m.log_evidence()


def slm_fit_seconds(repeats=3):
    """``repeats`` fits from the same start in one warm process (the first fit of a process also
    imports scipy.optimize, 0.4 s): min and median seconds, and the evaluations."""
    slm_fit()  # imports and compiled dispatch, as in a session that has fitted once
    runs = [slm_fit() for _ in range(repeats)]
    seconds = [r[0] for r in runs]
    return {"min": min(seconds), "median": float(np.median(seconds)), "n": repeats, "evaluations": runs[0][1],
            "log_evidence": runs[0][2]}


def memory_seeds(seeds):
    """The fit from ``seeds`` starts (frequencies and random starts) with scipy's memory (10) and
    revrand's (100): evaluations, seconds and the log evidence each reaches."""
    rows = []
    for seed in range(seeds):
        row = {"seed": seed}
        for memory in (10, 100):
            seconds, evals, value = slm_fit(seed, memory)
            row[memory] = {"seconds": seconds, "evaluations": evals, "log_evidence": value}
        rows.append(row)
        print(json.dumps(row, default=float), flush=True)
    for memory in (10, 100):
        print(f"memory {memory}: median evaluations {np.median([r[memory]['evaluations'] for r in rows]):.0f}, "
              f"median seconds {np.median([r[memory]['seconds'] for r in rows]):.2f}")
    gaps = [r[100]["log_evidence"] - r[10]["log_evidence"] for r in rows]
    print("log evidence, memory 100 minus memory 10, per seed:", " ".join(f"{g:+.3f}" for g in gaps))
    return rows


def features_seconds(N=1_000_000, d=10, columns=2000, chunk=50_000, repeats=3):
    """Seconds for the features of N points, streamed in blocks of ``chunk`` rows (the whole
    [10^6, 2000] array is 16 GB, above the library's 2 GiB cap on one array): into one reused
    buffer (``b(X, out=buf)``) and into a new array per block (each block's pages faulted in
    afresh). ``repeats`` alternating runs of each; min and median."""
    b = basis("rbf", d, columns, lengthscale=1.0)
    X = np.random.default_rng(0).standard_normal((chunk, d))
    buf = np.empty((chunk, columns))
    b(X, out=buf)
    ways = {"one buffer": lambda: b(X, out=buf), "new array per block": lambda: b(X)}
    times = {k: [] for k in ways}
    for _ in range(repeats):
        for name, call in ways.items():
            t0 = time.perf_counter()
            for _ in range(N // chunk):
                call()
            times[name].append(time.perf_counter() - t0)
    return {k: {"min": min(v), "median": float(np.median(v)), "n": len(v)} for k, v in times.items()}


def fastfood_vs_dense(calls, N=5000, d=1000, columns=(2000, 8000)):
    X = np.random.default_rng(0).standard_normal((N, d))
    out = {}
    for n in columns:
        ff, dense = basis("fastfood_rbf", d, n, lengthscale=30.0), basis("rbf", d, n, lengthscale=30.0)
        W = dense.frequencies.T  # [d, m]: the dense projection alone
        times = alternate({"fastfood": local(lambda i: ff(X)), "dense": local(lambda i: dense(X)),
                           "fastfood projection": local(lambda i: ff.projections(X)),
                           "dense projection": local(lambda i: X @ W)}, calls)
        out[n] = {k: summary(v) for k, v in times.items()}
        out[n]["speedup"] = ratios(times, "dense", "fastfood")
        out[n]["projection speedup"] = ratios(times, "dense projection", "fastfood projection")
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--calls", type=int, default=20)
    ap.add_argument("--json", default=None)
    ap.add_argument("--no-peer", action="store_true", help="ours only (no revrand venv here)")
    ap.add_argument("--memory-seeds", type=int, default=0, metavar="N",
                    help="also fit Boston's SLM from N seeds with L-BFGS-B memories 10 and 100")
    a = ap.parse_args(argv)
    report = {"load_start": loadavg()}
    with _threads.single_threaded():
        peer = None if a.no_peer else RevrandPeer(PEER)
        cases = {"slm_boston": {"ours": local(our_slm())}}
        for name, [(X, y, b, lik, S)] in glm_cases().items():
            cases[name] = {"ours (monte carlo)": local(our_glm_step(X, y, b, lik, S, "monte_carlo")),
                           "ours (quadrature)": local(our_glm_step(X, y, b, lik, S, "quadrature"))}
        for name, sides in cases.items():
            if peer is not None:
                sides["revrand"] = peer.side(name)
            times = alternate(sides, a.calls)
            report[name] = {k: summary(v) for k, v in times.items()}
            if peer is not None:
                report[name]["speedup"] = {k: ratios(times, "revrand", k) for k in sides if k != "revrand"}
            print(name, json.dumps(report[name]), flush=True)
        if peer is not None:
            report["revrand_cases"] = {n: json.loads(peer.ask(f"describe {n}"))["timed"] for n in cases}
            peer.close()
        for name, [(X, y, b, lik, S)] in glm_cases().items():
            report[name + "_full_step_ms"] = {e: full_step_ms(X, y, b, lik, S, e) for e in ("monte_carlo", "quadrature")}
            print(name, "whole step ms", report[name + "_full_step_ms"], flush=True)
        fit = report["slm_boston_fit"] = slm_fit_seconds()
        print("Boston SLM fit (100 random starts + L-BFGS-B, memory 100), warm:",
              f"min {fit['min']:.2f} s, median {fit['median']:.2f} s, {fit['evaluations']} evaluations,",
              f"log evidence {fit['log_evidence']:.3f}", flush=True)
        if a.memory_seeds:
            report["slm_memory_seeds"] = memory_seeds(a.memory_seeds)
        report["features_1e6_x10_2000"] = features_seconds()
        print("features, 10^6 x 10 -> 2000 columns (s):", json.dumps(report["features_1e6_x10_2000"]), flush=True)
        report["fastfood"] = fastfood_vs_dense(max(3, a.calls // 4))
        print("fastfood vs dense at d = 1000:", json.dumps(report["fastfood"]), flush=True)
    report["load_end"] = loadavg()
    if a.json:
        Path(a.json).write_text(json.dumps(report, indent=1, default=float))


if __name__ == "__main__":
    main()
