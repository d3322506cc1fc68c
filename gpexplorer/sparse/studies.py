"""Studies of how the sparse objectives depend on the inducing inputs (thesis §3.2.2-3.2.6).

``add_one_inducing_curve`` is thesis fig. 3.2 (bottom): the change in each term of eq. 3.1
when one extra inducing input is placed at each of many candidate locations, everything else
fixed. ``m_sweep`` is fig. 3.5-3.7: FITC and VFE jointly optimised for a range of M, with
objective, noise, NLPD, SMSE and Titsias' upper bound (eq. 2.38-2.39) per M, next to the exact GP.
Plain dicts out, so the dashboards, the CLI and the tests read the same numbers.
"""

from __future__ import annotations

import time
import warnings

import numpy as np

from gpexplorer import metrics
from gpexplorer.sparse import regression as models
from gpexplorer.sparse import diagnostics
from gpexplorer.sparse import objectives as sparse
from gpexplorer import covariances
from gpexplorer.inducing import INITIALISATIONS, InducingFeature, InducingPoints, initial_inducing_inputs
from gpexplorer.validation import positive as _positive, validate_data
from gpexplorer.kernels import Kernel
from gpexplorer.linalg import CholeskyError, JitterWarning, solve_lower
from gpexplorer import _threads

TERMS = ("complexity", "data_fit", "trace")
_CHUNK = 4e6  # candidates are processed in blocks of at most _CHUNK / (M N) (32 MB temporaries)


def _inputs(a, D, name, first="K"):
    try:
        a = np.array(a, dtype=float)
    except (TypeError, ValueError) as err:
        raise ValueError(f"{name} must be a numeric array ({err})") from None
    if a.ndim == 1 and D == 1:
        a = a[:, None]
    if a.ndim != 2 or a.shape[1] != D:
        raise ValueError(f"{name} must have shape ({first}, {D}){' or (' + first + ',)' if D == 1 else ''}; "
                         f"got {a.shape}")
    if a.shape[0] == 0:
        raise ValueError(f"{name} is empty; at least one row is needed")
    if not np.all(np.isfinite(a)):
        raise ValueError(f"{name} contains NaN or infinite values")
    return np.ascontiguousarray(a)


def _bordered_F_terms(A, gap, y, a, noise, approximation, trace0):
    """F terms of eq. 3.1 with the row ``a`` [K, N] appended to A = L^{-1} Kuf, for K candidates.

    Appending z* borders the Cholesky factor: L* = [[L, 0], [l^T, d]] with l = L^{-1} k_u*,
    d^2 = k** + jitter - l^T l, so A* = [A; a^T] with a = (k_*f - l^T A) / d and
    Qff* = Qff + a a^T (the rank-one update of §3.2.2). Then, as in sparse.py, with
    B* = I + A* G*^{-1} A*^T: log|Qff* + G*| = log|B*| + sum log g*, and the data fit is
    y^T G*^{-1} y - |LB*^{-1} A* G*^{-1} y|^2. FITC: g* = max(diag(Kff - Qff) - a^2, 0) + s2.
    """
    K, M = a.shape[0], A.shape[0]
    if approximation == "fitc":
        w = 1.0 / (np.maximum(gap[None, :] - a * a, 0.0) + noise)  # [K, N] = 1 / g*
        top = np.eye(M) + np.matmul(A[None, :, :] * w[:, None, :], A.T)
        log_g = -np.sum(np.log(w), axis=1)
    else:
        w = np.full((1, A.shape[1]), 1.0 / noise)
        top = np.eye(M) + (A / noise) @ A.T
        log_g = A.shape[1] * np.log(noise)
    aw = a * w
    B = np.empty((K, M + 1, M + 1))
    B[:, :M, :M] = top
    B[:, :M, M] = B[:, M, :M] = aw @ A.T
    B[:, M, M] = 1.0 + np.sum(a * aw, axis=1)
    LB = np.linalg.cholesky(B)
    yw = y[None, :] * w
    r = np.empty((K, M + 1))  # A* G*^{-1} y
    r[:, :M] = yw @ A.T
    r[:, M] = np.sum(a * yw, axis=1)
    c = np.linalg.solve(LB, r[:, :, None])[:, :, 0]
    complexity = np.sum(np.log(np.diagonal(LB, axis1=1, axis2=2)), axis=1) + 0.5 * log_g
    data_fit = 0.5 * (np.sum(yw * y[None, :], axis=1) - np.sum(c * c, axis=1))
    trace = trace0 - 0.5 * np.sum(a * a, axis=1) / noise if approximation == "vfe" else np.zeros(K)
    return {"complexity": complexity, "data_fit": data_fit, "trace": trace}


