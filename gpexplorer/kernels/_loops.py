"""Jitted inner loops for the kernels in :mod:`gpexplorer.kernels`.

Stationary kernels are written as k(x, x') = s * phi(r2) with r2 = sum_d (x_d - x'_d)^2 / l_d^2,
so one pair of loops (value, gradient contraction) serves every kernel; ``kind`` selects phi.
The gradient loop is a *contraction*: given dL/dK it returns sum_ij dL/dK_ij dK_ij/dtheta and
the input gradients, never the (N1, N2, P) derivative tensor. It re-uses the already computed K
so no transcendental function is evaluated twice.

Inputs arrive pre-scaled (X / l), C-contiguous float64. Only plain arrays and scalars cross
the jit boundary.
"""

import math

import numpy as np

from gpexplorer._jit import njit_cached, njit_kernel_loop

SE, MATERN12, MATERN32, MATERN52, RQ = 0, 1, 2, 3, 4

_SQRT3 = math.sqrt(3.0)
_SQRT5 = math.sqrt(5.0)


@njit_cached
def phi(kind, r2, alpha):
    """Unit-variance profile phi(r2) of a stationary kernel."""
    if kind == SE:
        return math.exp(-0.5 * r2)
    r = math.sqrt(r2)
    if kind == MATERN12:
        return math.exp(-r)
    if kind == MATERN32:
        return (1.0 + _SQRT3 * r) * math.exp(-_SQRT3 * r)
    if kind == MATERN52:
        return (1.0 + _SQRT5 * r + (5.0 / 3.0) * r2) * math.exp(-_SQRT5 * r)
    # rational quadratic
    return (1.0 + r2 / (2.0 * alpha)) ** (-alpha)


@njit_cached
def dphi_dr2(kind, r2, p, alpha):
    """d phi / d r2 expressed through the already computed p = phi(r2).

    At r = 0 the Matérn 1/2 derivative is unbounded; the kernel is not differentiable there
    and we return 0 (the symmetric subgradient), which is what the finite-difference checks
    see away from coincident points.
    """
    if kind == SE:
        return -0.5 * p
    if kind == RQ:
        return -0.5 * p / (1.0 + r2 / (2.0 * alpha))
    r = math.sqrt(r2)
    if kind == MATERN12:
        if r == 0.0:
            return 0.0
        return -0.5 * p / r
    if kind == MATERN32:
        return -1.5 * p / (1.0 + _SQRT3 * r)
    # Matern 5/2: phi' = -(5/6)(1 + sqrt5 r) exp(-sqrt5 r)
    return -(5.0 / 6.0) * (1.0 + _SQRT5 * r) * p / (1.0 + _SQRT5 * r + (5.0 / 3.0) * r2)


@njit_kernel_loop
def stationary_K(kind, X1s, X2s, variance, alpha):
    """K[i, j] = variance * phi(|X1s_i - X2s_j|^2) for pre-scaled inputs. [N1, N2]"""
    n1, d = X1s.shape
    n2 = X2s.shape[0]
    K = np.empty((n1, n2))
    for i in range(n1):
        for j in range(n2):
            r2 = 0.0
            for k in range(d):
                t = X1s[i, k] - X2s[j, k]
                r2 += t * t
            K[i, j] = variance * phi(kind, r2, alpha)
    return K


@njit_kernel_loop
def stationary_K_symmetric(kind, Xs, variance, alpha):
    """K(X, X), computing each off-diagonal pair once. [N, N]"""
    n, d = Xs.shape
    K = np.empty((n, n))
    for i in range(n):
        K[i, i] = variance
        for j in range(i + 1, n):
            r2 = 0.0
            for k in range(d):
                t = Xs[i, k] - Xs[j, k]
                r2 += t * t
            v = variance * phi(kind, r2, alpha)
            K[i, j] = v
            K[j, i] = v
    return K


