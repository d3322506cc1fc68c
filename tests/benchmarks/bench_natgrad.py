#!/usr/bin/env python
"""Natural gradients for q(u) side by side with GPflow's ``NaturalGradient`` + Adam (issue 25, item 4).

    .venv/bin/python tests/benchmarks/bench_natgrad.py [--quick] [--rounds R] [--threads T]
        [--gpflow-python PATH] [--no-unwhitened] [--no-black-box] [--json out.json]

**Snelson** (200 points), SE kernel, Gaussian likelihood, M = 15 inducing inputs, jitter 1e-6, both
sides from the same start: Z = the start Z of ``SparseGPR(X, y, SquaredExponential(), Z=15,
approximation="vfe", seed=0)``, kernel variance 1, lengthscale 1, noise variance 1, q(u) at each library's
default start (GPflow: q_mu = 0, q_sqrt = I). The optimum is the collapsed VFE fit's bound from
that start (gpexplorer's SparseGPR; GPflow's SGPR from the same start is printed as a check).

* gpexplorer: ``SparseVariationalGP(X, y, SquaredExponential(), Z0, "gaussian").fit(max_iter=2000,
  method="natgrad")`` (L-BFGS-B over hyperparameters, Z and noise with q(u) brought to its optimum
  by natural-gradient steps at each evaluation) and, for reference, ``method="lbfgs"`` (joint
  L-BFGS-B, whitened, as the fit's default ``whiten=True``). Each iterate is timestamped from the
  fit's ``callback(entry)`` (``entry.objective`` = -ELBO); times run from the ``fit`` call.
* GPflow 2.11 (``natgrad_peers.py``, in GPflow's venv): its documented recipe, one
  ``NaturalGradient(gamma=1.0)`` step on (q_mu, q_sqrt) then one ``tf.optimizers.Adam(lr)`` step on
  the other variables per iteration inside a ``tf.function``, whitened (GPflow's default) and
  unwhitened, lr in {0.01, 0.1}; the ELBO at every iteration; budget 5000 iterations or 60 s.

**Equal work.** Whole fits alternate, ours then GPflow's, ``R`` rounds (default 5): every side
makes one untimed warm-up fit first (the *cold* fit: numba compilation on our side,
``tf.function`` tracing on GPflow's, whose first step is reported on its own) and then exactly
``R`` timed fits (``equal_timing.alternate``). Per side: min and median over the R fits of the
time to within 0.1 and 0.01 nat of the optimum (the first iterate that gets there, and the
iterate after which the fit stays there: Adam's iterates wander), the final ELBO and the fit's
total time. Adam has a learning rate to choose; both are reported, and they are chosen by the
training objective (the ELBO) itself, never by a test score, so quoting the faster is fair.

**Non-conjugate** (``--no-black-box`` skips): the black-box lab's 1-D binary toy (Bernoulli-logit)
and coal LGCP (Poisson, log link, offset log(191 / bins)), built as the lab builds them (its
default settings with the quadrature estimator, FG posterior, ``comparison.build_model``),
gpexplorer's ``method="natgrad"`` as the lab now fits FG with exact gradients (``max_iter`` =
``rounds`` x ``evals_per_block`` L-BFGS-B iterations) against the lab's former default and its
choice for the mixtures, block-cyclic L-BFGS-B (``rounds`` rounds of ``evals_per_block``
evaluations per block, stopped once converged), and GPflow's recipe on the same data, Z and
kernel start (``Bernoulli(invlink=tf.sigmoid)``: GPflow's default link is the probit;
``Poisson(invlink=tf.exp, binsize=exp(offset))``; natural-gradient step 1.0, lr in {0.01, 0.1},
2000 iterations or 30 s; ``--no-bb-gpflow`` leaves GPflow out): final ELBO, time, evaluations,
time to within 0.1 and 0.01 nat of the best ELBO any side reached, and gpexplorer's convergence
verdict (``res.details["convergence"]``); ``--bb-rounds`` (default ``--rounds``) timed rounds
after one cold fit per side, alternating as above.

``--quick``: one round, Snelson only, GPflow whitened only and its fits stopped once within
0.01 nat (or after 10 s); well under a minute. The thread pools of both processes are pinned to
``--threads`` (default 1) before numpy, numba and TensorFlow load. ``uptime`` is printed before
and after. Not part of the pytest suite.
"""

