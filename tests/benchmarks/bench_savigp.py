#!/usr/bin/env python
"""SAVIGP (issue 16, "Performance"): the ELBO + gradient of gpexplorer's ``SparseVariationalGP``
(Bernoulli-logit, FG posterior, Gauss-Hermite quadrature per latent) against GPflow 2.11's SVGP
on identical data and at the same q(u), one thread; and the cost of the score-function estimator.

    python tests/benchmarks/bench_savigp.py [--quick] [--no-gpflow] [--json out.json] [--profile]

1. **ELBO + gradient against GPflow** at (N, M) = (1000, 50) (the issue's target: gpexplorer at
   least 3x faster) and (200, 10) (for reference). Data: X ~ U(0, 1)^2 (seeded), labels
   y ~ Bernoulli(sigmoid(f)) with f a draw of the GP (SE kernel, variance 1, lengthscale 0.3) at X;
   Z a random subset of X; q(u) = N(m, L L^T) random but valid: L = Lk W, m = Lk v with
   Lk = chol(Kuu + 1e-6 I), W lower triangular (diagonal U(0.3, 0.8), below it N(0, 0.1^2)),
   v ~ N(0, I). gpexplorer: ``SparseVariationalGP(X, Y, kernel, Z, BernoulliLogit(), posterior="fg",
   estimator="quadrature", n_points=20)`` with its free vector set to (m, L), timed by
   ``elbo(eval_gradient=True)`` (gradient w.r.t. q(u), variance, lengthscale and Z); GPflow: SVGP
   with ``Bernoulli(invlink=tf.sigmoid)``, ``whiten=False``, full q_sqrt = L, q_mu = m, the same
   kernel, Z and jitter (1e-6 on Kuu) and 20 Gauss-Hermite points, its loss + gradient compiled as
   its ``Scipy`` optimiser runs them (``savigp_peers.py``, a worker process in GPflow's venv).
   GPflow's ELBO (expected log likelihood - KL) must equal gpexplorer's (ell + entropy + cross
   term) to 1e-8 relative (exit status 1 otherwise); the gradients (GPflow's w.r.t. its
   constrained parameters, q_sqrt's lower triangle) are compared too.
2. **Score-function estimator**, S = 2000 samples, (N, M) = (1000, 50), same data and q(u): time
   per ELBO + gradient evaluation (``SCORE_CALLS`` timed calls), and a split of further evaluations
   into three stages that add up to each evaluation's wall time (``score_split``):
   (a) *sampling*, forming f = b + sqrt(var) eps: timed right after each evaluation on the very
   arrays the estimator's sample loop (``estimators._fast_score``) received, block by block in its
   block size; (b) the *likelihood*, log p(y | f) on those samples: the wall time inside the
   likelihood's ``log_density`` / ``dlog_density_dparams`` during the evaluation (wrappers on the
   instance; of which ``_log_density`` itself, the rest being input checks); (c) the *rest*, by
   difference: the score weights l eps and l (eps^2 - 1) with their running sums and variances
   (the loop's time outside (a) and (b)), and everything outside the loop (marginals, backward
   pass, kernel and Z gradients, entropy and cross term). Each stage is >= 0 (forming f is capped
   at the loop's time outside the likelihood; the table says when that happened), so the shares
   lie in [0, 100] % and sum to 100 %. eps is drawn once per model (as the paper's optimiser,
   ``SparseVariationalGP``'s ``seed``); its drawing time is shown beside.

Timing as ``bench_inter_domain.py`` (``equal_timing``): every timed call moves the lengthscale by
~1e-12 relative (GPflow: every unconstrained value), the sides get the same number of timed single
calls, alternating, each side reported by its minimum (median in brackets); first calls (numba compilation, tf.function tracing) are never timed. Thread
pools are pinned to one thread (``bench_sparse``'s import sets the environment before numpy;
threadpoolctl limits every pool; the worker sets TensorFlow's intra/inter-op threads to one); the
load average is printed at the start and the end. ``--quick``: (200, 10) only, three calls per
side, S = 200: a smoke run. ``--profile``: print the cProfile of gpexplorer's quadrature ELBO at
(1000, 50) (also printed whenever the 3x target is missed). ``--no-gpflow``: gpexplorer only.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench_sparse  # noqa: E402  (first: pins every thread pool before numpy is imported)

import argparse  # noqa: E402
import cProfile  # noqa: E402
import io  # noqa: E402
import json  # noqa: E402
import os  # noqa: E402
import pstats  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402
from threadpoolctl import threadpool_limits  # noqa: E402

import savigp_peers  # noqa: E402
import sparse_peers as peers  # noqa: E402
import equal_timing  # noqa: E402
from bench_inter_domain import _load, _met, _ms, alternating  # noqa: E402
from gpexplorer import kernels  # noqa: E402
from gpexplorer.likelihoods import BernoulliLogit  # noqa: E402
from gpexplorer.variational import SparseVariationalGP, estimators  # noqa: E402
from sparse_bench_cells import _nudge  # noqa: E402
from sparse_bench_interleaved import peer_pythons, remote_side  # noqa: E402
from sparse_bench_report import _jsonable  # noqa: E402

SEED = 0
D = 2
VARIANCE, LENGTHSCALE, JITTER = 1.0, 0.3, 1e-6
N_GH = estimators.DEFAULT_POINTS[1]  # gpexplorer's Gauss-Hermite points for Q = 1 (20); GPflow gets the same
#: (N, M, required speed-up of gpexplorer over GPflow's SVGP or None)
SIZES = ((1000, 50, 3.0), (200, 10, None))
QUICK_SIZES = ((200, 10, None),)
SCORE = (1000, 50, 2000)  # N, M, S
SCORE_CALLS = 30  # timed evaluations of the score estimator
QUICK_SCORE = (200, 10, 200)
VALUE_RTOL = 1e-8
GRADIENT_TOL = 1e-7  # max |difference| / max |GPflow's gradient|, per parameter group
#: timed calls per side: (budget s, min, max) sizes the count from a probe, the same for every side
CALLS, QUICK_CALLS = (6.0, 50, 500), 3


# ------------------------------------------------------------------------------------------
# the problem and the point q(u) at which both libraries evaluate the ELBO
def se(A, B, variance=VARIANCE, lengthscale=LENGTHSCALE):
    d2 = np.sum(A ** 2, 1)[:, None] + np.sum(B ** 2, 1)[None, :] - 2.0 * A @ B.T
    return variance * np.exp(-0.5 * np.maximum(d2, 0.0) / lengthscale ** 2)


def make_problem(N, M, seed=SEED, dim=D):
    """X (N, dim), Y (N,) in {0, 1} from a GP draw through the logistic link, Z (M, dim) a random
    subset of X, and a valid FG q(u): m (M,), L (M, M) lower triangular with positive diagonal."""
    rng = np.random.default_rng(seed)
    X = rng.uniform(0.0, 1.0, (N, dim))
    f = np.linalg.cholesky(se(X, X) + 1e-8 * np.eye(N)) @ rng.standard_normal(N)
    Y = (rng.uniform(size=N) < 1.0 / (1.0 + np.exp(-f))).astype(float)
    Z = X[np.sort(rng.choice(N, M, replace=False))].copy()
    Lk = np.linalg.cholesky(se(Z, Z) + JITTER * np.eye(M))
    W = np.tril(0.1 * rng.standard_normal((M, M)), -1) + np.diag(rng.uniform(0.3, 0.8, M))
    return {"X": X, "Y": Y, "Z": Z, "m": Lk @ rng.standard_normal(M), "L": Lk @ W, "N": N, "M": M}


def free_vector(m, L):
    """gpexplorer's FG free vector for q(u) = N(m, L L^T): m, then L's lower triangle row by row
    with log L_ii on the diagonal (``posterior.FullGaussian``)."""
    L = np.array(L, dtype=float)
    d = np.arange(L.shape[0])
    L[d, d] = np.log(L[d, d])
    return np.concatenate([m, L[np.tril_indices(L.shape[0])]])


def gpexplorer_model(p, estimator="quadrature", num_samples=2000, seed=SEED):
    kern = kernels.SquaredExponential(variance=VARIANCE, lengthscale=LENGTHSCALE)
    model = SparseVariationalGP(p["X"], p["Y"], kern, p["Z"].copy(), BernoulliLogit(), posterior="fg",
                                estimator=estimator, num_samples=num_samples, seed=seed, jitter=JITTER,
                                n_points=N_GH if estimator == "quadrature" else None)
    model.set_parameters(posterior=free_vector(p["m"], p["L"]))
    return model


def reset(model):
    return model.set_parameters(**{"kernel0.lengthscale": LENGTHSCALE})


def local_side(model):
    """``side(i) -> ms`` of one ``elbo(eval_gradient=True)``, nudged by call index (``side.call``: untimed)."""
    def call(i):
        model.set_parameters(**{"kernel0.lengthscale": LENGTHSCALE * _nudge(i)})
        return model.elbo(eval_gradient=True)

    return equal_timing.local(call)


# ------------------------------------------------------------------------------------------
# 1. against GPflow's SVGP
def gpflow_gradients(model, p):
    """gpexplorer's dELBO/d(q_mu, q_sqrt lower triangle, variance, lengthscale, Z) at the start,
    in GPflow's constrained parameters (the log-diagonal of L converted back)."""
    _, g = reset(model).elbo(eval_gradient=True)
    M = p["M"]
    gp = g["posterior"]
    dL = np.zeros((M, M))
    dL[np.tril_indices(M)] = gp[M:]
    d = np.arange(M)
    dL[d, d] /= p["L"][d, d]  # free holds log L_ii: d/dL_ii = d/dlog L_ii / L_ii
    return {"q_mu": gp[:M], "q_sqrt": dL[np.tril_indices(M)], "variance": float(g["kernel0.variance"]),
            "lengthscale": float(g["kernel0.lengthscale"]), "Z": np.asarray(g["feature0.Z"])}


