"""The convolutional GP models of the patches lab (issue 26): the image problems, the four
kernels of the ELBO race, their fits with live traces, progress and cancellation, and the
10-class digit model behind the lab's drawing canvas. No plotting here; the lab's page
(``gpexplorer/ui/convolutional/``) turns settings into these calls and their results into views.

Kernels (van der Wilk's thesis ch. 5, all in convgp's "mean" scaling, from which the thesis'
numbers come): ``"se"``, a squared exponential on the whole image with inducing points at
class-balanced training images (its lengthscale starts at the median distance between
images); ``"conv"``, f = (1/P) sum_p g(x^[p]) (eq. 5.11-5.13) with inducing patches (eq.
5.15-5.16); ``"weighted"``, f = (1/P) sum_p w_p g(x^[p]) (eq. 5.45-5.47, the weights learnt);
``"weighted+se"``, the weighted kernel plus the SE one with a joint q over [u_conv; u_se]
(eq. 5.50-5.60; the SE part starts at variance 1.1 as in convgp). Binary tasks use the probit
Bernoulli likelihood by Gauss-Hermite quadrature, a full-Gaussian q(u) and the model's "auto"
fit (natural gradients for q(u), L-BFGS-B for the rest); the digits use robust max (convgp's
``MultiClass(10)``) with one kernel and one set of inducing patches for the ten latents
(``shared=True``) and minibatch Adam.

SCALED DOWN for a page that answers in seconds on two cores: a few hundred training images
(the thesis: 1200 rectangles, 60,000 MNIST digits), M = 16-50 (the thesis: up to 750), MNIST
average-pooled to 14 x 14 by default (the convolutional kernel's diagonal costs P^2 patch pairs
per image: 331,776 at 28 x 28 with 5 x 5 patches, 100^2 at 14 x 14).
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field

import numpy as np

from gpexplorer import datasets
from gpexplorer.convolutional_views import pool_images
from gpexplorer.inducing import Components, InducingPatches, InducingPoints
from gpexplorer.kernels import Convolutional, SquaredExponential, Sum
from gpexplorer.variational.comparison import LiveTrace, job_callback, trace_columns
from gpexplorer.variational.savigp import SparseVariationalGP

__all__ = ["DATASETS", "KINDS", "LABELS", "ImageProblem", "FitOutcome", "load_problem", "build_model", "fit_one",
           "race", "metrics", "DIGIT_DEFAULTS", "digit_problem", "digit_model", "cached_digit_model", "LiveTrace"]

DATASETS = ("rectangles", "mnist01")
KINDS = ("se", "conv", "weighted", "weighted+se")
LABELS = {"se": "SE", "conv": "conv", "weighted": "weighted conv", "weighted+se": "weighted conv + SE"}
SE_VARIANCE_IN_SUM = 1.1  # convgp's sumkern start
FAILURES = (ValueError, FloatingPointError, np.linalg.LinAlgError)
#: the digit model's defaults: 14 x 14 digits, 5 x 5 patches, weighted, M = 30, Adam
DIGIT_DEFAULTS = {"n_train": 600, "M": 30, "patch": 5, "steps": 300, "batch_size": 100, "learning_rate": 0.05,
                  "n_test": 300, "seed": 0}


@dataclass
class ImageProblem:
    """Square one-channel images as rows of ``X`` in [0, 1], class labels ``y`` (0 .. C-1), a test
    split and a sentence saying what was done to the data."""

    name: str
    X: np.ndarray
    y: np.ndarray
    X_test: np.ndarray
    y_test: np.ndarray
    side: int
    note: str
    class_names: tuple = ()
    meta: dict = field(default_factory=dict)

    @property
    def image_shape(self):
        return self.side, self.side

    @property
    def n_classes(self):
        return len(self.class_names)


def _count(name, value, low, high):
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or not low <= value <= high:
        raise ValueError(f"{name} must be an integer from {low} to {high}; got {value!r}")
    return int(value)


def load_problem(dataset, n_train, side=None, n_test=500, seed=0):
    """The first ``n_train`` training and ``n_test`` (at most all) test images of ``dataset``: "rectangles"
    (28 x 28 binary; ``side`` must be 28 or None), "mnist01" or "mnist10" (average-pooled to
    ``side``, 14 or 28, default 14; the seeded stratified splits of :mod:`gpexplorer.datasets.images`)."""
    if dataset not in DATASETS + ("mnist10",):
        raise ValueError(f"dataset must be one of {DATASETS + ('mnist10',)}; got {dataset!r}")
    ds = datasets.load(dataset) if dataset == "rectangles" else datasets.load(dataset, seed=seed)
    n_train = _count("n_train", n_train, 2, ds.n)
    n_test = min(_count("n_test", n_test, 1, 100_000), len(ds.y_test))
    X, y, Xt, yt = ds.X[:n_train], ds.y[:n_train], ds.X_test[:n_test], ds.y_test[:n_test]
    side = 28 if side is None and dataset == "rectangles" else (14 if side is None else side)
    if side not in (14, 28) or (dataset == "rectangles" and side != 28):
        raise ValueError(f"side must be 28 for the binary rectangles, 14 or 28 for MNIST; got {side!r}")
    if side != 28:
        X, Xt = pool_images(X, 28, 28 // side), pool_images(Xt, 28, 28 // side)
    if len(np.unique(y)) < 2:
        raise ValueError(f"n_train = {n_train} training images hold one class only; take more")
    names = tuple(ds.meta.get("class_names", ()))
    pooled = f", average-pooled to {side} x {side}" if side != 28 else ""
    note = (f"{dataset}: {n_train} training and {n_test} test images{pooled}, classes "
            f"{', '.join(names)}. {ds.meta.get('provenance', '')}; a scaled-down stand-in for "
            f"{ds.meta.get('substitute_for', 'the thesis set-up')}.")
    return ImageProblem(dataset, X, y.astype(float), Xt, yt.astype(float), side, note, names,
                        {"synthetic": ds.meta.get("synthetic", False)})


def _balanced(problem, M, rng):
    y = problem.y
    classes = np.unique(y)
    rows = []
    for i, c in enumerate(classes):
        pool = np.flatnonzero(y == c)
        k = min(len(pool), M // len(classes) + (i < M % len(classes)))
        rows.extend(rng.choice(pool, k, replace=False))
    return problem.X[np.sort(rows)].copy()


def _se(problem, variance, rng):
    S = problem.X[rng.permutation(len(problem.X))[:200]]
    sq = np.sum(S ** 2, 1)
    d2 = np.maximum(sq[:, None] + sq[None] - 2.0 * S @ S.T, 0.0)
    scale = float(np.sqrt(np.median(d2[np.triu_indices(len(S), 1)]))) if len(S) > 1 else 1.0
    return SquaredExponential(variance, max(scale, 1e-2))


def _conv(problem, weighted, M, patch, init, seed):
    k = Convolutional(SquaredExponential(1.0, 1.0), image_shape=problem.image_shape, patch_shape=(patch, patch),
                      weighted=weighted, scaling="mean")
    return k, InducingPatches.from_images(problem.X, k, M, init=init, seed=seed)


def build_model(problem, kind, M, patch=3, init="unique", seed=0):
    """The SparseVariationalGP of ``kind`` (module docstring) on ``problem``'s training images."""
    if kind not in KINDS:
        raise ValueError(f"kind must be one of {KINDS}; got {kind!r}")
    M = _count("M", M, 1, 2000)
    patch = _count("patch", patch, 1, problem.side)
    rng = np.random.default_rng(seed)
    if kind == "se":
        kernel, Z = _se(problem, 1.0, rng), InducingPoints(_balanced(problem, M, rng))
    elif kind == "weighted+se":
        k1, Z1 = _conv(problem, True, M, patch, init, seed)
        kernel, Z = Sum(k1, _se(problem, SE_VARIANCE_IN_SUM, rng)), Components([Z1, InducingPoints(_balanced(problem, M, rng))])
    else:
        kernel, Z = _conv(problem, kind == "weighted", M, patch, init, seed)
    if problem.n_classes > 2:
        return SparseVariationalGP(problem.X, problem.y, kernel, Z, "robust_max", estimator="quadrature", seed=seed,
                                   likelihood_options={"n_classes": problem.n_classes}, shared=True)
    return SparseVariationalGP(problem.X, problem.y, kernel, Z, "bernoulli_probit", estimator="quadrature", seed=seed)


