"""The parts of ``bench_convolutional.py`` besides the ELBO comparison: the problems and our models,
the rectangles fit and prediction, the patches lab's two interactions, the first call with an empty
numba cache, and the profile of one ELBO + gradient.

* **Rectangles** (``rectangles_section``): our model of the ELBO cell (M = 16 random distinct
  3 x 3 patches, base SE 1 / 1, "mean" scaling, probit) fitted by ``fit(method="adam",
  max_iter=2000, batch_size=100, learning_rate=0.01, seed=0)`` (the default ``trace_every=10``:
  the full-data ELBO every 10 steps, as a user's fit records it), timed whole, with its test error.
  Then ``predict_y`` on 1,000 test images, a different window of the 2,000 per call (so the
  unique-patch decomposition is never a cache hit) and the lengthscale moved by 1e-12 relative
  (so Kdiag and Kuf are recomputed), alternating with GPflow's ``predict_y`` on 1,000 images in
  chunks of 100 (one compiled call each) at the fitted Z and hyperparameters.
* **The lab's patch move** (target < 150 ms): on that fitted model, one pixel of one inducing
  patch flipped (z <- 1 - z) per call, then the full-data ELBO (1,200 images) and ``predict_y`` on
  500 test images (the lab's test set): the kernel keeps Kdiag and recomputes the moved Kuf row.
  Beside it in the same rounds: the same move after a hyperparameter change (nothing cached), and,
  where ``gpexplorer.convolutional_views`` is present, the lab's own ``move_inducing_patch`` (q(u)
  carried over in whitened coordinates, then natural-gradient steps) followed by the predictions.
* **The drawn digit** (target < 150 ms): a 10-class model on 28 x 28 MNIST (``mnist10``, 600
  training images, weighted "mean" convolutional kernel with 5 x 5 patches, M = 30 unique patches,
  robust max, one kernel shared by the ten latents: the lab's digit model at full resolution) fitted
  by a few Adam steps (the time to classify does not depend on the fit); a call classifies one new
  image (a different MNIST test digit each call, standing in for a drawing) by
  ``predict_class_probabilities`` and the arg max.
* **First call**: a fresh Python with an empty ``NUMBA_CACHE_DIR``: importing gpexplorer, building
  the model (data, patches, compiled helpers) and the first and second ELBO + gradient.
"""

from __future__ import annotations

import copy
import cProfile
import io
import json
import os
import pstats
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

import conv_gpflow_side
import equal_timing
import sparse_peers as peers
from gpexplorer import datasets
from gpexplorer.inducing import InducingPatches
from gpexplorer.kernels import Convolutional, SquaredExponential
from gpexplorer.linalg import jittered_cholesky
from gpexplorer.variational.fitting import batch_elbo
from gpexplorer.variational.savigp import SparseVariationalGP
from sparse_bench_interleaved import remote_side

SEED, VARIANCE, LENGTHSCALE, JITTER, N_GH = 0, 1.0, 1.0, 1e-6, 20
N_BATCHES = 64
CSV_COLUMNS = ("section", "case", "side", "min_ms", "median_ms", "n", "speedup_min", "speedup_median", "target",
               "met", "load_start", "load_end", "note")
#: (full, quick): Adam steps, predicted images, lab test images, timed calls per side
RECT = {"steps": (2000, 10), "n_pred": (1000, 200), "n_view": (500, 100), "calls": (6, 2)}
DIGIT = {"n_train": (600, 60), "M": (30, 10), "steps": (20, 1), "batch": (100, 10), "n_test": (200, 20),
         "calls": (20, 2)}
TARGETS = {"fit_s": 60.0, "predict_ms": 2000.0, "move_ms": 150.0, "classify_ms": 150.0}


# ------------------------------------------------------------------------------------------
# problems and models
_DATA = {}


def load(name):
    """(X, y, X_test, y_test) of a gpexplorer data set, pixels in [0, 1] (MNIST: seeded split 0)."""
    if name not in _DATA:
        ds = datasets.load(name) if name == "rectangles" else datasets.load(name, seed=SEED)
        _DATA[name] = (ds.X, ds.y.astype(float), ds.X_test, ds.y_test.astype(float))
    return _DATA[name]