def compare_gpflow(worker, N, M, target, calls, directory):
    p = make_problem(N, M)
    model = gpexplorer_model(p)
    data = savigp_peers.write_data(directory, f"svgp-{N}-{M}", p["X"], p["Y"], p["Z"], p["m"], p["L"], VARIANCE,
                                   LENGTHSCALE, JITTER, N_GH)
    sides = {"gpexplorer": local_side(model), "GPflow": remote_side(worker, {"kind": "eval", "data": data})}
    summaries, calls = alternating(sides, calls)
    r = reset(model).evaluate()
    check = worker.ask({"kind": "check", "data": data})
    ours = gpflow_gradients(model, p)
    M_ = p["M"]
    theirs = {k: -np.ravel(np.asarray(check[k], dtype=float)) for k in ours}  # loss = -ELBO
    theirs["q_sqrt"] = -np.asarray(check["q_sqrt"], dtype=float)[np.tril_indices(M_)]
    grad_diff = {k: float(np.max(np.abs(np.ravel(ours[k]) - theirs[k])) / max(np.max(np.abs(theirs[k])), 1e-300))
                 for k in ours}
    gpflow_elbo = -check["loss"]
    value_rel = abs(r.value - gpflow_elbo) / abs(r.value)
    speedup = summaries["GPflow"]["min"] / summaries["gpexplorer"]["min"]
    return {"N": N, "M": M, "D": p["X"].shape[1], "n_gh": N_GH, "sides": summaries, "calls": calls,
            "elbo": r.value, "gpflow_elbo": gpflow_elbo, "value_rel_diff": value_rel,
            "value_agree": bool(value_rel <= VALUE_RTOL),
            "terms": {"ell": r.terms["ell"], "gpflow_var_exp": check["var_exp"],
                      "minus_kl": r.terms["entropy"] + r.terms["cross"], "gpflow_minus_kl": -check["kl"]},
            "gradient_scaled_diff": grad_diff, "gradient_agree": bool(max(grad_diff.values()) <= GRADIENT_TOL),
            "speedup": speedup, "target": target, "met": None if target is None else bool(speedup >= target)}


