"""Exact and sparse GP regression objectives in the common form of thesis eq. 3.1.

    F = N/2 log 2pi + 1/2 log|Qff + G| + 1/2 y^T (Qff + G)^{-1} y + 1/(2 s2) Tr(T)       (3.1)
        constant      complexity          data fit                  trace

with Qff = Kfu Kuu^{-1} Kuf (2.13) and, eq. 3.2-3.3,
    SoR / DTC : G = s2 I,                          T = 0        (evidence 2.12)
    FITC      : G = diag[Kff - Qff] + s2 I,        T = 0        (2.17)
    VFE       : G = s2 I,                          T = Kff - Qff (Titsias' bound 2.37)
F is the *negative* log marginal likelihood (or bound); the terms sum to F.

Everything is O(N M^2) through Woodbury: with L = chol(Kuu + jitter I), A = L^{-1} Kuf [M, N]
and B = I + A G^{-1} A^T [M, M],
    log|Qff + G| = log|B| + sum log g,      A (Qff + G)^{-1} = B^{-1} A G^{-1}.
The gradients are returned with respect to the matrices the kernel produces
(dF/dKuu [M, M], dF/dKuf [M, N], dF/dKff-diagonal [N]) plus dF/ds2; the kernel then contracts
them with its own derivatives. With W = dF/d(Qff) (an N x N matrix never formed) and
P = Kuu^{-1} Kuf, the chain rule through Qff gives dF/dKuf = 2 P W and dF/dKuu = -P W P^T.

The same quantities give q(u) = N(mu, Sigma) with Sigma = L B^{-1} L^T and
mu = L B^{-1} A G^{-1} y, and the predictions of eq. 2.10 (exact test conditional, DTC,
FITC, VFE) or the deterministic SoR conditional (fig. 2.3).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from gpexplorer.linalg import (
    inv_from_cholesky,
    jittered_cholesky,
    solve_lower,
    solve_upper_t,
)

LOG_2PI = float(np.log(2.0 * np.pi))
APPROXIMATIONS = ("sor", "dtc", "fitc", "vfe")


@dataclass
class ObjectiveResult:
    """Value, terms and (optionally) matrix gradients of a negative log marginal likelihood."""

    value: float
    terms: dict
    jitter_used: float
    dKuu: np.ndarray | None = None  # [M, M]  (for the exact GP: dF/dKff [N, N])
    dKuf: np.ndarray | None = None  # [M, N]
    dKdiag: np.ndarray | None = None  # [N]
    dnoise: float | None = None
    extras: dict = field(default_factory=dict)


@dataclass
class SparsePosterior:
    """What predictions need: chol(Kuu), chol(B) and the weights Kuu^{-1} mu."""

    L: np.ndarray  # [M, M] chol(Kuu + jitter I)
    LB: np.ndarray  # [M, M] chol(B)
    weights: np.ndarray  # [M]  Kuu^{-1} mu
    jitter_used: float

    @property
    def q_mu(self):
        """Mean of q(u): mu = Kuu Kuu^{-1} mu."""
        return self.L @ (self.L.T @ self.weights)

    @property
    def q_sigma(self):
        """Covariance of q(u): Sigma = L B^{-1} L^T."""
        R = solve_lower(self.LB, self.L.T)  # [M, M] = LB^{-1} L^T
        return R.T @ R

    def predict(self, Kus, kss_diag=None, Kss=None, conditional="exact"):
        """Predictive f at test points (eq. 2.10): returns (mean [S], var [S] or cov [S, S]).

        ``conditional="exact"`` uses p(f*|u) (DTC, FITC, VFE); ``"deterministic"`` drops the
        h(.) part (SoR, fig. 2.3). Pass ``kss_diag`` for marginal variances or ``Kss`` for the
        full covariance.
        """
        mean = Kus.T @ self.weights
        As = solve_lower(self.L, Kus)  # [M, S] = L^{-1} Kus
        Bs = solve_lower(self.LB, As)  # [M, S] = LB^{-1} L^{-1} Kus
        if Kss is not None:
            cov = Bs.T @ Bs
            if conditional == "exact":
                cov = cov + Kss - As.T @ As
            return mean, cov
        var = np.einsum("ms,ms->s", Bs, Bs)
        if conditional == "exact":
            var = var + kss_diag - np.einsum("ms,ms->s", As, As)
        return mean, np.maximum(var, 0.0)

    def gh_split(self, Kus, kss_diag):
        """Thesis eq. 2.22-2.24: f = g + h; returns (g mean, g var, h var) at test points."""
        mean = Kus.T @ self.weights
        As = solve_lower(self.L, Kus)
        Bs = solve_lower(self.LB, As)
        g_var = np.einsum("ms,ms->s", Bs, Bs)
        h_var = np.maximum(kss_diag - np.einsum("ms,ms->s", As, As), 0.0)
        return mean, g_var, h_var


def _terms(N, complexity, data_fit, trace):
    return {"constant": 0.5 * N * LOG_2PI, "complexity": complexity, "data_fit": data_fit, "trace": trace}


def collapsed_objective(Kuu, Kuf, kdiag, y, noise, jitter, approximation, *, grad=False):
    """F of eq. 3.1 for "sor"/"dtc"/"vfe" (G = s2 I) and "fitc"; see the module docstring.

    Returns (ObjectiveResult, SparsePosterior).
    """
    if approximation == "fitc":
        return _fitc(Kuu, Kuf, kdiag, y, noise, jitter, grad)
    if approximation not in ("sor", "dtc", "vfe"):
        raise ValueError(f"approximation must be one of {APPROXIMATIONS}; got {approximation!r}")
    return _homoscedastic(Kuu, Kuf, kdiag, y, noise, jitter, grad, trace=approximation == "vfe")


def _homoscedastic(Kuu, Kuf, kdiag, y, noise, jitter, grad, trace):
    """DTC evidence (2.12) or, with ``trace``, Titsias' collapsed bound (2.37)."""
    M, N = Kuf.shape
    L, jitter_used = jittered_cholesky(Kuu, jitter, what="Kuu")
    A = solve_lower(L, Kuf)  # [M, N]
    AAT = A @ A.T  # [M, M]
    B = np.eye(M) + AAT / noise
    LB, _ = jittered_cholesky(B, 0.0, what="B = I + A A^T / noise")
    Ay = A @ y  # [M]
    c = solve_lower(LB, Ay) / noise  # [M]
    yy = float(y @ y)
    complexity = float(np.sum(np.log(np.diag(LB)))) + 0.5 * N * np.log(noise)
    data_fit = 0.5 * (yy / noise - float(c @ c))
    trace_sum = float(np.sum(kdiag) - np.trace(AAT))
    trace_term = 0.5 * trace_sum / noise if trace else 0.0
    terms = _terms(N, complexity, data_fit, trace_term)
    v = solve_upper_t(LB, c)  # [M] = B^{-1} A y / s2
    posterior = SparsePosterior(L=L, LB=LB, weights=solve_upper_t(L, v), jitter_used=jitter_used)
    result = ObjectiveResult(value=float(sum(terms.values())), terms=terms, jitter_used=jitter_used)
    result.extras["trace_sum"] = trace_sum
    if not grad:
        return result, posterior

    vfe = 1.0 if trace else 0.0
    alpha = (y - A.T @ v) / noise  # [N] = C^{-1} y
    P_alpha = solve_upper_t(L, A @ alpha)  # [M] = Kuu^{-1} Kuf alpha
    Binv = inv_from_cholesky(LB)  # [M, M]
    Linv = solve_lower(L, np.eye(M))  # [M, M]
    eye = np.eye(M)
    # dF/dKuf = L^{-T} (B^{-1} - vfe I) L^{-1} Kuf / s2 - (P alpha) alpha^T
    R = Linv.T @ ((Binv - vfe * eye) @ Linv) / noise
    result.dKuf = R @ Kuf - np.outer(P_alpha, alpha)
    # dF/dKuu = -1/2 [L^{-T} ((I - B^{-1}) - vfe (B - I)) L^{-1} - (P alpha)(P alpha)^T]
    inner = (eye - Binv) - vfe * (AAT / noise)
    result.dKuu = -0.5 * (Linv.T @ inner @ Linv - np.outer(P_alpha, P_alpha))
    result.dKdiag = np.full(N, 0.5 * vfe / noise)
    trace_Cinv = (N - M + float(np.trace(Binv))) / noise
    result.dnoise = 0.5 * (trace_Cinv - float(alpha @ alpha)) - vfe * trace_term / noise
    return result, posterior


