"""Gaussian, Bernoulli (logit, probit), Poisson (log-Gaussian Cox) and softmax likelihoods.

The likelihoods of the SAVIGP experiments (paper sec. 6 and spec ``savigp.md``), each a
:class:`~gpexplorer.likelihoods.pointwise_base.PointwiseLikelihood`; the warped GP is in
:mod:`gpexplorer.likelihoods.pointwise_warped`, the registry in :mod:`gpexplorer.likelihoods.pointwise`.
"""

from __future__ import annotations

import math

import numpy as np
from scipy import special

from gpexplorer.likelihoods.pointwise_base import (LOG_2PI, ExpectedLogDensity, PointwiseLikelihood, check_class_labels,
                                                  describe_values)

__all__ = ["Gaussian", "Bernoulli", "BernoulliLogit", "BernoulliProbit", "Poisson", "Softmax", "MAX_LOG_RATE",
           "MAX_SAMPLED_RATE"]

#: |offset| and |log binsize| of a Poisson likelihood at most this: exp(f + offset) stays finite
MAX_LOG_RATE = 300.0
#: numpy's Poisson sampler refuses larger rates
MAX_SAMPLED_RATE = 1e18


class Gaussian(PointwiseLikelihood):
    """p(y | f) = N(y; f, sigma^2) (regression, paper sec. 6 Boston housing), Q = 1.

    log p = -1/2 log(2 pi sigma^2) - (y - f)^2 / (2 sigma^2);
    d/df = (y - f) / sigma^2;  d/dsigma^2 = ((y - f)^2 / sigma^2 - 1) / (2 sigma^2).
    """

    name, label, kind = "gaussian", "Gaussian", "regression"
    conjugate = True
    param_layout = {"variance": ("log", 0)}

    def __init__(self, variance=1.0):
        super().__init__()
        self.set_parameters(variance=variance)

    @property
    def variance(self):
        return self._values["variance"]

    def _log_density(self, F, y):
        s2 = self.variance
        r = y - F[..., 0]
        return -0.5 * (LOG_2PI + math.log(s2)) - 0.5 * r * r / s2

    def _dlog_df(self, F, y):
        return ((y - F[..., 0]) / self.variance)[..., None]

    def _dlog_dparams(self, F, y):
        s2 = self.variance
        r = y - F[..., 0]
        return {"variance": 0.5 * (r * r / s2 - 1.0) / s2}

    def log_density_terms(self, F, y, slope=True, params=True):
        s2 = self.variance
        r = y - F[..., 0]
        r2 = r * r
        lp = -0.5 * (LOG_2PI + math.log(s2)) - 0.5 * r2 / s2
        return lp, (r / s2)[..., None] if slope else None, {"variance": 0.5 * (r2 / s2 - 1.0) / s2} if params else {}

    def _sample(self, F, rng):
        return F[..., 0] + math.sqrt(self.variance) * rng.standard_normal(F.shape[:-1])

    def _mean(self, F):
        return F[..., 0].copy()

    def _variance(self, F):
        return np.full(F.shape[:-1], self.variance)

    def expected_log_density_exact(self, mean, var, Y) -> ExpectedLogDensity:
        """Closed form of E_{N(f; m, v)}[log N(y; f, sigma^2)] (the Gaussian case of the expected
        log likelihood, paper eq. 8/12), the reference for the quadrature:

            value = -1/2 log(2 pi sigma^2) - ((y - m)^2 + v) / (2 sigma^2),
            d/dm = (y - m) / sigma^2,  d/dv = -1 / (2 sigma^2),
            d/dsigma^2 = (((y - m)^2 + v) / sigma^2 - 1) / (2 sigma^2).
        """
        mean, var, Y = self.validate_moments(mean, var, Y)
        s2 = self.variance
        r2 = (Y - mean) ** 2 + var  # (N, 1)
        value = -0.5 * (LOG_2PI + math.log(s2)) - 0.5 * r2[:, 0] / s2
        dvar = np.full_like(var, -0.5 / s2)
        return ExpectedLogDensity(value, (Y - mean) / s2, dvar, {"variance": 0.5 * (r2[:, 0] / s2 - 1.0) / s2})


class Bernoulli(PointwiseLikelihood):
    """p(y | f) = Phi(s f) with s = 2y - 1 for a symmetric link Phi (Phi(-z) = 1 - Phi(z)), Q = 1.

    Labels may be given as {0, 1} or {-1, +1}; ``validate`` stores them as {0, 1}. Subclasses give
    log Phi (``_log_cdf``), its derivative (``_dlog_cdf``) and Phi (``_cdf``), all stable in both tails.
    d log p / df = s (log Phi)'(s f); E[y | f] = Phi(f); Var[y | f] = Phi(f) Phi(-f).
    """

    def _check_support(self, Y):
        if np.all((Y == 0.0) | (Y == 1.0)):  # the common case, without sorting
            return Y
        values = np.unique(Y)
        if np.all(np.isin(values, (0.0, 1.0))):
            return Y
        if np.all(np.isin(values, (-1.0, 1.0))):
            return (Y > 0).astype(float)
        bad = values[~np.isin(values, (-1.0, 0.0, 1.0))]
        if bad.size:
            raise ValueError(f"likelihood {self.name!r} needs labels in {{0, 1}} or {{-1, +1}}; got the value(s) "
                             f"{describe_values(bad)}")
        raise ValueError(f"likelihood {self.name!r} got labels -1, 0 and 1 together: use either {{0, 1}} or {{-1, +1}}")

    def _log_density(self, F, y):
        return self._log_cdf((2.0 * y - 1.0) * F[..., 0])

    def _dlog_df(self, F, y):
        s = 2.0 * y - 1.0
        return (s * self._dlog_cdf(s * F[..., 0]))[..., None]

    def _sample(self, F, rng):
        return (rng.random(F.shape[:-1]) < self._cdf(F[..., 0])).astype(float)

    def _mean(self, F):
        return self._cdf(F[..., 0])

    def _variance(self, F):
        return self._cdf(F[..., 0]) * self._cdf(-F[..., 0])


