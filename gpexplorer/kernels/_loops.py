"""Jitted inner loops for the kernels in :mod:`gpexplorer.kernels`.

Stationary kernels are written as k(x, x') = s * phi(r2) with r2 = sum_d (x_d - x'_d)^2 / l_d^2,
so one pair of loops (value, gradient contraction) serves every kernel; ``kind`` selects phi.
The gradient loop is a *contraction*: given dL/dK it returns sum_ij dL/dK_ij dK_ij/dtheta and
the input gradients, never the (N1, N2, P) derivative tensor. It re-uses the already computed K
so no transcendental function is evaluated twice.

Inputs arrive pre-scaled (X / l), C-contiguous float64. What crosses the jit boundary is plain
arrays, scalars and the small named tuples below. Every compiled function that takes one also
takes a plain tuple in the same field order and names it on entry (``StationaryParams(*kern)``
costs nothing compiled): numba types a plain tuple argument at about half the cost of a named
one (measured: 1.6 against 3.5 us for the four arguments of the fused path), which matters
for the small problems a dashboard refits many times a second.

Large cross-covariances K(Z, X) are exponentiated by numpy: a compiled loop writes the exponent
(distances are cheap), then ``np.exp`` runs over the whole matrix with its SIMD kernels, about
a third of the cost of the scalar libm ``exp`` a compiled loop calls per entry.
"""

import math
from collections import namedtuple

import numpy as np

from gpexplorer._jit import njit_cached, njit_kernel_loop

SE, MATERN12, MATERN32, MATERN52, RQ = 0, 1, 2, 3, 4

#: a stationary kernel as the loops see it: kind (SE, ...), variance, lengthscale [D], alpha (RQ)
StationaryParams = namedtuple("StationaryParams", "kind variance lengthscale alpha")
#: a periodic kernel: variance, lengthscale [D], period
PeriodicParams = namedtuple("PeriodicParams", "variance lengthscale period")
#: the weight of pair (i, j) in a contraction is dK[i, j] - a[i] b[j] (a, b empty for none)
PairWeights = namedtuple("PairWeights", "dK a b")
#: a contraction's result: d variance, d lengthscale [D], d alpha (RQ) or d period (periodic),
#: dX1 [N1, D] and dX2 [N2, D] (unscaled inputs; dX2 is [0, D] unless asked for)
KernelGradients = namedtuple("KernelGradients", "variance lengthscale extra dX1 dX2")

#: below this many entries K(X1, X2) is computed in one compiled loop (numpy's exp does not pay)
SIMD_MIN_ENTRIES = 1500
_EXP_ONLY = (SE, MATERN12)  # phi = exp(-c r^p): the variance folds into the exponent
_EXP_TIMES_POLY = (MATERN32, MATERN52)  # phi = poly(r) exp(-c r)

_SQRT3 = math.sqrt(3.0)
_SQRT5 = math.sqrt(5.0)
_E1 = np.empty(0)


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
def _r2(X1s, i, X2s, j):
    r2 = 0.0
    for k in range(X1s.shape[1]):
        t = X1s[i, k] - X2s[j, k]
        r2 += t * t
    return r2


@njit_kernel_loop
def _row_r2(x1, X2T, out):
    """out[j] = |x1 - X2_j|^2 for every j, dimension by dimension (x1 [D], X2T [D, N2]): the
    loops over j are innermost and contiguous, so they vectorise."""
    for j in range(out.shape[0]):
        out[j] = 0.0
    for k in range(x1.shape[0]):
        xk = x1[k]
        x2 = X2T[k]
        for j in range(out.shape[0]):
            t = xk - x2[j]
            out[j] += t * t


@njit_kernel_loop
def fill_stationary_K(kern, X1s, X2s, out):
    """out[i, j] = variance * phi(|X1s_i - X2s_j|^2) for pre-scaled inputs, scalar exp. [N1, N2]"""
    kern = StationaryParams(*kern)
    kind, variance, alpha = kern.kind, kern.variance, kern.alpha
    X2T = np.ascontiguousarray(X2s.T)
    for i in range(X1s.shape[0]):
        row = out[i]
        _row_r2(X1s[i], X2T, row)
        for j in range(row.shape[0]):
            row[j] = variance * phi(kind, row[j], alpha)
    return out


