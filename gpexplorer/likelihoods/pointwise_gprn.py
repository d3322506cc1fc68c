"""The Gaussian process regression network likelihood (Wilson, Knowles & Ghahramani 2012; SAVIGP
paper sec. 6.2, SARCOS): P outputs mixing Q_f node functions with input-dependent weights.

At each input the Q = Q_f + P Q_f latent values are

    f_n = (g_n, vec W_n),   g_n in R^{Q_f} (the nodes),  W_n in R^{P x Q_f} (the weights, row major:
                            W_pj = f_n[Q_f + p Q_f + j]),

and the outputs are conditionally independent given f_n:

    p(y_n | f_n) = N(y_n; W_n g_n, sigma_y^2 I_P).

The nodes' own noise sigma_f of the original GPRN (g = ghat + sigma_f eps) is not a likelihood
parameter: it is folded into the node latents' GP prior (add a white-noise kernel to them). The
one parameter is ``variance`` = sigma_y^2 (log transform). With r = y - W g:

    log p          = -P/2 log(2 pi sigma_y^2) - |r|^2 / (2 sigma_y^2),
    d/dg_j         = sum_p r_p W_pj / sigma_y^2,
    d/dW_pj        = r_p g_j / sigma_y^2,
    d/dsigma_y^2   = (|r|^2 / sigma_y^2 - P) / (2 sigma_y^2).

Observations Y are (N, P) (a 1-D Y is one column, allowed only for P = 1); ``sample``,
``conditional_mean`` and ``conditional_variance`` return (..., N, P) (E[y | f] = W g, Var[y_p | f]
= sigma_y^2). The expected log density under a factorised Gaussian q(f) has a closed form
(``expected_log_density_exact``), the reference for the Monte Carlo estimators.

Estimators: the latent count grows as Q_f (P + 1), so Gauss-Hermite quadrature (n^Q nodes) is only
possible for Q <= 3 (Q_f = 1, P <= 2); use the "reparam" or "score" estimator beyond. The
estimators' fast path hands a likelihood only the first column of Y, so this class overrides the
public evaluation methods and the estimators take their plain (checked) path with the full Y.
"""

from __future__ import annotations

import math

import numpy as np

from gpexplorer.likelihoods.pointwise_base import LOG_2PI, ExpectedLogDensity, PointwiseLikelihood

__all__ = ["GPRN"]

#: largest number of latent functions Q = Q_f (P + 1) accepted
MAX_LATENT = 10_000


def _count(value, what):
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
        raise ValueError(f"gprn needs a positive integer {what}; got {value!r}")
    return int(value)