from __future__ import annotations

import os
import sys


def _threads_from_argv(argv):
    for i, a in enumerate(argv):
        if a == "--threads" and i + 1 < len(argv):
            return argv[i + 1]
        if a.startswith("--threads="):
            return a.split("=", 1)[1]
    return "1"


THREADS = _threads_from_argv(sys.argv[1:])
for _name in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "NUMBA_NUM_THREADS",
              "VECLIB_MAXIMUM_THREADS"):
    os.environ[_name] = THREADS

import argparse  # noqa: E402
import json  # noqa: E402
import statistics  # noqa: E402
import subprocess  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
import warnings  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import equal_timing  # noqa: E402  (the benchmarks' shared equal-work helper)

GPFLOW_PYTHON = os.environ.get("GPFLOW_PYTHON", "/work/peers/gpflow211/bin/python")
MARK = "@@RESULT@@"
GAPS = (0.1, 0.01)  # nats below the optimum
JITTER = 1e-6
START = {"variance": 1.0, "lengthscale": 1.0, "noise_variance": 1.0}
LEARNING_RATES = (0.01, 0.1)
MAX_ITER_OURS = 2000
MAX_ITER_GPFLOW, MAX_SECONDS_GPFLOW = 5000, 60.0
BLACK_BOX = ("toy_binary", "coal")
Z_SEED = 0  # the k-means start of Z draws from the seed (the test's SparseGPR leaves it None)


def log(msg=""):
    print(msg, flush=True)


def uptime():
    try:
        return subprocess.run(["uptime"], capture_output=True, text=True, check=False).stdout.strip()
    except OSError:
        return f"loadavg {equal_timing.loadavg()}"


# ------------------------------------------------------------------------------------------
# the GPflow worker
class Worker:
    def __init__(self, python):
        env = dict(os.environ, NATGRAD_THREADS=THREADS, TF_CPP_MIN_LOG_LEVEL="3")
        self.proc = subprocess.Popen([python, str(HERE / "natgrad_peers.py")], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env=env,
                                     cwd=tempfile.gettempdir())
        self._info = None  # TensorFlow loads while the parent sets up

    @property
    def info(self):
        if self._info is None:
            self._info = self._read()
        return self._info

    def _read(self):
        for line in self.proc.stdout:
            if line.startswith(MARK):
                out = json.loads(line[len(MARK):])
                if "error" in out:
                    raise RuntimeError(f"GPflow worker: {out['error']}\n{out.get('traceback', '')}")
                return out
        raise RuntimeError(f"GPflow worker ended (exit code {self.proc.poll()})")

    def ask(self, **task):
        _ = self.info
        self.proc.stdin.write(json.dumps(task) + "\n")
        self.proc.stdin.flush()
        return self._read()

    def close(self):
        if self.proc.poll() is None:
            self.proc.stdin.close()
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()


# ------------------------------------------------------------------------------------------
# the problems
def snelson_problem():
    from gpexplorer import datasets
    from gpexplorer.kernels import SquaredExponential
    from gpexplorer.models import SparseGPR

    d = datasets.snelson()
    vfe = SparseGPR(d.X, d.y, SquaredExponential(variance=START["variance"], lengthscale=START["lengthscale"]),
                    Z=15, approximation="vfe", noise_variance=START["noise_variance"], jitter=JITTER, seed=Z_SEED)
    Z0 = np.array(vfe.parameters["Z"], dtype=float).copy()
    t0 = time.perf_counter()
    optimum = -float(vfe.fit().objective)
    return {"X": d.X, "y": np.asarray(d.y, dtype=float).ravel(), "Z": Z0, "optimum": optimum,
            "vfe_seconds": time.perf_counter() - t0,
            "vfe_parameters": {k: v for k, v in vfe.parameters.items() if k != "Z"}}