def build_model(dataset, patch, M, n_train=None, init="random"):
    """Our SVGP: unweighted "mean" convolutional kernel on the base SE, M inducing patches, probit;
    on the first ``n_train`` training images (all if None)."""
    X, y, _, _ = load(dataset)
    X, y = X[:n_train], y[:n_train]
    k = Convolutional(SquaredExponential(VARIANCE, LENGTHSCALE), image_shape=(28, 28), patch_shape=(patch, patch),
                      scaling="mean")
    Z = InducingPatches.from_images(X, k, M, init=init, seed=SEED)
    return SparseVariationalGP(X, y, k, Z, "bernoulli_probit", estimator="quadrature", n_points=N_GH, jitter=JITTER), k


def batch_table(N, B, seed=SEED + 1):
    """N_BATCHES seeded minibatches of B rows (sorted), read by both sides."""
    rng = np.random.default_rng(seed)
    return np.stack([np.sort(rng.choice(N, B, replace=False)) for _ in range(N_BATCHES)])


def ours_side(model, table):
    """``side(i) -> ms``: one minibatch ELBO + gradient on ``table[i % K]`` (``side.call`` untimed)."""
    def call(i):
        model.set_parameters(**{"kernel0.base.lengthscale": LENGTHSCALE * peers.nudge(i)})
        return batch_elbo(model, table[i % len(table)], None)

    return equal_timing.local(call)


def random_q(model, seed=SEED + 2):
    """A valid full q(u) = N(Lk v, Lk W W^T Lk^T): Lk = chol(Kuu + jitter I), W lower triangular."""
    Z = model.features[0].Z
    M = Z.shape[0]
    Lk, _ = jittered_cholesky(model.kernels[0].inducing_covariance(Z), JITTER, what="Kuu", warn=False)
    rng = np.random.default_rng(seed)
    W = np.tril(0.1 / np.sqrt(M) * rng.standard_normal((M, M)), -1) + np.diag(rng.uniform(0.3, 0.8, M))
    return Lk @ rng.standard_normal(M), Lk @ W


def write_case(directory, tag, model, table, X_pred, q=None):
    """The .npz GPflow's worker reads: the data, our Z and hyperparameters, the batches and a q."""
    Z, k = model.features[0].Z, model.kernels[0]
    mu, L = q if q is not None else (np.zeros(len(Z)), np.eye(len(Z)))
    X, y = model.X, model.Y[:, 0]
    return conv_gpflow_side.write_data(
        directory, tag, X=X, Y=y, Z=Z, batches=table, q_mu=mu, q_sqrt=L, X_pred=X_pred, image_shape=(28, 28),
        patch_shape=k.layout.patch_shape, variance=float(k.base.variance),
        lengthscale=float(np.ravel(k.base.lengthscale)[0]), jitter=JITTER, n_gh=N_GH)


def loadavg():
    la = equal_timing.loadavg()
    return None if la is None else round(la[0], 2)


def row(results, section, case, side, summary=None, **extra):
    """One CSV row (the same dict in the JSON's ``rows``)."""
    r = dict.fromkeys(CSV_COLUMNS)
    r.update(section=section, case=case, side=side, **extra)
    if summary:
        r.update(min_ms=summary["min"], median_ms=summary["median"], n=summary["n"])
    results["rows"].append(r)
    return r


def _met(value, target, quick):
    return None if quick else bool(value < target)


