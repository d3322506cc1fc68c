"""Arrays at the model boundary: data (X, y), prediction inputs and parameter arrays.

Each check turns the value into a C-contiguous float64 array or raises a ValueError naming the
argument. The magnitude limit :data:`MAX_MAGNITUDE` = 1e100 is the largest |value| whose square
(1e200), squared distance between two such values (4e200 per dimension, times at most ~1e6
dimensions) and product with another such value stay finite in float64 (max 1.8e308) with
room for the sums and kernel scalings on top. Inputs beyond it are meaningless to a GP with a
lengthscale in its box anyway; standardise the data instead. (The pages' uploads have always
capped values at 1e100; the API now does the same.)
"""

from __future__ import annotations

import numpy as np

#: largest |value| of data, prediction inputs and real parameter arrays (module docstring)
MAX_MAGNITUDE = 1e100


def as_float_array(name, value):
    """``value`` as a float64 array, or a ValueError naming ``name``."""
    if isinstance(value, (str, bytes)):
        raise ValueError(f"{name} must be a numeric array; got the string {value!r:.40}")
    try:
        return np.array(value, dtype=float)
    except (TypeError, ValueError) as err:
        raise ValueError(f"{name} must be a numeric array ({err})") from None


def bounded(name, arr, limit=MAX_MAGNITUDE):
    """``arr`` unchanged if finite with |values| <= ``limit``; else a ValueError naming ``name``."""
    arr = np.asarray(arr)
    if arr.size == 0:
        return arr
    finite = np.isfinite(arr)
    if not finite.all():
        raise ValueError(f"{name} contains {int(arr.size - finite.sum())} NaN or infinite value(s)")
    if limit is not None:
        big = float(np.max(np.abs(arr)))
        if big > limit:
            raise ValueError(f"{name} has values up to {big:.3g} in magnitude; at most {limit:.0e} is accepted "
                             f"(beyond it float64 squares and products overflow); rescale it")
    return arr


def inputs(X, name="X", limit=MAX_MAGNITUDE):
    """X as a non-empty (N, D) float array (a 1-D array is N points in one dimension), finite and
    within ``limit``."""
    X = as_float_array(name, X)
    if X.ndim == 1:
        X = X[:, None]
    if X.ndim != 2:
        raise ValueError(f"{name} must have shape (N, D); got {X.shape}")
    if X.shape[0] == 0 or X.shape[1] == 0:
        raise ValueError(f"{name} is empty (shape {X.shape}); a non-empty (N, D) array is needed, "
                         "at least one data point")
    return np.ascontiguousarray(bounded(name, X, limit))


def targets(Y, name="y", limit=MAX_MAGNITUDE):
    """Targets already shaped by their owner (a likelihood's ``validate``), checked finite and in range."""
    return bounded(name, np.asarray(Y, dtype=float), limit)


def validate_data(X, y, y_limit=MAX_MAGNITUDE):
    """(X (N, D), y (N,)) checked: numeric, shapes, non-empty, finite, |X| <= 1e100 and |y| <=
    ``y_limit`` (None: finite only, for forward models with their own overflow checks)."""
    X = inputs(X, "X")
    y = as_float_array("y", y)
    if y.ndim == 2 and y.shape[1] == 1:
        y = y[:, 0]
    if y.ndim != 1:
        raise ValueError(f"y must have shape (N,) or (N, 1); got {y.shape}")
    if X.shape[0] != y.shape[0]:
        raise ValueError(f"X has {X.shape[0]} rows but y has {y.shape[0]} entries")
    bounded("y", y, y_limit)
    return X, np.ascontiguousarray(y)


def prediction_inputs(Xnew, d, min_rows=0, rows="S", name="Xnew"):
    """Xnew as a C-contiguous (S, d) float array, checked (finite, |Xnew| <= 1e100); a 1-D array
    is S points when d = 1, else one point. ``min_rows`` = 1 rejects an empty Xnew; ``rows``
    names S in the message."""
    Xnew = as_float_array(name, Xnew)
    if Xnew.ndim == 1:
        Xnew = Xnew[:, None] if d == 1 else Xnew[None, :]
    if Xnew.ndim != 2 or Xnew.shape[1] != d or Xnew.shape[0] < min_rows:
        at_least = f" with {rows} >= {min_rows}" if min_rows else ""
        raise ValueError(f"{name} must have shape ({rows}, {d}){at_least}, one column per input dimension; "
                         f"got {np.shape(Xnew)}")
    bad = ~np.isfinite(Xnew)
    if bad.any():
        raise ValueError(f"{name} contains NaN or infinite values ({int(bad.sum())} of them)")
    return np.ascontiguousarray(bounded(name, Xnew))


__all__ = ["MAX_MAGNITUDE", "as_float_array", "bounded", "inputs", "prediction_inputs", "targets", "validate_data"]
