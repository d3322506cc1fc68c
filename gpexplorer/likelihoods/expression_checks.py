"""Where a typed log likelihood log p(y | f) is usable: checked once the observations are known
(issue 24, defect 6: ``-(y - sqrt(f))^2``, ``-exp(exp(exp(f))) + y*f`` and ``exp(f) + y`` were
accepted, then gave a NaN ELBO or NaN predictions, and the page never named the expression).

:func:`check_log_likelihood` refuses, with a ValueError naming the expression, the f and the y:

1. **Not finite at f = 0** for an observed y (the prior's mean).
2. **Not finite, or with a non-finite slope, where the fit evaluates it**: f in [-``PRIOR_SDS``,
   ``PRIOR_SDS``] (8 sd of the default N(0, 1) prior: the 40-point Gauss-Hermite nodes of the
   prior reach 8.1), and for each y within ``PRIOR_SDS`` of the f that best explains it (the
   point nearest 0 within a nat of the largest value on a sinh-spaced grid out to +-W,
   W = max(``WIDE_F``, 4 max |y|): the posterior of f goes there, e.g. f = log 3000 = 8 for a
   Poisson count of 3,000). The slope is the central difference the estimators use.
3. **Unbounded above in f**: for some observed y, log p(y | f) rises by more than a nat from its
   largest value for |f| <= ``PRIOR_SDS`` to f = +-W/2, and again to +-W and to +-2W
   (``exp(f) + y``, ``y*f``): no likelihood of y does that, and a fit chases f towards infinity
   (with ``exp(f)`` the ELBO has no maximum). A log density that merely does not sum to one over y
   (``y*f - exp(f)``, Poisson without its log y!) is not refused: the lab reports its mass.

At most ``CHECK_Y`` distinct observed values are checked (evenly spaced in rank, the smallest and
largest included); the work is a few (points x values) evaluations, well under a second.
"""

from __future__ import annotations

import numpy as np

from gpexplorer.likelihoods.expressions import SLOPE_STEP

__all__ = ["check_log_likelihood", "PRIOR_SDS", "WIDE_F", "CHECK_Y", "CHECK_POINTS", "WIDE_POINTS"]

PRIOR_SDS = 8.0
WIDE_F = 40.0
CHECK_Y = 2000
CHECK_POINTS = 321
WIDE_POINTS = 801


def check_log_likelihood(expression, y):
    """Raise ValueError (module docstring) unless ``expression`` (in f and y) is usable for the
    observed values ``y``; returns the range (lower, upper) of f that the checked points span."""
    y = _subset(np.unique(np.asarray(y, dtype=float)))
    text = expression.text
    lp0 = expression.evaluate_with(f=np.zeros_like(y), y=y)
    bad = ~np.isfinite(lp0)
    if bad.any():
        raise ValueError(f"log p(y | f) = {text} is not finite at f = 0 for y = {y[bad][0]:g} "
                         f"({int(bad.sum())} of the {y.size} distinct observations)")
    prior = np.union1d(np.linspace(-PRIOR_SDS, PRIOR_SDS, CHECK_POINTS), [0.0])[:, None]
    _check_at(expression, y, prior, f"f in [{-PRIOR_SDS:g}, {PRIOR_SDS:g}] ({PRIOR_SDS:g} sd of the prior around 0)")
    wide = max(WIDE_F, 4.0 * float(np.max(np.abs(y))))
    inner = expression.evaluate_with(f=np.linspace(-PRIOR_SDS, PRIOR_SDS, CHECK_POINTS)[:, None], y=y[None, :])
    inner_max = np.max(inner, axis=0)
    for sign in (1.0, -1.0):
        far = [expression.evaluate_with(f=sign * wide * s, y=y) for s in (0.5, 1.0, 2.0)]
        rising = far[0] > inner_max + 1.0
        for before, after in zip(far, far[1:]):
            rising &= (after > before + 1.0) | (after == np.inf)
        if rising.any():
            i = int(np.argmax(rising))
            values = ", ".join(f"{_show(v[i])} at f = {sign * wide * s:.3g}" for v, s in zip(far, (0.5, 1.0, 2.0)))
            raise ValueError(f"log p(y | f) = {text} grows without bound as f -> {'+' if sign > 0 else '-'}inf "
                             f"(y = {y[i]:g}: {_show(inner_max[i])} at most for |f| <= {PRIOR_SDS:g}, {values}): "
                             "no likelihood of y does that (exp(log p) would exceed any bound), and a fit would "
                             "chase f towards infinity")
    best = _best_f(expression, y, wide)
    around = best[None, :] + np.linspace(-PRIOR_SDS, PRIOR_SDS, CHECK_POINTS)[:, None]
    _check_at(expression, y, around, f"f within {PRIOR_SDS:g} prior sd of the f that best explains that y")
    return float(min(-PRIOR_SDS, best.min() - PRIOR_SDS)), float(max(PRIOR_SDS, best.max() + PRIOR_SDS))


def _check_at(expression, y, f, where):
    """Refuse unless log p and its slope (the estimators' central difference) are finite at f
    (P, 1) or (P, len(y)) for every y."""
    values = expression.evaluate_with(f=f, y=y[None, :])
    _refuse(values, f, y, f"log p(y | f) = {expression.text}", where)
    h = SLOPE_STEP * np.maximum(1.0, np.abs(f))
    slope = (expression.evaluate_with(f=f + h, y=y[None, :]) - expression.evaluate_with(f=f - h, y=y[None, :]))
    with np.errstate(all="ignore"):
        slope = slope / (2.0 * h)
    _refuse(slope, f, y, f"the slope d/df of log p(y | f) = {expression.text}", where)


def _subset(y):
    if y.size <= CHECK_Y:
        return y
    return y[np.unique(np.linspace(0, y.size - 1, CHECK_Y).round().astype(int))]


def _best_f(expression, y, wide):
    """Per y, the f nearest 0 within a nat of log p's largest value on a sinh-spaced grid out to
    +-wide (module docstring)."""
    grid = np.sinh(np.linspace(-np.arcsinh(wide), np.arcsinh(wide), WIDE_POINTS))
    lp = expression.evaluate_with(f=grid[:, None], y=y[None, :])
    lp = np.where(np.isfinite(lp), lp, -np.inf)
    near = lp >= np.max(lp, axis=0, keepdims=True) - 1.0
    distance = np.where(near, np.abs(grid)[:, None], np.inf)
    return grid[np.argmin(distance, axis=0)]


def _refuse(values, f, y, what, where):
    bad = ~np.isfinite(values)
    if bad.any():
        i, j = np.argwhere(bad)[0]
        kind = "NaN" if np.isnan(values[i, j]) else ("+inf" if values[i, j] > 0 else "-inf")
        at = f[i, j if f.shape[1] > 1 else 0]
        raise ValueError(f"{what} is {kind} at f = {at:.4g} for y = {y[j]:g} ({int(bad.sum())} of "
                         f"{values.size} checked points); it must be finite for every observed y and every {where}")


def _show(v):
    return f"{v:.3g}"