@dataclass
class FitOutcome:
    """One fitted model as the lab shows it: its trace (iteration, elbo, ell, entropy, cross),
    metrics (elbo, error_rate, nlpd, iterations, seconds, ended) or the error that stopped it."""

    kind: str
    model: object = None
    trace: dict = field(default_factory=dict)
    metrics: dict = field(default_factory=dict)
    error: str | None = None


def metrics(model, problem):
    """The ELBO, and the error rate and mean negative log predictive density on the test images."""
    return {"elbo": float(model.elbo()), "error_rate": float(model.error_rate(problem.X_test, problem.y_test)),
            "nlpd": float(model.nlpd(problem.X_test, problem.y_test)), "n_test": int(len(problem.y_test))}


def _fit(model, options, callback):
    if model.Q > 1:
        return model.fit(max_iter=int(options["steps"]), method="adam", batch_size=min(options["batch_size"],
                         len(model.X)), learning_rate=options["learning_rate"], trace_every=options.get("trace_every", 25),
                         callback=callback, seed=options.get("seed", 0))
    return model.fit(max_iter=int(options["iterations"]), callback=callback)


#: finished fits by (problem, kind, options): their parameter values, trace and metrics, so that a
#: class opening the same page (or a lesson stepping back to it) rebuilds a model instead of fitting
_FITS: dict = {}
_FITS_KEPT = 16
_FITS_LOCK = threading.Lock()


