"""A GP prior and posterior as the primer shows them (R&W ch. 2; thesis §1.2).

* Prior: f(X) ~ N(0, K), samples L e with K + j I = L L^T (jitter escalated and reported).
* Conditioning on noisy values y at X (noise variance s2): at new inputs X*,
  mean K*x (Kxx + s2 I)^-1 y, covariance K** - K*x (Kxx + s2 I)^-1 Kx* (R&W eq. 2.22-2.24);
  the bands are +-2 sd of f and of y = f + e (the latter adds s2).
* Two views of one Gaussian: (f(x1), f(x2)) is a 2-D Gaussian, the marginal of the same process
  (prior or posterior); conditioning on f(x1) = a gives f(x2) | a ~ N(m2 + c12 / c11 (a - m1),
  c22 - c12^2 / c11); the ellipse {m + sqrt(level^2) L [cos t, sin t]} is the set of points at
  Mahalanobis distance ``level`` (2: the 2-sd contour).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from scipy import linalg as sla

from gpexplorer import validation
from gpexplorer.linalg import jittered_cholesky

__all__ = ["prior_samples", "prior_samples_per_seed", "condition", "Conditioned", "pair_marginal", "PairMarginal",
           "ellipse", "MAX_POINTS", "ObservedData"]

#: inputs a primer computation takes (the page's limit is 500 data points)
MAX_POINTS = 5000
_JITTER = 1e-10


def _inputs(X, name="X"):
    X = validation.bounded(name, np.asarray(X, dtype=float))
    X = X[:, None] if X.ndim == 1 else X
    if X.ndim != 2 or X.shape[0] > MAX_POINTS:
        raise ValueError(f"{name} must be [N, D] with at most {MAX_POINTS} rows; got shape {X.shape}")
    return X


def prior_samples(kernel, X, num_samples=5, seed=0):
    """(samples [num_samples, N] of f(X) ~ N(0, K), the jitter the factorisation needed)."""
    (samples,), jitter = prior_samples_per_seed(kernel, X, num_samples, (seed,))
    return samples, jitter


def prior_samples_per_seed(kernel, X, num_samples, seeds):
    """([:func:`prior_samples`'s draws for each seed], the jitter), from one factorisation of K."""
    X = _inputs(X)
    n = validation.count("num_samples", num_samples, minimum=1, maximum=100_000)
    rngs = [np.random.default_rng(validation.seed(seed)) for seed in seeds]
    L, jitter = jittered_cholesky(kernel.K(X), _JITTER * max(1.0, float(np.max(kernel.Kdiag(X)))),
                                  what="the prior covariance K(X, X)", warn=False)
    return [(L @ rng.standard_normal((X.shape[0], n))).T for rng in rngs], jitter


class Conditioned(NamedTuple):
    mean: np.ndarray  # E[f*] [S]
    var_f: np.ndarray  # Var[f*] [S]
    var_y: np.ndarray  # Var[y*] = Var[f*] + s2
    samples: np.ndarray  # posterior draws of f* [num_samples, S]
    jitter: float  # added to the posterior covariance to draw the samples


class ObservedData:
    """y at X with noise variance s2 under ``kernel``: C = K(X, X) + s2 I = L L^T factored once, for
    the posterior at any inputs (R&W eq. 2.22-2.24), the pair view and the sequential evidence in
    the data's order (:func:`gpexplorer.primer.sequential_evidence`'s ``data``). With 500 points the
    factor is most of a view's cost, so a page makes one per change and passes it to every view."""

    def __init__(self, kernel, X, y, noise_variance):
        self.kernel, self.X = kernel, _inputs(X)
        self.y = validation.bounded("y", np.asarray(y, dtype=float).reshape(-1))
        if self.y.shape[0] != self.X.shape[0]:
            raise ValueError(f"y has {self.y.shape[0]} values but X has {self.X.shape[0]} rows")
        self.noise_variance = validation.positive("noise_variance", noise_variance, allow_array=False)
        C = kernel.K(self.X)
        C[np.diag_indices_from(C)] += self.noise_variance
        self.L, _ = jittered_cholesky(C, 0.0, what="K + noise", warn=False)
        self.z = sla.solve_triangular(self.L, self.y, lower=True, check_finite=False)  # L^-1 y

    def posterior(self, Xnew, full_cov=True):
        """(mean [S], covariance [S, S] or variances [S]) of f(Xnew) given the data."""
        A = sla.solve_triangular(self.L, self.kernel.K(Xnew, self.X).T, lower=True, check_finite=False)  # L^-1 Kx*
        if full_cov:
            return A.T @ self.z, self.kernel.K(Xnew) - A.T @ A
        return A.T @ self.z, self.kernel.Kdiag(Xnew) - np.einsum("ij,ij->j", A, A)


def _posterior(kernel, X, y, s2, Xnew, data=None):
    """(mean [S], covariance [S, S]) of f(Xnew) given y at X, or given ``data`` (the prior without)."""
    if data is None and X is not None and len(X):
        data = ObservedData(kernel, X, y, s2)
    if data is None:
        return np.zeros(Xnew.shape[0]), kernel.K(Xnew)
    return data.posterior(Xnew)


def condition(kernel, X, y, noise_variance, Xnew, num_samples=0, seed=0, *, data=None) -> Conditioned:
    """The posterior of f at Xnew given y at X (module docstring); no data gives the prior.
    ``data``: an :class:`ObservedData` of the same kernel, X, y and noise (its factor is reused)."""
    Xnew = _inputs(Xnew, "Xnew")
    s2 = validation.positive("noise_variance", noise_variance, allow_array=False)
    mean, cov = _posterior(kernel, X, y, s2, Xnew, data)
    var_f = np.maximum(np.diag(cov).copy(), 0.0)
    samples, jitter = np.zeros((0, Xnew.shape[0])), 0.0
    n = validation.count("num_samples", num_samples, minimum=0, maximum=10_000)
    if n:
        scale = max(1.0, float(np.max(kernel.Kdiag(Xnew))))
        C, jitter = jittered_cholesky(cov, _JITTER * scale, what="the posterior covariance", warn=False)
        samples = mean + (C @ np.random.default_rng(validation.seed(seed)).standard_normal((Xnew.shape[0], n))).T
    return Conditioned(mean, var_f, var_f + s2, samples, jitter)


class PairMarginal(NamedTuple):
    mean: np.ndarray  # [2]: E[f(x1)], E[f(x2)]
    cov: np.ndarray  # [2, 2]

    def given_first(self, value):
        """(mean, variance) of f(x2) given f(x1) = value."""
        (m1, m2), c = self.mean, self.cov
        if c[0, 0] <= 0:
            return float(m2), float(c[1, 1])
        return float(m2 + c[0, 1] / c[0, 0] * (value - m1)), float(max(c[1, 1] - c[0, 1] ** 2 / c[0, 0], 0.0))


def pair_marginal(kernel, x1, x2, X=None, y=None, noise_variance=1.0, *, data=None) -> PairMarginal:
    """The 2-D Gaussian of (f(x1), f(x2)) under the prior or, given data (or ``data``, an
    :class:`ObservedData`), the posterior."""
    pts = _inputs(np.vstack([np.atleast_1d(np.asarray(x1, dtype=float)), np.atleast_1d(np.asarray(x2, dtype=float))]))
    s2 = validation.positive("noise_variance", noise_variance, allow_array=False)
    return PairMarginal(*_posterior(kernel, X, y, s2, pts, data))


def ellipse(mean, cov, level=2.0, points=100):
    """[points, 2] on the contour at Mahalanobis distance ``level`` of N(mean, cov) (2-D)."""
    t = np.linspace(0.0, 2.0 * np.pi, int(points))
    C = np.asarray(cov, dtype=float) + 1e-300 * np.eye(2)
    w, V = np.linalg.eigh(C)
    root = V * np.sqrt(np.maximum(w, 0.0))[None, :]
    return np.asarray(mean, dtype=float)[None, :] + level * (root @ np.vstack([np.cos(t), np.sin(t)])).T