def add_one_inducing_curve(X, y, kernel, noise_variance, Z, approximation, candidates, jitter=1e-6) -> dict:
    """Change of each term of L = -F (thesis eq. 3.1) from appending one inducing input z* to Z.

    Thesis fig. 3.2 (bottom): for each row z* of ``candidates`` ((K, D), or (K,) when D = 1),
    the change in "complexity", "data_fit", "trace" and "total" of the log marginal likelihood
    (SoR/DTC/FITC) or bound (VFE) when Z becomes [Z; z*], hyperparameters fixed. Positive means
    L increases. Remark 3: for VFE every delta total is >= 0 (up to jitter). ``Z`` is an inducing
    feature or an array of inducing inputs; each candidate is a member of the same feature type
    at z* (``feature.at_locations``), its covariances from :mod:`gpexplorer.covariances`. The matrices
    at Z are computed once and bordered per candidate (see :func:`_bordered_F_terms`), O(K N M^2)
    in all; the Cholesky of Kuu uses the jitter that evaluating the base model needed. A
    candidate whose bordered Cholesky fails falls back to :func:`sparse.collapsed_objective`
    (escalating jitter); if that fails too its deltas are NaN.

    Returns {"candidates": (K, D), "base": {term: L-term at Z, "total"}, "delta": {term: (K,),
    "total": (K,)}, "approximation", "jitter_used"}.
    """
    if approximation not in sparse.APPROXIMATIONS:
        raise ValueError(f"approximation must be one of {sparse.APPROXIMATIONS}; got {approximation!r}")
    if not isinstance(kernel, Kernel):
        raise ValueError(f"kernel must be a gpexplorer.kernels.Kernel; got {type(kernel).__name__}")
    X, y = validate_data(X, y)
    D = X.shape[1]
    kernel.check_input_dim(D)
    feature = Z if isinstance(Z, InducingFeature) else InducingPoints(_inputs(Z, D, "Z", "M"))
    feature.check_input_dim(D)
    C = _inputs(candidates, D, "candidates")
    noise = _positive("noise_variance", noise_variance, allow_array=False)
    if not (np.isfinite(jitter) and jitter >= 0):
        raise ValueError(f"jitter must be a non-negative finite number; got {jitter!r}")

    # one BLAS thread: these small products only pay synchronisation for more (median 36 ms
    # instead of 3 ms on a 2-core machine for K = 100, N = 200, M = 20)
    with _threads.single_threaded(), warnings.catch_warnings():
        warnings.simplefilter("ignore", JitterWarning)
        return _add_one(X, y, kernel, noise, feature, approximation, C, jitter)


