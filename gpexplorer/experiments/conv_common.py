"""Shared pieces of the convolutional-GP reproductions (van der Wilk thesis ch. 5; issue 26):
fitting a :class:`~gpexplorer.variational.savigp.SparseVariationalGP` (minibatch Adam, or L-BFGS-B
with q(u) by natural gradients), test scores (error rate, NLPP, per-point results for paired
comparisons), claims as data, where the time of a step goes, and the CSV/JSON output.

Conventions:

* a result row is a dict; ``write_outputs`` writes the rows as CSV (the given columns) and the
  whole result as JSON (numpy values turned into lists and floats);
* a claim is ``{"claim": text, "verdict": "HOLDS" | "does NOT hold" | "within noise" | "n/a",
  "numbers": text}``, built from numbers by :func:`claim`, :func:`paired_errors` or
  :func:`paired_nlpp`; the reports print the verdicts, never a fixed outcome;
* the scaling of a convolutional kernel ("sum": the thesis' text; "mean": convgp's and GPflow's
  f = (1/P) sum_p w_p g(x^[p]), from which the thesis' numbers come) is stored in every row.
"""

from __future__ import annotations

import json
import math
import time
import warnings
from pathlib import Path

import numpy as np
from scipy import stats

from gpexplorer.convolutional_views import pool_images
from gpexplorer.experiments import distributed
from gpexplorer.inducing import InducingPatches
from gpexplorer.kernels import Convolutional, SquaredExponential
from gpexplorer.linalg import JitterWarning
from gpexplorer.variational import fitting

__all__ = ["VERDICTS", "SIGNIFICANCE", "fit_adam", "fit_lbfgs", "scores", "kernel_summary", "conv_part", "scaling_of",
           "claim", "paired_errors", "paired_nlpp", "step_timing", "jsonable", "write_outputs", "run_cells",
           "inducing_patches_of", "inducing_means", "patch_glyphs", "average_pool", "report_footer",
           "merged_settings"]

VERDICTS = ("HOLDS", "does NOT hold", "within noise", "n/a")
#: two-sided level of the paired tests behind "HOLDS" / "does NOT hold"
SIGNIFICANCE = 0.05


