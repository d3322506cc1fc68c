"""Jitted matrix algebra of the collapsed sparse objectives (thesis eq. 2.12, 2.17, 2.37, 3.1).

See :mod:`gpexplorer.sparse.objectives` for the derivation; this module holds only the arithmetic, as
plain-array functions that numba compiles once (cache=True). Triangular solves and symmetric
products go to BLAS (dtrsm, dsyrk through :mod:`gpexplorer._blas`; gemm through np.dot), so
Kuu is never inverted explicitly: with clumped inducing inputs it is as ill-conditioned as the
jitter allows, and explicit inverses there cost digits of the objective.

Notation: L = chol(Kuu + jitter I), A = L^{-1} Kuf, B = I + A G^{-1} A^T, LB = chol(B),
W = dF/dC with C = Qff + G, P = Kuu^{-1} Kuf, alpha = C^{-1} y.
Cost per evaluation in units of M^2 N: VFE/DTC trsm 1 + syrk 1 + gemm 2; FITC trsm 2 +
syrk 2 + gemm 2.
"""

import math

import numpy as np

from gpexplorer import _blas as blas
from gpexplorer.kernels import _loops as kl
from gpexplorer._jit import njit_cached

LOG_2PI = math.log(2.0 * math.pi)
DTC, VFE, FITC = 0, 1, 2
_E1 = np.empty(0)
_E2 = np.empty((0, 0))


@njit_cached
def _sum_log_diag(L):
    s = 0.0
    for i in range(L.shape[0]):
        s += math.log(L[i, i])
    return s


@njit_cached
def _sandwich(L, S):
    """L^{-T} S L^{-1} for lower-triangular L and symmetric S [M, M] (two triangular solves)."""
    Y = blas.solve_lower(L, S, True)  # L^{-T} S
    return blas.solve_lower(L, np.ascontiguousarray(Y.T), True).T  # (L^{-T} (L^{-T} S)^T)^T


@njit_cached
def homoscedastic(Kuu, Kuf, kdiag, y, noise, jitter, trace, grad):
    """DTC evidence (2.12) or, with ``trace``, Titsias' collapsed bound (2.37).

    Returns (terms[4] = constant, complexity, data_fit, trace, L, LB, weights, g,
             dKuu, dKuf_base, a, b, dKdiag, dnoise) where g is diag(G) and
    dF/dKuf = dKuf_base - outer(a, b) (kept apart so the contraction never builds it);
    gradient arrays are empty when not ``grad``.
    """
    M, N = Kuf.shape
    eye = np.eye(M)
    L = np.linalg.cholesky(Kuu + jitter * eye)
    A = blas.solve_lower(L, Kuf, False)  # [M, N] = L^{-1} Kuf
    AAT = blas.syrk(A)
    LB = np.linalg.cholesky(eye + AAT / noise)
    c = blas.solve_lower_vec(LB, np.dot(A, y), False) / noise
    vfe = 1.0 if trace else 0.0
    terms = np.empty(4)
    terms[0] = 0.5 * N * LOG_2PI
    terms[1] = _sum_log_diag(LB) + 0.5 * N * math.log(noise)
    terms[2] = 0.5 * (np.dot(y, y) / noise - np.dot(c, c))
    terms[3] = vfe * 0.5 * (np.sum(kdiag) - np.trace(AAT)) / noise
    v = blas.solve_lower_vec(LB, c, True)  # B^{-1} A y / s2
    weights = blas.solve_lower_vec(L, v, True)  # Kuu^{-1} mu
    g = np.full(N, noise)
    if not grad:
        return terms, L, LB, weights, g, _E2, _E2, _E1, _E1, _E1, 0.0
    alpha = (y - np.dot(A.T, v)) / noise  # C^{-1} y
    P_alpha = blas.solve_lower_vec(L, np.dot(A, alpha), True)  # Kuu^{-1} Kuf alpha
    LBinv = blas.solve_lower(LB, eye, False)
    Binv = np.dot(LBinv.T, LBinv)  # B is well conditioned (I + PSD): explicit inverse is fine
    # dF/dKuf = L^{-T} (B^{-1} - vfe I) L^{-1} Kuf / s2 - (P alpha) alpha^T
    dKuf_base = np.dot(_sandwich(L, (Binv - vfe * eye) / noise), Kuf)
    # dF/dKuu = -1/2 [L^{-T}((I - B^{-1}) - vfe (B - I)) L^{-1} - (P alpha)(P alpha)^T]
    dKuu = -0.5 * (_sandwich(L, (eye - Binv) - vfe * (AAT / noise)) - np.outer(P_alpha, P_alpha))
    dKdiag = np.full(N, 0.5 * vfe / noise)
    trace_Cinv = (N - M + np.trace(Binv)) / noise
    dnoise = 0.5 * (trace_Cinv - np.dot(alpha, alpha)) - vfe * terms[3] / noise
    return terms, L, LB, weights, g, dKuu, dKuf_base, P_alpha, alpha, dKdiag, dnoise