def local_only(N, M, calls):
    """gpexplorer's side alone (no GPflow venv, or --no-gpflow)."""
    model = gpexplorer_model(make_problem(N, M))
    summaries, calls = alternating({"gpexplorer": local_side(model)}, calls)
    return {"N": N, "M": M, "D": D, "n_gh": N_GH, "sides": summaries, "calls": calls,
            "elbo": reset(model).evaluate().value}


# ------------------------------------------------------------------------------------------
# profiles
def _entry(stats, file_end, func):
    """(calls, cumulative s, own s) of one function in pstats' raw table (summed over matches)."""
    calls = cum = own = 0.0
    for (filename, _, name), (_, nc, tt, ct, _) in stats.items():
        if name == func and filename.replace(os.sep, "/").endswith(file_end):
            calls, cum, own = calls + nc, cum + ct, own + tt
    return int(calls), cum, own


def _profile(call, calls):
    for i in range(3):
        call(-1 - i)
    profiler = cProfile.Profile()
    t0 = time.perf_counter()
    profiler.enable()
    for i in range(calls):
        call(i)
    profiler.disable()
    wall = time.perf_counter() - t0
    return pstats.Stats(profiler), wall


def _top(stats, top):
    out = io.StringIO()
    stats.stream = out
    stats.sort_stats("tottime").print_stats(top)
    text = out.getvalue()
    start = text.find("   ncalls")  # drop pstats' preamble
    return text[start:] if start >= 0 else text


