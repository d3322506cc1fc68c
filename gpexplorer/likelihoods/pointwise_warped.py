"""The warped Gaussian process likelihood (Snelson et al. 2003; SAVIGP paper sec. 6, abalone).

p(y | f) = N(t(y); f, sigma^2) t'(y) (paper sec. 6, "WGP"), with the monotone warping of the
spec (``savigp.md``, "Likelihoods")

    t(y) = y + sum_{i=1..3} a_i tanh(b_i (y + c_i)),   a_i, b_i > 0, c_i real,
    t'(y) = 1 + sum_i a_i b_i sech^2(b_i (y + c_i))  (>= 1, so t is strictly increasing).

Derivatives, with r = (t(y) - f) / sigma^2, u_i = b_i (y + c_i), s_i = sech^2 u_i, h_i = tanh u_i:

    d/df       = r,
    d/dsigma^2 = ((t - f)^2 / sigma^2 - 1) / (2 sigma^2),
    d/da_i     = -r h_i + b_i s_i / t',
    d/db_i     = -r a_i (y + c_i) s_i + a_i s_i (1 - 2 u_i h_i) / t',
    d/dc_i     = -r a_i b_i s_i - 2 a_i b_i^2 s_i h_i / t'.
"""

from __future__ import annotations

import math

import numpy as np

from gpexplorer.likelihoods.pointwise_base import LOG_2PI, PointwiseLikelihood
from gpexplorer.likelihoods.quadrature import gauss_hermite

__all__ = ["WarpedGaussian"]

#: nodes of the Gauss-Hermite rule behind ``conditional_mean`` / ``conditional_variance``
MEAN_QUADRATURE_POINTS = 20


def _sech2(u):
    """sech^2 u = 4 e^{-2|u|} / (1 + e^{-2|u|})^2: no overflow, no 1 - tanh^2 cancellation."""
    z = np.exp(-2.0 * np.abs(u))
    return 4.0 * z / (1.0 + z) ** 2


