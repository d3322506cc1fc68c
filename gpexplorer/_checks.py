"""Input validation shared by every model: data arrays, prediction inputs, positive values."""

from __future__ import annotations

import math

import numpy as np


def validate_data(X, y):
    try:
        X = np.array(X, dtype=float)
        y = np.array(y, dtype=float)
    except (TypeError, ValueError) as err:
        raise ValueError(f"X and y must be numeric arrays ({err})") from None
    if X.ndim == 1:
        X = X[:, None]
    if X.ndim != 2:
        raise ValueError(f"X must have shape (N, D); got {X.shape}")
    if y.ndim == 2 and y.shape[1] == 1:
        y = y[:, 0]
    if y.ndim != 1:
        raise ValueError(f"y must have shape (N,) or (N, 1); got {y.shape}")
    if X.shape[0] == 0 or X.shape[1] == 0:
        raise ValueError(f"X is empty (shape {X.shape}); at least one data point is needed")
    if X.shape[0] != y.shape[0]:
        raise ValueError(f"X has {X.shape[0]} rows but y has {y.shape[0]} entries")
    for name, arr in (("X", X), ("y", y)):
        bad = ~np.isfinite(arr)
        if bad.any():
            raise ValueError(f"{name} contains {int(bad.sum())} NaN or infinite value(s)")
    return np.ascontiguousarray(X), np.ascontiguousarray(y)


def prediction_inputs(Xnew, d, min_rows=0, rows="S"):
    """Xnew as a C-contiguous (S, d) float array, checked; a 1-D array is S points when d = 1,
    else one point. ``min_rows`` = 1 rejects an empty Xnew; ``rows`` names S in the message."""
    try:
        Xnew = np.asarray(Xnew, dtype=float)
    except (TypeError, ValueError):
        raise ValueError("Xnew must be a numeric array") from None
    if Xnew.ndim == 1:
        Xnew = Xnew[:, None] if d == 1 else Xnew[None, :]
    if Xnew.ndim != 2 or Xnew.shape[1] != d or Xnew.shape[0] < min_rows:
        at_least = f" with {rows} >= {min_rows}" if min_rows else ""
        raise ValueError(f"Xnew must have shape ({rows}, {d}){at_least}; got {np.shape(Xnew)}")
    if not np.all(np.isfinite(Xnew)):
        raise ValueError("Xnew contains NaN or infinite values")
    return np.ascontiguousarray(Xnew)


def positive(name, value, allow_array):
    if type(value) in (float, int, np.float64):  # the common scalar case, without numpy overhead
        v = float(value)
        if v > 0.0 and math.isfinite(v):
            return v
    arr = np.asarray(value, dtype=float)
    if arr.ndim > 1 or (arr.ndim == 1 and not allow_array):
        raise ValueError(f"{name} must be a scalar{' or a 1-D array' if allow_array else ''}; got shape {arr.shape}")
    if arr.size == 0:
        raise ValueError(f"{name} must not be empty")
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{name} must be finite; got {value!r}")
    if np.any(arr <= 0):
        raise ValueError(f"{name} must be positive; got {value!r}")
    return float(arr) if arr.ndim == 0 else arr.copy()
