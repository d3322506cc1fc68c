"""A log likelihood typed by the user: log p(y | f) as an expression in f and y.

``ExpressionLikelihood("y*f - exp(f) - gammaln(y + 1)")`` is a Poisson likelihood written out;
``"log_sigmoid((2*y - 1)*f)"`` the logistic one. The text goes through the whitelist parser of
:mod:`gpexplorer.likelihoods.expressions` (never ``eval``). SAVIGP needs nothing else of a
likelihood than its values (the score estimator, eq. 13); the reparameterised and quadrature
estimators also use d log p / df, taken here by central differences with the step of
:data:`~gpexplorer.likelihoods.expressions.SLOPE_STEP` max(1, |f|) (relative error ~1e-10).

Before a fit, the expression is checked where the fit will evaluate it, for the observed y
(:func:`~gpexplorer.likelihoods.expression_checks.check_log_likelihood`: finite, with a finite
slope, over the prior's and the data's range of f, and bounded above in f); a refusal names the
expression, the f and the y.

Predictions need E[y | f] and Var[y | f]. The support of y is read off the data when the
likelihood is first given observations: {0, 1} labels ("binary"), non-negative integers
("counts": y = 0 .. max(100, 3 max y)), else real values (a grid of ``REAL_POINTS`` over the
data's range widened by ``REAL_WIDEN`` times its spread). The moments are sums (or the trapezoid
rule) of y p(y | f) over that support, divided by the total mass, in blocks of bounded size and,
for a long count support, over a window found per f
(:mod:`~gpexplorer.likelihoods.expression_support`: a count of 1e7 costs as little as one of
3,000). :meth:`normalisation` reports the mass on a range of f: a typed log density that does
not sum to one still gives a fit, but its ELBO is then no bound on a probability (the lab says
so). It has no sampler.
"""

from __future__ import annotations

import numpy as np

from gpexplorer.likelihoods.expression_checks import check_log_likelihood
from gpexplorer.likelihoods.expression_support import (MAX_COUNT, REAL_POINTS, REAL_WIDEN, mass_and_moments,
                                                       support_grid, support_of)
from gpexplorer.likelihoods.expressions import SLOPE_STEP, check_finite, parse_expression
from gpexplorer.likelihoods.pointwise_base import PointwiseLikelihood

#: where normalisation is checked: f in this range
NORMALISATION_F = np.linspace(-3.0, 3.0, 13)


class ExpressionLikelihood(PointwiseLikelihood):
    """log p(y | f) given as text in f and y (module docstring); Q = 1, no parameters."""

    name, label = "expression", "Typed: log p(y | f) = ..."
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
        self._checked = np.empty(0)  # the observed values already checked (check_log_likelihood)

    def __repr__(self):
        return f"ExpressionLikelihood({self.text!r})"

    # observations -----------------------------------------------------------------------------
    def _check_support(self, Y):
        y = np.unique(Y[:, 0])
        support = support_of(y) if self.support is None else None
        new = y[~np.isin(y, self._checked)]
        if new.size:
            check_log_likelihood(self.expression, new)
            self._checked = np.union1d(self._checked, new)
        if support is not None:
            self.support = support
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
        _, mean, var = mass_and_moments(self.expression, F[..., 0], self._support())
        return mean, np.maximum(var, 0.0)

    def conditional_moments(self, F):
        """(E[y | f], Var[y | f]) at once: F (..., N, 1) -> two (..., N) arrays."""
        return self._moments(self._latent(F))

    def _mean(self, F):
        return self._moments(F)[0]

    def _variance(self, F):
        return self._moments(F)[1]

    def _support(self):
        if self.support is None:
            raise ValueError("the typed likelihood has not seen observations yet: its support of y is unknown")
        return self.support

    def _grid(self):
        """(ys, weights) of the whole support (binary, real, or counts)."""
        return support_grid(self._support())

    def normalisation(self, f=NORMALISATION_F):
        """(f, total mass of p(y | f) over the support) on a range of f: 1 for a proper likelihood."""
        f = np.asarray(f, dtype=float)
        try:
            log_mass, _, _ = mass_and_moments(self.expression, f, self._support())
        except ValueError:
            log_mass = np.full(f.shape, -np.inf)
        with np.errstate(over="ignore"):
            mass = np.exp(log_mass)
        return f, check_finite(mass, f, what=f"the mass of exp({self.text}) over y")


__all__ = ["ExpressionLikelihood", "MAX_COUNT", "NORMALISATION_F", "REAL_POINTS", "REAL_WIDEN"]