def _fitc(Kuu, Kuf, kdiag, y, noise, jitter, grad):
    """FITC evidence, eq. 2.17: G = diag[Kff - Qff] + s2 I."""
    M, N = Kuf.shape
    L, jitter_used = jittered_cholesky(Kuu, jitter, what="Kuu")
    A = solve_lower(L, Kuf)  # [M, N]
    qdiag = np.einsum("mn,mn->n", A, A)
    g = np.maximum(kdiag - qdiag, 0.0) + noise  # [N] heteroscedastic noise
    Ag = A / np.sqrt(g)
    B = np.eye(M) + Ag @ Ag.T
    LB, _ = jittered_cholesky(B, 0.0, what="B = I + A G^{-1} A^T")
    c = solve_lower(LB, A @ (y / g))
    complexity = float(np.sum(np.log(np.diag(LB)))) + 0.5 * float(np.sum(np.log(g)))
    data_fit = 0.5 * (float(np.sum(y * y / g)) - float(c @ c))
    terms = _terms(N, complexity, data_fit, 0.0)
    v = solve_upper_t(LB, c)
    posterior = SparsePosterior(L=L, LB=LB, weights=solve_upper_t(L, v), jitter_used=jitter_used)
    result = ObjectiveResult(value=float(sum(terms.values())), terms=terms, jitter_used=jitter_used)
    result.extras["g"] = g
    if not grad:
        return result, posterior

    alpha = (y - A.T @ v) / g  # [N] = C^{-1} y
    V = solve_lower(LB, A)  # [M, N]
    cinv_diag = 1.0 / g - np.einsum("mn,mn->n", V, V) / g**2  # diag C^{-1}
    w = 0.5 * (cinv_diag - alpha**2)  # diag of W = dF/dC
    # where round-off made diag(Qff) exceed diag(Kff), g was clipped to s2 and that entry
    # no longer depends on Kff or Qff
    w_diag = np.where((kdiag - qdiag) > 0.0, w, 0.0)
    Binv = inv_from_cholesky(LB)
    Linv = solve_lower(L, np.eye(M))
    Kuu_inv = Linv.T @ Linv
    P_alpha = solve_upper_t(L, A @ alpha)
    # W_Q = W - diag(w) (Qff also enters through diag(Kff - Qff) in G)
    # dF/dKuf = L^{-T} B^{-1} L^{-1} Kuf G^{-1} - (P alpha) alpha^T - 2 Kuu^{-1} Kuf diag(w)
    R1 = Linv.T @ Binv @ Linv
    result.dKuf = R1 @ (Kuf / g) - Kuu_inv @ (Kuf * (2.0 * w_diag)) - np.outer(P_alpha, alpha)
    # dF/dKuu = -1/2 [L^{-T}(I - B^{-1})L^{-1} - (P alpha)(P alpha)^T - 2 L^{-T} A diag(w) A^T L^{-1}]
    AwA = (A * w_diag) @ A.T
    inner = (np.eye(M) - Binv) - 2.0 * AwA
    result.dKuu = -0.5 * (Linv.T @ inner @ Linv - np.outer(P_alpha, P_alpha))
    result.dKdiag = w_diag
    result.dnoise = float(np.sum(w))
    return result, posterior