@njit_kernel_loop
def _fill_exponent(kern, X1s, X2s, out):
    """The exponent of K for the kinds whose phi is exp(...) or poly(r) exp(-c r): for SE and
    Matérn 1/2 it includes log variance (s exp(x) = exp(x + log s) to a relative 1e-16 |x|)."""
    kern = StationaryParams(*kern)
    kind = kern.kind
    X2T = np.ascontiguousarray(X2s.T)
    log_s = math.log(kern.variance)
    c = 1.0 if kind == MATERN12 else (_SQRT3 if kind == MATERN32 else _SQRT5)
    shift = log_s if kind == MATERN12 else 0.0
    for i in range(X1s.shape[0]):
        row = out[i]
        _row_r2(X1s[i], X2T, row)
        if kind == SE:
            for j in range(row.shape[0]):
                row[j] = log_s - 0.5 * row[j]
        else:
            for j in range(row.shape[0]):
                row[j] = shift - c * math.sqrt(row[j])
    return out


@njit_kernel_loop
def _times_polynomial(kern, X1s, X2s, out):
    """out *= variance (1 + sqrt3 r) (Matérn 3/2) or variance (1 + sqrt5 r + 5 r^2 / 3) (5/2)."""
    kern = StationaryParams(*kern)
    variance = kern.variance
    X2T = np.ascontiguousarray(X2s.T)
    r2 = np.empty(X2s.shape[0])
    for i in range(X1s.shape[0]):
        row = out[i]
        _row_r2(X1s[i], X2T, r2)
        if kern.kind == MATERN32:
            for j in range(row.shape[0]):
                row[j] *= variance * (1.0 + _SQRT3 * math.sqrt(r2[j]))
        else:
            for j in range(row.shape[0]):
                row[j] *= variance * (1.0 + _SQRT5 * math.sqrt(r2[j]) + (5.0 / 3.0) * r2[j])
    return out


def kernel_matrix(kern, X1s, X2s, out=None):
    """K(X1, X2) [N1, N2] of a stationary kernel (:class:`StationaryParams`) for pre-scaled inputs,
    written into ``out`` if given; numpy's SIMD exp where the matrix is large enough to pay."""
    n1, n2 = X1s.shape[0], X2s.shape[0]
    if out is None:
        out = np.empty((n1, n2))
    kind = int(kern[0])
    kern = tuple(kern)  # see the module docstring: a plain tuple is typed faster
    if n1 * n2 < SIMD_MIN_ENTRIES or kind not in _EXP_ONLY + _EXP_TIMES_POLY:
        return fill_stationary_K(kern, X1s, X2s, out)
    _fill_exponent(kern, X1s, X2s, out)
    np.exp(out, out=out)
    if kind in _EXP_TIMES_POLY:
        _times_polynomial(kern, X1s, X2s, out)
    return out


def stationary_params(kind, variance, lengthscale, alpha):
    """A :class:`StationaryParams` with the field types the compiled loops are specialised on."""
    ls = _E1 if lengthscale is None else np.ascontiguousarray(lengthscale, dtype=float).reshape(-1)
    return StationaryParams(int(kind), float(variance), ls, float(alpha))


def stationary_K(kind, X1s, X2s, variance, alpha):
    """K[i, j] = variance * phi(|X1s_i - X2s_j|^2) for pre-scaled inputs. [N1, N2]"""
    return kernel_matrix(stationary_params(kind, variance, None, alpha), X1s, X2s)


@njit_kernel_loop
def stationary_K_symmetric(kind, Xs, variance, alpha):
    """K(X, X), computing each off-diagonal pair once. [N, N]"""
    n = Xs.shape[0]
    K = np.empty((n, n))
    for i in range(n):
        K[i, i] = variance
        for j in range(i + 1, n):
            v = variance * phi(kind, _r2(Xs, i, Xs, j), alpha)
            K[i, j] = v
            K[j, i] = v
    return K


@njit_kernel_loop
def _row_weights(weights, i, out):
    """out[j] = dK[i, j] - a[i] b[j], the weight of pair (i, j) (:class:`PairWeights`)."""
    dK, a, b = weights.dK[i], weights.a, weights.b
    if a.shape[0] > 0:  # b is empty otherwise: never index it
        a_i = a[i]
        for j in range(out.shape[0]):
            out[j] = dK[j] - a_i * b[j]
    else:
        for j in range(out.shape[0]):
            out[j] = dK[j]


@njit_kernel_loop
def _pair_coefficients(kern, x1, X2T, k_row, ce):
    """One row of a contraction. On entry ce[1] holds the weights w_j of the pairs (x1, X2_j)
    and k_row their K values; on return ce[0, j] = c_j = 2 w_j s phi'(r2_j) and
    ce[1, j] = w_j K_j. Returns the row's part of d alpha (rational quadratic; else 0)."""
    kind, variance, alpha = kern.kind, kern.variance, kern.alpha
    c, e = ce[0], ce[1]
    n2 = c.shape[0]
    if kind == SE:  # 2 w s phi' = -w K: no distance needed, and the loop vectorises
        for j in range(n2):
            e[j] *= k_row[j]
            c[j] = -e[j]
        return 0.0
    _row_r2(x1, X2T, c)  # c holds r2 until overwritten below
    inv_var = 1.0 / variance
    dalpha = 0.0
    for j in range(n2):
        w = e[j]
        r2 = c[j]
        e[j] = w * k_row[j]
        if kind == RQ:
            u = r2 / (2.0 * alpha)
            dalpha += e[j] * (-math.log1p(u) + u / (1.0 + u))
        c[j] = 2.0 * w * variance * dphi_dr2(kind, r2, k_row[j] * inv_var, alpha)
    return dalpha