def ours_snelson_fit(problem, method):
    from gpexplorer.kernels import SquaredExponential
    from gpexplorer.variational import SparseVariationalGP

    model = SparseVariationalGP(problem["X"], problem["y"],
                                SquaredExponential(variance=START["variance"], lengthscale=START["lengthscale"]),
                                problem["Z"].copy(), "gaussian", jitter=JITTER)
    model.set_parameters(**{"likelihood.variance": START["noise_variance"]})
    return _timed_fit(model, max_iter=MAX_ITER_OURS, method=method)


def _timed_fit(model, **fit_args):
    ts, elbos = [], []
    t0 = time.perf_counter()

    def callback(entry):
        ts.append(time.perf_counter() - t0)
        elbos.append(-float(entry.objective))
        return False

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = model.fit(callback=callback, **fit_args)
    seconds = time.perf_counter() - t0
    conv = res.details.get("convergence", {}) or {}
    return {"t": ts, "elbo": elbos, "final_elbo": -float(res.objective), "seconds": seconds,
            "iterations": int(res.n_iter), "n_eval": int(res.n_eval), "verdict": conv.get("reason"),
            "q_steps": (res.details.get("natural_gradient") or {}).get("q_steps"),
            "converged": conv.get("converged"), "first_step_s": ts[0] if ts else None}


def milestones(fit, optimum, gaps=GAPS):
    """Per gap: the first time an iterate is within ``gap`` of ``optimum`` and the time of the
    iterate after which every later one is (None where never)."""
    t, e = np.asarray(fit["t"]), np.asarray(fit["elbo"])
    out = {}
    for gap in gaps:
        inside = e >= optimum - gap
        first = float(t[np.argmax(inside)]) if inside.any() else None
        outside = np.flatnonzero(~inside)
        if not inside.any() or (outside.size and outside[-1] == len(e) - 1):
            stays = None
        else:
            stays = float(t[outside[-1] + 1]) if outside.size else float(t[0])
        out[gap] = {"first": first, "stays": stays}
    return out


# ------------------------------------------------------------------------------------------
# reporting
def _fmt(x, spec=".3f"):
    return "-" if x is None else format(x, spec)


def _stat(values, how):
    vals = [v for v in values if v is not None]
    if not vals:
        return None
    if len(vals) < len(values) and how == "median":
        return None  # some fits never got there: the median is not a time
    return min(vals) if how == "min" else statistics.median(vals)


def side_summary(fits, optimum):
    """min / median over the timed fits of every figure; the cold fit on its own."""
    rows = [dict(fit=f, ms=milestones(f, optimum)) for f in fits["timed"]]
    figures = {}
    for gap in GAPS:
        for kind in ("first", "stays"):
            vals = [r["ms"][gap][kind] for r in rows]
            figures[f"t{gap}_{kind}"] = {"min": _stat(vals, "min"), "median": _stat(vals, "median"),
                                         "reached": sum(v is not None for v in vals), "n": len(vals)}
    for key in ("final_elbo", "seconds", "iterations", "n_eval", "end_state_elbo"):
        if any(key not in r["fit"] for r in rows):
            continue
        vals = [r["fit"][key] for r in rows]
        figures[key] = {"min": min(vals), "median": statistics.median(vals),
                        "max": max(vals), "n": len(vals)}
    cold = fits.get("cold")
    if cold is not None:
        cms = milestones(cold, optimum)
        figures["cold"] = {"first_step_s": cold.get("first_step_s"), "trace_s": cold.get("trace_s"),
                           **{f"t{gap}_{kind}": cms[gap][kind] for gap in GAPS for kind in ("first", "stays")},
                           "final_elbo": cold["final_elbo"], "seconds": cold["seconds"]}
    return figures


