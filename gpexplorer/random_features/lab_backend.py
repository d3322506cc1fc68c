"""The random-features lab's computing half (issue 27; the page is ``gpexplorer/ui/random_features/``):
:func:`kernel_view` (a basis' closed-form kernel on a 1-D grid, its estimate Phi Phi^T, the slice
k(x0, x), their errors), :func:`error_curves` (the estimate's relative error against the number of
features in d inputs, for the basis and every basis estimating the same kernel: plain, orthogonal and
Fastfood SE features), :func:`fit_models` (SLM, GLM, exact GP and VFE side by side on Snelson's data:
mean and 2-sd band on a grid, objective, fit time), :func:`weight_view` (the GLM's mixture components
over two weights, with the SLM's exact posterior there) and :func:`ard_fit` (an ARD SLM on standardised
Boston housing and the inputs it prunes: lengthscale at the top of :data:`ARD_BOX`).

Nested draws: the estimate with D features uses the first D/2 frequencies of one seeded draw of
MAX_FEATURES/2, rescaled, so adding features keeps those drawn (a slider walks along one Monte Carlo
sequence) and moving the count costs one product. For rbf and orthogonal_rbf these are exactly the
frequencies of ``basis(name, d, D, seed=seed)``; the Student-t densities draw their scales after their
Gaussians, so theirs are another draw of the same law. A basis without cos/sin columns is built at D.
All of it runs on one BLAS thread: on the shared 2-core machine two threads made an 80 x 4,000
product take 100 ms instead of 1 ms.
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from dataclasses import dataclass, field

import numpy as np

from gpexplorer import _threads, datasets, kernels
from gpexplorer.random_features import catalogue
from gpexplorer.random_features.fourier import fourier_kernels
from gpexplorer.random_features.glm import GeneralizedLinearModel
from gpexplorer.random_features.linear_model import StandardLinearModel
from gpexplorer.random_features.spectral import SPECTRAL_DENSITIES
from gpexplorer.sparse.regression import ExactGPR, SparseGPR

__all__ = ["MAX_FEATURES", "CURVE_COUNTS", "MODELS", "FIT_DEFAULTS", "ARD_BOX", "basis_choices", "same_kernel",
           "gp_kernel_name", "features", "kernel_view", "error_curves", "fit_models", "weight_pair", "weight_view",
           "ard_fit", "boston_standardised", "KernelView", "ErrorCurves", "ModelFit", "Comparison", "WeightView", "ArdResult"]

MAX_FEATURES = 4000
GRID, HEAT_POINTS, SLICE_POINTS = (-3.0, 3.0), 61, 161
CURVE_POINTS, CURVE_SEEDS = 40, 3
#: feature counts of the error curves: even, log-spaced from 2 to MAX_FEATURES
CURVE_COUNTS = tuple(sorted({2 * max(1, int(round(v / 2))) for v in np.geomspace(2, MAX_FEATURES, 18)}))
MODELS = {"exact": "exact GP", "vfe": "VFE", "slm": "SLM", "glm": "GLM"}
OBJECTIVES = {"exact": "log p(y)", "vfe": "VFE bound", "slm": "log evidence", "glm": "ELBO"}
#: the models' settings: features (SLM, GLM), VFE's inducing points, GLM components / Adam steps, L-BFGS-B budget
FIT_DEFAULTS = {"n_features": 200, "seed": 0, "M": 15, "components": 5, "glm_steps": 500, "learning_rate": 0.05,
                "iterations": 200}
START = {"lengthscale": 1.0, "variance": 1.0, "noise_variance": 0.1}  # every model starts here
#: ARD lengthscales live in this box; an input whose lengthscale reaches half its top is pruned
ARD_BOX, PRUNED_AT = (1e-2, 1e3), 0.5e3
FAILURES = (ValueError, FloatingPointError, np.linalg.LinAlgError)
_LOCK = threading.Lock()
#: least-recently-used caches by kind and how many entries each keeps (a grid's Phi is ~7 MB, a curve's 1.3 MB,
#: a comparison with 2,000 features ~10 MB)
_KEPT = {"basis": 48, "phi": 8, "curve": 36, "result": 64, "fits": 8}
_CACHES = {kind: OrderedDict() for kind in _KEPT}


def _cached(kind, key, make=None):
    """The kept value of ``key`` (None if absent and no ``make``), else ``make()``, kept."""
    cache = _CACHES[kind]
    with _LOCK:
        if key in cache:
            cache.move_to_end(key)
            return cache[key]
    if make is None:
        return None
    value = make()
    with _LOCK:
        cache[key] = value
        while len(cache) > _KEPT[kind]:
            cache.popitem(last=False)
        return value


def basis_choices() -> dict:
    """label -> name of every registered random basis (``RANDOM_BASES``)."""
    def label(name):
        doc = (catalogue.BASES[name].__doc__ or "").strip().split("\n")[0].split(" (")[0].rstrip(".")
        said = SPECTRAL_DENSITIES.get(name, doc)
        return f"{name}: {said}" if said else name
    return {label(n): n for n in catalogue.RANDOM_BASES}


def _probe(dim):
    return np.random.default_rng(7).normal(size=(6, dim)) * 0.8


def same_kernel(name, dim=1) -> tuple:
    """The random bases estimating the same kernel as ``name`` in ``dim`` inputs (equal closed forms at
    unit lengthscale, the same parameters), ``name`` first: the variants an error curve compares."""
    def find():
        X, ref = _probe(dim), catalogue.basis(name, dim, 2)
        out = [name]
        for other in catalogue.RANDOM_BASES:
            b = catalogue.basis(other, dim, 2)
            if other != name and set(b.parameters) == set(ref.parameters) and np.allclose(b.kernel(X), ref.kernel(X)):
                out.append(other)
        return tuple(out)
    return _cached("result", ("same", name, dim), find)


def gp_kernel_name(name):
    """The registered kernel (one with Fourier features) equal to basis ``name``'s in 1-D, or None."""
    def find():
        X, ref = _probe(1), catalogue.basis(name, 1, 2).kernel(_probe(1))
        return next((k for k, cls in fourier_kernels().items() if np.allclose(cls().K(X), ref)), None)
    return _cached("result", ("gp", name), find)