#: non-overlapping parts of one quadrature ELBO + gradient on the fused FG path (variational/fused_fg.py):
#: (file suffix, function, label); what is left of the fused evaluation is its GEMMs and M x M algebra
QUADRATURE_PARTS = (
    ("variational/fused_fg.py", "_quadrature", "expected log likelihood by quadrature (compiled logit loops "
                                               "around numpy's exp and log1p)"),
    ("kernels/_loops.py", "kernel_matrix", "Kuf (compiled distances, numpy's exp)"),
    ("kernels/_loops.py", "stationary_K_symmetric", "Kuu"),
    ("linalg.py", "jittered_cholesky", "Cholesky of Kuu (LAPACK dpotrf)"),
    ("linalg.py", "inv_from_cholesky", "Kuu^-1 (LAPACK dpotri)"),
    ("kernels/_loops.py", "stationary_contract", "kernel and Z gradient contractions (Kuu and Kuf)"),
)
FUSED = ("variational/fused_fg.py", "_evaluate")


def profile_quadrature(N, M, calls=200, top=18):
    """Where gpexplorer's quadrature ELBO + gradient spends its time: cProfile groups and top list."""
    model = gpexplorer_model(make_problem(N, M))
    stats, wall = _profile(local_side(model).call, calls)
    raw = stats.stats
    total = _entry(raw, "variational/savigp.py", "elbo")[1]
    fused = _entry(raw, *FUSED)[1]
    parts = []
    for file_end, func, label in QUADRATURE_PARTS:
        n, cum, _ = _entry(raw, file_end, func)
        parts.append({"part": label, "calls_per_eval": n / calls, "ms": 1e3 * cum / calls, "share": cum / total})
    inside = fused - sum(q["ms"] for q in parts) * calls / 1e3
    parts.append({"part": "rest of the fused pass: the GEMMs [C; Kuu^-1] Kuf and A^T diag(g_v) A, M x M algebra, "
                          "entropy and cross term", "calls_per_eval": None, "ms": 1e3 * inside / calls,
                  "share": inside / total})
    outside = total - fused
    parts.append({"part": "outside it: set_parameters, the gradient dict by name, validation of Y",
                  "calls_per_eval": None, "ms": 1e3 * outside / calls, "share": outside / total})
    return {"N": N, "M": M, "calls": calls, "profiled_ms_per_eval": 1e3 * total / calls,
            "wall_ms_per_eval": 1e3 * wall / calls, "parts": parts, "top": _top(stats, top)}


