"""The UGP inner loop as a fixed point: iterated statistical linearisation about the posterior.

EGP paper eq. 34 and 37: the UGP linearises g statistically about the marginals N(m_n, C_nn) of
its own posterior, and q(f) = N(m, C) is the exact posterior of that linearised model. So
(m, diag C) is a fixed point of the map

    T(m, v) = (m_t, v_t):  linearise g about N(m_n, v_n) (eq. 37), then m_t = H (y - b) (eq. 34)
                           and v_t = diag(K - K S W^-1 S K) (eq. 35).

The paper runs the EGP's step search on the MAP objective (31) for the UGP too, and notes that
for statistical linearisation "no such guarantees exist" (section 2.5): the UGP update is not a
Gauss-Newton step on (31), so it often stops on 'diverge' away from the fixed point, and F
(eq. 41) evaluated there depends on where it stopped. Measured with
``tests/benchmarks/free_energy_profile.py`` (g = tanh(2f), kernel variance on a log grid): the
MAP-monitored loop stops on 'diverge' at 6 and 7 of 14 grid points (folds 0 and 3) and F jumps
by up to ~50 nats between neighbours; at the fixed point F is a smooth function of the
hyperparameters.

The fixed point is a root of the scaled residual R(x) = (m_t - m) / sqrt(K_nn), (v_t - v) / K_nn,
x = (m / sqrt(K_nn), v / K_nn), found by scipy's DF-SANE (a derivative-free spectral residual
method with a non-monotone line search, ``scipy.optimize.root(method="df-sane")``). Measured on
the toy problems it needs 12-40 evaluations of T where damped Picard iteration needed 11-97
iterations plus step cuts, and it converges where Picard stalls (tanh2 at kernel variance 3) and
where Anderson mixing blows up (exp). Converged when max |R| <= tol. Each evaluation of T costs
one linearisation, one Cholesky of W and one triangular solve for diag C.
"""

from __future__ import annotations

import math

import numpy as np
from scipy import optimize

from gpexplorer.linearized.gauss_newton import (InnerPosterior, IterationRecord, NumericalFailure, forward_values,
                                                gauss_newton_target, linearize_checked, map_objective, posterior_var)

__all__ = ["posterior_fixed_point"]


class _Map:
    """T(m, v) at one point: the linearisation, W's factor and the target (m_t, beta_t, v_t)."""

    def __init__(self, K, y, sigma, linearize, mean, var, scale_mean, scale_var):
        self.lin, a, b = linearize_checked(linearize, mean, var)
        self.s, self.L, self.beta_target = gauss_newton_target(K, y, sigma, a, b)
        self.mean_target = K @ self.beta_target
        self.var_target = posterior_var(K, self.s, self.L)
        self.mean, self.var = mean, var
        self.scaled_residual = np.concatenate([(self.mean_target - mean) / scale_mean,
                                               (self.var_target - var) / scale_var])
        self.residual = float(np.max(np.abs(self.scaled_residual), initial=0.0))
        if not math.isfinite(self.residual):
            raise NumericalFailure("the statistical linearisation gave a non-finite posterior")


def posterior_fixed_point(K, y, noise_variance, forward, linearize, start=None, *, restart_from=None,
                          max_iter=100, tol=1e-6):
    """UGP inner loop: the fixed point of eq. 34/35/37 by DF-SANE (see the module doc).

    The arguments and result of :func:`gpexplorer.linearized.gauss_newton.gauss_newton` without its step
    search's (DF-SANE has its own line search): ``start`` =
    (mean, beta, var) with mean = K beta, ``restart_from`` = (mean, var) of a previous posterior,
    the prior (m = 0, v = diag K) otherwise. ``max_iter`` caps DF-SANE's iterations (at most
    4 max_iter evaluations of T).
    The trace records the MAP objective (31) at each iterate's target, for display (it need not
    increase; alpha 1 and no step cuts: DF-SANE's own line search is not a halving of the
    paper's step). The returned posterior is
    T at the iterate with the smallest residual: the exact posterior of the linearisation about
    (m, v), whose mean and marginal variances match (m, v) to ``tol`` when converged; otherwise
    the loop is flagged 'diverged'.
    """
    sigma = math.sqrt(noise_variance)
    diag = np.maximum(np.diag(K), 1e-300)
    scale_mean, scale_var = np.sqrt(diag), diag
    n = y.size
    if restart_from is not None:
        mean0, var0 = restart_from
    elif start is not None:
        mean0, _, var0 = start
    else:
        mean0, var0 = np.zeros_like(y), diag.copy()
    best = [_Map(K, y, sigma, linearize, np.asarray(mean0, float), np.asarray(var0, float), scale_mean, scale_var)]
    seen = {}  # x.tobytes() -> its T, so that the trace can show (31) at each iterate's target

    def residual(x):
        mean, var = x[:n] * scale_mean, np.maximum(x[n:], 1e-12) * scale_var
        try:
            here = _Map(K, y, sigma, linearize, mean, var, scale_mean, scale_var)
        except NumericalFailure:
            return np.full(2 * n, np.inf)
        if here.residual < best[0].residual:
            best[0] = here
        seen[x.tobytes()] = here
        return here.scaled_residual

    def target_objective(point):
        """(31) at a point's target m_t = K beta_t (beta_t exact, no K^-1 needed)."""
        mean = point.mean_target
        return map_objective(y, forward_values(forward, mean), mean, point.beta_target, noise_variance)

    trace = []

    def record(x, _):
        here = seen.get(np.asarray(x, dtype=float).tobytes(), best[0])
        seen.clear()
        iteration = len(trace)
        value = target_objective(here)
        trace.append(IterationRecord(iteration, value, 1.0 if iteration else 0.0, 0,
                                     "accepted" if iteration else "start"))

    x0 = np.concatenate([best[0].mean / scale_mean, best[0].var / scale_var])
    seen[x0.tobytes()] = best[0]
    if best[0].residual > tol:
        optimize.root(residual, x0, method="df-sane", callback=record,
                      options={"fatol": tol, "ftol": 0.0, "maxfev": 4 * int(max_iter),
                               "fnorm": lambda F: float(np.max(np.abs(F), initial=0.0))})
    else:
        record(x0, None)
    here = best[0]
    converged = here.residual <= tol
    if not converged:
        trace.append(IterationRecord(len(trace), trace[-1].map_objective, 0.0, 0, "diverged"))
    value = target_objective(here)
    return InnerPosterior(here.mean_target, here.beta_target, here.s, here.L, here.lin, value, trace, converged,
                      not converged, spread=here.var, var=here.var_target)

