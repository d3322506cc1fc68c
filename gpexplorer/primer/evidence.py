"""The marginal likelihood two ways (van der Wilk thesis §5.1.1).

**Sequential prediction (eq. 5.2).** log p(y) = sum_n log p(y_n | y_<n). With C = K + s2 I = L L^T
in the data's order, forward substitution z = L^-1 y *is* sequential prediction: y_n | y_<n is
N(mu_n, L_nn^2) with (y_n - mu_n) / L_nn = z_n, so

    log p(y_n | y_<n) = -1/2 log 2 pi - log L_nn - z_n^2 / 2,   mu_n = y_n - L_nn z_n,

and the terms sum to log N(y | 0, C) exactly, in any order (reordering permutes C; each term
changes, the sum does not).

**Occam's razor by filtering (eq. 5.1, fig. 5.1).** p(y) = E_prior[p(y | f)]: draw datasets
y_s = f_s + e_s from the prior, keep those within ``tolerance`` of the data in every coordinate.
The share kept estimates the prior probability of the box [y - t, y + t]^N, and share / (2t)^N ->
p(y) as t -> 0 (the density is continuous), with Monte Carlo error ~ 1/sqrt(kept). The box
probability itself is a Gaussian orthant-type integral (scipy's multivariate normal CDF), the
reference the tests compare with.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np
from scipy import linalg as sla
from scipy import stats

from gpexplorer import validation
from gpexplorer.linalg import jittered_cholesky
from gpexplorer.primer.gaussian_views import MAX_POINTS

__all__ = ["sequential_evidence", "SequentialEvidence", "occam_filter", "OccamFilter", "box_probability",
           "MAX_FILTER_SAMPLES"]

LOG_2PI = math.log(2.0 * math.pi)
#: prior draws one filtering call may take
MAX_FILTER_SAMPLES = 10_000_000
_CHUNK_VALUES = 4_000_000  # doubles per block of draws (32 MB)


class SequentialEvidence(NamedTuple):
    order: np.ndarray  # the data's indices in prediction order
    terms: np.ndarray  # log p(y_n | y_<n), in that order
    means: np.ndarray  # mu_n = E[y_n | y_<n]
    variances: np.ndarray  # Var[y_n | y_<n] = L_nn^2 (noise included)
    total: float  # log p(y), the sum of the terms


def _data(X, y):
    X = validation.bounded("X", np.asarray(X, dtype=float))
    X = X[:, None] if X.ndim == 1 else X
    y = validation.bounded("y", np.asarray(y, dtype=float).reshape(-1))
    if X.ndim != 2 or X.shape[0] != y.shape[0] or not 0 < X.shape[0] <= MAX_POINTS:
        raise ValueError(f"X must be [N, D] and y [N] with 1 <= N <= {MAX_POINTS}; got {X.shape} and {y.shape}")
    return X, y


def _factor(kernel, X, noise_variance):
    s2 = validation.positive("noise_variance", noise_variance, allow_array=False)
    L, _ = jittered_cholesky(kernel.K(X) + s2 * np.eye(X.shape[0]), 0.0, what="K + noise", warn=False)
    return L


def sequential_evidence(kernel, X, y, noise_variance, order=None, *, data=None) -> SequentialEvidence:
    """log p(y_n | y_<n) for each point in ``order`` (default: as given), eq. 5.2 (module docstring).
    ``data``: an :class:`~gpexplorer.primer.gaussian_views.ObservedData` of the same kernel, X, y
    and noise, whose factor is used when the order is the data's own."""
    X, y = _data(X, y)
    N = y.shape[0]
    order = np.arange(N) if order is None else np.asarray(order, dtype=int).reshape(-1)
    if np.sort(order).tolist() != list(range(N)):
        raise ValueError(f"order must be a permutation of 0..{N - 1}")
    yo = y[order]
    if data is not None and np.array_equal(order, np.arange(N)):
        L, z = data.L, data.z
    else:
        L = _factor(kernel, X[order], noise_variance)
        z = sla.solve_triangular(L, yo, lower=True, check_finite=False)
    d = np.diag(L).copy()
    terms = -0.5 * LOG_2PI - np.log(d) - 0.5 * z * z
    return SequentialEvidence(order, terms, yo - d * z, d * d, float(terms.sum()))