class BernoulliLogit(Bernoulli):
    """Logistic classification (paper sec. 6, breast cancer): Phi(z) = 1 / (1 + exp(-z)).

    log Phi(z) = log_expit(z) = min(z, 0) - log1p(exp(-|z|)); (log Phi)'(z) = expit(-z). The
    first is written out: numpy's vectorised exp and log1p take a fraction of the time of
    scipy's scalar ``log_expit`` (the same formula).
    """

    name, label, kind = "bernoulli_logit", "Bernoulli (logit)", "binary"

    def _log_cdf(self, z):
        e = np.abs(z)
        np.exp(np.negative(e, out=e), out=e)
        lp = np.log1p(e, out=e)
        return np.subtract(np.minimum(z, 0.0), lp, out=lp)

    def _dlog_cdf(self, z):
        return special.expit(-z)

    def log_density_terms(self, F, y, slope=True, params=True):
        """log_expit(z) = min(z, 0) - log1p(e) and expit(-z) from the one e = exp(-|z|), z = s f."""
        s = 2.0 * y - 1.0
        z = s * F[..., 0]
        e = np.abs(z)  # in place from here: fresh arrays cost page faults
        np.exp(np.negative(e, out=e), out=e)
        lp = np.log1p(e)
        g = None
        if slope:  # expit(-z) = 1 / (1 + e) for z < 0, e / (1 + e) for z >= 0
            g = np.add(e, 1.0)
            np.reciprocal(g, out=g)
            np.multiply(g, e, out=g, where=z >= 0.0)
            g *= s
            g = g[..., None]
        np.subtract(np.minimum(z, 0.0, out=z), lp, out=lp)
        return lp, g, {}

    def _cdf(self, z):
        return special.expit(z)


SQRT_2 = float(np.sqrt(2.0))
SQRT_2_OVER_PI = float(np.sqrt(2.0 / np.pi))


class BernoulliProbit(Bernoulli):
    """Probit classification: Phi(z) the standard normal CDF.

    log Phi(z) = log_ndtr(z); (log Phi)'(z) = phi(z) / Phi(z) = sqrt(2 / pi) / erfcx(-z / sqrt 2) (the inverse
    Mills ratio by the scaled complementary error function: about -z far in the left tail, 0 in the
    right, with no z^2 formed, which overflowed beyond |z| ~ 1e154).
    """

    name, label, kind = "bernoulli_probit", "Bernoulli (probit)", "binary"

    def _log_cdf(self, z):
        return special.log_ndtr(z)

    def _dlog_cdf(self, z):
        return SQRT_2_OVER_PI / special.erfcx(-z / SQRT_2)

    def log_density_terms(self, F, y, slope=True, params=True):
        """The value by log_ndtr, the slope by :meth:`_dlog_cdf`."""
        s = 2.0 * y - 1.0
        z = s * F[..., 0]
        lp = special.log_ndtr(z)
        if not slope:
            return lp, None, {}
        return lp, (s * self._dlog_cdf(z))[..., None], {}

    def _cdf(self, z):
        return special.ndtr(z)


