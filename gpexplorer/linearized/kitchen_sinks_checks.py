"""Argument checks of :class:`gpexplorer.linearized.kitchen_sinks.LinearizedKitchenSinks`: every bad input
(wrong shape, NaN / inf, empty data, absurd hyperparameters or loop options) becomes a ValueError
that says what was expected."""

from __future__ import annotations

import math

import numpy as np

__all__ = ["positive_parameter", "training_data", "prior_means", "newton_options", "POSITIVE_RANGE"]

#: accepted range of every positive hyperparameter (outside it the model is numerically meaningless)
POSITIVE_RANGE = (1e-12, 1e12)


def positive_parameter(name, value, size, size_label):
    """A float array of ``size`` entries from a scalar or a matching 1-D array; (array, tied)."""
    try:
        arr = np.asarray(value, dtype=float)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be numeric; got {value!r}") from None
    if arr.ndim > 1 or (arr.ndim == 1 and arr.shape[0] not in (1, size)):
        raise ValueError(f"{name} must be a scalar or have {size} entries ({size_label}); got shape {arr.shape}")
    if arr.size == 0:
        raise ValueError(f"{name} must not be empty")
    if not np.all(np.isfinite(arr)) or np.any(arr <= 0):
        raise ValueError(f"{name} must be positive and finite; got {value!r}")
    lo, hi = POSITIVE_RANGE
    if np.any(arr < lo) or np.any(arr > hi):
        raise ValueError(f"{name} = {value!r} is outside [{lo:g}, {hi:g}]; rescale the data")
    tied = arr.ndim == 0 or arr.shape[0] == 1
    return np.full(size, float(arr.reshape(-1)[0])) if tied else arr.copy(), tied


def training_data(X, Y, n_outputs):
    """(X (N, d), Y (N, P)) as contiguous float arrays; Y may be (N,) when P = 1."""
    try:
        X = np.array(X, dtype=float)
        Y = np.array(Y, dtype=float)
    except (TypeError, ValueError):
        raise ValueError("X and Y must be numeric arrays") from None
    if X.ndim == 1:
        X = X[:, None]
    if X.ndim != 2 or X.shape[0] == 0 or X.shape[1] == 0:
        raise ValueError(f"X must be a non-empty (N, d) array; got shape {X.shape}")
    if Y.ndim == 1 and n_outputs == 1:
        Y = Y[:, None]
    if Y.ndim != 2 or Y.shape[1] != n_outputs:
        raise ValueError(f"Y must have shape (N, {n_outputs}) for this forward model"
                         f"{' (or (N,))' if n_outputs == 1 else ''}; got {Y.shape}")
    if Y.shape[0] != X.shape[0]:
        raise ValueError(f"X has {X.shape[0]} rows but Y has {Y.shape[0]}")
    for name, arr in (("X", X), ("Y", Y)):
        if not np.all(np.isfinite(arr)):
            raise ValueError(f"{name} contains {int(np.sum(~np.isfinite(arr)))} NaN or infinite value(s)")
    return np.ascontiguousarray(X), np.ascontiguousarray(Y)


def prior_means(value, Q):
    """The constant prior mean of each latent task, (Q,) from a scalar or (Q,)."""
    try:
        means = np.broadcast_to(np.asarray(value, dtype=float), (Q,)).copy()
    except ValueError:
        raise ValueError(f"prior_mean must be a scalar or have {Q} entries; got {value!r}") from None
    if not np.all(np.isfinite(means)):
        raise ValueError("prior_mean must be finite")
    return means


def newton_options(kappa, Q, max_iter, max_cuts, tol):
    """(kappa, max_iter, max_cuts, tol) of the Newton loop, checked."""
    kappa = float(kappa)
    if not math.isfinite(kappa) or Q + kappa <= 0:
        raise ValueError(f"kappa must be finite with Q + kappa > 0 (Q = {Q}); got {kappa}")
    if isinstance(max_iter, bool) or not isinstance(max_iter, (int, np.integer)) or max_iter < 1:
        raise ValueError(f"max_iter must be a positive integer; got {max_iter!r}")
    if isinstance(max_cuts, bool) or not isinstance(max_cuts, (int, np.integer)) or max_cuts < 0:
        raise ValueError(f"max_cuts must be a non-negative integer; got {max_cuts!r}")
    if not (isinstance(tol, (int, float)) and math.isfinite(tol) and tol > 0):
        raise ValueError(f"tol must be a positive number; got {tol!r}")
    return kappa, int(max_iter), int(max_cuts), float(tol)