def print_snelson(summaries, optimum):
    log(f"\n## Snelson, SVGP Gaussian FG, M = 15: time to within 0.1 / 0.01 nat of the collapsed optimum "
        f"{optimum:.4f}")
    log("   (s from the start of the fit; 'first' = first iterate within, 'stays' = from then on every iterate "
        "within; min / median over the timed fits; '-' = not reached in every fit)")
    head = (f"{'side':<40} {'n':>2} {'t0.1 first':>15} {'t0.1 stays':>15} {'t0.01 first':>15} {'t0.01 stays':>15} "
            f"{'final ELBO':>21} {'total s':>13} {'iters':>6} {'evals':>6}")
    log(head)
    for name, s in summaries.items():
        def mm(key, spec=".3f", s=s):
            f = s[key]
            return f"{_fmt(f['min'], spec)}/{_fmt(f['median'], spec)}"
        log(f"{name:<40} {s['seconds']['n']:>2} {mm('t0.1_first'):>15} {mm('t0.1_stays'):>15} "
            f"{mm('t0.01_first'):>15} {mm('t0.01_stays'):>15} {mm('final_elbo', '.4f'):>21} "
            f"{mm('seconds', '.2f'):>13} {int(s['iterations']['median']):>6} "
            f"{_fmt(s['n_eval']['median'] if 'n_eval' in s else None, '.0f'):>6}")
    log("\n   cold (first, untimed) fit of each side: numba compilation (ours) / tf.function tracing (GPflow) "
        "included")
    log(f"{'side':<40} {'first step s':>12} {'t0.1 first':>11} {'t0.01 first':>11} {'final ELBO':>11}")
    for name, s in summaries.items():
        c = s.get("cold")
        if c:
            note = "" if c.get("trace_s") is not None or name.startswith("gpexplorer") else \
                "  (step traced by the previous fit of this model: lr is a variable)"
            log(f"{name:<40} {_fmt(c['first_step_s'], '.2f'):>12} {_fmt(c['t0.1_first'], '.2f'):>11} "
                f"{_fmt(c['t0.01_first'], '.2f'):>11} {c['final_elbo']:>11.4f}{note}")
    ends = {name: s["end_state_elbo"] for name, s in summaries.items() if "end_state_elbo" in s}
    if ends:
        log("\n   GPflow's final ELBO above is its last iteration's (q just brought to its optimum by the natural-"
            "gradient step); at the state its fit leaves, after the last Adam step (min/median):")
        for name, e in ends.items():
            log(f"   {name:<40} {e['min']:.4f}/{e['median']:.4f}")