# ------------------------------------------------------------------------------------------
# 2. the score-function estimator
def _timed(fn, clock, key):
    """``fn`` wrapped so that its wall time is added to ``clock[key]``."""
    def wrapper(*args, **kwargs):
        t0 = time.perf_counter()
        try:
            return fn(*args, **kwargs)
        finally:
            clock[key] += time.perf_counter() - t0

    return wrapper


def _form_f_seconds(bk, sk, eps):
    """Seconds to form f = b + sigma eps block by block exactly as ``estimators._fast_score`` does
    (same block size, same arrays: the model's eps and the marginals of the evaluation)."""
    step = max(1, estimators.FAST_BLOCK // max(1, bk.size))
    total = 0.0
    width = bk.size
    b, sd = np.ascontiguousarray(bk).reshape(-1), np.ascontiguousarray(sk).reshape(-1)
    F = np.empty((min(step, eps.shape[0]), width))
    for i in range(0, eps.shape[0], step):
        e = np.ascontiguousarray(eps[i:i + step]).reshape(-1, width)
        t0 = time.perf_counter()
        estimators.loops.form_samples(b, sd, e, F[:e.shape[0]])
        total += time.perf_counter() - t0
    return total


#: the stages of one score-estimator evaluation (key, label); the three top-level ones add up to it
SCORE_STAGES = (
    ("sampling", "sampling: forming f = b + sqrt(var) eps (S x N), block by block (compiled)"),
    ("likelihood", "likelihood: log p(y given f) on those samples (log_density per block, input checks included)"),
    ("log_p", "  of which log p itself (the likelihood's _log_density)"),
    ("checks", "  of which input checks (Y labels, F finite and shaped)"),
    ("rest", "rest: score weights and running sums, marginals, backward pass, kernel and Z gradients, KL terms"),
    ("sums", "  of which score weights l eps, l (eps^2 - 1) and their running sums / variances over S "
             "(compiled)"),
    ("outside", "  of which outside the sample loop: marginals, backward pass, kernel and Z gradients, "
                "entropy, cross term, set-up"),
)


def score_split(model, call, calls):
    """Per-evaluation stage times (s) of the score estimator, measured inside ``calls`` real
    evaluations ``call(i)``:

    * the evaluation's wall time, and the wall time inside ``estimators._fast_score`` (the loop over
      the samples) and inside the likelihood's ``log_density`` / ``dlog_density_dparams`` (and its
      ``_log_density``), by wrappers set on the module / the likelihood instance for the run;
    * forming f: timed right after each evaluation on the very arrays ``_fast_score`` received, in its
      block size (:func:`_form_f_seconds`), capped at the loop's time outside the likelihood;
    * the rest: the evaluation minus the two. Every stage is >= 0 and the three add up to the
      evaluation's time, so the shares stay in [0, 1] and sum to 1.
    """
    lik = model.likelihood
    clock = dict.fromkeys(("loop", "likelihood", "log_p"), 0.0)
    captured = []
    original = estimators._fast_score

    def fast_score(terms, bk, sk, eps, y, lp_out):
        captured.append((bk, sk, eps))
        return original(terms, bk, sk, eps, y, lp_out)

    wrapped = {"log_density": "likelihood", "dlog_density_dparams": "likelihood", "_log_density": "log_p"}
    rows = []
    estimators._fast_score = _timed(fast_score, clock, "loop")
    try:
        for name, key in wrapped.items():
            setattr(lik, name, _timed(getattr(lik, name), clock, key))  # instance attributes: the class is untouched
        for i in range(calls):
            for key in clock:
                clock[key] = 0.0
            captured.clear()
            t0 = time.perf_counter()
            call(i)
            total = time.perf_counter() - t0
            if not captured:
                raise RuntimeError("the score estimator did not take its fast path (estimators._fast_score was not "
                                   "called): the split is defined for that path only")
            loop, lik_t, log_p = clock["loop"], clock["likelihood"], min(clock["log_p"], clock["likelihood"])
            formed = sum(_form_f_seconds(*args) for args in captured)
            sampling = min(formed, loop - lik_t)
            rows.append({"total": total, "sampling": sampling, "likelihood": lik_t, "log_p": log_p,
                         "checks": lik_t - log_p, "sums": loop - lik_t - sampling, "outside": total - loop,
                         "rest": total - loop + (loop - lik_t - sampling), "capped": formed > loop - lik_t})
    finally:
        estimators._fast_score = original
        for name in wrapped:
            vars(lik).pop(name, None)
    return rows


def score_section(N, M, S, timed_calls, calls=None):
    """Time per evaluation of the score estimator and its split (see the module docstring)."""
    p = make_problem(N, M)
    t0 = time.perf_counter()
    estimators.draw_eps(S, N, 1, SEED)
    draw_ms = 1e3 * (time.perf_counter() - t0)
    model = gpexplorer_model(p, estimator="score", num_samples=S)
    side = local_side(model)
    summaries, timed_calls = alternating({"score": side}, timed_calls)
    calls = calls or max(3, min(20, int(2.0 / (1e-3 * summaries["score"]["min"]))))
    rows = score_split(model, side.call, calls)
    total = sum(r["total"] for r in rows)
    split = [{"part": label, "key": key, "ms": 1e3 * sum(r[key] for r in rows) / calls,
              "share": sum(r[key] for r in rows) / total} for key, label in SCORE_STAGES]
    shares = {q["key"]: q["share"] for q in split}
    per_eval = [{k: (v if k == "capped" else 1e3 * v) for k, v in r.items()} for r in rows]
    reset(model)
    return {"N": N, "M": M, "S": S, "time": summaries["score"], "calls": timed_calls,
            "draw_eps_ms": draw_ms, "split_calls": calls, "split_ms_per_eval": 1e3 * total / calls,
            "block_rows": max(1, estimators.FAST_BLOCK // N), "split": split, "per_eval_ms": per_eval,
            "sampling_capped": sum(r["capped"] for r in rows),
            "sampling_share": shares["sampling"], "likelihood_share": shares["likelihood"],
            "rest_share": shares["rest"]}


# ------------------------------------------------------------------------------------------
def run(quick=False, with_gpflow=True, calls=None, log=print, sizes=None, score=None, profile=False):
    calls = calls or (QUICK_CALLS if quick else CALLS)
    sizes = sizes or (QUICK_SIZES if quick else SIZES)
    score = score or (QUICK_SCORE if quick else SCORE)
    results = {"quick": quick, "calls_requested": calls,
               "environment": bench_sparse.environment(), "load_average_start": bench_sparse._loadavg(),
               "cells": [], "failures": []}
    log(f"# load average at start: {_load(results['load_average_start'])}", file=sys.stderr)
    python = peer_pythons(["gpflow"]).get("gpflow") if with_gpflow else None
    if with_gpflow and python is None:
        log("# GPflow: no venv (see README.md; $GPFLOW_PYTHON): skipped", file=sys.stderr)
    results["gpflow_ran"] = bool(python)
    if python:
        worker = savigp_peers.SVGPPeer("gpflow", python)
        directory = tempfile.TemporaryDirectory(prefix="bench-savigp-")
        try:
            results["gpflow_info"] = worker.ask({"kind": "info"})
            for N, M, target in sizes:
                log(f"# N={N} M={M}: gpexplorer vs GPflow SVGP, alternating single calls ...", file=sys.stderr)
                cell = compare_gpflow(worker, N, M, target, calls, directory.name)
                results["cells"].append(cell)
                if not cell["value_agree"]:
                    results["failures"].append(f"N={N} M={M}: ELBO {cell['elbo']!r} vs GPflow's {cell['gpflow_elbo']!r}")
        finally:
            worker.close()
            directory.cleanup()
    else:
        for N, M, _ in sizes:
            log(f"# N={N} M={M}: gpexplorer alone ...", file=sys.stderr)
            results["cells"].append(local_only(N, M, calls))
    missed = any(c.get("met") is False for c in results["cells"])
    if profile or missed:
        N, M = next(((n, m) for n, m, t in sizes if t is not None), sizes[0][:2])
        log(f"# cProfile of gpexplorer's quadrature ELBO + gradient, N={N} M={M} ...", file=sys.stderr)
        results["profile"] = profile_quadrature(N, M, calls=20 if quick else 200)
    log(f"# score estimator N={score[0]} M={score[1]} S={score[2]} ...", file=sys.stderr)
    results["score"] = score_section(*score, timed_calls=calls if quick else SCORE_CALLS)
    results["load_average_end"] = bench_sparse._loadavg()
    return results


def format_markdown(results):
    env = results["environment"]
    blas = ", ".join(f"{p.get('internal_api')} {p.get('version')} {p.get('architecture')} x{p.get('num_threads')}"
                     for p in env.get("threadpools", []) if p.get("internal_api") in ("openblas", "mkl", "blis"))
    header = (f"Load average (1/5/15 min) at start {_load(results['load_average_start'])}, at end "
              f"{_load(results['load_average_end'])}. numpy {env['numpy']}, scipy {env['scipy']}, BLAS: {blas or '?'}. "
              "Minimum (median) ms over alternating single calls, the same number per side (calls per side: "
              + ", ".join(str(c["calls"]) for c in results["cells"]) + ")" + (" (QUICK MODE)." if results["quick"] else "."))
    if env.get("git_commit"):
        dirty = env.get("gpexplorer_uncommitted_changes")
        header += f" gpexplorer {env['git_commit']}" + (" + uncommitted changes in gpexplorer/." if dirty else ".")
    lines = ["## SAVIGP: ELBO + gradient, Bernoulli-logit, FG, Gauss-Hermite, one thread", "", header, ""]
    if results["gpflow_ran"]:
        info = results.get("gpflow_info", {})
        lines += [f"Against GPflow {info.get('version', '?')} (numpy {info.get('numpy', '?')}): SVGP, "
                  "`Bernoulli(invlink=tf.sigmoid)`, whiten=False, full q_sqrt, loss + gradient in one tf.function.", "",
                  "| N | M | D | GH points | ELBO | rel. diff to GPflow | gradient diff / max | gpexplorer ms | "
                  "GPflow ms | speed-up | target | met |",
                  "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|:---:|"]
        for c in results["cells"]:
            s = c["sides"]
            target = "" if c["target"] is None else f">= {c['target']:g}x"
            gd = max(c["gradient_scaled_diff"].values())
            lines.append(f"| {c['N']} | {c['M']} | {c['D']} | {c['n_gh']} | {c['elbo']:.10g} | {c['value_rel_diff']:.1e}"
                         f"{'' if c['value_agree'] else ' **DIFFER**'} | {gd:.1e}"
                         f"{'' if c['gradient_agree'] else ' **DIFFER**'} | {_ms(s['gpexplorer'])} | {_ms(s['GPflow'])} | "
                         f"{c['speedup']:.2f}x | {target} | {_met(c['met'])} |")
        lines += ["", f"ELBO values must agree to {VALUE_RTOL:g} relative; gradients (GPflow's constrained q_mu, "
                  f"q_sqrt lower triangle, variance, lengthscale, Z) are shown as max |difference| / max |GPflow's|."]
    else:
        lines += ["GPflow did not run (--no-gpflow, or no GPflow venv): the 3x target is not assessed.", "",
                  "| N | M | D | GH points | ELBO | gpexplorer ms |", "|---:|---:|---:|---:|---:|---:|"]
        for c in results["cells"]:
            lines.append(f"| {c['N']} | {c['M']} | {c['D']} | {c['n_gh']} | {c['elbo']:.10g} | "
                         f"{_ms(c['sides']['gpexplorer'])} |")
    prof = results.get("profile")
    if prof:
        lines += ["", f"### Where gpexplorer's quadrature ELBO + gradient spends its time (N = {prof['N']}, "
                  f"M = {prof['M']}; cProfile over {prof['calls']} calls, {prof['profiled_ms_per_eval']:.3f} ms per "
                  f"call profiled)", "", "| part | calls / eval | ms / eval | share |", "|---|---:|---:|---:|"]
        for q in prof["parts"]:
            n = "" if q["calls_per_eval"] is None else f"{q['calls_per_eval']:g}"
            lines.append(f"| {q['part']} | {n} | {q['ms']:.3f} | {100 * q['share']:.0f}% |")
        lines += ["", "```", prof["top"].rstrip(), "```"]
    sc = results["score"]
    lines += ["", f"### Score-function estimator: N = {sc['N']}, M = {sc['M']}, S = {sc['S']}", "",
              f"Time per ELBO + gradient evaluation: **{_ms(sc['time'])} ms** (minimum (median) over "
              f"{sc['time']['n']} calls). eps (S x N) is drawn once per model: {sc['draw_eps_ms']:.1f} ms. "
              f"Split over {sc['split_calls']} further evaluations ({sc['split_ms_per_eval']:.1f} ms each on average; "
              f"the estimator loops over blocks of {sc['block_rows']} samples): the likelihood and the sample loop "
              "timed inside each evaluation, forming f timed after it on the same arrays, the rest by difference.",
              "", "| part | ms / eval | share |", "|---|---:|---:|"]
    for q in sc["split"]:
        lines.append(f"| {q['part']} | {q['ms']:.2f} | {100 * q['share']:.1f}% |")
    total = sc["sampling_share"] + sc["likelihood_share"] + sc["rest_share"]
    lines += ["", f"Sampling {100 * sc['sampling_share']:.1f}%, likelihood {100 * sc['likelihood_share']:.1f}% "
              f"and the rest {100 * sc['rest_share']:.1f}% of the time per evaluation (sum {100 * total:.1f}%)."]
    if sc.get("sampling_capped"):
        lines.append(f"(In {sc['sampling_capped']} of {sc['split_calls']} evaluations forming f, timed apart, took "
                     "longer than the whole sample loop outside the likelihood; it was capped at that time.)")
    missed = [f"N={c['N']} M={c['M']}: {c['speedup']:.2f}x over GPflow (target {c['target']:g}x)"
              for c in results["cells"] if c.get("met") is False]
    lines += ["", "Targets missed: " + ("; ".join(missed) if missed else "none") + "."]
    if results["quick"]:
        lines.append("(Quick mode: the 3x target holds at N = 1000, M = 50 and is not assessed here.)")
    if results["failures"]:
        lines += ["", "FAILURES: " + "; ".join(results["failures"])]
    return "\n".join(lines)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="N=200 M=10 only, S=200, three calls per side")
    parser.add_argument("--no-gpflow", action="store_true", help="gpexplorer only, no GPflow worker")
    parser.add_argument("--json", metavar="PATH", help="write every number measured as JSON")
    parser.add_argument("--calls", type=int, help="timed calls per side, the same for every side (default: as many "
                        f"as fit {CALLS[0]:g} s of alternating rounds, {CALLS[1]}-{CALLS[2]}; quick {QUICK_CALLS})")
    parser.add_argument("--profile", action="store_true", help="always print the quadrature ELBO's profile")
    parser.add_argument("--keep-openblas-env", action="store_true",
                        help="keep OPENBLAS_CORETYPE / OPENBLAS_L2_SIZE (bench_sparse unsets them at import)")
    args = parser.parse_args(argv)
    with threadpool_limits(limits=1):  # scoped: a caller (the smoke test's pytest process) gets its pools back
        results = run(quick=args.quick, with_gpflow=not args.no_gpflow, calls=args.calls, profile=args.profile)
    print(format_markdown(results))
    if args.json:
        Path(args.json).write_text(json.dumps(_jsonable(results), indent=2))
        print(f"\n(results written to {args.json})", file=sys.stderr)
    return 1 if results["failures"] else 0


if __name__ == "__main__":
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")  # the GPflow worker inherits it
    sys.exit(main())