class OccamFilter(NamedTuple):
    num_samples: int
    n_kept: int
    share: float  # n_kept / num_samples
    volume: float  # (2 tolerance)^N
    density_estimate: float  # share / volume -> p(y) as tolerance -> 0
    log_evidence: float  # log p(y), exact
    kept: np.ndarray  # up to ``keep`` kept draws of f at the plotting inputs [k, P] (or at X)


def occam_filter(kernel, X, y, noise_variance, tolerance, *, num_samples=100_000, seed=0, X_plot=None,
                 keep=50) -> OccamFilter:
    """Draw ``num_samples`` datasets from the prior, keep those within ``tolerance`` of y in every
    coordinate (module docstring). ``X_plot``: inputs at which the kept functions are returned
    (drawn jointly with f(X)); default X."""
    X, y = _data(X, y)
    t = validation.positive("tolerance", tolerance, allow_array=False)
    n = validation.count("num_samples", num_samples, minimum=1, maximum=MAX_FILTER_SAMPLES)
    keep = validation.count("keep", keep, minimum=0, maximum=10_000)
    s2 = validation.positive("noise_variance", noise_variance, allow_array=False)
    N = X.shape[0]
    P = np.empty((0, X.shape[1])) if X_plot is None else np.asarray(X_plot, dtype=float).reshape(-1, X.shape[1])
    inputs = np.vstack([X, P])
    Kall = kernel.K(inputs)
    Lf, _ = jittered_cholesky(Kall, 1e-10 * max(1.0, float(np.max(np.diag(Kall)))), what="the prior covariance",
                              warn=False)
    rng = np.random.default_rng(validation.seed(seed))
    noise_sd = math.sqrt(s2)
    block = max(1, _CHUNK_VALUES // (2 * inputs.shape[0]))
    n_kept, kept = 0, []
    for start in range(0, n, block):
        m = min(block, n - start)
        F = (Lf @ rng.standard_normal((inputs.shape[0], m))).T  # [m, N + P]
        Ys = F[:, :N] + noise_sd * rng.standard_normal((m, N))
        hit = np.all(np.abs(Ys - y[None, :]) <= t, axis=1)
        n_kept += int(hit.sum())
        if len(kept) < keep:
            kept.extend((F[hit][:, N:] if X_plot is not None else F[hit][:, :N])[:keep - len(kept)])
    L = _factor(kernel, X, s2)
    z = sla.solve_triangular(L, y, lower=True, check_finite=False)
    log_ev = float(-0.5 * N * LOG_2PI - np.log(np.diag(L)).sum() - 0.5 * z @ z)
    volume = (2.0 * t) ** N
    share = n_kept / n
    width = P.shape[0] if X_plot is not None else N
    return OccamFilter(n, n_kept, share, volume, share / volume if volume > 0 else math.inf, log_ev,
                       np.array(kept).reshape(-1, width))


def box_probability(kernel, X, y, noise_variance, tolerance):
    """P(|y_s - y|_inf <= tolerance) under the prior y_s ~ N(0, K + s2 I), by scipy's multivariate
    normal CDF (Genz): what the share of :func:`occam_filter` estimates."""
    X, y = _data(X, y)
    s2 = validation.positive("noise_variance", noise_variance, allow_array=False)
    C = kernel.K(X) + s2 * np.eye(X.shape[0])
    t = float(tolerance)
    mvn = stats.multivariate_normal(mean=np.zeros(X.shape[0]), cov=C, allow_singular=False)
    return float(mvn.cdf(y + t, lower_limit=y - t))
