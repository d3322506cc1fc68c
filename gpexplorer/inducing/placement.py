"""Inducing-input initialisations (thesis §3.2.4-3.2.5: random, k-means, from another model).

Each returns a fresh float64 array Z of shape (M, D). Randomness comes only from the ``seed``
argument (a seed or a numpy Generator); nothing here touches global random state.

k-means never crashes on the data it is given: it clusters the standardised inputs (scipy's
k-means++ draws with probabilities D^2 / sum D^2, which are NaN when the squared distances
overflow, as they do at |X| ~ 1e154, or are all zero, and a NaN there has crashed the
interpreter), and falls back to a deterministic spread (:func:`spread`) when the data have no
more distinct points than M or scipy fails anyway.
"""

from __future__ import annotations

import warnings

import numpy as np

from gpexplorer.validation import count, inputs

INITIALISATIONS = ("even", "random", "kmeans")


class PlacementWarning(UserWarning):
    """k-means could not place the inducing inputs and a deterministic spread was used instead."""


def _rng(seed):
    return seed if isinstance(seed, np.random.Generator) else np.random.default_rng(seed)


def _check(X, M):
    X = inputs(X, "X", limit=None)  # numeric, (N, D), non-empty, finite
    return X, count("the number of inducing inputs M", M, 1)


def even(X, M, seed=None):
    """M evenly spaced points over the data range; in D > 1 a Latin hypercube over the box
    (evenly spaced in every coordinate, coordinates paired by a seeded shuffle)."""
    X, M = _check(X, M)
    lo, hi = X.min(axis=0), X.max(axis=0)
    if M == 1:
        return (lo / 2.0 + hi / 2.0)[None, :]
    grid = np.linspace(0.0, 1.0, M)
    if X.shape[1] == 1:
        return lo + grid[:, None] * (hi - lo) if np.all(np.isfinite(hi - lo)) else _between(lo, hi, grid[:, None])
    rng = _rng(seed)
    cols = np.stack([rng.permutation(grid) for _ in range(X.shape[1])], axis=1)
    return lo + cols * (hi - lo) if np.all(np.isfinite(hi - lo)) else _between(lo, hi, cols)


def _between(lo, hi, t):
    """lo (1 - t) + hi t without forming hi - lo (which overflows near float64's limit)."""
    return lo * (1.0 - t) + hi * t


def random_subset(X, M, seed=None):
    """M distinct training inputs chosen at random; if M > N, all of X plus uniform extras."""
    X, M = _check(X, M)
    rng = _rng(seed)
    N = X.shape[0]
    if M <= N:
        return X[rng.choice(N, M, replace=False)].copy()
    extra = rng.uniform(X.min(axis=0), X.max(axis=0), size=(M - N, X.shape[1]))
    return np.vstack([X, extra])


def spread(X, M):
    """M distinct data points (as many as there are) spread over the data deterministically:
    the distinct rows in lexicographic order, taken at evenly spaced ranks; if there are fewer
    than M distinct rows, they are repeated in turn."""
    X, M = _check(X, M)
    distinct = np.unique(X, axis=0)  # sorted lexicographically
    ranks = np.round(np.linspace(0, len(distinct) - 1, M)).astype(int) if M <= len(distinct) \
        else np.arange(M) % len(distinct)
    return distinct[ranks].copy()


def _spread_instead(X, M, reason):
    warnings.warn(f"k-means placement of M = {M} inducing inputs {reason}; a deterministic spread of distinct "
                  "data points was used instead (gpexplorer.inducing.placement.spread)", PlacementWarning, stacklevel=3)
    return spread(X, M)


#: data whose largest |value| lies in [1 / SAFE_SCALE, SAFE_SCALE] are clustered as they are
#: (bit for bit as before); others are first shifted and divided by one scale (every column
#: alike, so the clustering is the same in exact arithmetic)
SAFE_SCALE = 1e100


def conditioned(X):
    """(Xs, centre, scale) with X = Xs * scale + centre and Xs of order one when X is not of a
    safe magnitude (``SAFE_SCALE``); else (X, 0, 1). Computed without overflow."""
    peak = float(np.max(np.abs(X)))
    if 1.0 / SAFE_SCALE <= peak <= SAFE_SCALE or peak == 0.0:
        return X, 0.0, 1.0
    unit = X / peak
    centre = unit.mean(axis=0)
    spread_ = float(np.max(np.abs(unit - centre)))
    scale = spread_ if spread_ > 0 else 1.0
    return (unit - centre) / scale, centre * peak, scale * peak


def kmeans(X, M, seed=None):
    """k-means++ centres (scipy.cluster.vq.kmeans2), computed on rescaled inputs when X is of an
    extreme magnitude (:func:`conditioned`); a random subset when M >= N, and :func:`spread` when
    the data have fewer than M distinct points or scipy fails (module docstring)."""
    from scipy.cluster.vq import kmeans2  # imported on use: scipy.cluster pulls in scipy.spatial (0.4 s)

    X, M = _check(X, M)
    rng = _rng(seed)
    if M >= X.shape[0]:
        return random_subset(X, M, rng)
    Xs, centre, scale = conditioned(X)
    if len(np.unique(Xs, axis=0)) < M:  # k-means++ would divide by a zero sum of distances
        return _spread_instead(X, M, f"is impossible: the data have fewer than {M} distinct points")
    try:
        with warnings.catch_warnings(), np.errstate(all="ignore"):
            warnings.simplefilter("ignore", RuntimeWarning)
            centres, labels = kmeans2(Xs, M, minit="++", seed=rng)
    except (ValueError, IndexError, FloatingPointError, np.linalg.LinAlgError) as err:
        return _spread_instead(X, M, f"failed in scipy ({type(err).__name__}: {err})")
    if not np.all(np.isfinite(centres)):
        return _spread_instead(X, M, "gave non-finite centres")
    empty = np.setdiff1d(np.arange(M), labels)
    if empty.size:  # an empty cluster keeps a meaningless centre: put it on a data point
        centres[empty] = Xs[rng.choice(Xs.shape[0], empty.size, replace=False)]
    if scale == 1.0 and np.all(centre == 0.0):
        return centres
    with np.errstate(over="ignore"):
        out = centres * scale + centre
    return out if np.all(np.isfinite(out)) else _spread_instead(X, M, "gave centres that overflow when scaled back")


def initial_inducing_inputs(X, M, method="kmeans", seed=None):
    """Z for ``method`` in {"even", "random", "kmeans"}."""
    table = {"even": even, "random": random_subset, "kmeans": kmeans}
    if method not in table:
        raise ValueError(f"unknown inducing initialisation {method!r}; choose one of {INITIALISATIONS}")
    return table[method](X, M, seed)
