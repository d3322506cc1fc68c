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
from typing import NamedTuple

import numpy as np

from gpexplorer.kernels import _loops as kernel_loops
from gpexplorer.sparse import _core as core
from gpexplorer.workspace import array as _array, borrow as _borrow, give_back as _give_back
from gpexplorer.linalg import (
    CholeskyError,
    inv_from_cholesky,
    jittered_cholesky,
    solve_lower,
    solve_upper_t,
    with_escalating_jitter,
)

LOG_2PI = float(np.log(2.0 * np.pi))
APPROXIMATIONS = ("sor", "dtc", "fitc", "vfe")
_APPROX_CODES = {"sor": core.DTC, "dtc": core.DTC, "vfe": core.VFE, "fitc": core.FITC}


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


class FusedObjective(NamedTuple):
    """What :func:`fused_stationary_objective` returns: F, its terms and dF/d(each input)."""

    value: float  # F
    terms: dict
    d_variance: float
    d_lengthscale: np.ndarray  # [D]
    d_alpha: float
    d_noise: float
    dZ: np.ndarray  # [M, D]
    jitter_used: float


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


def _check_finite(**arrays):
    for name, a in arrays.items():
        if not np.all(np.isfinite(a)):
            raise CholeskyError(f"{name} contains NaN or inf; check the hyperparameters and inputs")


def _buffers(arrays, M, N, D, code, fused):
    """A plain tuple in the field order of core.Buffers for an [M, N] problem, reusing the
    arrays of ``arrays`` whose shape fits (plain tuples cross into numba faster: kernels._loops)."""
    fitc = code == core.FITC
    key = (M, N, D, fitc, fused)
    last = arrays.get("last")
    if last is not None and last[0] == key:
        return last[1]
    A = _array(arrays, "A", (M, N))
    buf = (_array(arrays, "Xs", (N, D)) if fused else _E2,
           _array(arrays, "Kuf", (M, N)) if fused else _E2,
           A,
           _array(arrays, "W", (M, N)) if fitc else A,  # DTC/VFE write dF/dKuf over A
           _array(arrays, "S", (M * max(1, min(N, core.FITC_BLOCK)),)) if fitc else _E1)
    arrays["last"] = (key, buf)
    return buf


_E1 = np.empty(0)
_E2 = np.empty((0, 0))


def collapsed_objective(Kuu, Kuf, kdiag, y, noise, jitter, approximation, *, grad=False, warn=True,
                        workspace=None):
    """F of eq. 3.1 for "sor"/"dtc"/"vfe" (G = s2 I) or "fitc", from kernel matrices.

    Returns (ObjectiveResult, SparsePosterior). ``extras["g"]`` holds diag(G) (FITC's
    heteroscedastic noise plus s2). Jitter escalates on a failed Cholesky (see linalg).
    ``workspace``: a :class:`gpexplorer.workspace.Workspace` whose arrays the evaluation may reuse.
    """
    if approximation not in APPROXIMATIONS:
        raise ValueError(f"approximation must be one of {APPROXIMATIONS}; got {approximation!r}")
    _check_finite(Kuu=Kuu, Kuf=Kuf)
    Kuf = np.ascontiguousarray(Kuf, dtype=float)
    mats = (np.ascontiguousarray(Kuu, dtype=float), Kuf, np.ascontiguousarray(kdiag, dtype=float),
            np.ascontiguousarray(y, dtype=float))  # core.Matrices
    code = _APPROX_CODES[approximation]
    M, N = Kuf.shape
    arrays = _borrow(workspace)
    try:
        buf = _buffers(arrays, M, N, 0, code, False)

        def compute(j):
            return core.collapsed(mats, (float(noise), float(j), code, bool(grad)), buf)  # core.Settings

        out, jitter_used = with_escalating_jitter(compute, jitter, what="Kuu", warn=warn)
        terms_arr, post, g = out.terms, out.posterior, out.grads
        terms = _terms(N, float(terms_arr[1]), float(terms_arr[2]), float(terms_arr[3]))
        result = ObjectiveResult(value=float(np.sum(terms_arr)), terms=terms, jitter_used=jitter_used)
        result.extras["g"] = post.g
        if grad:
            result.dKuu, result.dKdiag, result.dnoise = g.dKuu, g.dKdiag, float(g.dnoise)
            result.dKuf = g.dKuf - np.outer(g.a, g.b)  # a new array: never the workspace's
    finally:
        _give_back(workspace, arrays)
    return result, SparsePosterior(L=post.L, LB=post.LB, weights=post.weights, jitter_used=jitter_used)


def fused_stationary_objective(kind, X, y, Z, variance, lengthscale, alpha, noise, *, jitter, approximation,
                               warn=True, workspace=None):
    """Objective and all gradients for a stationary kernel in one compiled call (hot path).

    Returns a :class:`FusedObjective` (F, terms, d_variance, d_lengthscale[D], d_alpha, d_noise, dZ,
    jitter_used).
    Where K(Z, X) is large it is computed first, with numpy's SIMD exp (kernels._loops.kernel_matrix).
    ``workspace``: a :class:`gpexplorer.workspace.Workspace` whose arrays the evaluation may reuse.
    """
    code = _APPROX_CODES[approximation]
    kern = kernel_loops.stationary_params(kind, variance, lengthscale, alpha)
    M, (N, D) = Z.shape[0], X.shape
    arrays = _borrow(workspace)
    try:
        buf = _buffers(arrays, M, N, D, code, True)
        ready = M * N >= kernel_loops.SIMD_MIN_ENTRIES
        if ready:  # buf[0], buf[1]: X / l and K(Z, X)
            np.divide(X, kern.lengthscale, out=buf[0])
            kernel_loops.kernel_matrix(kern, Z / kern.lengthscale, buf[0], out=buf[1])
        kern = tuple(kern)

        def compute(j):
            return core.fused_stationary(kern, (X, y, Z), (float(noise), float(j), code, True), buf, ready)

        try:  # the common case, without the escalation machinery's overhead
            out, jitter_used = compute(jitter), jitter
        except np.linalg.LinAlgError:
            out, jitter_used = with_escalating_jitter(compute, jitter, what="Kuu", warn=warn)
    finally:
        _give_back(workspace, arrays)
    c, complexity, data_fit, trace = out.terms.tolist()
    terms = {"constant": c, "complexity": complexity, "data_fit": data_fit, "trace": trace}
    return FusedObjective(value=c + complexity + data_fit + trace, terms=terms, d_variance=out.variance,
                          d_lengthscale=out.lengthscale, d_alpha=out.alpha, d_noise=out.noise, dZ=out.Z,
                          jitter_used=jitter_used)


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
