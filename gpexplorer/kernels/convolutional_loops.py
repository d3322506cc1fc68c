"""Compiled sums over patches for a convolutional kernel with a stationary patch kernel
k(z, z') = s phi(|z - z'|^2 / l^2) (thesis eq. 5.13, 5.15, 5.46-5.47; the sums of §5.10).

Inputs are pre-scaled by the lengthscale (patches Xs [n, P, E], inducing patches Zs [M, E]);
``w`` [P] holds the patch weights times the scaling (1 or 1/P); ``group`` [P] the channel of a
patch for the multi-channel kernel (all zeros otherwise): only patches of the same group covary.
Kuf rows are ordered (group, m). Each gradient loop returns the contraction sums from which the
caller forms the hyperparameter gradients, never a per-entry derivative tensor:

    dvar = sum w k / var,  T_e = sum G (x_e - z_e)^2 (so dL/dl_e = -2 T_e / l_e),
    dZs = -2 sum G (x - z),  dw_p = sum_m W_m k_pm,

with G = W w dk/dr2. For SE and RQ the squared distances come from one GEMM per image,
|x|^2 + |z|^2 - 2 x.z (eq. 5.67); the Matern kinds, whose phi has sqrt(r2) and is steep at 0,
take the direct differences instead, so a patch equal to an inducing patch gives r2 = 0 exactly.
Kdiag always takes direct differences over pairs p < q (each pair once, symmetry).
"""

import numpy as np

from gpexplorer._jit import njit_kernel_loop
from gpexplorer.kernels._loops import RQ, SE, dphi_dr2, phi


@njit_kernel_loop
def _squared_distances(kind, x, Zs, zz, out):
    """out[p, m] = |x_p - z_m|^2 for one image's patches x [P, E]."""
    P, E = x.shape
    M = Zs.shape[0]
    if kind == SE or kind == RQ:
        cross = np.dot(x, Zs.T)
        for p in range(P):
            xx = 0.0
            for e in range(E):
                xx += x[p, e] * x[p, e]
            for m in range(M):
                out[p, m] = max(xx + zz[m] - 2.0 * cross[p, m], 0.0)
    else:
        for p in range(P):
            for m in range(M):
                r2 = 0.0
                for e in range(E):
                    t = x[p, e] - Zs[m, e]
                    r2 += t * t
                out[p, m] = r2


@njit_kernel_loop
def cross(kern, Zs, Xs, w, group, n_groups):
    """Kuf [G*M, n]: Kuf[g*M + m, n] = sum_{p in g} w_p k(x_n^[p], z_m)."""
    kind, variance, alpha = kern[0], kern[1], kern[3]
    n, P, _ = Xs.shape
    M = Zs.shape[0]
    zz = np.sum(Zs * Zs, axis=1)
    out = np.zeros((n_groups * M, n))
    r2 = np.empty((P, M))
    for i in range(n):
        _squared_distances(kind, Xs[i], Zs, zz, r2)
        for p in range(P):
            row = group[p] * M
            for m in range(M):
                out[row + m, i] += w[p] * variance * phi(kind, r2[p, m], alpha)
    return out


@njit_kernel_loop
def cross_gradients(kern, Zs, Xs, w, group, W):
    """Contractions of W [G*M, n] with dKuf: (dvar, T [E], dZs [M, E], dw [P])."""
    kind, variance, alpha = kern[0], kern[1], kern[3]
    n, P, E = Xs.shape
    M = Zs.shape[0]
    zz = np.sum(Zs * Zs, axis=1)
    r2 = np.empty((P, M))
    G = np.empty((P, M))
    GtX = np.zeros((M, E))
    gsum_m = np.zeros(M)
    x2_weighted = np.zeros(E)
    dw = np.zeros(P)
    dvar = 0.0
    for i in range(n):
        x = Xs[i]
        _squared_distances(kind, x, Zs, zz, r2)
        for p in range(P):
            row = group[p] * M
            gp = 0.0
            for m in range(M):
                f = phi(kind, r2[p, m], alpha)
                wk = W[row + m, i] * variance * f
                dw[p] += wk
                dvar += w[p] * wk
                g = W[row + m, i] * w[p] * variance * dphi_dr2(kind, r2[p, m], f, alpha)
                G[p, m] = g
                gsum_m[m] += g
                gp += g
            for e in range(E):
                x2_weighted[e] += gp * x[p, e] * x[p, e]
        GtX += np.dot(G.T, x)
    T = x2_weighted.copy()
    for m in range(M):
        for e in range(E):
            T[e] += -2.0 * Zs[m, e] * GtX[m, e] + gsum_m[m] * Zs[m, e] * Zs[m, e]
    dZs = np.empty((M, E))
    for m in range(M):
        for e in range(E):
            dZs[m, e] = -2.0 * (GtX[m, e] - gsum_m[m] * Zs[m, e])
    return dvar / variance, T, dZs, dw


@njit_kernel_loop
def diagonal(kern, Xs, w, group):
    """Kdiag [n]: sum_pq w_p w_q k(x^[p], x^[q]) over pairs of the same group."""
    kind, variance, alpha = kern[0], kern[1], kern[3]
    n, P, E = Xs.shape
    out = np.empty(n)
    self_term = 0.0
    for p in range(P):
        self_term += w[p] * w[p]
    for i in range(n):
        x = Xs[i]
        acc = 0.0
        for p in range(P):
            inner = 0.0
            for q in range(p + 1, P):
                if group[q] != group[p]:
                    continue
                r2 = 0.0
                for e in range(E):
                    t = x[p, e] - x[q, e]
                    r2 += t * t
                inner += w[q] * phi(kind, r2, alpha)
            acc += w[p] * inner
        out[i] = variance * (self_term + 2.0 * acc)
    return out


@njit_kernel_loop
def diagonal_gradients(kern, Xs, w, group, v):
    """Contractions of v [n] with dKdiag: (dvar, T [E], dw [P])."""
    kind, variance, alpha = kern[0], kern[1], kern[3]
    n, P, E = Xs.shape
    T = np.zeros(E)
    dw = np.zeros(P)
    dvar = 0.0
    vsum = 0.0
    for i in range(n):
        vsum += v[i]
    for p in range(P):
        dw[p] += 2.0 * vsum * w[p] * variance
        dvar += vsum * w[p] * w[p]
    for i in range(n):
        x = Xs[i]
        vi = v[i]
        for p in range(P):
            for q in range(p + 1, P):
                if group[q] != group[p]:
                    continue
                r2 = 0.0
                for e in range(E):
                    t = x[p, e] - x[q, e]
                    r2 += t * t
                f = phi(kind, r2, alpha)
                k = variance * f
                dw[p] += 2.0 * vi * w[q] * k
                dw[q] += 2.0 * vi * w[p] * k
                dvar += 2.0 * vi * w[p] * w[q] * f
                h = 2.0 * vi * w[p] * w[q] * variance * dphi_dr2(kind, r2, f, alpha)
                for e in range(E):
                    t = x[p, e] - x[q, e]
                    T[e] += h * t * t
    return dvar, T, dw