def _fit_key(problem, kind, options):
    data = (problem.name, problem.X.shape, float(problem.X.sum()), float(problem.y @ np.arange(len(problem.y))),
            problem.X_test.shape, float(problem.X_test.sum()))
    return data, kind, tuple(sorted((k, v) for k, v in options.items() if isinstance(v, (int, float, str))))


def _replayed(problem, kind, options, kept):
    out = FitOutcome(kind, trace={k: list(v) for k, v in kept["trace"].items()}, metrics=dict(kept["metrics"]))
    try:
        out.model = build_model(problem, kind, options["M"], options.get("patch", 3), options.get("init", "unique"),
                                options.get("seed", 0))
        out.model.set_parameters(**{n: (v.copy() if isinstance(v, np.ndarray) else v)
                                    for n, v in kept["parameters"].items()})
    except FAILURES as err:
        return FitOutcome(kind, error=f"{type(err).__name__}: {err}")
    return out


def fit_one(problem, kind, options, callback=None, reuse=False):
    """Build and fit one model (``options``: M, patch, init, iterations, seed; the digits: steps,
    batch_size, learning_rate); a failure is kept as ``error``, a callback's stop leaves
    ``metrics["ended"] = "stopped"``. With ``reuse``, a fit finished earlier in this process with
    the same problem, kind and options is rebuilt from its values (the same model, no fitting)."""
    key = _fit_key(problem, kind, options) if reuse else None
    with _FITS_LOCK:
        kept = _FITS.get(key) if reuse else None
    if kept is not None:
        return _replayed(problem, kind, options, kept)
    out = _fitted(problem, kind, options, callback)
    if reuse and out.error is None and out.metrics.get("ended") != "stopped":
        with _FITS_LOCK:
            _FITS[key] = {"parameters": out.model.parameters, "metrics": dict(out.metrics),
                          "trace": {k: list(v) for k, v in out.trace.items()}}
            while len(_FITS) > _FITS_KEPT:
                _FITS.pop(next(iter(_FITS)))
    return out