# ------------------------------------------------------------------------------------------
# rectangles: fit, prediction, the lab's patch move
def rectangles_section(results, worker, directory, quick, calls=None):
    pick = 1 if quick else 0
    steps, n_pred, n_view = RECT["steps"][pick], RECT["n_pred"][pick], RECT["n_view"][pick]
    calls = calls or RECT["calls"][pick]
    X, y, Xt, yt = load("rectangles")
    model, k = build_model("rectangles", 3, 16)
    traced = []
    evaluate = model.evaluate

    def timed_evaluate(*args, **kwargs):  # the trace's full-data ELBO (Adam's steps call batch_elbo)
        t = time.perf_counter()
        try:
            return evaluate(*args, **kwargs)
        finally:
            traced.append(time.perf_counter() - t)

    model.evaluate = timed_evaluate  # an instance attribute, removed after the fit
    la0, t0 = loadavg(), time.perf_counter()
    try:
        res = model.fit(max_iter=steps, method="adam", batch_size=100, learning_rate=0.01, seed=SEED)
    finally:
        del model.evaluate
    fit_s = time.perf_counter() - t0
    fit = {"steps": steps, "batch": 100, "M": 16, "seconds": fit_s, "target_s": None if quick else TARGETS["fit_s"],
           "met": _met(fit_s, TARGETS["fit_s"], quick), "elbo": -float(res.objective), "trace_entries": len(res.trace),
           "trace_elbo_s": float(sum(traced)), "trace_elbo_calls": len(traced), "load_start": la0,
           "load_end": loadavg()}
    row(results, "fit", f"rectangles Adam {steps} steps, B 100, M 16", "gpexplorer", min_ms=1e3 * fit_s,
        median_ms=1e3 * fit_s, n=1, target=fit["target_s"] and 1e3 * fit["target_s"], met=fit["met"],
        load_start=la0, load_end=fit["load_end"])
    fit["test_error"] = float(model.error_rate(Xt, yt))
    ls0 = float(model.parameters["kernel0.base.lengthscale"])
    offsets = list(range(0, len(Xt) - n_pred + 1, 100))

    def predict(i):
        model.set_parameters(**{"kernel0.base.lengthscale": ls0 * peers.nudge(i)})
        o = offsets[i % len(offsets)]
        return model.predict_y(Xt[o:o + n_pred])

    sides = {"gpexplorer": equal_timing.local(predict)}
    if worker is not None:
        data = write_case(directory, "rectangles-fitted", model, batch_table(len(X), 100), Xt[:n_pred])
        sides["GPflow"] = remote_side(worker, {"kind": "predict", "data": data, "chunk": 100})
    la0 = loadavg()
    out = equal_timing.compare(sides, calls)
    model.set_parameters(**{"kernel0.base.lengthscale": ls0})
    pred = {"images": n_pred, "calls": out["calls"], "sides": out["sides"], "load_start": la0, "load_end": loadavg(),
            "target_ms": None if quick else TARGETS["predict_ms"],
            "met": _met(out["sides"]["gpexplorer"]["min"], TARGETS["predict_ms"], quick)}
    if worker is not None:
        pred["speedup"] = equal_timing.ratios(out["times"], "GPflow", "gpexplorer")
    for side, s in out["sides"].items():
        ours = side == "gpexplorer"
        sp = pred.get("speedup", {}) if ours else {}
        row(results, "predict", f"rectangles predict_y {n_pred} images", side, s, load_start=la0,
            load_end=pred["load_end"], target=pred["target_ms"] if ours else None, met=pred["met"] if ours else None,
            speedup_min=sp.get("min"), speedup_median=sp.get("median"),
            note="GPflow: chunks of 100 images" if side == "GPflow" else "")
    return {"fit": fit, "predict": pred, "lab_move": lab_move(results, model, Xt[:n_view], calls, quick)}


