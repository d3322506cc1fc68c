"""Inducing-input initialisations (thesis §3.2.4-3.2.5: random, k-means, from another model).

Each returns a fresh float64 array Z of shape (M, D). Randomness comes only from the ``seed``
argument (a seed or a numpy Generator); nothing here touches global random state.
"""

from __future__ import annotations

import numpy as np

INITIALISATIONS = ("even", "random", "kmeans")


def _rng(seed):
    return seed if isinstance(seed, np.random.Generator) else np.random.default_rng(seed)


def _check(X, M):
    X = np.asarray(X, dtype=float)
    if X.ndim == 1:
        X = X[:, None]
    if X.ndim != 2 or X.shape[0] == 0:
        raise ValueError(f"X must be a non-empty (N, D) array to place inducing inputs; got shape {X.shape}")
    if int(M) != M or M < 1:
        raise ValueError(f"the number of inducing inputs M must be a positive integer; got {M!r}")
    return X, int(M)


def even(X, M, seed=None):
    """M evenly spaced points over the data range; in D > 1 a Latin hypercube over the box
    (evenly spaced in every coordinate, coordinates paired by a seeded shuffle)."""
    X, M = _check(X, M)
    lo, hi = X.min(axis=0), X.max(axis=0)
    if M == 1:
        return ((lo + hi) / 2.0)[None, :]
    grid = np.linspace(0.0, 1.0, M)
    if X.shape[1] == 1:
        return (lo + grid[:, None] * (hi - lo))
    rng = _rng(seed)
    cols = [rng.permutation(grid) for _ in range(X.shape[1])]
    return lo + np.stack(cols, axis=1) * (hi - lo)


def random_subset(X, M, seed=None):
    """M distinct training inputs chosen at random; if M > N, all of X plus uniform extras."""
    X, M = _check(X, M)
    rng = _rng(seed)
    N = X.shape[0]
    if M <= N:
        return X[rng.choice(N, M, replace=False)].copy()
    extra = rng.uniform(X.min(axis=0), X.max(axis=0), size=(M - N, X.shape[1]))
    return np.vstack([X, extra])


def kmeans(X, M, seed=None):
    """k-means++ centres (scipy.cluster.vq.kmeans2); falls back to a random subset when M >= N."""
    from scipy.cluster.vq import kmeans2  # imported on use: scipy.cluster pulls in scipy.spatial (0.4 s)

    X, M = _check(X, M)
    rng = _rng(seed)
    if M >= X.shape[0]:
        return random_subset(X, M, rng)
    centres, labels = kmeans2(X, M, minit="++", seed=rng)
    empty = np.setdiff1d(np.arange(M), labels)
    if empty.size:  # an empty cluster keeps a meaningless centre: put it on a data point
        centres[empty] = X[rng.choice(X.shape[0], empty.size, replace=False)]
    return centres


def initial_inducing_inputs(X, M, method="kmeans", seed=None):
    """Z for ``method`` in {"even", "random", "kmeans"}."""
    table = {"even": even, "random": random_subset, "kmeans": kmeans}
    if method not in table:
        raise ValueError(f"unknown inducing initialisation {method!r}; choose one of {INITIALISATIONS}")
    return table[method](X, M, seed)
