"""Sums over the support of y for a typed likelihood (:mod:`.pointwise_expression`), with bounded
work and memory whatever the observations.

The support of y is read off the data (:func:`support_of`): {0, 1} labels ("binary"), counts
0 .. max(100, 3 max y), or real values (a grid of ``REAL_POINTS`` over the data's range widened
by ``REAL_WIDEN`` spreads). :func:`mass_and_moments` returns, per value of f, log sum_y w_y p(y | f)
and the moments E[y | f], Var[y | f] of the normalised p(y | f).

Work and memory are bounded (issue 24, defect 4: a count of 3,000 used to build a (K, 40, 200,
9,001) array, 1e7 asked for 80 GiB):

* at most ``BLOCK`` (f, y) pairs are evaluated at once (8 MB per array: the peak of a call stays
  under about 100 MB whatever the data);
* binary labels, real grids and counts whose support has at most ``EXACT_POINTS`` integers are
  summed over the whole support, as before;
* a longer count support is searched per f: ``COARSE`` points spread over the window (evenly and
  geometrically from its low end) locate where log p(y | f) is within ``TAIL_NATS`` of its
  largest value; the window shrinks to that stretch (one coarse point beyond each side) and the
  search repeats until it holds at most ``WINDOW_POINTS`` integers, which are then summed. A
  window that stops shrinking (a density broader than that) is summed with a stride, weights
  equal to the stride (the trapezoid rule on the integers, exact for a density smooth on that
  scale). What lies beyond the window is below exp(-TAIL_NATS) of the peak: it is left out. A
  density with a second narrow peak that no coarse point sees is missed (the search assumes the
  mass sits in one stretch per f, as it does for every unimodal p(y | f));
* counts above ``MAX_COUNT_VALUE`` are refused: a log density at such counts is a difference of
  terms of size y log y, beyond float64's precision for a sum over neighbouring integers.

Values of log p(y | f) that are NaN or infinite at a y of the support count as probability zero
there; a value of f where nothing is left (every y has probability zero) raises ValueError
naming the expression and that f.
"""

from __future__ import annotations

import numpy as np

__all__ = ["support_of", "support_grid", "mass_and_moments", "describe_support", "MAX_COUNT", "MAX_COUNT_VALUE",
           "REAL_POINTS", "REAL_WIDEN", "EXACT_POINTS", "WINDOW_POINTS", "COARSE", "TAIL_NATS", "BLOCK"]