def _add_one(X, y, kernel, noise, feature, approximation, C, jitter):
    M = len(feature)
    candidates = feature.at_locations(C)
    Kall = covariances.Kuu(feature.concatenate(candidates), kernel)  # [M + K, M + K]
    Kuu, Kcu, kcc = Kall[:M, :M], Kall[M:, :M], np.diag(Kall)[M:].copy()
    Kuf, kdiag = covariances.Kuf(feature, kernel, X), kernel.Kdiag(X)
    base, post = sparse.collapsed_objective(Kuu, Kuf, kdiag, y, noise, jitter, approximation)
    j = base.jitter_used
    A = solve_lower(post.L, Kuf)
    gap = kdiag - np.einsum("mn,mn->n", A, A)  # diag(Kff - Qff)
    Kcf = covariances.Kuf(candidates, kernel, X)
    l = solve_lower(post.L, Kcu.T)  # [M, K]
    d2 = kcc + j - np.einsum("mk,mk->k", l, l)
    new = {t: np.full(len(C), np.nan) for t in TERMS}
    good = np.flatnonzero(d2 > 0)
    step = max(1, int(_CHUNK // (A.shape[0] * A.shape[1])))  # FITC builds [K, M, N] temporaries
    for idx in (good[i:i + step] for i in range(0, len(good), step)):
        a = (Kcf[idx] - l[:, idx].T @ A) / np.sqrt(d2[idx])[:, None]
        try:
            for t, v in _bordered_F_terms(A, gap, y, a, noise, approximation, base.terms["trace"]).items():
                new[t][idx] = v
        except np.linalg.LinAlgError:
            pass  # left NaN: recomputed one by one below
    for k in np.flatnonzero(~np.isfinite(new["data_fit"]) | ~np.isfinite(new["complexity"])):
        Kuu_k = np.block([[Kuu, Kcu[k][:, None]], [Kcu[k][None, :], kcc[k:k + 1, None]]])
        try:
            r, _ = sparse.collapsed_objective(Kuu_k, np.vstack([Kuf, Kcf[k]]), kdiag, y, noise, jitter,
                                              approximation, warn=False)
            for t in TERMS:
                new[t][k] = r.terms[t]
        except (CholeskyError, np.linalg.LinAlgError):
            for t in TERMS:
                new[t][k] = np.nan
    delta = {t: -(new[t] - base.terms[t]) for t in TERMS}
    delta["total"] = delta["complexity"] + delta["data_fit"] + delta["trace"]
    base_L = {t: -v for t, v in base.terms.items()}
    base_L["total"] = -base.value
    return {"candidates": C, "base": base_L, "delta": delta, "approximation": approximation, "jitter_used": j}


class _Cancelled(Exception):
    """Raised inside :func:`m_sweep` when ``cancelled()`` said so."""


def _check_Ms(Ms, N):
    Ms = list(Ms) if not np.isscalar(Ms) else [Ms]
    if not Ms:
        raise ValueError("Ms is empty; give at least one number of inducing inputs")
    out = []
    for M in Ms:
        if isinstance(M, (bool, np.bool_)) or not isinstance(M, (int, np.integer)) or M < 1:
            raise ValueError(f"every M must be an integer >= 1; got {M!r}")
        if M > N:
            raise ValueError(f"M = {M} exceeds the number of training points N = {N}; "
                             "more inducing inputs than data cannot improve on the exact GP")
        out.append(int(M))
    return out


def _evaluate(model, X, y):
    mean, var = model.predict_y(X)
    return {"log_marginal_likelihood": float(model.log_marginal_likelihood()), "noise_variance": model.noise_variance,
            "nlpd": metrics.nlpd(y, mean, var), "smse": metrics.smse(y, mean)}


def m_sweep(dataset, kernel, noise_variance, Ms, approximations=("fitc", "vfe"), *, z_init="kmeans", seed=0,
            max_iter=200, progress=None, cancelled=None, tighten_upper_bound=0, inducing=None) -> dict:
    """FITC and VFE jointly optimised for each M in ``Ms`` (thesis fig. 3.5-3.7), and the exact GP.

    Every model starts from ``kernel`` (copied) and ``noise_variance``; for each M all
    approximations share Z = initial_inducing_inputs(X, M, z_init, seed); 1 <= M <= N. With
    ``inducing`` (an inducing feature used as a template) the models get M members of that
    feature type placed there (``inducing.at_locations(Z)``), else inducing points. Per
    (M, approximation) a row: "log_marginal_likelihood" at the optimum (fig. 3.5's objective),
    "noise_variance", "nlpd", "smse" (fig. 3.5), "upper_bound" (Titsias, eq. 2.38-2.39, at the
    model's own fitted parameters and Z: fig. 3.6), "clumped_pairs" (§3.2.2, Remark 5; None if
    the kernel has no "lengthscale"), "iterations", "seconds", "jitter_used" (at the optimum),
    and, to rebuild the model (e.g. for fig. 3.7), the fitted "kernel_params", "inducing" (the
    fitted feature) and its "locations" [M, D]. With
    ``tighten_upper_bound`` > 0 iterations, non-VFE rows get "upper_bound_tightened": the bound
    with its own Z optimised at the model's hyperparameters (§3.2.6, variant 2). "exact"
    holds the same metrics for the exact GP. NLPD and SMSE use the test split when the dataset
    has one ("metric_split": "test"), else the training data ("train").

    ``progress(fraction, message)`` is called after each completed fit (the exact GP first);
    when ``cancelled()`` returns True the sweep stops at once (also mid-fit, through the
    optimiser's callback); an interrupted fit is not reported. Returns {"rows", "exact",
    "metric_split", "cancelled"}; "exact" is None if cancelled before the exact fit finished.
    """
    if not (hasattr(dataset, "X") and hasattr(dataset, "y")):
        raise ValueError(f"dataset must be a gpexplorer.datasets.Dataset; got {type(dataset).__name__}")
    if not isinstance(kernel, Kernel):
        raise ValueError(f"kernel must be a gpexplorer.kernels.Kernel; got {type(kernel).__name__}")
    X, y = validate_data(dataset.X, dataset.y)
    Ms = _check_Ms(Ms, X.shape[0])
    approximations = (approximations,) if isinstance(approximations, str) else tuple(approximations)
    if not approximations or any(a not in sparse.APPROXIMATIONS for a in approximations):
        raise ValueError(f"approximations must be a non-empty subset of {sparse.APPROXIMATIONS}; "
                         f"got {approximations!r}")
    if int(max_iter) != max_iter or max_iter < 0:
        raise ValueError(f"max_iter must be a non-negative integer; got {max_iter!r}")
    noise = _positive("noise_variance", noise_variance, allow_array=False)
    if inducing is not None and not isinstance(inducing, InducingFeature):
        raise ValueError(f"inducing must be an inducing feature (gpexplorer.inducing); got {type(inducing).__name__}")
    if z_init not in INITIALISATIONS:
        raise ValueError(f"z_init must be one of {INITIALISATIONS}; got {z_init!r}")
    split = "test" if getattr(dataset, "X_test", None) is not None and getattr(dataset, "y_test", None) is not None \
        else "train"
    Xm, ym = (dataset.X_test, dataset.y_test) if split == "test" else (X, y)
    stop = [False]

    def is_cancelled():
        stop[0] = stop[0] or bool(cancelled is not None and cancelled())
        return stop[0]

    callback = (lambda entry: is_cancelled()) if cancelled is not None else None
    total, done = 1 + len(Ms) * len(approximations), [0]
    out = {"rows": [], "exact": None, "metric_split": split, "cancelled": False}

    def completed(message):
        done[0] += 1
        if progress is not None:
            progress(done[0] / total, message)

    def fit(model):
        if is_cancelled():
            raise _Cancelled
        t0 = time.perf_counter()
        result = model.fit(max_iter=int(max_iter), callback=callback)
        if stop[0]:  # interrupted mid-fit: not a result
            raise _Cancelled
        return {**_evaluate(model, Xm, ym), "iterations": result.n_iter, "seconds": time.perf_counter() - t0,
                "kernel_params": model.kernel.parameters, "jitter_used": model.jitter_used}

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", JitterWarning)
            out["exact"] = fit(models.ExactGPR(X, y, kernel=kernel.copy(), noise_variance=noise))
            completed("exact GP")
            for M in Ms:
                Z0 = initial_inducing_inputs(X, M, z_init, seed)
                feature0 = InducingPoints(Z0) if inducing is None else inducing.at_locations(Z0)
                for approximation in approximations:
                    m = models.SparseGPR(X, y, kernel=kernel.copy(), Z=feature0.copy(), approximation=approximation,
                                         noise_variance=noise)
                    row = {"M": M, "approximation": approximation, **fit(m), "upper_bound": float(m.upper_bound())}
                    ls = row["kernel_params"].get("lengthscale")
                    row["clumped_pairs"] = None if ls is None else diagnostics.clumped_pairs(m.Z, ls)
                    row["inducing"] = m.inducing.copy()
                    row["locations"] = m.Z.copy()
                    if tighten_upper_bound and approximation != "vfe":  # VFE cannot exceed it
                        row["upper_bound_tightened"] = m.tightened_upper_bound(tighten_upper_bound)[0]
                    out["rows"].append(row)
                    completed(f"{approximation} M={M}")
    except _Cancelled:
        out["cancelled"] = True
    return out