class Poisson(PointwiseLikelihood):
    """Counts y ~ Poisson(lambda), lambda = binsize exp(f + offset): the log-Gaussian Cox process
    (paper sec. 6 coal mining, p(y|f) = lambda^y exp(-lambda) / y!), Q = 1.

    log p = y (log binsize + f + offset) - lambda - log y!;  d/df = y - lambda;
    E[y | f] = Var[y | f] = lambda. ``offset`` and ``binsize`` are fixed options (the spec's coal
    mining set-up uses offset = log(191/811), binsize 1), not optimised parameters.
    """

    name, label, kind = "poisson", "Poisson", "counts"

    def __init__(self, offset=0.0, binsize=1.0):
        super().__init__()
        try:
            offset, binsize = np.asarray(offset, dtype=float), np.asarray(binsize, dtype=float)
        except (TypeError, ValueError):
            raise ValueError(f"poisson offset and binsize must be numbers; got {offset!r}, {binsize!r}") from None
        if offset.ndim or not np.isfinite(offset) or abs(offset) > MAX_LOG_RATE:
            raise ValueError(f"poisson offset must be a finite scalar within +-{MAX_LOG_RATE:g} (the rate "
                             f"binsize exp(f + offset) must stay within float64); got {offset!r}")
        if binsize.ndim or not np.isfinite(binsize) or binsize <= 0 or abs(np.log(binsize)) > MAX_LOG_RATE:
            raise ValueError(f"poisson binsize must be a positive finite scalar with |log binsize| <= "
                             f"{MAX_LOG_RATE:g}; got {binsize!r}")
        self.offset, self.binsize = float(offset), float(binsize)

    def _check_support(self, Y):
        negative = Y[Y < 0]
        if negative.size:
            raise ValueError("likelihood 'poisson' needs non-negative counts; got the value(s) "
                             f"{describe_values(negative)}")
        fractional = Y[Y != np.round(Y)]
        if fractional.size:
            raise ValueError("likelihood 'poisson' needs integer counts; got the value(s) "
                             f"{describe_values(fractional)}")
        return Y

    def rate(self, F):
        """lambda = binsize exp(f + offset): F (..., N, 1) -> (..., N) (inf where it overflows)."""
        F = self._latent(F)
        with np.errstate(over="ignore"):
            return self.binsize * np.exp(F[..., 0] + self.offset)

    def _log_density(self, F, y):
        with np.errstate(over="ignore"):
            rate = self.binsize * np.exp(F[..., 0] + self.offset)
        return y * (math.log(self.binsize) + F[..., 0] + self.offset) - rate - special.gammaln(y + 1.0)

    def _dlog_df(self, F, y):
        return (y - self.rate(F))[..., None]

    def log_density_terms(self, F, y, slope=True, params=True):
        """The rate computed once for the value and the slope."""
        f = F[..., 0]
        with np.errstate(over="ignore"):
            rate = self.binsize * np.exp(f + self.offset)
        lp = y * (math.log(self.binsize) + f + self.offset) - rate - special.gammaln(y + 1.0)
        return lp, (y - rate)[..., None] if slope else None, {}

    def _sample(self, F, rng):
        rate = self.rate(F)
        if np.any(rate > MAX_SAMPLED_RATE):
            raise ValueError(f"poisson counts cannot be drawn at a rate of {np.max(rate):.3g} (offset "
                             f"{self.offset:g}, binsize {self.binsize:g}): numpy draws rates up to {MAX_SAMPLED_RATE:g}")
        return rng.poisson(rate).astype(float)

    def _mean(self, F):
        return self.rate(F)

    def _variance(self, F):
        return self.rate(F)

    def __repr__(self):
        return f"Poisson(offset={self.offset:g}, binsize={self.binsize:g})"


class Softmax(PointwiseLikelihood):
    """Multi-class classification (paper sec. 6.2, MNIST): p(y = k | f) = exp(f_k) / sum_j exp(f_j),
    Q = K = n_classes latent values per point, labels y in {0, ..., K-1}.

    log p = f_y - logsumexp(f);  d/df_k = [k = y] - p_k.
    ``class_probabilities`` gives the p_k; ``conditional_mean`` / ``conditional_variance`` are the
    mean and variance of the label *number* (sum_k k p_k and sum_k k^2 p_k - mean^2), kept for the
    common interface (sampler checks), not a prediction one would report.
    """

    name, label, kind = "softmax", "Softmax", "categorical"

    def __init__(self, n_classes=3):
        super().__init__()
        if isinstance(n_classes, bool) or not isinstance(n_classes, (int, np.integer)) or not 2 <= n_classes <= 1000:
            raise ValueError(f"softmax needs an integer n_classes between 2 and 1000; got {n_classes!r}")
        self.n_classes = self.n_latent = int(n_classes)

    def _check_support(self, Y):
        return check_class_labels(Y, self.name, self.n_classes)

    def class_probabilities(self, F):
        """p_k = softmax(f)_k: F (..., N, K) -> (..., N, K)."""
        return special.softmax(self._latent(F), axis=-1)

    def _picked(self, F, y):
        index = np.broadcast_to(y.astype(np.intp)[:, None], F.shape[:-1] + (1,))
        return np.take_along_axis(F, index, axis=-1)[..., 0]

    def _log_density(self, F, y):
        return self._picked(F, y) - special.logsumexp(F, axis=-1)

    def _dlog_df(self, F, y):
        out = -special.softmax(F, axis=-1)
        out += y.astype(np.intp)[:, None] == np.arange(self.n_classes)
        return out

    def _sample(self, F, rng):
        cumulative = np.cumsum(special.softmax(F, axis=-1), axis=-1)
        u = rng.random(F.shape[:-1])
        return np.minimum((u[..., None] >= cumulative).sum(axis=-1), self.n_classes - 1).astype(float)

    def _mean(self, F):
        return special.softmax(F, axis=-1) @ np.arange(self.n_classes, dtype=float)

    def _variance(self, F):
        k = np.arange(self.n_classes, dtype=float)
        p = special.softmax(F, axis=-1)
        return np.maximum(p @ (k * k) - (p @ k) ** 2, 0.0)

    def __repr__(self):
        return f"Softmax(n_classes={self.n_classes})"