MAX_COUNT = 100  # a count support reaches at least this far
MAX_COUNT_VALUE = 1e12
REAL_POINTS = 801
REAL_WIDEN = 4.0
EXACT_POINTS = 2048
WINDOW_POINTS = 2048
COARSE = 257
TAIL_NATS = 40.0
BLOCK = 1 << 20
MAX_ZOOMS = 16
#: where the coarse points lie in a window [lo, up], as fractions of its width: evenly, and
#: geometrically near lo (where the mass of small counts sits)
_FRACTIONS = np.unique(np.concatenate([np.linspace(0.0, 1.0, (COARSE + 1) // 2),
                                       np.geomspace(1e-13, 1.0, COARSE // 2)]))


def support_of(y):
    """("binary" | "counts" | "real", low, high) of the observations' distinct values ``y``;
    ValueError for a count above MAX_COUNT_VALUE."""
    y = np.asarray(y, dtype=float)
    if np.all(np.isin(y, (0.0, 1.0))):
        return ("binary", 0.0, 1.0)
    if np.all(y >= 0) and np.all(y == np.round(y)):
        if y.max() > MAX_COUNT_VALUE:
            raise ValueError(f"a count of {y.max():.6g} is beyond what a typed likelihood can sum over "
                             f"(counts up to {MAX_COUNT_VALUE:.0e}: at larger counts a float64 log density is a "
                             "difference of terms of size y log y, too large to tell neighbouring counts apart)")
        return ("counts", 0.0, float(max(MAX_COUNT, 3.0 * y.max())))
    spread = max(float(y.max() - y.min()), 1e-3)
    return ("real", float(y.min() - REAL_WIDEN * spread), float(y.max() + REAL_WIDEN * spread))


def describe_support(support):
    kind, lo, hi = support
    if kind == "binary":
        return "y in {0, 1}"
    if kind == "counts":
        return f"the counts y = 0 .. {hi:.6g}"
    return f"y in [{lo:.6g}, {hi:.6g}] ({REAL_POINTS} points)"


def support_grid(support):
    """(ys, weights) of a support summed whole (binary, real, or a short count support)."""
    kind, lo, hi = support
    if kind == "binary":
        return np.array([0.0, 1.0]), np.ones(2)
    if kind == "counts":
        ys = np.arange(0.0, hi + 1.0)
        return ys, np.ones(ys.size)
    ys = np.linspace(lo, hi, REAL_POINTS)
    w = np.full(REAL_POINTS, ys[1] - ys[0])
    w[[0, -1]] *= 0.5
    return ys, w


def mass_and_moments(expression, f, support):
    """(log mass, mean, variance), each of f's shape: log sum_y w_y exp(log p(y | f)) and the
    moments of p(y | f) normalised over the support (module docstring); ValueError naming the
    expression and an f where p(y | f) has no mass."""
    f = np.asarray(f, dtype=float)
    flat = f.reshape(-1)
    out = np.empty((3, flat.size))
    kind, lo, hi = support
    if kind == "counts" and hi + 1.0 > EXACT_POINTS:
        _windowed(expression, flat, hi, out)
    else:
        ys, weights = support_grid(support)
        step = max(1, BLOCK // ys.size)
        for i in range(0, flat.size, step):
            rows = slice(i, min(flat.size, i + step))
            out[:, rows] = _sums(expression, flat[rows, None], ys, weights)
    bad = ~np.all(np.isfinite(out), axis=0)
    if bad.any():
        at = float(flat[bad][0])
        raise ValueError(f"p(y | f) = exp({expression.text}) has no finite mass over {describe_support(support)} "
                         f"at f = {at:.6g} ({int(bad.sum())} of {flat.size} values of f): the predictive "
                         "moments are undefined there")
    return tuple(a.reshape(f.shape) for a in out)


def _log_p(expression, f, ys):
    """log p(y | f), probability zero (-inf) where it is NaN or infinite."""
    lp = expression.evaluate_with(f=f, y=ys)
    return np.where(np.isfinite(lp), lp, -np.inf)


def _sums(expression, f, ys, weights):
    """(log mass, mean, variance) for f (m, 1) over ys (G,) or (m, G) with weights of that shape."""
    lp = _log_p(expression, f, ys)
    top = np.max(lp, axis=-1, keepdims=True)
    finite_top = np.where(np.isfinite(top), top, 0.0)
    with np.errstate(invalid="ignore", divide="ignore"):
        p = np.exp(lp - finite_top) * weights
        mass = np.sum(p, axis=-1)
        mean = np.sum(p * ys, axis=-1) / mass
        var = np.sum(p * (ys - mean[:, None]) ** 2, axis=-1) / mass
        log_mass = np.log(mass) + finite_top[:, 0]
    return log_mass, mean, var


def _windowed(expression, f, hi, out):
    """:func:`mass_and_moments` for a count support 0 .. hi longer than EXACT_POINTS (module
    docstring): per block of f, search the window, then sum it (strided where still too long)."""
    step = max(1, BLOCK // max(COARSE, WINDOW_POINTS))
    for i in range(0, f.size, step):
        rows = slice(i, min(f.size, i + step))
        lo, up = _search(expression, f[rows], hi)
        stride = np.maximum(1.0, np.ceil((up - lo) / (WINDOW_POINTS - 1)))
        points = int(np.max(np.floor((up - lo) / stride))) + 1
        ys = lo[:, None] + stride[:, None] * np.arange(points)[None, :]
        weights = np.where(ys <= up[:, None], stride[:, None], 0.0)
        ys = np.minimum(ys, up[:, None])
        out[:, rows] = _sums(expression, f[rows, None], ys, weights)


def _search(expression, f, hi):
    """Per f, the window [lo, up] of counts outside which log p(y | f) is more than TAIL_NATS
    below its largest value on the coarse points (or where the search stopped shrinking)."""
    lo, up = np.zeros(f.size), np.full(f.size, float(hi))
    active = np.ones(f.size, dtype=bool)
    for _ in range(MAX_ZOOMS):
        active &= (up - lo + 1.0) > WINDOW_POINTS
        if not active.any():
            break
        idx = np.flatnonzero(active)
        width = up[idx] - lo[idx]
        ys = np.round(lo[idx, None] + width[:, None] * _FRACTIONS[None, :])
        lp = _log_p(expression, f[idx, None], ys)
        top = np.max(lp, axis=1, keepdims=True)
        keep = lp >= top - TAIL_NATS  # all False where every coarse point has probability zero
        first = np.argmax(keep, axis=1)
        last = np.where(keep.any(axis=1), keep.shape[1] - 1 - np.argmax(keep[:, ::-1], axis=1), keep.shape[1] - 1)
        rows = np.arange(idx.size)
        new_lo = ys[rows, np.maximum(first - 1, 0)]
        new_up = ys[rows, np.minimum(last + 1, keep.shape[1] - 1)]
        shrunk = (new_up - new_lo) < 0.5 * width
        lo[idx] = np.where(shrunk, new_lo, lo[idx])
        up[idx] = np.where(shrunk, new_up, up[idx])
        active[idx] = shrunk
    return lo, up