@njit_kernel_loop
def stationary_grads(kind, X1s, X2s, K, dL_dK, a, b, variance, lengthscale, alpha, want_dX2):
    """Contract dL/dK with dK/dtheta for a stationary kernel.

    The weight of pair (i, j) is dL_dK[i, j] - a[i] b[j]: the sparse objectives pass their
    rank-one correction separately so the corrected [N1, N2] matrix is never materialised
    (pass empty a, b for none). Returns (d_variance, d_lengthscale [D], d_alpha, dX1 [N1, D],
    dX2 [N2, D]) with input gradients for the *unscaled* inputs (dX2 is zero unless
    ``want_dX2``: the sparse objectives need no gradient for the data inputs); ``lengthscale``
    has one entry per dimension. With r2 = sum_d delta_d^2 (delta the scaled difference) and
    c = 2 w s phi'(r2):  dK/dl_d -> -c delta_d^2 / l_d  and  dK/dx_d -> c delta_d / l_d.

    Row by row: one pass over j fills the pair weights c_j, then one pass per dimension
    accumulates in scalars, which the compiler vectorises.
    """
    n1, d = X1s.shape
    n2 = X2s.shape[0]
    rank_one = a.shape[0] > 0
    inv_var = 1.0 / variance
    inv_l = 1.0 / lengthscale
    dvar = 0.0
    dalpha = 0.0
    dl = np.zeros(d)
    dX1 = np.zeros((n1, d))
    dX2 = np.zeros((n2, d))
    c = np.empty(n2)
    for i in range(n1):
        a_i = a[i] if rank_one else 0.0
        acc_var = 0.0
        for j in range(n2):
            w = dL_dK[i, j]
            if rank_one:  # b is empty otherwise: never index it
                w -= a_i * b[j]
            r2 = 0.0
            for k in range(d):
                t = X1s[i, k] - X2s[j, k]
                r2 += t * t
            kij = K[i, j]
            p = kij * inv_var
            acc_var += w * kij
            c[j] = 2.0 * w * variance * dphi_dr2(kind, r2, p, alpha)
            if kind == RQ:
                u = r2 / (2.0 * alpha)
                dalpha += w * kij * (-math.log1p(u) + u / (1.0 + u))
        dvar += acc_var * inv_var
        for k in range(d):
            xi = X1s[i, k]
            acc_x = 0.0
            acc_l = 0.0
            for j in range(n2):
                ct = c[j] * (xi - X2s[j, k])
                acc_x += ct
                acc_l += ct * (xi - X2s[j, k])
            dX1[i, k] = acc_x * inv_l[k]
            dl[k] -= acc_l * inv_l[k]
            if want_dX2:
                for j in range(n2):
                    dX2[j, k] -= c[j] * (xi - X2s[j, k]) * inv_l[k]
    return dvar, dl, dalpha, dX1, dX2


@njit_cached
def periodic_K(X1, X2, variance, lengthscale, period):
    """k = s exp(-2 sum_d sin^2(pi (x_d - x'_d) / p) / l_d^2). [N1, N2]"""
    n1, d = X1.shape
    n2 = X2.shape[0]
    K = np.empty((n1, n2))
    scale = math.pi / period
    for i in range(n1):
        for j in range(n2):
            acc = 0.0
            for k in range(d):
                s = math.sin(scale * (X1[i, k] - X2[j, k])) / lengthscale[k]
                acc += s * s
            K[i, j] = variance * math.exp(-2.0 * acc)
    return K


@njit_cached
def periodic_grads(X1, X2, K, dL_dK, variance, lengthscale, period):
    """Gradient contraction for the periodic kernel; same return layout as stationary_grads
    with d_alpha replaced by d_period."""
    n1, d = X1.shape
    n2 = X2.shape[0]
    dvar = 0.0
    dper = 0.0
    dl = np.zeros(d)
    dX1 = np.zeros((n1, d))
    dX2 = np.zeros((n2, d))
    scale = math.pi / period
    for i in range(n1):
        for j in range(n2):
            w = dL_dK[i, j]
            if w == 0.0:
                continue
            kij = K[i, j]
            dvar += w * kij / variance
            wk = w * kij
            for k in range(d):
                delta = X1[i, k] - X2[j, k]
                s = math.sin(scale * delta)
                s2 = math.sin(2.0 * scale * delta)
                l2 = lengthscale[k] * lengthscale[k]
                dl[k] += wk * 4.0 * s * s / (l2 * lengthscale[k])
                dper += wk * 2.0 * math.pi * delta * s2 / (period * period * l2)
                g = -wk * 2.0 * scale * s2 / l2
                dX1[i, k] += g
                dX2[j, k] -= g
    return dvar, dl, dper, dX1, dX2