def exact_objective(Kff, y, noise, *, grad=False, jitter=0.0):
    """Exact GP regression negative log marginal likelihood (R&W eq. 2.30) in eq. 3.1 form."""
    N = Kff.shape[0]
    L, jitter_used = jittered_cholesky(Kff + noise * np.eye(N), jitter, what="Kff + noise I")
    alpha = solve_upper_t(L, solve_lower(L, y))
    complexity = float(np.sum(np.log(np.diag(L))))
    data_fit = 0.5 * float(y @ alpha)
    terms = _terms(N, complexity, data_fit, 0.0)
    result = ObjectiveResult(value=float(sum(terms.values())), terms=terms, jitter_used=jitter_used)
    result.extras.update(L=L, alpha=alpha)
    if grad:
        W = 0.5 * (inv_from_cholesky(L) - np.outer(alpha, alpha))
        result.dKuu = W  # dF/dKff
        result.dnoise = float(np.trace(W))
    return result


def upper_bound(Kuu, Kuf, kdiag, y, noise, jitter, *, grad=False):
    """Titsias (2014) upper bound on log p(y), thesis eq. 2.38-2.39, with c = Tr(Kff - Qff).

        U = -N/2 log 2pi - 1/2 log|Qff + s2 I| - 1/2 y^T (Qff + (c + s2) I)^{-1} y

    Returns an ObjectiveResult whose ``value`` is U itself (not negated) and whose gradients
    are dU/d(.) — minimising U over Z tightens the bound (thesis §3.2.6).
    """
    M, N = Kuf.shape
    L, jitter_used = jittered_cholesky(Kuu, jitter, what="Kuu")
    A = solve_lower(L, Kuf)
    AAT = A @ A.T
    c = max(float(np.sum(kdiag) - np.trace(AAT)), 0.0)
    s = c + noise
    eye = np.eye(M)
    LB1, _ = jittered_cholesky(eye + AAT / noise, 0.0, what="B")
    LB2, _ = jittered_cholesky(eye + AAT / s, 0.0, what="B")
    Ay = A @ y
    c2 = solve_lower(LB2, Ay) / s
    half_logdet = float(np.sum(np.log(np.diag(LB1)))) + 0.5 * N * np.log(noise)
    quad = 0.5 * (float(y @ y) / s - float(c2 @ c2))
    value = -0.5 * N * LOG_2PI - half_logdet - quad
    terms = {"constant": -0.5 * N * LOG_2PI, "complexity": -half_logdet, "data_fit": -quad, "slack": c}
    result = ObjectiveResult(value=value, terms=terms, jitter_used=jitter_used)
    if not grad:
        return result
    v2 = solve_upper_t(LB2, c2)
    alpha2 = (y - A.T @ v2) / s
    tr_W2 = -0.5 * float(alpha2 @ alpha2)  # d quad / d(s) = tr(W2), W2 = -1/2 alpha2 alpha2^T
    B1inv = inv_from_cholesky(LB1)
    Linv = solve_lower(L, eye)
    P_alpha2 = solve_upper_t(L, A @ alpha2)
    # F = half_logdet + quad; W_Q = W1 + W2 - tr(W2) I  (c decreases with Qff)
    R = Linv.T @ (B1inv / noise - 2.0 * tr_W2 * eye) @ Linv
    dF_dKuf = R @ Kuf - np.outer(P_alpha2, alpha2)
    inner = (eye - B1inv) - 2.0 * tr_W2 * AAT
    dF_dKuu = -0.5 * (Linv.T @ inner @ Linv - np.outer(P_alpha2, P_alpha2))
    trace_C1inv = (N - M + float(np.trace(B1inv))) / noise
    result.dKuf = -dF_dKuf
    result.dKuu = -dF_dKuu
    result.dKdiag = np.full(N, -tr_W2)
    result.dnoise = -(0.5 * trace_C1inv + tr_W2)
    return result
