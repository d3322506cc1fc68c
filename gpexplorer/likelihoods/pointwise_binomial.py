"""The binomial likelihood with a logistic link (revrand's GLM likelihoods, report section 1.3).

y successes in n trials with success probability expit(f):

    log p(y | f) = log C(n, y) + y log expit(f) + (n - y) log expit(-f),   d/df = y - n expit(f),
    E[y | f] = n expit(f),   Var[y | f] = n expit(f) expit(-f).

``trials`` n is a fixed option (a positive integer shared by every point), not a parameter. Its
kind is "bounded_counts": counts with a known ceiling, which the black-box lab (whose uploads do
not carry n) does not offer.
"""

from __future__ import annotations

import numbers

import numpy as np
from scipy import special

from gpexplorer.likelihoods.pointwise_base import PointwiseLikelihood, describe_values

__all__ = ["Binomial", "MAX_TRIALS"]

#: largest number of trials accepted (numpy's sampler and exact integer counts in float64)
MAX_TRIALS = 2 ** 40


def _log_expit(z):
    return np.minimum(z, 0.0) - np.log1p(np.exp(-np.abs(z)))


class Binomial(PointwiseLikelihood):
    """y ~ Binomial(trials, expit(f)), y in 0..trials (module docstring), Q = 1."""

    name, label, kind = "binomial", "binomial (logit)", "bounded_counts"

    def __init__(self, trials=1):
        super().__init__()
        if (isinstance(trials, (bool, np.bool_)) or not isinstance(trials, (numbers.Integral, np.integer))
                or not 1 <= trials <= MAX_TRIALS):
            raise ValueError(f"binomial trials must be an integer in 1..{MAX_TRIALS}; got {trials!r}")
        self.trials = int(trials)

    def _check_support(self, Y):
        bad = Y[(Y < 0) | (Y > self.trials) | (Y != np.round(Y))]
        if bad.size:
            raise ValueError(f"likelihood 'binomial' with trials={self.trials} needs integer counts in "
                             f"0..{self.trials}; got the value(s) {describe_values(bad)}")
        return Y

    def _log_density(self, F, y):
        f = F[..., 0]
        n = self.trials
        log_choose = special.gammaln(n + 1.0) - special.gammaln(y + 1.0) - special.gammaln(n - y + 1.0)
        return log_choose + y * _log_expit(f) + (n - y) * _log_expit(-f)

    def _dlog_df(self, F, y):
        return (y - self.trials * special.expit(F[..., 0]))[..., None]

    def _sample(self, F, rng):
        return rng.binomial(self.trials, special.expit(F[..., 0])).astype(float)

    def _mean(self, F):
        return self.trials * special.expit(F[..., 0])

    def _variance(self, F):
        return self.trials * special.expit(F[..., 0]) * special.expit(-F[..., 0])

    def __repr__(self):
        return f"Binomial(trials={self.trials})"