def _fitted(problem, kind, options, callback):
    out = FitOutcome(kind)
    t0 = time.perf_counter()
    try:
        model = build_model(problem, kind, options["M"], options.get("patch", 3), options.get("init", "unique"),
                            options.get("seed", 0))
        res = _fit(model, options, callback)
        out.model = model
        out.trace = trace_columns([(e.iteration, -e.objective, *(-(e.terms or {}).get(n, np.nan)
                                   for n in ("neg_ell", "neg_entropy", "neg_cross"))) for e in res.trace])
        out.metrics = metrics(model, problem)
    except FAILURES as err:
        out.error = f"{type(err).__name__}: {err}"
        return out
    verdict = res.details.get("convergence", {}).get("reason")
    out.metrics.update({"iterations": int(res.n_iter), "seconds": time.perf_counter() - t0,
                        "ended": "stopped" if res.details.get("stopped") else (verdict or "budget")})
    return out


def race(problem, kinds, options, live=None, report=None, cancelled=lambda: False):
    """Fit every kind in turn (one fit each) with its trace growing in ``live`` (kind -> rows):
    {kind: FitOutcome}, or None once ``cancelled()``. ``report(fraction, message)`` is a job's."""
    live = live or LiveTrace()
    out, n = {}, len(kinds)
    budget = max(1, int(options.get("iterations") or options.get("steps", 1) // options.get("trace_every", 25)))
    for i, kind in enumerate(kinds):
        callback = job_callback(live, kind, 0, f"fitting {LABELS[kind]} ({i + 1} of {n})",
                                lambda k, i=i: (i + min(0.98, k / budget)) / n, report, cancelled)
        out[kind] = fit_one(problem, kind, options, callback)
        if cancelled():
            return None
    return out


def digit_problem(n_train=DIGIT_DEFAULTS["n_train"], n_test=DIGIT_DEFAULTS["n_test"], seed=0):
    """Ten-class MNIST (``mnist10``) pooled to 14 x 14: the drawing canvas' training images."""
    return load_problem("mnist10", n_train, 14, n_test, seed)


def digit_model(options, report=None, cancelled=lambda: False):
    """The weighted convolutional 10-class model on :func:`digit_problem` (``options`` as
    :data:`DIGIT_DEFAULTS`), fitted by Adam; a FitOutcome (None when cancelled)."""
    opts = {**DIGIT_DEFAULTS, **options, "init": "unique"}
    problem = digit_problem(opts["n_train"], opts["n_test"], opts["seed"])
    live = LiveTrace()
    budget = max(1, opts["steps"] // opts.get("trace_every", 25))
    callback = job_callback(live, "digits", 0, "fitting the digit model", lambda k: min(0.97, k / budget), report,
                            cancelled)
    out = fit_one(problem, "weighted", opts, callback)
    return None if cancelled() else out


_DIGITS = {}  # options key -> fitted FitOutcome (at most _DIGITS_KEPT)
_DIGITS_KEPT = 2
_DIGITS_LOCK = threading.Lock()


def cached_digit_model(options, report=None, cancelled=lambda: False, wait_s=0.25):
    """:func:`digit_model` once per process and options: a second caller waits for the first
    one's fit (reporting so) and gets its model; a cancelled fit leaves nothing behind, and the
    next caller fits. The model is shared: callers only predict with it."""
    key = tuple(sorted({**DIGIT_DEFAULTS, **options}.items()))
    while not _DIGITS_LOCK.acquire(timeout=wait_s):
        if cancelled():
            return None
        if report is not None:
            report(0.0, "waiting for another page's digit model fit")
    try:
        if key in _DIGITS:
            return _DIGITS[key]
        out = digit_model(options, report, cancelled)
        if out is not None and out.error is None:
            _DIGITS[key] = out
            while len(_DIGITS) > _DIGITS_KEPT:
                _DIGITS.pop(next(iter(_DIGITS)))
        return out
    finally:
        _DIGITS_LOCK.release()