@njit_kernel_loop
def _row_sums(c, x2, xi, e, with_e):
    """(sum_j c_j t_j, sum_j c_j t_j^2, sum_j e_j) with t_j = xi - x2_j, as four interleaved
    partial sums: a fixed order (no reassociation flag), but not one long dependency chain."""
    n = c.shape[0]
    s0 = s1 = s2 = s3 = 0.0
    q0 = q1 = q2 = q3 = 0.0
    u0 = u1 = u2 = u3 = 0.0
    stop = n - n % 4
    for j in range(0, stop, 4):
        t0 = xi - x2[j]
        t1 = xi - x2[j + 1]
        t2 = xi - x2[j + 2]
        t3 = xi - x2[j + 3]
        c0 = c[j] * t0
        c1 = c[j + 1] * t1
        c2 = c[j + 2] * t2
        c3 = c[j + 3] * t3
        s0 += c0
        s1 += c1
        s2 += c2
        s3 += c3
        q0 += c0 * t0
        q1 += c1 * t1
        q2 += c2 * t2
        q3 += c3 * t3
        if with_e:
            u0 += e[j]
            u1 += e[j + 1]
            u2 += e[j + 2]
            u3 += e[j + 3]
    for j in range(stop, n):
        t = xi - x2[j]
        ct = c[j] * t
        s0 += ct
        q0 += ct * t
        if with_e:
            u0 += e[j]
    return (s0 + s1) + (s2 + s3), (q0 + q1) + (q2 + q3), (u0 + u1) + (u2 + u3)


@njit_kernel_loop
def stationary_contract(kern, X1s, X2s, K, weights, want_dX2):
    """Contract dL/dK with dK/dtheta for a stationary kernel (:class:`StationaryParams`).

    The weight of pair (i, j) is weights.dK[i, j] - a[i] b[j] (:class:`PairWeights`): the sparse
    objectives pass their rank-one correction separately so the corrected [N1, N2] matrix is
    never materialised. Returns :class:`KernelGradients` with input gradients for the *unscaled*
    inputs (dX2 only if ``want_dX2``: the sparse objectives need none for the data inputs). With
    r2 = sum_d delta_d^2 (delta the scaled difference) and c = 2 w s phi'(r2):
    dK/dl_d -> -c delta_d^2 / l_d  and  dK/dx_d -> c delta_d / l_d.

    Row by row: one pass over j fills the pair coefficients, then one pass per dimension
    accumulates them.
    """
    kern, weights = StationaryParams(*kern), PairWeights(*weights)
    n1, d = X1s.shape
    n2 = X2s.shape[0]
    inv_l = 1.0 / kern.lengthscale
    X2T = np.ascontiguousarray(X2s.T)  # [D, N2]: each dimension's pass reads contiguously
    dvar = 0.0
    dalpha = 0.0
    dl = np.zeros(d)
    dX1 = np.zeros((n1, d))
    dX2 = np.zeros((n2 if want_dX2 else 0, d))
    ce = np.empty((2, n2))  # per row: pair coefficients c_j, and w_ij K_ij
    c, e = ce[0], ce[1]
    for i in range(n1):
        _row_weights(weights, i, e)
        dalpha += _pair_coefficients(kern, X1s[i], X2T, K[i], ce)
        for k in range(d):
            xi = X1s[i, k]
            acc_x, acc_l, acc_e = _row_sums(c, X2T[k], xi, e, k == 0)
            if k == 0:
                dvar += acc_e
            dX1[i, k] = acc_x * inv_l[k]
            dl[k] -= acc_l * inv_l[k]
            if want_dX2:
                for j in range(n2):
                    dX2[j, k] -= c[j] * (xi - X2T[k, j]) * inv_l[k]
    return KernelGradients(dvar / kern.variance, dl, dalpha, dX1, dX2)


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
def periodic_contract(kern, X1, X2, K, dL_dK):
    """Gradient contraction for the periodic kernel (:class:`PeriodicParams`); returns
    :class:`KernelGradients` with ``extra`` = d period."""
    kern = PeriodicParams(*kern)
    variance, lengthscale, period = kern.variance, kern.lengthscale, kern.period
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
    return KernelGradients(dvar, dl, dper, dX1, dX2)
