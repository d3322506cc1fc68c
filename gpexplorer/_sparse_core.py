"""Jitted matrix algebra of the collapsed sparse objectives (thesis eq. 2.12, 2.17, 2.37, 3.1).

See :mod:`gpexplorer.sparse` for the derivation; this module holds only the arithmetic, as
plain-array functions that numba compiles once (cache=True). Large products go to BLAS
through ``np.dot``; the two M^3 triangular inverses are small loops.

Notation: L = chol(Kuu + jitter I), Linv = L^{-1}, B = I + L^{-1} Kuf G^{-1} Kfu L^{-T},
LB = chol(B), W = dF/dC with C = Qff + G, P = Kuu^{-1} Kuf, alpha = C^{-1} y.

Homoscedastic G = s2 I (SoR/DTC/VFE) works with the M x M matrix Kuf Kfu only (as GPy's
VarDTC does): two M^2 N products per evaluation. FITC needs P and R1 Kuf explicitly
(R1 = L^{-T} B^{-1} L^{-1}) because G varies per point: four M^2 N products.
"""

import math

import numpy as np

from gpexplorer import _kernel_loops as kl
from gpexplorer._jit import njit_cached

LOG_2PI = math.log(2.0 * math.pi)
DTC, VFE, FITC = 0, 1, 2
_E1 = np.empty(0)
_E2 = np.empty((0, 0))


@njit_cached
def lower_inverse(L):
    """Inverse of a lower-triangular matrix by forward substitution, column by column."""
    n = L.shape[0]
    inv = np.zeros((n, n))
    for j in range(n):
        inv[j, j] = 1.0 / L[j, j]
        for i in range(j + 1, n):
            s = 0.0
            for k in range(j, i):
                s += L[i, k] * inv[k, j]
            inv[i, j] = -s / L[i, i]
    return inv


@njit_cached
def _sum_log_diag(L):
    s = 0.0
    for i in range(L.shape[0]):
        s += math.log(L[i, i])
    return s


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
    Linv = lower_inverse(L)
    KK = np.dot(Kuf, Kuf.T)  # [M, M]
    AAT = np.dot(np.dot(Linv, KK), Linv.T)  # A A^T with A = L^{-1} Kuf
    B = eye + AAT / noise
    LB = np.linalg.cholesky(B)
    LBinv = lower_inverse(LB)
    Ay = np.dot(Linv, np.dot(Kuf, y))
    c = np.dot(LBinv, Ay) / noise
    vfe = 1.0 if trace else 0.0
    terms = np.empty(4)
    terms[0] = 0.5 * N * LOG_2PI
    terms[1] = _sum_log_diag(LB) + 0.5 * N * math.log(noise)
    terms[2] = 0.5 * (np.dot(y, y) / noise - np.dot(c, c))
    trace_sum = np.sum(kdiag) - np.trace(AAT)
    terms[3] = vfe * 0.5 * trace_sum / noise
    v = np.dot(LBinv.T, c)  # B^{-1} A y / s2
    weights = np.dot(Linv.T, v)  # Kuu^{-1} mu
    g = np.full(N, noise)
    if not grad:
        return terms, L, LB, weights, g, _E2, _E2, _E1, _E1, _E1, 0.0
    alpha = (y - np.dot(Kuf.T, weights)) / noise  # C^{-1} y (A^T v = Kfu weights)
    P_alpha = np.dot(Linv.T, np.dot(Linv, np.dot(Kuf, alpha)))
    Binv = np.dot(LBinv.T, LBinv)
    # dF/dKuf = L^{-T} (B^{-1} - vfe I) L^{-1} Kuf / s2 - (P alpha) alpha^T
    R = np.dot(np.dot(Linv.T, Binv - vfe * eye), Linv) / noise
    dKuf_base = np.dot(R, Kuf)
    # dF/dKuu = -1/2 [L^{-T}((I - B^{-1}) - vfe (B - I)) L^{-1} - (P alpha)(P alpha)^T]
    inner = (eye - Binv) - vfe * (AAT / noise)
    dKuu = -0.5 * (np.dot(np.dot(Linv.T, inner), Linv) - np.outer(P_alpha, P_alpha))
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
    Linv = lower_inverse(L)
    Kuu_inv = np.dot(Linv.T, Linv)
    P = np.dot(Kuu_inv, Kuf)  # [M, N] = Kuu^{-1} Kuf
    g = np.empty(N)
    active = np.empty(N, dtype=np.bool_)
    for n in range(N):
        q = 0.0
        for m in range(M):
            q += Kuf[m, n] * P[m, n]
        gap = kdiag[n] - q
        # round-off can push diag(Qff) above diag(Kff): clip, and that entry is then constant
        active[n] = gap > 0.0
        g[n] = (gap if gap > 0.0 else 0.0) + noise
    Kuf_g = Kuf / g  # Kuf G^{-1}
    B = eye + np.dot(np.dot(Linv, np.dot(Kuf_g, Kuf.T)), Linv.T)
    LB = np.linalg.cholesky(B)
    LBinv = lower_inverse(LB)
    c = np.dot(LBinv, np.dot(Linv, np.dot(Kuf_g, y)))
    terms = np.empty(4)
    terms[0] = 0.5 * N * LOG_2PI
    terms[1] = _sum_log_diag(LB) + 0.5 * np.sum(np.log(g))
    terms[2] = 0.5 * (np.sum(y * y / g) - np.dot(c, c))
    terms[3] = 0.0
    v = np.dot(LBinv.T, c)
    weights = np.dot(Linv.T, v)
    if not grad:
        return terms, L, LB, weights, g, _E2, _E2, _E1, _E1, _E1, 0.0
    alpha = (y - np.dot(Kuf.T, weights)) / g
    Binv = np.dot(LBinv.T, LBinv)
    R1 = np.dot(np.dot(Linv.T, Binv), Linv)  # L^{-T} B^{-1} L^{-1}
    R1K = np.dot(R1, Kuf)  # [M, N]
    w = np.empty(N)  # diag(W) on active entries, 0 where g was clipped
    dnoise = 0.0  # dg/ds2 = 1 for every entry, clipped or not: dF/ds2 = tr(W)
    for n in range(N):
        s = 0.0
        for m in range(M):
            s += Kuf[m, n] * R1K[m, n]
        w_nn = 0.5 * (1.0 / g[n] - s / (g[n] * g[n]) - alpha[n] * alpha[n])  # diag C^{-1}, alpha
        dnoise += w_nn
        w[n] = w_nn if active[n] else 0.0
    P_alpha = np.dot(P, alpha)
    # dF/dKuu = -1/2 [L^{-T}(I - B^{-1})L^{-1} - (P alpha)(P alpha)^T - 2 P diag(w) P^T]
    PwP = np.dot(P * w, P.T)
    # W_Q = W - diag(w): dF/dKuf = R1 Kuf G^{-1} - 2 P diag(w) - (P alpha) alpha^T,
    # the first two written over R1K in place
    for m in range(M):
        for n in range(N):
            R1K[m, n] = R1K[m, n] / g[n] - 2.0 * w[n] * P[m, n]
    dKuu = -0.5 * (np.dot(np.dot(Linv.T, eye - Binv), Linv) - np.outer(P_alpha, P_alpha) - 2.0 * PwP)
    return terms, L, LB, weights, g, dKuu, R1K, P_alpha, alpha, w, dnoise


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
