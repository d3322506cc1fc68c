"""Scalar options at the model boundary: positive values, seeds, tolerances, counts, jitter.

Each returns the value in the type the model stores, or raises a ValueError (a TypeError for a
wrong kind of object, such as a seed given as a string) that names the option.
"""

from __future__ import annotations

import math
import numbers

import numpy as np

#: largest count accepted for an iteration budget or a number of restarts (a budget beyond it
#: would run for days; a fit can be continued by calling ``fit`` again)
MAX_ITERATIONS = 10 ** 7


def _is_integer(value):
    return isinstance(value, (numbers.Integral, np.integer)) and not isinstance(value, (bool, np.bool_))


def count(name, value, minimum=1, maximum=None):
    """An int in [minimum, maximum]; floats with an integer value (2.0) are accepted, bools are not."""
    if isinstance(value, (float, np.floating)) and math.isfinite(value) and float(value).is_integer():
        value = int(value)
    kind = {0: "a non-negative integer", 1: "a positive integer"}.get(minimum, f"an integer >= {minimum}")
    upper = f" (at most {maximum:,})" if maximum is not None else ""
    if not _is_integer(value):
        raise ValueError(f"{name} must be {kind}{upper}; got {value!r:.60}")
    value = int(value)
    if value < minimum or (maximum is not None and value > maximum):
        raise ValueError(f"{name} must be {kind}{upper}; got {value!r}")
    return value


def optional_count(name, value, minimum=1, maximum=None):
    """None (the default of the option) or :func:`count`."""
    return None if value is None else count(name, value, minimum, maximum)


def seed(value, name="seed"):
    """None, a non-negative integer or a numpy Generator / SeedSequence (what numpy's
    ``default_rng`` accepts, with its errors turned into ones naming ``name``)."""
    if value is None or isinstance(value, (np.random.Generator, np.random.SeedSequence)):
        return value
    if isinstance(value, (float, np.floating)) and math.isfinite(value) and float(value).is_integer():
        value = int(value)
    if not _is_integer(value):
        raise TypeError(f"{name} must be None, a non-negative integer or a numpy Generator; got {value!r:.60}")
    if value < 0:
        raise ValueError(f"{name} must be a non-negative integer; got {value}")
    return int(value)


def tolerance(name, value, allow_none=True):
    """A positive finite float (or None when the option has a default)."""
    if value is None and allow_none:
        return None
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (numbers.Real, np.floating, np.integer)):
        raise ValueError(f"{name} must be a positive number; got {value!r:.60}")
    value = float(value)
    if not (math.isfinite(value) and value > 0):
        raise ValueError(f"{name} must be a positive finite number; got {value!r}")
    return value


def jitter(value, name="jitter"):
    """A non-negative finite float (added to diag Kuu)."""
    try:
        v = float(value)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be a non-negative number; got {value!r:.60}") from None
    if not math.isfinite(v) or v < 0 or isinstance(value, (bool, np.bool_)):
        raise ValueError(f"{name} must be a non-negative finite number; got {value!r}")
    return v


def positive(name, value, allow_array):
    """A positive finite scalar (float) or, with ``allow_array``, a 1-D array of them (a copy)."""
    if type(value) in (float, int, np.float64):  # the common scalar case, without numpy overhead
        v = float(value)
        if v > 0.0 and math.isfinite(v):
            return v
    try:
        arr = np.asarray(value, dtype=float)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be a positive number{' or array' if allow_array else ''}; "
                         f"got {value!r:.60}") from None
    if arr.ndim > 1 or (arr.ndim == 1 and not allow_array):
        raise ValueError(f"{name} must be a scalar{' or a 1-D array' if allow_array else ''}; got shape {arr.shape}")
    if arr.size == 0:
        raise ValueError(f"{name} must not be empty")
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{name} must be finite; got {value!r}")
    if np.any(arr <= 0):
        raise ValueError(f"{name} must be positive; got {value!r}")
    return float(arr) if arr.ndim == 0 else arr.copy()


def positive_bounded(name, value, low, high):
    """A positive value (scalar or array) within [low, high], else a ValueError naming ``name``."""
    arr = np.asarray(value, dtype=float)
    if arr.size and (np.min(arr) < low or np.max(arr) > high):
        worst = float(np.max(arr)) if np.max(arr) > high else float(np.min(arr))
        raise ValueError(f"{name} = {worst:.3g} is outside [{low:.0e}, {high:.0e}], the range the model's "
                         f"float64 algebra survives; rescale the data")
    return value


__all__ = ["MAX_ITERATIONS", "count", "jitter", "optional_count", "positive", "positive_bounded", "seed", "tolerance"]