@njit_cached
def fitc(Kuu, Kuf, kdiag, y, noise, jitter, grad):
    """FITC evidence (2.17), G = diag[Kff - Qff] + s2 I. Same return layout as homoscedastic."""
    M, N = Kuf.shape
    eye = np.eye(M)
    L = np.linalg.cholesky(Kuu + jitter * eye)
    A = blas.solve_lower(L, Kuf, False)  # [M, N] = L^{-1} Kuf
    # all loops below run along rows: the [M, N] arrays are C-contiguous
    q = np.zeros(N)  # diag(Qff)
    for m in range(M):
        for n in range(N):
            q[n] += A[m, n] * A[m, n]
    gap = kdiag - q
    # round-off can push diag(Qff) above diag(Kff): clip, and that entry is then constant
    active = gap > 0.0
    g = np.where(active, gap, 0.0) + noise
    inv_sqrt_g = 1.0 / np.sqrt(g)
    Ag = A * inv_sqrt_g  # A G^{-1/2}
    LB = np.linalg.cholesky(eye + blas.syrk(Ag))
    c = blas.solve_lower_vec(LB, np.dot(A, y / g), False)
    terms = np.empty(4)
    terms[0] = 0.5 * N * LOG_2PI
    terms[1] = _sum_log_diag(LB) + 0.5 * np.sum(np.log(g))
    terms[2] = 0.5 * (np.sum(y * y / g) - np.dot(c, c))
    terms[3] = 0.0
    v = blas.solve_lower_vec(LB, c, True)
    weights = blas.solve_lower_vec(L, v, True)
    if not grad:
        return terms, L, LB, weights, g, _E2, _E2, _E1, _E1, _E1, 0.0
    alpha = (y - np.dot(A.T, v)) / g
    LBinv = blas.solve_lower(LB, eye, False)
    Binv = np.dot(LBinv.T, LBinv)
    U = np.dot(Binv, A)  # [M, N] = B^{-1} A
    AU = np.zeros(N)  # diag(A^T B^{-1} A)
    for m in range(M):
        for n in range(N):
            AU[n] += A[m, n] * U[m, n]
    w_full = 0.5 * (1.0 / g - AU / (g * g) - alpha * alpha)  # diag W = 1/2 (diag C^{-1} - alpha^2)
    dnoise = np.sum(w_full)  # dg/ds2 = 1 for every entry, clipped or not: dF/ds2 = tr(W)
    w = np.where(active, w_full, 0.0)  # clipped entries no longer depend on Kff or Qff
    # W_Q = W - diag(w): dF/dKuf = L^{-T} [B^{-1} A G^{-1} - 2 A diag(w)] - (P alpha) alpha^T
    inv_g = 1.0 / g
    for m in range(M):
        for n in range(N):
            U[m, n] = U[m, n] * inv_g[n] - 2.0 * w[n] * A[m, n]
    dKuf_base = blas.solve_lower_inplace(L, U, True)  # U is not needed any more
    P_alpha = blas.solve_lower_vec(L, np.dot(A, alpha), True)
    # A diag(w) A^T as two symmetric rank-k updates over the columns with w > 0 and w < 0;
    # their operands reuse Ag's memory (large temporaries cost page faults, not just flops)
    pos = np.flatnonzero(w > 0.0)
    neg = np.flatnonzero(w <= 0.0)
    sw_pos = np.sqrt(w[pos])
    sw_neg = np.sqrt(-w[neg])
    flat = Ag.ravel()
    Apos = flat[: M * pos.shape[0]].reshape((M, pos.shape[0]))
    Aneg = flat[M * pos.shape[0]:].reshape((M, neg.shape[0]))
    for m in range(M):
        for i in range(pos.shape[0]):
            Apos[m, i] = A[m, pos[i]] * sw_pos[i]
        for i in range(neg.shape[0]):
            Aneg[m, i] = A[m, neg[i]] * sw_neg[i]
    AwA = blas.syrk(Apos) - blas.syrk(Aneg)
    # dF/dKuu = -1/2 [L^{-T}(I - B^{-1} - 2 A diag(w) A^T)L^{-1} - (P alpha)(P alpha)^T]
    dKuu = -0.5 * (_sandwich(L, eye - Binv - 2.0 * AwA) - np.outer(P_alpha, P_alpha))
    return terms, L, LB, weights, g, dKuu, dKuf_base, P_alpha, alpha, w, dnoise


@njit_cached
def fused_stationary(kind, X, y, Z, variance, lengthscale, alpha, noise, jitter, approx):
    """Objective and every gradient for a stationary kernel in one compiled call.

    Returns (terms[4], d_variance, d_lengthscale[D], d_alpha, d_noise, dZ[M, D]); the
    lengthscale gradient is per dimension (summed by the caller when isotropic).
    """
    Xs = X / lengthscale
    Zs = Z / lengthscale
    Kuu = kl.stationary_K_symmetric(kind, Zs, variance, alpha)
    Kuf = kl.stationary_K(kind, Zs, Xs, variance, alpha)
    kdiag = np.full(X.shape[0], variance)
    if approx == FITC:
        out = fitc(Kuu, Kuf, kdiag, y, noise, jitter, True)
    else:
        out = homoscedastic(Kuu, Kuf, kdiag, y, noise, jitter, approx == VFE, True)
    terms, L, LB, wts, g, dKuu, dKuf, a, b, dKdiag, dnoise = out
    v1, l1, a1, dZ1, dZ2 = kl.stationary_grads(kind, Zs, Zs, Kuu, dKuu, _E1, _E1, variance, lengthscale, alpha, True)
    v2, l2, a2, dZ3, _ = kl.stationary_grads(kind, Zs, Xs, Kuf, dKuf, a, b, variance, lengthscale, alpha, False)
    dvar = v1 + v2 + np.sum(dKdiag)
    return terms, dvar, l1 + l2, a1 + a2, dnoise, dZ1 + dZ2 + dZ3
