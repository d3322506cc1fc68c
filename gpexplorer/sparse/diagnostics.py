"""Pathology detectors for sparse approximations (thesis §3.2): clumping, noise collapse, an
evidence above the exact log p(y) or above the upper bound, ill-conditioned Kuu. Plain numpy;
used by the dashboards' badges and by the chapter-3 experiments."""

from __future__ import annotations

import numpy as np


def _pairwise_distances(Z, lengthscale):
    """Distances between all pairs of rows of Z / lengthscale (condensed, like scipy's pdist).

    Plain numpy for M <= a few hundred: importing scipy.spatial took 0.4 s of the dashboards'
    cold start, for an O(M^2) computation that takes microseconds."""
    S = np.asarray(Z, dtype=float) / np.asarray(lengthscale, dtype=float)
    i, j = np.triu_indices(S.shape[0], k=1)
    return np.sqrt(np.sum((S[i] - S[j]) ** 2, axis=1))


def clumped_pairs(Z, lengthscale, tol=1e-2):
    """Number of pairs of inducing inputs closer than ``tol`` lengthscales (near-duplicates).

    Distances are measured after scaling each dimension by its lengthscale, so the test means
    the same for any kernel width. Thesis §3.2.2: FITC places inducing inputs on top of each
    other to switch them off at no cost; VFE never gains from it.
    """
    Z = np.asarray(Z, dtype=float)
    if Z.ndim == 1:
        Z = Z[:, None]
    if Z.shape[0] < 2:
        return 0
    return int(np.sum(_pairwise_distances(Z, lengthscale) < tol))


def min_scaled_distance(Z, lengthscale):
    """Smallest distance between two inducing inputs, in lengthscales (inf for M < 2)."""
    Z = np.asarray(Z, dtype=float)
    if Z.ndim == 1:
        Z = Z[:, None]
    if Z.shape[0] < 2:
        return float("inf")
    return float(np.min(_pairwise_distances(Z, lengthscale)))


def smallest_eigenvalue(Kuu):
    """Smallest eigenvalue of the symmetric Kuu (round-off can make it slightly negative)."""
    return float(np.linalg.eigvalsh(np.asarray(Kuu, dtype=float))[0])


def condition_number(Kuu, jitter=0.0):
    """2-norm condition number of Kuu + jitter I, the matrix that is factorised (eigenvalue ratio).

    Kuu is positive semi-definite, so eigenvalues that round-off pushes below zero are taken as
    zero: with a positive ``jitter`` the result is finite; without, inf when Kuu is singular."""
    eig = np.linalg.eigvalsh(np.asarray(Kuu, dtype=float))
    low, high = max(float(eig[0]), 0.0) + jitter, float(eig[-1]) + jitter
    return float("inf") if low <= 0.0 else high / low


def noise_collapsed(noise, exact_noise, ratio=0.5):
    """True when a fitted noise variance is below ``ratio`` times the exact GP's (§3.2.1)."""
    return bool(noise < ratio * exact_noise)


def exceeds(value, reference, tol=1e-8):
    """True when ``value`` is above ``reference`` by more than ``tol`` * max(1, |reference|)."""
    return bool(value > reference + tol * max(1.0, abs(reference)))


def exceeds_upper_bound(evidence, upper_bound, tol=1e-8):
    """True when an approximate evidence is above Titsias' upper bound on log p(y) (§3.2.6)."""
    return exceeds(evidence, upper_bound, tol)


def exceeds_exact(evidence, exact, tol=1e-8):
    """True when an approximate evidence is above the exact log p(y) at the same parameters: it
    overestimates the marginal likelihood (FITC, DTC and SoR can; VFE, a lower bound, cannot)."""
    return exceeds(evidence, exact, tol)