def lab_move(results, model, X_view, calls, quick):
    M, E = model.features[0].Z.shape
    ls0 = float(model.parameters["kernel0.base.lengthscale"])
    parts = {"elbo_ms": [], "predict_ms": []}

    def flipped(i, m=model):
        Z = m.features[0].Z.copy()
        j, e = i % M, (i // M) % E
        Z[j, e] = 1.0 - Z[j, e]
        return Z

    def move(i, uncached=False, m=model):
        if uncached:
            m.set_parameters(**{"kernel0.base.lengthscale": ls0 * peers.nudge(i)})
        t0 = time.perf_counter()
        m.set_parameters(**{"feature0.Z": flipped(i, m)})
        m.elbo()
        t1 = time.perf_counter()
        m.predict_y(X_view)
        if not uncached:
            parts["elbo_ms"].append(1e3 * (t1 - t0))
            parts["predict_ms"].append(1e3 * (time.perf_counter() - t1))

    sides = {"move": equal_timing.local(move)}
    other = copy.deepcopy(model)  # its own kernel caches: the sides must not evict each other's entries
    sides["move after a hyperparameter change"] = equal_timing.local(lambda i: move(i, True, other))
    try:  # the lab's own action, where the lab's module is present (issue 26's UI work)
        from gpexplorer.convolutional_views import move_inducing_patch
    except ImportError:
        move_inducing_patch = None
    if move_inducing_patch is not None:
        third = copy.deepcopy(model)

        def lab_action(i):
            move_inducing_patch(third, i % M, flipped(i, third)[i % M])
            third.predict_y(X_view)
        sides["convolutional_views.move_inducing_patch"] = equal_timing.local(lab_action)
    la0 = loadavg()
    out = equal_timing.compare(sides, calls)
    model.set_parameters(**{"kernel0.base.lengthscale": ls0})
    n = out["calls"]
    moved = {"N": int(model.X.shape[0]), "view_images": int(len(X_view)), "M": M, "calls": n, "sides": out["sides"],
             "parts_ms": {k: equal_timing.summary(v[-n:]) for k, v in parts.items()},
             "target_ms": None if quick else TARGETS["move_ms"],
             "met": _met(out["sides"]["move"]["min"], TARGETS["move_ms"], quick), "load_start": la0,
             "load_end": loadavg()}
    for side, s in out["sides"].items():
        row(results, "lab", f"move one inducing patch: ELBO (N {moved['N']}) + predict_y ({len(X_view)})", side, s,
            target=moved["target_ms"] if side == "move" else None, met=moved["met"] if side == "move" else None,
            load_start=la0,
            load_end=moved["load_end"])
    return moved


# ------------------------------------------------------------------------------------------
# the drawn digit
def digit_section(results, quick, calls=None):
    pick = 1 if quick else 0
    n_train, M, steps, B, n_test = (DIGIT[k][pick] for k in ("n_train", "M", "steps", "batch", "n_test"))
    calls = calls or DIGIT["calls"][pick]
    X, y, Xt, yt = load("mnist10")
    k = Convolutional(SquaredExponential(VARIANCE, LENGTHSCALE), image_shape=(28, 28), patch_shape=(5, 5),
                      weighted=True, scaling="mean")
    Z = InducingPatches.from_images(X[:n_train], k, M, init="unique", seed=SEED)
    model = SparseVariationalGP(X[:n_train], y[:n_train], k, Z, "robust_max", estimator="quadrature", jitter=JITTER,
                                likelihood_options={"n_classes": 10}, shared=True)
    t0 = time.perf_counter()
    model.fit(max_iter=steps, method="adam", batch_size=B, learning_rate=0.05, seed=SEED, trace_every=steps)
    fit_s = time.perf_counter() - t0
    error = float(model.error_rate(Xt[:n_test], yt[:n_test]))
    drawn = Xt[n_test:]

    def classify(i):
        return int(np.argmax(model.predict_class_probabilities(drawn[i % len(drawn)][None])[0]))

    la0 = loadavg()
    out = equal_timing.compare({"classify": equal_timing.local(classify)}, calls)
    s = out["sides"]["classify"]
    digit = {"n_train": n_train, "M": M, "patch": 5, "adam_steps": steps, "fit_s": fit_s, "test_error": error,
             "n_test": n_test, "classify": s, "target_ms": None if quick else TARGETS["classify_ms"],
             "met": _met(s["min"], TARGETS["classify_ms"], quick), "load_start": la0, "load_end": loadavg()}
    row(results, "lab", "classify one drawn 28x28 digit (10 classes)", "gpexplorer", s, target=digit["target_ms"],
        met=digit["met"], load_start=la0, load_end=digit["load_end"])
    return digit


# ------------------------------------------------------------------------------------------
# the first call with an empty numba cache, in a fresh process
FIRST_CALL_CHILD = r"""
import json, sys, time
t0 = time.perf_counter()
import gpexplorer.kernels, gpexplorer.inducing, gpexplorer.variational.savigp, gpexplorer.variational.fitting
t1 = time.perf_counter()
sys.path.insert(0, sys.argv[1])
import conv_bench_parts as parts
dataset, patch, M, B, n_train = json.loads(sys.argv[2])
t2 = time.perf_counter()
model, _ = parts.build_model(dataset, patch, M, n_train)
table = parts.batch_table(model.X.shape[0], B)
t3 = time.perf_counter()
parts.batch_elbo(model, table[0], None)
t4 = time.perf_counter()
parts.batch_elbo(model, table[1], None)
t5 = time.perf_counter()
print("@@FIRST@@" + json.dumps({"import_s": t1 - t0, "model_s": t3 - t2, "first_call_s": t4 - t3,
                                "second_call_s": t5 - t4}))
"""


def start_first_call(case):
    """Popen of the child for ``case`` = (dataset, patch, M, batch, n_train), with a fresh empty NUMBA_CACHE_DIR."""
    cache = tempfile.mkdtemp(prefix="numba-empty-")
    env = dict(os.environ, NUMBA_CACHE_DIR=cache)
    env.update({v: "1" for v in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "NUMBA_NUM_THREADS")})
    proc = subprocess.Popen([sys.executable, "-c", FIRST_CALL_CHILD, str(Path(__file__).resolve().parent),
                             json.dumps(list(case))], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=env)
    return {"case": list(case), "proc": proc, "cache": cache, "load_start": loadavg(), "t0": time.perf_counter()}