# ------------------------------------------------------------------------------------------
def run_snelson(args, worker, result):
    problem = snelson_problem()
    optimum = problem["optimum"]
    result["snelson"] = {"optimum": optimum, "vfe_seconds": problem["vfe_seconds"],
                         "vfe_parameters": problem["vfe_parameters"]}
    log(f"# collapsed VFE optimum (gpexplorer SparseGPR from the start): {optimum:.6f} "
        f"({problem['vfe_seconds']:.2f} s, first call in this process)")
    tmp = tempfile.mkdtemp(prefix="natgrad_bench_")
    data = os.path.join(tmp, "snelson.npz")
    np.savez(data, X=problem["X"], y=problem["y"], Z=problem["Z"], jitter=JITTER, **START)
    if worker is not None:
        result["gpflow"] = worker.info
        log(f"# GPflow {worker.info['gpflow']}, TensorFlow {worker.info['tensorflow']}, numpy {worker.info['numpy']}")
    if worker is not None and not args.quick:
        sg = worker.ask(kind="sgpr", data=data)
        result["snelson"]["gpflow_sgpr"] = sg
        log(f"# GPflow SGPR (Scipy L-BFGS-B) from the same start: {sg['elbo']:.6f} ({sg['nit']} iterations; "
            f"difference from ours {sg['elbo'] - optimum:+.2e})")

    fits = {}
    sides = {}

    def ours(method):
        add_side(sides, fits, f"gpexplorer {method}", lambda: ours_snelson_fit(problem, method))

    def gpflow(whiten, lr):
        name = f"GPflow natgrad+Adam {'whitened' if whiten else 'unwhitened'} lr={lr:g}"
        stop_at = optimum - 0.01 if args.quick else None
        max_seconds = 10.0 if args.quick else MAX_SECONDS_GPFLOW
        add_side(sides, fits, name, lambda: worker.ask(kind="fit", data=data, whiten=whiten, lr=lr,
                                                       max_iter=MAX_ITER_GPFLOW, max_seconds=max_seconds,
                                                       stop_at=stop_at))

    # the cyclic order of every round: ours, GPflow, ours, GPflow, ...
    ours("natgrad")
    if worker is not None:
        gpflow(True, LEARNING_RATES[0])
    if not args.quick:
        ours("lbfgs")
    if worker is not None:
        gpflow(True, LEARNING_RATES[1])
        if args.unwhitened and not args.quick:
            for lr in LEARNING_RATES:
                gpflow(False, lr)
    log(f"# sides, in each round's order: {', '.join(sides)}; {args.rounds} timed round(s) after one cold fit each")
    t0 = time.perf_counter()
    times = equal_timing.alternate(sides, args.rounds, warmup=1, collect_every=0,
                                   log=lambda m: log(m))
    log(f"# rounds done in {time.perf_counter() - t0:.0f} s")
    summaries = {name: side_summary(f, optimum) for name, f in fits.items()}
    result["snelson"]["sides"] = summaries
    result["snelson"]["fit_ms"] = times
    result["snelson"]["fits"] = {name: {"cold": _brief(f.get("cold")), "timed": [_brief(x) for x in f["timed"]]}
                                 for name, f in fits.items()}
    print_snelson(summaries, optimum)
    ratios(summaries, result)


def add_side(sides, fits, name, fit):
    """A side of :func:`equal_timing.alternate` named ``name`` that runs ``fit()`` (-> a fit's
    record with its "seconds") and keeps each record in ``fits[name]``."""
    fits[name] = {"timed": []}

    def call(i):
        out = fit()
        _keep(fits[name], i, out)
        return 1e3 * out["seconds"]

    sides[name] = call


def _keep(store, i, out):
    """The warm-up call (negative index) is the cold fit; the others are the timed ones."""
    if i < 0:
        store["cold"] = out
    else:
        store["timed"].append(out)


def _brief(fit):
    if fit is None:
        return None
    return {k: v for k, v in fit.items() if k not in ("t", "elbo")}


def ratios(summaries, result):
    ours = summaries.get("gpexplorer natgrad")
    if ours is None:
        return
    out = {}
    log("\n   GPflow's time over ours (same figure, min/min and median/median):")
    for name, s in summaries.items():
        if not name.startswith("GPflow"):
            continue
        row = {}
        for key in ("t0.1_first", "t0.1_stays", "t0.01_first", "t0.01_stays"):
            a, b = s[key], ours[key]
            row[key] = {h: (a[h] / b[h] if a[h] is not None and b[h] else None) for h in ("min", "median")}
        out[name] = row
        log(f"   {name:<40} " + "  ".join(f"{k}: {_fmt(v['min'], '.2f')}/{_fmt(v['median'], '.2f')}"
                                           for k, v in row.items()))
    result["snelson"]["gpflow_over_ours"] = out


# ------------------------------------------------------------------------------------------
def black_box_problem(dataset):
    """The lab's problem and fit options, its default settings with the quadrature estimator."""
    from gpexplorer.ui.black_box import data, settings

    s = settings.BlackBoxSettings(dataset=dataset, estimator="quadrature")
    problem = data.load(dataset, s.n_bins, s.n_train, s.data_seed)
    return problem, settings.fit_options(s, problem)


def _lab():
    try:
        from gpexplorer.variational import comparison as lab  # noqa: PLC0415 (its home since issue 25 item 7)
    except ImportError:  # an older checkout
        from gpexplorer.ui.black_box import runs as lab  # noqa: PLC0415
    return lab