def _even(n):
    return max(2, 2 * (int(n) // 2))


def prefix(Phi, n):
    """The first n/2 frequencies' [cos, sin] columns of Phi (all frequencies, [cos..., sin...] / sqrt(m)),
    rescaled to an estimate with n features."""
    m, k = Phi.shape[1] // 2, min(_even(n), Phi.shape[1]) // 2
    return np.hstack([Phi[:, :k], Phi[:, m:m + k]]) * np.sqrt(m / k)


def _full_features(name, X, lengthscale, seed, n):
    """(Phi of all MAX_FEATURES nested features, True) or (Phi with n features, False), cached."""
    dim = X.shape[1]
    big = _cached("basis", (name, dim, MAX_FEATURES, seed), lambda: catalogue.basis(name, dim, MAX_FEATURES, seed=seed))
    nested = getattr(big, "n_frequencies", None) is not None and big.n_features == 2 * big.n_frequencies
    b = big if nested else _cached("basis", (name, dim, n, seed), lambda: catalogue.basis(name, dim, n, seed=seed))
    key = ("phi", name, seed, float(lengthscale), X.shape, X.tobytes(), nested or n)

    def make():
        with _LOCK, _threads.single_threaded():
            b.set_parameters(lengthscale=lengthscale)
            return b(X), b.kernel(X)
    return _cached("curve" if len(X) <= CURVE_POINTS else "phi", key, make) + (nested,)


def features(name, X, n_features, lengthscale, seed=0):
    """(Phi [N, n_features], K [N, N] the closed form) of basis ``name`` on X (nested, as above)."""
    X = np.asarray(X, dtype=float).reshape(len(X), -1)
    n = min(_even(n_features), MAX_FEATURES)
    Phi, K, nested = _full_features(name, X, lengthscale, seed, n)
    return (prefix(Phi, n) if nested else Phi), K


def _relative(K_hat, K):
    return float(np.linalg.norm(K_hat - K) / np.linalg.norm(K))


@dataclass
class KernelView:
    """The 1-D kernel view: ``grid`` [G], ``K`` and ``K_hat`` [G, G] (exact, estimate), the slice
    ``x`` [S] with ``exact`` and ``estimate`` k(x0, x), ``error`` (||K_hat - K||_F / ||K||_F on the grid),
    ``slice_error`` (largest |estimate - exact| on the slice), ``n_features`` used."""

    name: str
    grid: np.ndarray
    K: np.ndarray
    K_hat: np.ndarray
    x: np.ndarray
    exact: np.ndarray
    estimate: np.ndarray
    x0: float
    error: float
    slice_error: float
    n_features: int


def kernel_view(name, lengthscale, n_features, seed=0, x0=0.0) -> KernelView:
    """Basis ``name``'s kernel and its estimate with ``n_features`` features on the 1-D grid."""
    grid, x = np.linspace(*GRID, HEAT_POINTS), np.linspace(*GRID, SLICE_POINTS)
    points = np.concatenate([grid, x, [float(x0)]])[:, None]
    Phi, K = features(name, points, n_features, lengthscale, seed)
    G, S = HEAT_POINTS, SLICE_POINTS
    with _threads.single_threaded():
        P, p0 = Phi[:G], Phi[-1]
        K_hat, estimate = P @ P.T, Phi[G:G + S] @ p0
    exact = K[G:G + S, -1]
    return KernelView(name, grid, K[:G, :G], K_hat, x, exact, estimate, float(x0), _relative(K_hat, K[:G, :G]),
                      float(np.max(np.abs(estimate - exact))), min(_even(n_features), MAX_FEATURES))


@dataclass
class ErrorCurves:
    """Relative error ||K_hat - K||_F / ||K||_F on CURVE_POINTS Gaussian inputs in ``dim`` dimensions
    (scaled by 1 / sqrt(dim), lengthscale as given), averaged over CURVE_SEEDS draws: ``counts`` [C],
    ``mean`` / ``sd`` {basis: [C]}, ``at`` {basis: the error at ``n_features``}, ``slope`` {basis: the
    log-log slope of the mean error against D (Monte Carlo: -1/2)}."""

    dim: int
    counts: np.ndarray
    mean: dict
    sd: dict
    at: dict
    slope: dict
    n_features: int


def _curve_points(dim):
    return np.random.default_rng(1234).normal(size=(CURVE_POINTS, dim)) / np.sqrt(dim)


def _curve(name, lengthscale, dim):
    """Mean and sd over seeds of the error at each of CURVE_COUNTS, the estimates summed up block by block."""
    X, rows = _curve_points(dim), []
    for seed in range(CURVE_SEEDS):
        Phi, K, nested = _full_features(name, X, lengthscale, seed, MAX_FEATURES)
        m, S, done, row = Phi.shape[1] // 2, np.zeros((len(X), len(X))), 0, []
        with _threads.single_threaded():
            for k in (n // 2 for n in CURVE_COUNTS):
                C, Z, done = Phi[:, done:k], Phi[:, m + done:m + k], k
                S += C @ C.T + Z @ Z.T
                row.append(_relative(S * (m / k), K) if nested else np.nan)
        rows.append(row)
    return np.mean(rows, axis=0), np.std(rows, axis=0)


def error_curves(name, lengthscale, dim, n_features) -> ErrorCurves:
    """The error curves of ``name`` and its variants (:func:`same_kernel`) and their values at ``n_features``."""
    dim, n = int(dim), min(_even(n_features), MAX_FEATURES)
    X, counts, mean, sd, at, slope = _curve_points(dim), np.asarray(CURVE_COUNTS), {}, {}, {}, {}
    for b in same_kernel(name, dim):
        mean[b], sd[b] = _cached("result", ("curve", b, float(lengthscale), dim), lambda b=b: _curve(b, lengthscale, dim))
        with _threads.single_threaded():
            pairs = [features(b, X, n, lengthscale, seed) for seed in range(CURVE_SEEDS)]
            at[b] = float(np.mean([_relative(Phi @ Phi.T, K) for Phi, K in pairs]))
        slope[b] = float(np.polyfit(np.log(counts), np.log(np.maximum(mean[b], 1e-300)), 1)[0])
    return ErrorCurves(dim, counts, mean, sd, at, slope, n)


# --- four models side by side --------------------------------------------------------------------
@dataclass
class ModelFit:
    """One model on the comparison grid: predictive mean and sd of y, its objective (``objective_name``),
    fit time, iterations, a few parameters, or the error that stopped it; ``model`` the fitted object."""

    key: str
    mean: np.ndarray = None
    sd: np.ndarray = None
    objective: float = float("nan")
    seconds: float = float("nan")
    iterations: int = 0
    parameters: dict = field(default_factory=dict)
    error: str | None = None
    model: object = None


@dataclass
class Comparison:
    """The four fits on Snelson's data: ``X``, ``y``, the ``grid``, ``fits`` {key: ModelFit}, the GP
    kernel used (``gp_kernel``), ``gaps`` {key: (RMS of mean - exact mean, RMS of sd - exact sd) over
    the grid inside the data's range}, the options and the basis."""

    basis: str
    options: dict
    X: np.ndarray
    y: np.ndarray
    grid: np.ndarray
    fits: dict
    gp_kernel: str
    matched: bool
    gaps: dict = field(default_factory=dict)


def _snelson():
    ds = datasets.load("snelson")
    return np.asarray(ds.X, dtype=float), np.asarray(ds.y, dtype=float).ravel()


def _run(key, build, fit, objective, grid):
    out, t0 = ModelFit(key), time.perf_counter()
    try:
        model = build()
        result = fit(model)
        mean, var = model.predict_y(grid)
        out.mean, out.sd = np.ravel(mean), np.sqrt(np.maximum(np.ravel(var), 0.0))
        out.objective, out.iterations, out.model = float(objective(model)), int(result.n_iter), model
        out.parameters = {k: float(np.mean(v)) for k, v in model.parameters.items() if np.size(v) == 1}
    except FAILURES as err:
        out.error = f"{type(err).__name__}: {err}"
    out.seconds = time.perf_counter() - t0
    return out


def fit_models(basis_name, options=None, report=None, cancelled=None) -> Comparison | None:
    """Fit the exact GP, VFE, the SLM and the GLM on Snelson's data (``options`` as :data:`FIT_DEFAULTS`);
    ``report(fraction, message)`` is called as they go, None is returned once ``cancelled()``. A finished
    comparison is kept for the same arguments (a class opening one page fits once; results are read only)."""
    o = {**FIT_DEFAULTS, **(options or {})}
    o["n_features"] = _even(o["n_features"])
    key = ("fits", basis_name, tuple(sorted(o.items())))
    kept = _cached("fits", key)
    if kept is not None:
        return kept
    report, cancelled = report or (lambda f, m: None), cancelled or (lambda: False)
    out = _fit_all(basis_name, o, report, cancelled)
    return out if out is None else _cached("fits", key, lambda: out)


def _fit_all(name, o, report, cancelled):
    X, y = _snelson()
    pad = 0.15 * (X.max() - X.min())
    grid = np.linspace(X.min() - pad, X.max() + pad, 200)[:, None]
    gp_name = gp_kernel_name(name)
    kernel_cls = kernels.KERNELS[gp_name or "se"]
    s, it = START, int(o["iterations"])
    spans = {"exact": (0.0, 0.05), "vfe": (0.05, 0.1), "slm": (0.1, 0.3), "glm": (0.3, 1.0)}

    def progress(k, budget):
        def callback(entry):
            lo, hi = spans[k]
            report(lo + (hi - lo) * min(1.0, entry.iteration / budget), f"{MODELS[k]}: iteration {entry.iteration}")
            return False
        return callback

    def basis():
        return catalogue.basis(name, 1, o["n_features"], lengthscale=s["lengthscale"], seed=o["seed"])
    kernel = lambda: kernel_cls(variance=s["variance"], lengthscale=s["lengthscale"])  # noqa: E731
    plans = {
        "exact": (lambda: ExactGPR(X, y[:, None], kernel(), noise_variance=s["noise_variance"]),
                  lambda m: m.fit(it, callback=progress("exact", it), cancel=cancelled), lambda m: m.log_marginal_likelihood()),
        "vfe": (lambda: SparseGPR(X, y[:, None], kernel(), Z=int(o["M"]), approximation="vfe",
                                  noise_variance=s["noise_variance"], seed=o["seed"]),
                lambda m: m.fit(it, callback=progress("vfe", it), cancel=cancelled), lambda m: m.log_marginal_likelihood()),
        "slm": (lambda: StandardLinearModel(X, y, basis(), weight_variance=s["variance"], noise_variance=s["noise_variance"]),
                lambda m: m.fit(it, callback=progress("slm", it), cancel=cancelled), lambda m: m.log_evidence()),
        "glm": (lambda: GeneralizedLinearModel(X, y, basis(), "gaussian", int(o["components"]), weight_variance=s["variance"],
                                               seed=o["seed"], likelihood_options={"variance": s["noise_variance"]}),
                lambda m: m.fit(int(o["glm_steps"]), learning_rate=o["learning_rate"], trace_every=25,
                                callback=progress("glm", int(o["glm_steps"])), cancel=cancelled), lambda m: m.bound()),
    }
    fits = {}
    with _threads.single_threaded():
        for k, (build, fit, objective) in plans.items():
            fits[k] = _run(k, build, fit, objective, grid)
            if cancelled():
                return None
    comparison = Comparison(name, dict(o), X, y, grid[:, 0], fits, kernel_cls.name, gp_name is not None)
    comparison.gaps = _gaps(comparison)
    return comparison


def _gaps(c):
    exact, inside = c.fits["exact"], (c.grid >= c.X.min()) & (c.grid <= c.X.max())
    def rms(a, b):
        return float(np.sqrt(np.mean((a - b)[inside] ** 2)))
    return {k: (rms(f.mean, exact.mean), rms(f.sd, exact.sd)) for k, f in c.fits.items()
            if f.error is None and exact.error is None}


# --- the GLM's mixture in weight space -------------------------------------------------------------
@dataclass
class WeightView:
    """Weights ``i`` and ``j``: the GLM's components' ``means`` and ``sds`` [K, 2], and the SLM's exact
    posterior ``exact_mean`` [2] / ``exact_cov`` [2, 2] over the same two weights (None without it)."""

    i: int
    j: int
    auto: bool
    means: np.ndarray
    sds: np.ndarray
    exact_mean: np.ndarray | None
    exact_cov: np.ndarray | None


def weight_pair(q_mean, pick=None):
    """(i, j): ``pick`` if given (each an index of a weight), else the two weights whose component means
    spread most (max - min over the K components; with one component, the two largest |mean|)."""
    q_mean, D = np.asarray(q_mean, dtype=float), np.shape(q_mean)[1]
    if pick is not None:
        i, j = (int(v) for v in pick)
        if not (0 <= i < D and 0 <= j < D) or i == j:
            raise ValueError(f"weights must be two different indices from 0 to {D - 1}; got {pick!r}")
        return i, j
    score = np.ptp(q_mean, axis=0) if q_mean.shape[0] > 1 else np.abs(q_mean[0])
    j, i = (int(v) for v in np.argsort(score, kind="stable")[-2:])
    return i, j


def weight_view(glm, slm=None, pick=None) -> WeightView:
    """The GLM's components over two weights (:func:`weight_pair`) and, when ``slm`` shares its basis,
    the SLM's exact posterior N(m, C) marginalised to those two."""
    i, j = weight_pair(glm.q_mean, pick)
    means, sds = glm.q_mean[:, [i, j]], np.sqrt(glm.q_variance[:, [i, j]])
    m, C = slm.posterior if slm is not None and slm.n_features == glm.n_features else (None, None)
    exact = (None, None) if m is None else (m[[i, j]], C[np.ix_([i, j], [i, j])])
    return WeightView(i, j, pick is None, means, sds, *exact)


# --- ARD on Boston housing ------------------------------------------------------------------------
@dataclass
class ArdResult:
    """An ARD SLM on Boston: input ``names``, ``lengthscale`` [d], ``pruned`` [d] (at the top of the box),
    ``log_evidence``, ``r2`` (training R^2 of the predictive mean), ``seconds``, ``iterations``, ``error``."""

    names: tuple = ()
    lengthscale: np.ndarray = None
    pruned: np.ndarray = None
    log_evidence: float = float("nan")
    r2: float = float("nan")
    seconds: float = float("nan")
    iterations: int = 0
    error: str | None = None
    options: dict = field(default_factory=dict)


def boston_standardised():
    """Boston housing with every input column and the target standardised: (X, y, input names)."""
    ds = datasets.boston()
    X, y = np.asarray(ds.X, dtype=float), np.asarray(ds.y, dtype=float).ravel()
    return (X - X.mean(0)) / X.std(0), (y - y.mean()) / y.std(), tuple(ds.meta["features"])


def ard_fit(basis_name, n_features=200, seed=0, iterations=200, report=None, cancelled=None) -> ArdResult | None:
    """Maximise an ARD SLM's evidence on standardised Boston (lengthscales start at sqrt(d), in
    :data:`ARD_BOX`); None once ``cancelled()``. Kept for the same arguments, like :func:`fit_models`."""
    options = {"basis": basis_name, "n_features": _even(n_features), "seed": int(seed), "iterations": int(iterations)}
    key = ("ard", tuple(sorted(options.items())))
    kept = _cached("fits", key)
    if kept is not None:
        return kept
    report, cancelled = report or (lambda f, m: None), cancelled or (lambda: False)
    X, y, names = boston_standardised()
    d, out, t0 = X.shape[1], ArdResult(names, options=options), time.perf_counter()

    def callback(entry):
        report(min(0.97, entry.iteration / max(1, options["iterations"])), f"ARD: iteration {entry.iteration}")
        return False
    try:
        with _threads.single_threaded():
            b = catalogue.basis(basis_name, d, options["n_features"], lengthscale=np.full(d, np.sqrt(d)), seed=seed)
            model = StandardLinearModel(X, y, b, noise_variance=START["noise_variance"])
            model.set_bounds(lengthscale=ARD_BOX)
            result = model.fit(options["iterations"], callback=callback, cancel=cancelled)
            if cancelled():
                return None
            mean, _ = model.predict_y(X)
        out.lengthscale = np.asarray(model.parameters["lengthscale"], dtype=float)
        out.pruned = out.lengthscale >= PRUNED_AT
        out.log_evidence, out.iterations = float(model.log_evidence()), int(result.n_iter)
        out.r2 = float(1.0 - np.mean((y - mean) ** 2) / np.var(y))
    except FAILURES as err:
        out.error = f"{type(err).__name__}: {err}"
    out.seconds = time.perf_counter() - t0
    return out if out.error is not None else _cached("fits", key, lambda: out)
