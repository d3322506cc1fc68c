"""Jitted matrix algebra of the collapsed sparse objectives (thesis eq. 2.12, 2.17, 2.37, 3.1).

See :mod:`gpexplorer.sparse` for the derivation; this module holds only the arithmetic, as
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
from gpexplorer import _kernel_loops as kl
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
    g = np.empty(N)
    active = np.empty(N, dtype=np.bool_)
    Ag = np.empty((M, N))  # A G^{-1/2}
    for n in range(N):
        q = 0.0
        for m in range(M):
            q += A[m, n] * A[m, n]
        gap = kdiag[n] - q
        # round-off can push diag(Qff) above diag(Kff): clip, and that entry is then constant
        active[n] = gap > 0.0
        g[n] = (gap if gap > 0.0 else 0.0) + noise
        s = 1.0 / math.sqrt(g[n])
        for m in range(M):
            Ag[m, n] = A[m, n] * s
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
    w = np.empty(N)  # diag(W) on active entries, 0 where g was clipped
    dnoise = 0.0  # dg/ds2 = 1 for every entry, clipped or not: dF/ds2 = tr(W)
    n_pos = 0
    for n in range(N):
        s = 0.0
        for m in range(M):
            s += A[m, n] * U[m, n]
        w_nn = 0.5 * (1.0 / g[n] - s / (g[n] * g[n]) - alpha[n] * alpha[n])  # diag C^{-1}, alpha
        dnoise += w_nn
        w[n] = w_nn if active[n] else 0.0
        if w[n] > 0.0:
            n_pos += 1
        # W_Q = W - diag(w): dF/dKuf = L^{-T} [B^{-1} A G^{-1} - 2 A diag(w)] - (P alpha) alpha^T
        for m in range(M):
            U[m, n] = U[m, n] / g[n] - 2.0 * w[n] * A[m, n]
    dKuf_base = blas.solve_lower(L, U, True)
    P_alpha = blas.solve_lower_vec(L, np.dot(A, alpha), True)
    # A diag(w) A^T as two symmetric rank-k updates over the columns with w > 0 and w < 0
    Apos = np.empty((M, n_pos))
    Aneg = np.empty((M, N - n_pos))
    ip = 0
    ineg = 0
    for n in range(N):
        if w[n] > 0.0:
            s = math.sqrt(w[n])
            for m in range(M):
                Apos[m, ip] = A[m, n] * s
            ip += 1
        else:
            s = math.sqrt(-w[n])
            for m in range(M):
                Aneg[m, ineg] = A[m, n] * s
            ineg += 1
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
    v1, l1, a1, dZ1, dZ2 = kl.stationary_grads(kind, Zs, Zs, Kuu, dKuu, _E1, _E1, variance, lengthscale, alpha)
    v2, l2, a2, dZ3, _ = kl.stationary_grads(kind, Zs, Xs, Kuf, dKuf, a, b, variance, lengthscale, alpha)
    dvar = v1 + v2 + np.sum(dKdiag)
    return terms, dvar, l1 + l2, a1 + a2, dnoise, dZ1 + dZ2 + dZ3