def run_black_box(args, worker, result):
    lab = _lab()
    result["black_box"] = {}
    tmp = tempfile.mkdtemp(prefix="natgrad_bench_bb_")
    for dataset in BLACK_BOX:
        problem, opt = black_box_problem(dataset)
        budget = opt["rounds"] * opt["evals_per_block"]  # natgrad's L-BFGS iterations in the lab
        sides, fits = {}, {}

        def ours(method):
            def fit():
                model = lab.build_model(problem, "fg", opt)
                if method == "natgrad":  # the lab's call for FG with exact gradients (comparison._fit)
                    return _timed_fit(model, max_iter=budget, method="natgrad")
                return _timed_fit(model, max_iter=opt["rounds"], method="block-lbfgs",
                                  evals_per_block=opt["evals_per_block"], stop_when_converged=True)

            add_side(sides, fits, method, fit)

        def gpflow(lr, data):
            add_side(sides, fits, f"GPflow natgrad+Adam lr={lr:g}",
                     lambda: worker.ask(kind="fit", data=data, whiten=True, lr=lr, gamma=1.0,
                                        max_iter=args.bb_gpflow_iter, max_seconds=args.bb_gpflow_seconds))

        ours("natgrad")
        if worker is not None:
            start = lab.build_model(problem, "fg", opt)  # the lab's Z (k-means, seed 0) and kernel start
            data = os.path.join(tmp, f"{dataset}.npz")
            np.savez(data, X=problem.X, y=problem.Y[:, 0], Z=np.asarray(start.parameters["feature0.Z"]),
                     jitter=start.jitter, variance=1.0, lengthscale=problem.lengthscale,
                     likelihood=opt["likelihood"], offset=float(opt["likelihood_options"].get("offset", 0.0)))
            gpflow(LEARNING_RATES[0], data)
        ours("block-lbfgs")
        if worker is not None:
            gpflow(LEARNING_RATES[1], data)
        times = equal_timing.alternate(sides, args.bb_rounds, warmup=1, collect_every=0)
        best = max(max(f["elbo"] + [f["final_elbo"]]) for v in fits.values() for f in v["timed"])
        rows = {}
        log(f"\n## black-box lab: {dataset} ({opt['likelihood']}, N = {problem.X.shape[0]}, M = {opt['M']}, "
            f"quadrature, FG); the lab's budget: natgrad {opt['rounds']} x {opt['evals_per_block']} = {budget} "
            f"L-BFGS iterations, block-lbfgs {opt['rounds']} rounds x {opt['evals_per_block']} evaluations per "
            f"block; best ELBO seen (any side, any iterate) {best:.4f}")
        log(f"{'method':<28} {'n':>2} {'final ELBO min/median':>23} {'s min/median':>15} {'evals':>6} "
            f"{'iters':>6} {'t0.1 of best min/med':>21} {'t0.01 of best':>15} {'verdict':>10} {'cold s':>7}")
        for method, f in fits.items():
            timed = f["timed"]
            finals = [x["final_elbo"] for x in timed]
            secs = [x["seconds"] for x in timed]
            t01 = [milestones(x, best)[0.1]["first"] for x in timed]
            t01s = [milestones(x, best)[0.1]["stays"] for x in timed]
            t001 = [milestones(x, best)[0.01]["first"] for x in timed]
            verdicts = sorted({str(x.get("verdict", "-")) for x in timed})
            n_eval = [x.get("n_eval") for x in timed]
            rows[method] = {"final_elbo": {"min": min(finals), "median": statistics.median(finals)},
                            "seconds": {"min": min(secs), "median": statistics.median(secs)},
                            "n_eval": statistics.median(n_eval) if None not in n_eval else None,
                            "iterations": statistics.median(x["iterations"] for x in timed),
                            "t0.1_of_best": {"min": _stat(t01, "min"), "median": _stat(t01, "median")},
                            "t0.1_of_best_stays": {"min": _stat(t01s, "min"), "median": _stat(t01s, "median")},
                            "t0.01_of_best": {"min": _stat(t001, "min"), "median": _stat(t001, "median")},
                            "verdicts": verdicts, "converged": [x.get("converged") for x in timed],
                            "cold_seconds": f["cold"]["seconds"], "cold_first_step_s": f["cold"].get("first_step_s"),
                            "n": len(timed)}
            r = rows[method]
            log(f"{method:<28} {len(timed):>2} {r['final_elbo']['min']:>11.4f}/{r['final_elbo']['median']:<11.4f} "
                f"{r['seconds']['min']:>7.2f}/{r['seconds']['median']:<7.2f} {_fmt(r['n_eval'], '.0f'):>6} "
                f"{r['iterations']:>6.0f} {_fmt(r['t0.1_of_best']['min'], '.2f'):>10}/"
                f"{_fmt(r['t0.1_of_best']['median'], '.2f'):<10} {_fmt(r['t0.01_of_best']['min'], '.2f'):>7}/"
                f"{_fmt(r['t0.01_of_best']['median'], '.2f'):<7} {','.join(verdicts):>10} "
                f"{r['cold_seconds']:>7.2f}")
        result["black_box"][dataset] = {"rows": rows, "best": best, "natgrad_max_iter": budget,
                                        "options": {k: v for k, v in opt.items() if k != "likelihood_options"},
                                        "fit_ms": times}


