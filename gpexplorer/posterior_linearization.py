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
MAP-monitored loop stops on 'diverge' at 8 of 14 grid points and F jumps by up to 150 nats between
neighbours; iterated to the fixed point, F is a smooth function of the hyperparameters.

The iteration is damped Picard: (m, v) <- (m, v) + alpha (T(m, v) - (m, v)), alpha = 1 first and
halved while the scaled residual r(m, v) = max_n max(|m_t - m|_n / sqrt(K_nn), |v_t - v|_n / K_nn)
does not fall below the current one; after ``max_step_cuts`` cuts the loop stops ('diverge') and
keeps the last iterate. It has converged when r <= tol. Each trial costs one linearisation and one
Cholesky of W, and an accepted trial's T is the next iteration's.
"""

from __future__ import annotations

import math

import numpy as np

from gpexplorer.gauss_newton import (IterationRecord, NumericalFailure, _forward_values, _gauss_newton_target,
                                     _linearize_checked, _map_objective, _Posterior, _posterior_var)

__all__ = ["posterior_fixed_point"]


class _Map:
    """T(m, v) at one point: the linearisation, W's factor and the target (m_t, beta_t, v_t)."""

    def __init__(self, K, y, sigma, linearize, mean, var, scale_mean, scale_var):
        self.lin, a, b = _linearize_checked(linearize, mean, var)
        self.s, self.L, self.beta_target = _gauss_newton_target(K, y, sigma, a, b)
        self.mean_target = K @ self.beta_target
        self.var_target = _posterior_var(K, self.s, self.L)
        d_mean = np.abs(self.mean_target - mean) / scale_mean
        d_var = np.abs(self.var_target - var) / scale_var
        self.residual = float(max(np.max(d_mean, initial=0.0), np.max(d_var, initial=0.0)))
        if not math.isfinite(self.residual):
            raise NumericalFailure("the statistical linearisation gave a non-finite posterior")


def posterior_fixed_point(K, y, noise_variance, forward, linearize, start=None, *, restart_from=None,
                          max_iter=100, tol=1e-6, max_step_cuts=10):
    """UGP inner loop: damped iteration to the fixed point of eq. 34/35/37 (see the module doc).

    Same arguments and result as :func:`gpexplorer.gauss_newton.gauss_newton`: ``start`` =
    (mean, beta, var) with mean = K beta, ``restart_from`` = (mean, var) of a previous posterior
    (its target is the start), the prior otherwise. The trace records the MAP objective (31) at
    each kept mean, for display; it need not increase. The returned posterior is the linearisation
    about the last mean and marginal variances, whose target they match to ``tol``.
    """
    sigma = math.sqrt(noise_variance)
    scale_mean = np.sqrt(np.maximum(np.diag(K), 1e-300))
    scale_var = np.maximum(np.diag(K), 1e-300)

    def evaluate(mean, var):
        return _Map(K, y, sigma, linearize, mean, var, scale_mean, scale_var)

    if restart_from is not None:
        first = evaluate(*restart_from)
        mean, beta, var = first.mean_target, first.beta_target, first.var_target
    elif start is not None:
        mean, beta, var = start
    else:
        mean, beta, var = np.zeros_like(y), np.zeros_like(y), np.diag(K).copy()
    var = np.asarray(var, dtype=float)
    value = _map_objective(y, _forward_values(forward, mean), mean, beta, noise_variance)
    if not math.isfinite(value):
        raise NumericalFailure("the MAP objective (31) is not finite at the starting mean")
    here = evaluate(mean, var)
    trace = [IterationRecord(0, value, 0.0, 0, "start")]
    converged = diverged = False
    for it in range(1, int(max_iter) + 1):
        if here.residual <= tol:
            converged = True
            break
        d_mean, d_beta, d_var = here.mean_target - mean, here.beta_target - beta, here.var_target - var
        alpha, accepted = 1.0, None
        for cuts in range(int(max_step_cuts) + 1):
            if cuts:
                alpha *= 0.5
            trial_var = np.maximum(var + alpha * d_var, 0.0)
            try:
                trial = evaluate(mean + alpha * d_mean, trial_var)
            except NumericalFailure:
                continue
            if trial.residual < here.residual:
                accepted = (trial, trial_var)
                break
        if accepted is None:
            trace.append(IterationRecord(it, value, alpha, int(max_step_cuts), "diverged"))
            diverged = True
            break
        here, var = accepted
        mean, beta = mean + alpha * d_mean, beta + alpha * d_beta
        value = _map_objective(y, _forward_values(forward, mean), mean, beta, noise_variance)
        trace.append(IterationRecord(it, value, alpha, cuts, "accepted"))
    else:
        converged = here.residual <= tol
    return _Posterior(mean, beta, here.s, here.L, here.lin, value, trace, converged, diverged, spread=var,
                      var=here.var_target)