class WarpedGaussian(PointwiseLikelihood):
    """Warped GP likelihood (module docstring), Q = 1. Parameters: ``variance`` (sigma^2) and the
    warping's ``a``, ``b`` (three positive values each, log transform) and ``c`` (three reals).

    Defaults a = b = (1, 1, 1), c = (-1, 0, 1): three unit steps centred at y = 1, 0, -1.
    Predictions in y space use ``inverse_warp`` (t is strictly increasing):
    E[y | f] = E_{t ~ N(f, sigma^2)}[t^{-1}(t)] by 20-point Gauss-Hermite quadrature over t.
    """

    name, label, kind = "warped_gaussian", "Warped Gaussian", "regression"
    param_layout = {"variance": ("log", 0), "a": ("log", 3), "b": ("log", 3), "c": ("identity", 3)}

    def __init__(self, variance=1.0, a=(1.0, 1.0, 1.0), b=(1.0, 1.0, 1.0), c=(-1.0, 0.0, 1.0)):
        super().__init__()
        self.set_parameters(variance=variance, a=a, b=b, c=c)

    @property
    def variance(self):
        return self._values["variance"]

    # the warping --------------------------------------------------------------------------------
    def _y(self, y):
        try:
            y = np.asarray(y, dtype=float)
        except (TypeError, ValueError):
            raise ValueError("values passed to the warping must be numeric") from None
        if not np.all(np.isfinite(y)):
            raise ValueError("values passed to the warping contain NaN or inf")
        return y

    def _terms(self, y):
        """u_i = b_i (y + c_i), tanh u_i, sech^2 u_i: shape y.shape + (3,)."""
        u = self._values["b"] * (y[..., None] + self._values["c"])
        return u, np.tanh(u), _sech2(u)

    def warp(self, y):
        """t(y) = y + sum_i a_i tanh(b_i (y + c_i)), elementwise (spec: warped likelihood)."""
        y = self._y(y)
        return y + self._terms(y)[1] @ self._values["a"]

    def warp_derivative(self, y):
        """t'(y) = 1 + sum_i a_i b_i sech^2(b_i (y + c_i)) (the Jacobian in p(y|f)), elementwise."""
        y = self._y(y)
        return 1.0 + self._terms(y)[2] @ (self._values["a"] * self._values["b"])

    def inverse_warp(self, z, tol=1e-13, max_iter=200):
        """y with t(y) = z, elementwise, by safeguarded Newton: the root lies in [z - A, z + A],
        A = sum_i a_i (|tanh| < 1). As in Numerical Recipes' rtsafe, a Newton step is replaced by
        bisection of the current bracket when it would leave the bracket or is not at most half the
        previous step, so the iteration converges even where sharp tanh steps make Newton
        oscillate. Points stop once their step is below tol (1 + |y|)."""
        z = self._y(z)
        a, ab = self._values["a"], self._values["a"] * self._values["b"]
        target = z.ravel()
        y = target.copy()
        lo, hi = target - a.sum(), target + a.sum()
        previous = hi - lo  # size of the last step
        active = np.arange(target.size)
        for _ in range(max_iter):
            if active.size == 0:
                break
            ya = y[active]
            _, h, s = self._terms(ya)
            r = ya + h @ a - target[active]
            lo[active] = np.where(r < 0, ya, lo[active])
            hi[active] = np.where(r > 0, ya, hi[active])
            newton = ya - r / (1.0 + s @ ab)
            good = (newton >= lo[active]) & (newton <= hi[active]) & (2.0 * np.abs(newton - ya) <= previous[active])
            y[active] = np.where(good, newton, 0.5 * (lo[active] + hi[active]))
            previous[active] = np.abs(y[active] - ya)
            active = active[previous[active] > tol * (1.0 + np.abs(ya))]
        return y.reshape(z.shape)

    # likelihood ---------------------------------------------------------------------------------
    def _log_density(self, F, y):
        s2 = self.variance
        r = self.warp(y) - F[..., 0]
        return -0.5 * (LOG_2PI + math.log(s2)) - 0.5 * r * r / s2 + np.log(self.warp_derivative(y))

    def _dlog_df(self, F, y):
        return ((self.warp(y) - F[..., 0]) / self.variance)[..., None]

    def _dlog_dparams(self, F, y):
        s2 = self.variance
        a, b, c = self._values["a"], self._values["b"], self._values["c"]
        u, h, s = self._terms(y)  # (N, 3)
        jac = self.warp_derivative(y)[:, None]  # t'(y), (N, 1)
        diff = self.warp(y) - F[..., 0]  # (..., N)
        r = (diff / s2)[..., None]
        return {
            "variance": 0.5 * (diff * diff / s2 - 1.0) / s2,
            "a": -r * h + b * s / jac,
            "b": -r * (a * (y[:, None] + c) * s) + a * s * (1.0 - 2.0 * u * h) / jac,
            "c": -r * (a * b * s) - 2.0 * a * b * b * s * h / jac,
        }

    def _sample(self, F, rng):
        return self.inverse_warp(F[..., 0] + math.sqrt(self.variance) * rng.standard_normal(F.shape[:-1]))

    def _nodes(self, F):
        x, w = gauss_hermite(MEAN_QUADRATURE_POINTS)
        return self.inverse_warp(F[..., 0, None] + math.sqrt(self.variance) * x), w

    def _mean(self, F):
        """E[y | f] = E_{t ~ N(f, sigma^2)}[t^{-1}(t)], 20-point Gauss-Hermite over t."""
        y, w = self._nodes(F)
        return y @ w

    def _variance(self, F):
        """Var[y | f] = E[(t^{-1}(t) - E[y | f])^2], same quadrature as ``conditional_mean``."""
        y, w = self._nodes(F)
        return (y - (y @ w)[..., None]) ** 2 @ w
