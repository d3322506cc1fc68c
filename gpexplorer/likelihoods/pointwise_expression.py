"""A log likelihood typed by the user: log p(y | f) as an expression in f and y.

``ExpressionLikelihood("y*f - exp(f) - gammaln(y + 1)")`` is a Poisson likelihood written out;
``"log_sigmoid((2*y - 1)*f)"`` the logistic one. The text goes through the whitelist parser of
:mod:`gpexplorer.likelihoods.expressions` (never ``eval``). SAVIGP needs nothing else of a
likelihood than its values (the score estimator, eq. 13); the reparameterised and quadrature
estimators also use d log p / df, taken here by central differences with the step of
:data:`~gpexplorer.likelihoods.expressions.SLOPE_STEP` max(1, |f|) (relative error ~1e-10).

Predictions need E[y | f] and Var[y | f]. The support of y is read off the data when the
likelihood is first given observations: {0, 1} labels ("binary"), non-negative integers
("counts": y = 0 .. max(100, 3 max y)), else real values (a grid of ``REAL_POINTS`` over the
data's range widened by ``REAL_WIDEN`` times its spread). The moments are sums (or the trapezoid
rule) of y p(y | f) over that support, divided by the total mass, and :meth:`normalisation`
reports that mass on a range of f: a typed log density that does not sum to one still gives a
fit, but its ELBO is then no bound on a probability (the lab says so). It has no sampler.
"""

from __future__ import annotations

import numpy as np

from gpexplorer.likelihoods.expressions import SLOPE_STEP, check_finite, parse_expression
from gpexplorer.likelihoods.pointwise_base import PointwiseLikelihood

MAX_COUNT = 100
REAL_POINTS = 801
REAL_WIDEN = 4.0
#: where normalisation is checked: f in this range
NORMALISATION_F = np.linspace(-3.0, 3.0, 13)


class ExpressionLikelihood(PointwiseLikelihood):
    """log p(y | f) given as text in f and y (module docstring); Q = 1, no parameters."""

    name = "expression"
    n_latent = 1
    param_layout = {}

    def __init__(self, text="y*f - exp(f) - gammaln(y + 1)"):
        super().__init__()
        self.expression = parse_expression(text, variables=("f", "y"))
        if "f" not in self.expression.variables:
            raise ValueError(f"log p(y | f) = {self.expression.text} does not depend on f: the GP would have "
                             "nothing to explain")
        self.text = self.expression.text
        self.support = None  # set from the first observations seen

    def __repr__(self):
        return f"ExpressionLikelihood({self.text!r})"

    # observations -----------------------------------------------------------------------------
    def _check_support(self, Y):
        y = np.unique(Y[:, 0])
        values = self.expression.evaluate_with(f=np.zeros_like(y), y=y)
        bad = ~np.isfinite(values)
        if bad.any():
            raise ValueError(f"log p(y | f) = {self.text} is not finite at f = 0 for y = {y[bad][0]:g} "
                             f"({int(bad.sum())} of the {y.size} distinct observations)")
        if self.support is None:
            self.support = _support_of(y)
        return Y

    # evaluation -------------------------------------------------------------------------------
    def _log_density(self, F, y):
        return self.expression.evaluate_with(f=F[..., 0], y=y)

    def _dlog_df(self, F, y):
        f = F[..., 0]
        h = SLOPE_STEP * np.maximum(1.0, np.abs(f))
        up = self.expression.evaluate_with(f=f + h, y=y)
        down = self.expression.evaluate_with(f=f - h, y=y)
        return ((up - down) / (2.0 * h))[..., None]

    def _sample(self, F, rng):
        raise ValueError(f"a typed likelihood (log p(y | f) = {self.text}) has no sampler")

    def _moments(self, F):
        ys, weights = self._grid()
        f = F[..., 0][..., None]
        logp = self.expression.evaluate_with(f=f, y=ys)  # (..., N, G)
        logp = np.where(np.isfinite(logp), logp, -np.inf)
        top = np.max(logp, axis=-1, keepdims=True)
        p = np.exp(logp - np.where(np.isfinite(top), top, 0.0)) * weights
        mass = np.sum(p, axis=-1)
        mean = np.sum(p * ys, axis=-1) / mass
        second = np.sum(p * ys ** 2, axis=-1) / mass
        return mean, np.maximum(second - mean ** 2, 0.0)

    def _mean(self, F):
        return self._moments(F)[0]

    def _variance(self, F):
        return self._moments(F)[1]

    def _grid(self):
        if self.support is None:
            raise ValueError("the typed likelihood has not seen observations yet: its support of y is unknown")
        kind, lo, hi = self.support
        if kind == "binary":
            return np.array([0.0, 1.0]), np.ones(2)
        if kind == "counts":
            ys = np.arange(0.0, hi + 1.0)
            return ys, np.ones(ys.size)
        ys = np.linspace(lo, hi, REAL_POINTS)
        w = np.full(REAL_POINTS, ys[1] - ys[0])
        w[[0, -1]] *= 0.5
        return ys, w

    def normalisation(self, f=NORMALISATION_F):
        """(f, total mass of p(y | f) over the support) on a range of f: 1 for a proper likelihood."""
        ys, weights = self._grid()
        f = np.asarray(f, dtype=float)
        logp = self.expression.evaluate_with(f=f[:, None], y=ys)
        with np.errstate(over="ignore"):
            mass = np.sum(np.exp(np.where(np.isfinite(logp), logp, -np.inf)) * weights, axis=-1)
        return f, check_finite(mass, f, what=f"the mass of exp({self.text}) over y")


def _support_of(y):
    """("binary" | "counts" | "real", low, high) of the observations' distinct values ``y``."""
    if np.all(np.isin(y, (0.0, 1.0))):
        return ("binary", 0.0, 1.0)
    if np.all(y >= 0) and np.all(y == np.round(y)):
        return ("counts", 0.0, float(max(MAX_COUNT, 3.0 * y.max())))
    spread = max(float(y.max() - y.min()), 1e-3)
    return ("real", float(y.min() - REAL_WIDEN * spread), float(y.max() + REAL_WIDEN * spread))


__all__ = ["ExpressionLikelihood"]