# fitting -------------------------------------------------------------------------------------
def fit_adam(model, steps, batch_size=100, learning_rate=0.01, seed=0, trace_every=None, fixed=()):
    """Minibatch Adam on the ELBO (thesis eq. 2.36 / SAVIGP eq. 8, the expected log likelihood
    scaled by N / batch): ``steps`` steps; the full-data ELBO is traced every ``trace_every`` steps
    (default steps / 10) and the model is left at the best traced point (the objective only, never a
    test score). Returns a dict: method, steps, batch_size, learning_rate, elbo, elbo_trace,
    fit_seconds."""
    if isinstance(steps, bool) or not isinstance(steps, (int, np.integer)) or steps < 1:
        raise ValueError(f"steps must be a positive integer; got {steps!r}")
    batch = min(int(batch_size), len(model.X)) if batch_size else None
    every = int(trace_every or max(1, steps // 10))
    t0 = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", JitterWarning)
        fit = model.fit(int(steps), method="adam", batch_size=batch, learning_rate=learning_rate,
                        trace_every=every, seed=seed, fixed=fixed)
    seconds = time.perf_counter() - t0
    trace = [-float(e.objective) for e in fit.trace]
    return {"method": "adam", "steps": int(steps), "batch_size": batch, "learning_rate": float(learning_rate),
            "elbo": -float(fit.objective), "elbo_trace": trace, "trace_every": every, "fit_seconds": seconds,
            "step_seconds": seconds / steps}


def fit_lbfgs(model, max_iter, fixed=(), tol=1e-7, method="natgrad"):
    """L-BFGS-B on the ELBO, ``max_iter`` iterations: ``"natgrad"`` (L-BFGS-B over the
    hyperparameters with a full-Gaussian q(u) brought to its optimum by natural-gradient steps at
    every evaluation: the same optimum as a joint L-BFGS-B over q and hyperparameters, which is
    ``"lbfgs"``). ``tol``: L-BFGS-B's relative function tolerance. Returns a dict as :func:`fit_adam`
    (``iterations`` in place of ``steps``)."""
    if method not in ("natgrad", "lbfgs"):
        raise ValueError(f"method must be 'natgrad' or 'lbfgs'; got {method!r}")
    t0 = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", JitterWarning)
        fit = model.fit(int(max_iter), method=method, fixed=fixed, tol=tol)
    seconds = time.perf_counter() - t0
    trace = [-float(e.objective) for e in fit.trace]
    verdict = fit.details.get("convergence", {})
    return {"method": method, "iterations": len(trace), "max_iter": int(max_iter), "elbo": -float(fit.objective),
            "elbo_trace": trace, "fit_seconds": seconds, "step_seconds": seconds / max(1, len(trace)),
            "convergence": verdict.get("status", str(verdict)) if isinstance(verdict, dict) else str(verdict)}


# scores ----------------------------------------------------------------------------------------
def scores(model, X_test, y_test):
    """Test error rate, accuracy, mean negative log predictive probability (NLPP) and the per-point
    ``wrong`` flags and log densities (for :func:`paired_errors` / :func:`paired_nlpp`)."""
    X_test, y_test = np.asarray(X_test, dtype=float), np.asarray(y_test, dtype=float)
    if len(X_test) != len(y_test):
        raise ValueError(f"X_test has {len(X_test)} rows but y_test has {len(y_test)}")
    logp = np.asarray(model.predict_log_density(X_test, y_test), dtype=float).reshape(-1)
    # the class of largest predictive probability (Bernoulli: y = 1 iff p > 1/2), as model.error_rate
    wrong = np.argmax(model.predict_class_probabilities(X_test), axis=1) != y_test.astype(int)
    err = float(np.mean(wrong))
    return {"error_rate": err, "accuracy": 1.0 - err, "nlpp": float(-np.mean(logp)), "n_test": int(len(y_test)),
            "n_errors": int(np.sum(wrong)), "wrong": wrong, "log_density": logp}


def conv_part(kernel):
    """The Convolutional kernel of ``kernel`` (itself, or a member of a Sum), or None."""
    if isinstance(kernel, Convolutional):
        return kernel
    return next((k for k in getattr(kernel, "kernels", ()) if isinstance(k, Convolutional)), None)


def scaling_of(kernel):
    """"sum" or "mean" for a convolutional kernel, "-" for any other."""
    conv = conv_part(kernel)
    return "-" if conv is None else conv.scaling


def inducing_patches_of(feature):
    """The InducingPatches of a feature (itself or the first of Components), or None."""
    if isinstance(feature, InducingPatches):
        return feature
    return next((f for f in getattr(feature, "features", ()) if isinstance(f, InducingPatches)), None)


def kernel_summary(kernel):
    """Learnt hyperparameters as floats: the convolutional part's base variance and lengthscale
    (its scaling in ``scaling``), weight statistics if weighted, an SE part's variance and lengthscale."""
    out = {}
    conv = conv_part(kernel)
    if conv is not None:
        out["scaling"] = conv.scaling
        out["conv_base_variance"] = float(np.ravel(conv.base.variance)[0])
        out["conv_lengthscale"] = float(np.ravel(conv.base.lengthscale)[0])
        if conv.weighted:
            out["weights_mean"], out["weights_sd"] = float(np.mean(conv.weights)), float(np.std(conv.weights))
    se = kernel if isinstance(kernel, SquaredExponential) else next(
        (k for k in getattr(kernel, "kernels", ()) if isinstance(k, SquaredExponential)), None)
    if se is not None:
        out["se_variance"], out["se_lengthscale"] = float(np.ravel(se.variance)[0]), float(np.ravel(se.lengthscale)[0])
    return out


def inducing_means(model):
    """(Z [M, E], mu_u [M]) of latent 0 sorted by mu_u (thesis figs 5.6-5.8: the inducing patches
    sorted by the mean of their inducing output), or None without inducing patches."""
    feature = inducing_patches_of(model.features[0])
    if feature is None:
        return None
    mu = np.asarray(model.posterior.means[0][0], dtype=float)[:feature.Z.shape[0]]
    order = np.argsort(mu, kind="stable")
    return feature.Z[order], mu[order]


def patch_glyphs(Z, patch_shape, values=None, per_line=16, levels=" .:*#"):
    """Text lines drawing patches Z [M, h*w] side by side (pixel values in [0, 1] as ``levels``),
    optionally with a value under each (figs 5.6-5.8 as text)."""
    h, w = patch_shape
    Z = np.clip(np.asarray(Z, dtype=float), 0.0, 1.0)
    if Z.ndim != 2 or Z.shape[1] != h * w:
        raise ValueError(f"Z must be [M, {h * w}] for {h}x{w} patches; got shape {Z.shape}")
    width = max(w, 6)
    lines = []
    for start in range(0, len(Z), per_line):
        block = Z[start:start + per_line]
        for r in range(h):
            lines.append(" ".join("".join(levels[min(len(levels) - 1, int(v * len(levels)))]
                                          for v in z.reshape(h, w)[r]).ljust(width) for z in block))
        if values is not None:
            lines.append(" ".join(f"{v:+.2f}"[:width].ljust(width) for v in values[start:start + per_line]))
    return lines


#: the pooling the patches lab uses (one implementation for the lab and the experiments)
average_pool = pool_images


def merged_settings(full, quick_settings, quick, settings):
    """A run's settings: :data:`FULL` or :data:`QUICK` of the experiment with ``settings``' entries
    over them (an unknown entry is refused by name)."""
    cfg = dict(quick_settings if quick else full)
    unknown = sorted(set(settings or {}) - set(cfg))
    if unknown:
        raise ValueError(f"settings has unknown entries {unknown}; known: {sorted(cfg)}")
    cfg.update(settings or {})
    return cfg


def report_footer(result):
    """The last lines of a conv-* report: where the cells ran, the wall time and the files saved."""
    info = result["cluster"]
    lines = [f"\ncells ran on {info['workers']} dask worker(s) at {info['scheduler']}; "
             f"wall time {result['seconds']:.0f} s"]
    if result.get("files"):
        lines.append("saved: " + ", ".join(result["files"].values()))
    return lines


# claims ----------------------------------------------------------------------------------------
def claim(text, holds, numbers):
    """A claim as data: ``holds`` True / False / None ("n/a": not evaluated)."""
    verdict = "n/a" if holds is None else ("HOLDS" if holds else "does NOT hold")
    return {"claim": str(text), "verdict": verdict, "numbers": str(numbers)}


def paired_errors(text, wrong_a, wrong_b, name_a="a", name_b="b"):
    """"a makes fewer test errors than b" on the same test points: an exact two-sided sign test on
    the discordant points (McNemar): HOLDS / does NOT hold at :data:`SIGNIFICANCE`, else within noise."""
    wa, wb = np.asarray(wrong_a, dtype=bool), np.asarray(wrong_b, dtype=bool)
    if wa.shape != wb.shape:
        raise ValueError(f"wrong_a and wrong_b must be per-point flags on the same test points; got {wa.shape}, "
                         f"{wb.shape}")
    only_a, only_b = int(np.sum(wa & ~wb)), int(np.sum(~wa & wb))
    p = 1.0 if only_a + only_b == 0 else float(stats.binomtest(only_a, only_a + only_b, 0.5).pvalue)
    verdict = ("HOLDS" if only_a < only_b else "does NOT hold") if p < SIGNIFICANCE else "within noise"
    numbers = (f"errors {int(wa.sum())} ({name_a}) vs {int(wb.sum())} ({name_b}) of {wa.size}; only {name_a} wrong "
               f"{only_a}, only {name_b} wrong {only_b}; sign test p = {p:.2g}")
    return {"claim": str(text), "verdict": verdict, "numbers": numbers}


def paired_nlpp(text, logp_a, logp_b, name_a="a", name_b="b"):
    """"a has a lower NLPP than b" on the same test points: the mean of the per-point differences
    against 1.96 of its standard errors (HOLDS / does NOT hold / within noise)."""
    d = np.asarray(logp_a, dtype=float) - np.asarray(logp_b, dtype=float)  # > 0 where a predicts better
    if d.ndim != 1 or d.size < 2:
        raise ValueError("logp_a and logp_b must be per-point log densities on the same (>= 2) test points")
    se = float(np.std(d, ddof=1) / math.sqrt(d.size))
    mean = float(np.mean(d))
    verdict = "HOLDS" if mean > 1.96 * se else ("does NOT hold" if mean < -1.96 * se else "within noise")
    numbers = (f"NLPP {-np.mean(logp_a):.4f} ({name_a}) vs {-np.mean(logp_b):.4f} ({name_b}); difference "
               f"{-mean:+.4f} +- {1.96 * se:.4f} (95 %)")
    return {"claim": str(text), "verdict": verdict, "numbers": numbers}


# where the time goes -----------------------------------------------------------------------------
def step_timing(model, batch_size, seed=0):
    """Seconds of one minibatch ELBO + gradient (an Adam step but for its update) on a fresh batch,
    and of the convolutional sums in it, each on another fresh batch (not cached): diag Kff, its
    gradient, Kuf, its gradient. A dict; ``kernel_share`` = the sums' part of the step."""
    rng = np.random.default_rng([seed, 26])
    N = len(model.X)
    rows = np.sort(rng.choice(N, min(batch_size, N), replace=False))
    t = time.perf_counter()
    fitting.batch_elbo(model, rows, None if model.estimator == "quadrature"
                       else rng.standard_normal((model.num_samples, len(rows), model.Q)))
    out = {"batch_size": int(len(rows)), "step_seconds": time.perf_counter() - t}
    conv, feature = conv_part(model.kernels[0]), inducing_patches_of(model.features[0])
    if conv is None or feature is None:
        return out
    parts = {}
    # a new batch and a nudged lengthscale: nothing comes from the kernel's caches
    Xb = model.X[np.sort(rng.choice(N, len(rows), replace=False))]
    ell = np.array(conv.base.lengthscale, dtype=float)
    conv.set_parameters(**{"base.lengthscale": ell * (1 + 1e-9)})
    try:
        for name, call in (("kdiag", lambda: conv.Kdiag(Xb)),
                           ("kdiag_gradient", lambda: conv.grad_params_diag(np.ones(len(Xb)), Xb)),
                           ("kuf", lambda: conv.cross_covariance(feature.Z, Xb)),
                           ("kuf_gradient", lambda: conv.cross_gradients(feature.Z, Xb,
                                                                         np.ones((len(feature), len(Xb)))))):
            t = time.perf_counter()
            call()
            parts[name] = time.perf_counter() - t
    finally:
        conv.set_parameters(**{"base.lengthscale": ell})
    out.update({f"{k}_seconds": v for k, v in parts.items()})
    out["kernel_share"] = min(1.0, sum(parts.values()) / out["step_seconds"])
    return out


# output ----------------------------------------------------------------------------------------
def jsonable(value):
    """``value`` with numpy arrays and scalars turned into lists and Python numbers (for JSON)."""
    if isinstance(value, dict):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [jsonable(v) for v in value]
    if isinstance(value, np.ndarray):
        return jsonable(value.tolist())
    if isinstance(value, np.bool_):
        return bool(value)
    if isinstance(value, np.integer):
        return int(value)
    if isinstance(value, (float, np.floating)):
        v = float(value)
        return v if math.isfinite(v) else None
    return value


def write_outputs(result, out, stem, columns):
    """``<out>/<stem>.csv`` (``result["rows"]``, the given columns) and ``<stem>.json`` (the whole
    result but ``files``); returns {"csv": path, "json": path}."""
    files = distributed.write_rows({"rows": jsonable(result["rows"])}, out, stem, columns)
    Path(files["json"]).write_text(json.dumps(jsonable({k: v for k, v in result.items() if k != "files"}), indent=1))
    return files


def run_cells(func, cells, shared, scheduler=None, n_workers=None, processes=True, progress=True):
    """``[func(cell, **shared) for cell in cells]`` through dask (:func:`distributed.run_cells`: a
    LocalCluster by default, or the cluster at ``scheduler``), most expensive first (``cell["cost"]``)."""
    return distributed.run_cells(func, cells, shared=shared, scheduler=scheduler, n_workers=n_workers,
                                 processes=processes, cost=lambda c: c.get("cost", 1.0),
                                 progress=distributed.print_progress if progress else None)