# ------------------------------------------------------------------------------------------
def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true", help="one round, Snelson only, GPflow whitened only")
    p.add_argument("--rounds", type=int, default=5, help="timed whole fits per side (after one cold fit)")
    p.add_argument("--bb-rounds", type=int, default=None, help="timed rounds of the black-box part (default: --rounds)")
    p.add_argument("--bb-gpflow-iter", type=int, default=2000, help="GPflow's iterations on the black-box problems")
    p.add_argument("--bb-gpflow-seconds", type=float, default=30.0)
    p.add_argument("--no-bb-gpflow", action="store_true", help="the black-box part without GPflow")
    p.add_argument("--threads", default="1", help="thread pools of both processes (default 1)")
    p.add_argument("--gpflow-python", default=GPFLOW_PYTHON)
    p.add_argument("--no-gpflow", action="store_true")
    p.add_argument("--no-unwhitened", dest="unwhitened", action="store_false")
    p.add_argument("--no-black-box", dest="black_box", action="store_false")
    p.add_argument("--no-snelson", dest="snelson", action="store_false")
    p.add_argument("--json")
    args = p.parse_args(argv)
    if args.quick:
        args.rounds, args.black_box = 1, False
    args.bb_rounds = args.bb_rounds or args.rounds
    return args


def main(argv=None):
    args = parse_args(argv)
    result = {"command": " ".join([Path(sys.executable).name, *sys.argv]), "threads": THREADS,
              "uptime_before": uptime(), "loadavg_before": equal_timing.loadavg()}
    log(f"# {result['command']}")
    log(f"# uptime before: {result['uptime_before']}")
    log(f"# threads per process: {THREADS}; rounds: {args.rounds}")
    import gpexplorer

    result["gpexplorer"] = {"path": os.path.dirname(gpexplorer.__file__), "numpy": np.__version__}
    worker = None
    if not args.no_gpflow:
        worker = Worker(args.gpflow_python)
    t0 = time.perf_counter()
    try:
        if args.snelson:
            run_snelson(args, worker, result)
        if args.black_box:
            run_black_box(args, None if args.no_bb_gpflow else worker, result)
    finally:
        if worker is not None:
            worker.close()
    result["seconds"] = time.perf_counter() - t0
    result["uptime_after"] = uptime()
    result["loadavg_after"] = equal_timing.loadavg()
    log(f"\n# uptime after: {result['uptime_after']}")
    log(f"# wall time {result['seconds']:.0f} s")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(result, f, indent=1, default=float)
    return result


if __name__ == "__main__":
    main()
