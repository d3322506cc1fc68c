"""The inner loop of the EGP/UGP: Gauss-Newton updates of the posterior mean with a step-length
search on the MAP objective (EGP paper eq. 31-37, section 2.5).

Numerically stable form (see :mod:`gpexplorer.linearized.gp` for the derivation): with
s = a / sigma, every iteration factorises W = I + diag(s) K diag(s) only, and the mean is carried
with beta = K^-1 m. The step-length search and the per-iteration records are shared with the
kitchen-sinks models (:mod:`gpexplorer.linearized.kitchen_sinks`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np
from scipy.linalg import blas, lapack

from gpexplorer.linearized._loops import lower_W

__all__ = ["IterationRecord", "StepSearchResult", "step_length_search", "gauss_newton", "NumericalFailure",
           "InnerPosterior", "Linearizer", "cholesky_W", "scaled_rows", "posterior_var", "map_objective",
           "linearize_checked", "gauss_newton_target", "forward_values"]


# ------------------------------------------------------------------------------------------
# step-length search (EGP paper section 2.5), shared with the kitchen-sinks models
# ------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class StepSearchResult:
    """Outcome of :func:`step_length_search`.

    ``status`` is "accepted" (``value``/``point`` are the new iterate), "stalled" (a step
    changed the objective by less than the tolerance in the wrong direction: converged at
    rounding level, keep the current point) or "diverged" (every step length up to the last
    cut made the objective worse: the paper's 'diverge' condition; keep the current point).
    """

    alpha: float
    value: float
    point: Any
    cuts: int
    status: str

    @property
    def accepted(self) -> bool:
        return self.status == "accepted"


def step_length_search(evaluate: Callable[[float], tuple[float, Any]], current_value: float, *,
                       shrink: float = 0.5, max_cuts: int = 10, tolerance: float = 0.0
                       ) -> StepSearchResult:
    """Backtracking on the Newton step length for an objective to be *maximised*.

    EGP paper section 2.5: start with alpha = 1 and multiply alpha by ``shrink`` until the MAP
    objective (31) is no worse than ``current_value``; after ``max_cuts`` cuts give up with the
    'diverge' condition (the caller keeps its last good iterate). ``evaluate(alpha)`` returns
    (objective value, candidate point); NaN counts as worse. A trial that is worse by no more
    than ``tolerance`` ends the search as "stalled" instead of cutting further.
    """
    if not 0.0 < shrink < 1.0:
        raise ValueError(f"shrink must lie in (0, 1); got {shrink}")
    if int(max_cuts) < 0:
        raise ValueError(f"max_cuts must be >= 0; got {max_cuts}")
    alpha = 1.0
    for cuts in range(int(max_cuts) + 1):
        if cuts:
            alpha *= shrink
        value, point = evaluate(alpha)
        if value >= current_value:
            return StepSearchResult(alpha, value, point, cuts, "accepted")
        if value >= current_value - tolerance:
            return StepSearchResult(alpha, current_value, None, cuts, "stalled")
    return StepSearchResult(alpha, current_value, None, int(max_cuts), "diverged")


# ------------------------------------------------------------------------------------------
# inner loop: Gauss-Newton on the posterior mean (eq. 31, 34-37)
# ------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class IterationRecord:
    """One Gauss-Newton iteration of the inner loop (what the dashboard plots).

    ``map_objective`` is eq. 31 at the mean kept after the iteration; iteration 0 (status
    "start") is the starting mean. ``status``: "start", "accepted", "stalled" or "diverged".
    """

    iteration: int
    map_objective: float
    alpha: float
    step_cuts: int
    status: str

    @property
    def accepted(self) -> bool:
        return self.status == "accepted"

    @property
    def diverged(self) -> bool:
        return self.status == "diverged"


class NumericalFailure(ValueError):
    """The inner loop met non-finite numbers (e.g. exp overflow at absurd hyperparameters)."""


@dataclass
class InnerPosterior:
    """Inner-loop result: q(f) = N(m, C) with C = K - K S W^-1 S K, S = diag(s).

    (s, chol_W, linearization) come from the linearisation about the returned mean's
    predecessor (or about the mean itself when the last step was rejected); ``spread`` is the
    variance the last unscented linearisation used (a warm start's first sigma points).
    """

    mean: np.ndarray          # m
    beta: np.ndarray          # K^-1 m
    s: np.ndarray             # a / sigma of the linearisation that defines C
    chol_W: np.ndarray        # lower Cholesky factor of W = I + S K S (upper triangle unused)
    linearization: Any        # gpexplorer.linearized.linearization.Linearization behind s and b
    map_objective: float      # eq. 31 at mean
    trace: list
    converged: bool
    diverged: bool
    spread: np.ndarray | None = None
    var: np.ndarray | None = None   # diag(C), computed on demand


def cholesky_W(K, s):
    """Lower Cholesky factor of W = I + diag(s) K diag(s) (eigenvalues >= 1 for PSD K)."""
    L, info = lapack.dpotrf(lower_W(K, s), lower=1, clean=0, overwrite_a=1)
    if info != 0:
        raise NumericalFailure("the Cholesky of I + Lambda^-1/2 A K A Lambda^-1/2 failed: K is not positive "
                               "semi-definite or the linearisation slopes are not finite")
    return L


def scaled_rows(s, M):
    """diag(s) M for M [N, S] as a Fortran-ordered array (what LAPACK takes without a copy)."""
    return (M.T * s).T


def posterior_var(K, s, L):
    """diag(C), C = K - K S W^-1 S K (eq. 35), via V = L_W^-1 S K (one triangular solve)."""
    V, _ = lapack.dtrtrs(L, scaled_rows(s, K), lower=1)
    return np.maximum(np.diag(K) - np.einsum("ij,ij->j", V, V), 0.0)


def map_objective(y, g_mean, mean, beta, noise_variance):
    """Eq. 31: -(y - g(m))^T (y - g(m)) / (2 sigma^2) - m^T K^-1 m / 2, with K^-1 m = beta."""
    r = y - g_mean
    return -0.5 * (r @ r) / noise_variance - 0.5 * (mean @ beta)


def linearize_checked(linearize, mean, var):
    """(Linearization, a [N], b [N]) about (mean, var) (eq. 36/37); NumericalFailure if not finite."""
    try:
        lin = linearize(mean, var)
    except ValueError as err:  # the forward model left its range (overflow, NaN)
        raise NumericalFailure(str(err)) from None
    a, b = lin.A[:, 0, 0], lin.b[:, 0]
    if not (np.all(np.isfinite(a)) and np.all(np.isfinite(b))):
        raise NumericalFailure("the linearisation of the forward model is not finite at the current mean")
    return lin, a, b


def gauss_newton_target(K, y, sigma, a, b):
    """(s, L_W, beta_t): the target m_t = H (y - b) = K beta_t of eq. 34 for slopes a, intercepts b.

    H (y - b) = K A (Lambda + A K A)^-1 (y - b) = K S W^-1 (y - b) / sigma with S = diag(a) / sigma.
    """
    s = a / sigma
    L = cholesky_W(K, s)
    w = blas.dtrsv(L, blas.dtrsv(L, (y - b) / sigma, lower=1), lower=1, trans=1)
    return s, L, s * w


#: a linear convergence rate below this lets the loop stop on the predicted remaining gain
_FAST_RATE = 0.5


def gauss_newton(K, y, noise_variance, forward, linearize, start=None, *, restart_from=None,
                 max_iter=100, tol=1e-6, max_step_cuts=24, shrink=0.75):
    """Inner loop of the EGP/UGP (EGP paper eq. 34-37 with the step search of section 2.5).

    ``linearize(mean, var)`` returns the Linearization of g about N(mean_n, var_n) (``var`` is
    diag(C) of the current posterior; the Taylor linearisation ignores it, and
    ``linearize.uses_variance`` says whether it is needed).

    Start: the prior (m = 0, C = K) by default; ``start=(mean, beta, var)`` with mean = K beta;
    or ``restart_from=(mean, var)``, a previous posterior at other hyperparameters, whose
    linearisation's Gauss-Newton target (a full step, no K^-1 needed) becomes the start.

    Iteration k linearises about m_k (and, for the UGP, the marginals of the posterior of the
    previous linearisation), takes the target H_k (y - b_k) (eq. 34) and searches the step
    length on the MAP objective (31) with :func:`step_length_search` (alpha from 1, multiplied by
    ``shrink`` up to ``max_step_cuts`` times: 0.75 and 24 as in the original linearizedGP code).
    The loop stops ("converged") when an accepted step improves (31) by at most
    tol * (1 + |(31)|), or (Taylor only) when the last two improvements shrink fast (ratio
    r < 1/2) and the geometric remainder r/(1 - r) times the last one is below that: the UGP's
    covariance, hence its linearisation, keeps moving after (31) settles; when the search stalls
    within that tolerance (converged) or diverges (the paper's 'diverge' condition: the last good
    mean is kept with the posterior of the linearisation that produced it, as the original code
    does); or after ``max_iter`` iterations.
    """
    sigma = math.sqrt(noise_variance)
    need_var = linearize.uses_variance
    kept = None  # (s, L, lin, beta target) of the linearisation whose target gave the current mean
    if restart_from is not None:
        mean0, var = restart_from
        lin, a, b = linearize_checked(linearize, mean0, var)
        s, L, beta = gauss_newton_target(K, y, sigma, a, b)
        mean = K @ beta
        kept = (s, L, lin, beta)
    elif start is not None:
        mean, beta, var = start
    else:
        mean, beta, var = np.zeros_like(y), np.zeros_like(y), None
    if var is None:
        var = np.diag(K).copy()
    value = map_objective(y, forward_values(forward, mean), mean, beta, noise_variance)
    if not math.isfinite(value):
        raise NumericalFailure("the MAP objective (31) is not finite at the starting mean")
    trace = [IterationRecord(0, value, 0.0, 0, "start")]
    converged = diverged = False
    previous_gain = 0.0  # no accepted step yet
    for it in range(1, int(max_iter) + 1):
        if need_var and kept is not None:
            var = posterior_var(K, kept[0], kept[1])
        lin, a, b = linearize_checked(linearize, mean, var)
        if kept is not None and np.array_equal(a, kept[2].A[:, 0, 0]) and np.array_equal(b, kept[2].b[:, 0]):
            s, L, _, beta_target = kept  # same linearisation (a linear g): same W, same target
        else:
            s, L, beta_target = gauss_newton_target(K, y, sigma, a, b)
        d_mean = K @ beta_target - mean
        d_beta = beta_target - beta

        def evaluate(alpha):
            m_new = mean + alpha * d_mean
            b_new = beta + alpha * d_beta
            try:
                v = map_objective(y, forward_values(forward, m_new), m_new, b_new, noise_variance)
            except ValueError:  # g rejects non-finite latent values
                v = -math.inf
            return (v if math.isfinite(v) else -math.inf), (m_new, b_new)

        tolerance = tol * (1.0 + abs(value))
        step = step_length_search(evaluate, value, shrink=shrink, max_cuts=max_step_cuts, tolerance=tolerance)
        trace.append(IterationRecord(it, step.value, step.alpha, step.cuts, step.status))
        if step.status == "diverged" and kept is not None:
            diverged = True  # 'return the last good value': the mean and the posterior that came with it
            break
        kept = (s, L, lin, beta_target)
        if not step.accepted:  # stalled, or diverged at the start: linearised about the kept mean itself
            converged, diverged = step.status == "stalled", step.status == "diverged"
            break
        gain = step.value - value
        mean, beta = step.point
        value = step.value
        rate = gain / previous_gain if previous_gain > 0.0 else math.inf
        if gain <= tolerance or (not need_var and rate < _FAST_RATE and gain * rate / (1.0 - rate) <= tolerance):
            converged = True
            break
        previous_gain = gain
    if kept is None:  # max_iter = 0 is rejected by the callers; keep the function total anyway
        lin, a, b = linearize_checked(linearize, mean, var)
        s, L, beta_target = gauss_newton_target(K, y, sigma, a, b)
        kept = (s, L, lin, beta_target)
    s, L, lin, _ = kept
    return InnerPosterior(mean, beta, s, L, lin, value, trace, converged, diverged,
                      spread=var if need_var else None)


def forward_values(forward, mean):
    """g(m) [N] of a scalar forward model at the latent values m [N]."""
    return forward.value(mean[:, None])[:, 0]


class Linearizer:
    """Callable (mean, var) -> Linearization for the EGP (eq. 36) or UGP (eq. 37).

    Elementwise scalar models take a lean path (one call of g, and of g' for Taylor) with the
    same arithmetic as :func:`gpexplorer.linearized.linearization.taylor` / ``unscented`` (the UT slope
    is the secant (g(m + d) - g(m - d)) / 2d, d = sqrt((1 + kappa) var)); any other model, and
    a variance at the module's zero-spread guard, goes through the shared module itself.
    """

    def __init__(self, forward, kind, kappa):
        from gpexplorer.linearized import linearization
        from gpexplorer.likelihoods.forward_models import ScalarForwardModel

        self.forward, self.kind, self.kappa = forward, kind, kappa
        self.uses_variance = kind == "unscented"
        self._module = linearization
        self._lean = isinstance(forward, ScalarForwardModel)
        if self.uses_variance:
            self._weights = linearization.sigma_point_weights(1, kappa)
            self._root = math.sqrt(1.0 + kappa)

    def __call__(self, mean, var):
        lin = self._module
        if self.kind == "taylor":
            if not self._lean:
                return lin.taylor(self.forward, mean[:, None])
            g = self.forward.value(mean)
            a = self.forward.derivative(mean)
            return lin.Linearization(A=a[:, None, None], b=(g - a * mean)[:, None], y_mean=g[:, None])
        std = np.sqrt(var)
        if not self._lean or np.any(std <= lin.MIN_RELATIVE_STD * np.maximum(1.0, np.abs(mean))):
            return lin.unscented(self.forward, mean[:, None], var[:, None], kappa=self.kappa)
        d = self._root * std
        points = np.stack([mean, mean + d, mean - d], axis=1)
        values = self.forward.value(points)
        if not np.all(np.isfinite(values)):
            raise ValueError(f"forward model {self.forward.name!r} gave NaN or inf at the sigma points")
        y_bar = values @ self._weights
        a = (values[:, 1] - values[:, 2]) / (2.0 * d)
        return lin.Linearization(A=a[:, None, None], b=(y_bar - a * mean)[:, None], y_mean=y_bar[:, None],
                                 sigma_points=points[:, :, None], sigma_values=values[:, :, None],
                                 weights=self._weights)