def finish_first_call(child):
    out, err = child["proc"].communicate(timeout=900)
    wall = time.perf_counter() - child["t0"]
    files = sum(len(f) for _, _, f in os.walk(child["cache"]))
    for root, dirs, fs in os.walk(child["cache"], topdown=False):
        for f in fs:
            os.unlink(os.path.join(root, f))
        for d in dirs:
            os.rmdir(os.path.join(root, d))
    os.rmdir(child["cache"])
    line = next((x for x in out.splitlines() if x.startswith("@@FIRST@@")), None)
    if line is None:
        return {"case": child["case"], "error": err[-2000:], "load_start": child["load_start"]}
    return {"case": child["case"], **json.loads(line[len("@@FIRST@@"):]), "process_wall_s": wall,
            "numba_cache_files_written": files, "load_start": child["load_start"], "load_end": loadavg()}


def first_call_section(results, cases, started=None):
    """{name: figures} for every (name, case); ``started`` (name -> child) were run beside the rest."""
    started = dict(started or {})
    out = {}
    for name, case in cases.items():
        concurrent = name in started
        child = started.pop(name) if concurrent else start_first_call(case)
        out[name] = fc = finish_first_call(child)
        fc["ran_beside_the_benchmark"] = concurrent
        if "error" not in fc:
            row(results, "first call (empty numba cache)", name, "gpexplorer", min_ms=1e3 * fc["first_call_s"],
                median_ms=1e3 * fc["first_call_s"], n=1, load_start=fc["load_start"], load_end=fc["load_end"],
                note=f"import {fc['import_s']:.2f} s, model {fc['model_s']:.2f} s, second call "
                     f"{1e3 * fc['second_call_s']:.0f} ms, {'beside the other cells' if concurrent else 'alone'}")
    return out


# ------------------------------------------------------------------------------------------
# where one of our calls spends its time
KERNEL_PARTS = (("Kdiag", "Kdiag (cached while X and the parameters are unchanged)"),
                ("grad_params_diag", "Kdiag gradients"),
                ("cross_covariance", "Kuf"),
                ("cross_gradients", "Kuf gradients"),
                ("inducing_covariance", "Kuu"),
                ("inducing_gradients", "Kuu gradients"))


def _cumulative(stats, file_end, func):
    return sum(ct for (f, _, name), (_, _, _, ct, _) in stats.items()
               if name == func and f.replace(os.sep, "/").endswith(file_end))


def profile_call(call, calls=3, top=20):
    """cProfile of ``calls`` calls of ``call(i)`` after one warm-up: the kernel's methods (cumulative)
    and the rest of batch_elbo (gpexplorer/variational/: marginals, quadrature, KL, backward pass)."""
    call(-1)
    profiler = cProfile.Profile()
    profiler.enable()
    for i in range(calls):
        call(i)
    profiler.disable()
    stats = pstats.Stats(profiler)
    raw = stats.stats
    total = _cumulative(raw, "variational/fitting.py", "batch_elbo")
    parts = [{"part": label, "function": f"Convolutional.{func}",
              "ms": 1e3 * _cumulative(raw, "kernels/convolutional.py", func) / calls} for func, label in KERNEL_PARTS]
    rest = 1e3 * total / calls - sum(p["ms"] for p in parts)
    parts.append({"part": "the rest of the ELBO: marginals, quadrature, KL terms, backward pass, set-up",
                  "function": "gpexplorer/variational/*", "ms": rest})
    for p in parts:
        p["share"] = p["ms"] / (1e3 * total / calls)
    text = io.StringIO()
    stats.stream = text
    stats.sort_stats("tottime").print_stats(top)
    body = text.getvalue()
    return {"calls": calls, "ms_per_call": 1e3 * total / calls, "parts": parts, "top": body[body.find("   ncalls"):]}