class GPRN(PointwiseLikelihood):
    """GPRN likelihood N(y; W g, sigma_y^2 I_P) (module docstring): ``n_outputs`` P (default 2),
    ``n_nodes`` Q_f (default 1), Q = Q_f (P + 1) latents; parameter ``variance`` = sigma_y^2."""

    name, label, kind = "gprn", "Gaussian process regression network", "regression"
    prior_start_is_saddle = True  # E[W g] = 0 and its gradient vanishes at zero means
    param_layout = {"variance": ("log", 0)}

    def __init__(self, n_outputs=2, n_nodes=1, variance=1.0):
        super().__init__()
        self.n_outputs = _count(n_outputs, "n_outputs")
        self.n_nodes = _count(n_nodes, "n_nodes")
        self.n_latent = self.n_nodes * (self.n_outputs + 1)
        if self.n_latent > MAX_LATENT:
            raise ValueError(f"gprn with n_outputs={self.n_outputs} and n_nodes={self.n_nodes} has "
                             f"{self.n_latent} latent functions; at most {MAX_LATENT} are supported")
        self.set_parameters(variance=variance)

    @property
    def variance(self):
        return self._values["variance"]

    # the latent layout ---------------------------------------------------------------------------
    def split(self, F):
        """(g (..., N, Q_f), W (..., N, P, Q_f)) from F (..., N, Q) (views, no checks)."""
        Qf = self.n_nodes
        return F[..., :Qf], F[..., Qf:].reshape(F.shape[:-1] + (self.n_outputs, Qf))

    def latent_index(self, kind, p=None, j=0):
        """Column of F holding node j (``kind="node"``) or weight W_pj (``kind="weight"``)."""
        if kind == "node":
            return int(j)
        if kind == "weight":
            return self.n_nodes + int(p) * self.n_nodes + int(j)
        raise ValueError(f"kind must be 'node' or 'weight'; got {kind!r}")

    def _mix(self, F):
        g, W = self.split(F)
        return np.einsum("...pj,...j->...p", W, g)

    # validation ----------------------------------------------------------------------------------
    def validate(self, Y):
        """Y as a float (N, P) array (a 1-D array is one column, only for P = 1), checked: numeric,
        non-empty, P columns, finite (ValueError otherwise)."""
        P = self.n_outputs
        try:
            Y = np.array(Y, dtype=float)
        except (TypeError, ValueError):
            raise ValueError(f"observations Y for likelihood {self.name!r} must be a numeric array") from None
        if Y.ndim == 1 and P == 1:
            Y = Y[:, None]
        if Y.ndim != 2 or Y.shape[1] != P:
            extra = " or (N,)" if P == 1 else ""
            raise ValueError(f"likelihood {self.name!r} with n_outputs={P} expects observations Y of shape "
                             f"(N, {P}){extra}; got shape {Y.shape}")
        if Y.shape[0] == 0:
            raise ValueError(f"observations Y for likelihood {self.name!r} are empty; "
                             "at least one data point is needed")
        bad = ~np.isfinite(Y)
        if bad.any():
            rows = bad.any(axis=1)
            raise ValueError(f"observations Y for likelihood {self.name!r} contain {int(bad.sum())} NaN or "
                             f"infinite value(s) (first at row {int(np.argmax(rows))}); GPRN needs every output "
                             "observed at every input")
        return np.ascontiguousarray(Y)

    def _pair(self, F, Y):
        Y = self.validate(Y)
        return self._latent(F, Y.shape[0]), Y

    def _observed(self, y):
        """The full (N, P) observations in the unchecked ``log_density_terms``."""
        y = np.asarray(y, dtype=float)
        if y.ndim == 1 and self.n_outputs == 1:
            y = y[:, None]
        if y.ndim != 2 or y.shape[1] != self.n_outputs:
            raise ValueError(f"likelihood {self.name!r} needs all {self.n_outputs} output columns of Y, shape "
                             f"(N, {self.n_outputs}); got shape {y.shape}")
        return y

    # public evaluation (overridden, so that the estimators pass the full Y: module docstring) ---
    def log_density(self, F, Y):
        """log p(y_n | f_n): F (..., N, Q), Y (N, P) -> (..., N)."""
        F, Y = self._pair(F, Y)
        return self._log_density(F, Y)

    def dlog_density_df(self, F, Y):
        """d log p(y_n | f_n) / d f_n: F (..., N, Q), Y (N, P) -> (..., N, Q)."""
        F, Y = self._pair(F, Y)
        return self._dlog_df(F, Y)

    def dlog_density_dparams(self, F, Y):
        """{"variance": d log p / d sigma_y^2 (..., N)}."""
        F, Y = self._pair(F, Y)
        return self._dlog_dparams(F, Y)

    def log_density_terms(self, F, y, slope=True, params=True):
        """(log p, d log p / df or None, {"variance": ...}) sharing the residual; ``y`` the full
        validated (N, P) Y (not a single column)."""
        y = self._observed(y)
        s2 = self.variance
        g, W = self.split(F)
        r = y - np.einsum("...pj,...j->...p", W, g)
        r2 = np.einsum("...p,...p->...", r, r)
        lp = -0.5 * self.n_outputs * (LOG_2PI + math.log(s2)) - 0.5 * r2 / s2
        slope_out = self._slope(r / s2, g, W) if slope else None
        dparams = {"variance": 0.5 * (r2 / s2 - self.n_outputs) / s2} if params else {}
        return lp, slope_out, dparams

    # implementations ----------------------------------------------------------------------------
    def _residual(self, F, Y):
        return Y - self._mix(F)

    def _log_density(self, F, Y):
        return self.log_density_terms(F, Y, slope=False, params=False)[0]

    def _slope(self, rs, g, W):
        """[d/dg (..., N, Q_f), d/dW (..., N, P Q_f)] from rs = r / sigma_y^2 (..., N, P)."""
        dg = np.einsum("...p,...pj->...j", rs, W)
        dW = rs[..., :, None] * g[..., None, :]
        return np.concatenate([dg, dW.reshape(dW.shape[:-2] + (-1,))], axis=-1)

    def _dlog_df(self, F, Y):
        g, W = self.split(F)
        return self._slope(self._residual(F, Y) / self.variance, g, W)

    def _dlog_dparams(self, F, Y):
        s2 = self.variance
        r = self._residual(F, Y)
        return {"variance": 0.5 * (np.einsum("...p,...p->...", r, r) / s2 - self.n_outputs) / s2}

    def sample(self, F, rng=None):
        """Draws y ~ N(W g, sigma_y^2 I_P): F (..., N, Q) -> (..., N, P)."""
        F = self._latent(F)
        mean = self._mix(F)
        return mean + math.sqrt(self.variance) * np.random.default_rng(rng).standard_normal(mean.shape)

    def _mean(self, F):
        return self._mix(F)

    def _variance(self, F):
        return np.full(F.shape[:-1] + (self.n_outputs,), self.variance)

    def conditional_mean(self, F):
        """E[y | f] = W g: F (..., N, Q) -> (..., N, P)."""
        return self._mean(self._latent(F))

    def conditional_variance(self, F):
        """Var[y_p | f] = sigma_y^2 (outputs independent given f): F (..., N, Q) -> (..., N, P)."""
        return self._variance(self._latent(F))

    def expected_log_density_exact(self, mean, var, Y) -> ExpectedLogDensity:
        """Closed form of E_{N(f; m, diag v)}[log p(y | f)] and its derivatives. With W and g
        independent under the factorised q, E|y - W g|^2 = A,

            A = sum_p [ e_p^2 + sum_j (vW_pj vg_j + vW_pj mg_j^2 + mW_pj^2 vg_j) ],  e = y - mW mg,
            value = -P/2 log(2 pi sigma_y^2) - A / (2 sigma_y^2),

        d/dm, d/dv = -dA/(2 sigma_y^2) and d/dsigma_y^2 = (A / sigma_y^2 - P) / (2 sigma_y^2)."""
        mean, var, Y = self.validate_moments(mean, var, Y)
        s2, P = self.variance, self.n_outputs
        mg, mW = self.split(mean)
        vg, vW = self.split(var)
        e = Y - np.einsum("npj,nj->np", mW, mg)
        spread = vW * vg[:, None, :] + vW * mg[:, None, :] ** 2 + mW ** 2 * vg[:, None, :]
        A = np.einsum("np,np->n", e, e) + spread.sum(axis=(1, 2))
        dA_mg = np.einsum("np,npj->nj", -2.0 * e, mW) + 2.0 * vW.sum(axis=1) * mg
        dA_mW = -2.0 * e[:, :, None] * mg[:, None, :] + 2.0 * mW * vg[:, None, :]
        dA_vg = (vW + mW ** 2).sum(axis=1)
        dA_vW = np.broadcast_to((vg + mg ** 2)[:, None, :], mW.shape)
        N = Y.shape[0]
        dmean = np.concatenate([dA_mg, dA_mW.reshape(N, -1)], axis=1) / (-2.0 * s2)
        dvar = np.concatenate([dA_vg, dA_vW.reshape(N, -1)], axis=1) / (-2.0 * s2)
        value = -0.5 * P * (LOG_2PI + math.log(s2)) - 0.5 * A / s2
        return ExpectedLogDensity(value, dmean, dvar, {"variance": 0.5 * (A / s2 - P) / s2})

    def __repr__(self):
        return f"GPRN(n_outputs={self.n_outputs}, n_nodes={self.n_nodes}, variance={self.variance:g})"
