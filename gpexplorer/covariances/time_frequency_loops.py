"""Jitted leaves of the frequency and time-frequency features' cross-covariances (thesis eq.
4.9 corrected, A.1; see :mod:`gpexplorer.covariances.time_frequency` for the maths).

Every entry of Kuf is exp(exponent) cos(phase), with the exponent and the phase cheap sums over
the D input dimensions. The transcendental functions dominate: the loop writes the exponent
and the cosine and sine of the phase, and numpy exponentiates the whole matrix with its SIMD
kernel (as :mod:`gpexplorer.kernels._loops` does). The cosine and sine come from ``_sincos``, a
branch-free Cody-Waite reduction and the fdlibm kernel polynomials (error below 2 ulp for
|phase| < 1e6) that LLVM vectorises: libm's scalar sin and cos cost about six times as much
and would take the objective of a VFE model at N = 2000, M = 50 from 1.3 ms to 3 ms.

This module is public (not ``_loops``) so that the covariance module beside it may import it
without breaking the private-module rule of tests/test_architecture.py.
"""

import math

import numpy as np

from gpexplorer._jit import njit_kernel_loop

_TWO_OVER_PI = 2.0 / math.pi
# pi/2 split in three (fdlibm's pio2_1, pio2_2, pio2_3): k * _PIO2_1 is exact for |k| < 2^20
_PIO2_1 = 1.57079632673412561417e+00
_PIO2_2 = 6.07710050630396597660e-11
_PIO2_3 = 2.02226624871116645580e-21
# fdlibm __kernel_sin / __kernel_cos coefficients on |r| <= pi/4
_S1, _S2, _S3 = -1.66666666666666324348e-01, 8.33333333332248946124e-03, -1.98412698298579493134e-04
_S4, _S5, _S6 = 2.75573137070700676789e-06, -2.50507602534068634195e-08, 1.58969099521155010221e-10
_C1, _C2, _C3 = 4.16666666666666019037e-02, -1.38888888888741095749e-03, 2.48015872894767294178e-05
_C4, _C5, _C6 = -2.75573143513906633035e-07, 2.08757232129817482790e-09, -1.13596475577881948265e-11


@njit_kernel_loop
def _sincos(theta):
    """(sin theta, cos theta) without branches (vectorisable); accurate for |theta| < 1e6."""
    k = math.floor(theta * _TWO_OVER_PI + 0.5)
    r = ((theta - k * _PIO2_1) - k * _PIO2_2) - k * _PIO2_3
    z = r * r
    s = r + r * z * (_S1 + z * (_S2 + z * (_S3 + z * (_S4 + z * (_S5 + z * _S6)))))
    c = 1.0 - 0.5 * z + z * z * (_C1 + z * (_C2 + z * (_C3 + z * (_C4 + z * (_C5 + z * _C6)))))
    q = np.int64(k) & 3
    odd = (q & 1) == 1
    sin_sign = 1.0 - (q & 2)  # q = 0, 1: +; 2, 3: -
    cos_sign = 1.0 - ((q + 1) & 2)  # q = 0, 3: +; 1, 2: -
    sin_v = c if odd else s
    cos_v = s if odd else c
    return sin_sign * sin_v, cos_sign * cos_v


@njit_kernel_loop
def sincos_array(theta, out_sin, out_cos):
    """Elementwise sine and cosine of a flat array (tests compare it with numpy)."""
    for i in range(theta.shape[0]):
        out_sin[i], out_cos[i] = _sincos(theta[i])


@njit_kernel_loop
def exponent_and_phase(XT, members, dims, out):
    """Fill E[m, n] = const[m] - sum_d t_d^2 inv_s[d] / 2 and C, S = cos, sin of
    omega0[m] + sum_d omega[m, d] ratio[d] t_d, with t = x_n - mu[m] and XT = X^T [D, N].

    ``members`` = (mu [M, D], omega [M, D], omega0 [M], const [M]), ``dims`` = (inv_s [D],
    ratio [D]), ``out`` = (E, C, S) [M, N]; the loops over n are innermost and contiguous, so
    they vectorise."""
    mu, omega, omega0, const = members
    inv_s, ratio = dims
    E, C, S = out
    M, D, N = mu.shape[0], XT.shape[0], XT.shape[1]
    theta = np.empty(N)
    for m in range(M):
        Em = E[m]
        for n in range(N):
            Em[n] = const[m]
            theta[n] = omega0[m]
        for d in range(D):
            mud = mu[m, d]
            half = 0.5 * inv_s[d]
            beta = omega[m, d] * ratio[d]
            Xd = XT[d]
            for n in range(N):
                t = Xd[n] - mud
                Em[n] -= half * t * t
                theta[n] += beta * t
        Cm = C[m]
        Sm = S[m]
        for n in range(N):
            Sm[n], Cm[n] = _sincos(theta[n])


@njit_kernel_loop
def _kuu_pair(i, j, members, dims):
    """(C-, C+, S-, S+) of the corrected eq. A.5 for members i, j: each term's amplitude times
    the cosine and the sine of its phase (Kuu[i, j] = C- + C+)."""
    mu, omega, omega0 = members
    u, v, A, logpre = dims
    L0 = logpre
    em = 0.0
    ep = 0.0
    phm = omega0[j] - omega0[i]
    php = -(omega0[i] + omega0[j])
    for d in range(mu.shape[1]):
        tau = mu[i, d] - mu[j, d]
        wi = omega[i, d]
        wj = omega[j, d]
        inv2A = 0.5 / A[d]
        L0 -= (tau * tau + u[d] * v[d] * (wi * wi + wj * wj)) * inv2A
        k = u[d] * u[d] * inv2A
        em -= k * (wi - wj) * (wi - wj)
        ep -= k * (wi + wj) * (wi + wj)
        c = u[d] / A[d]
        phm += c * (wi + wj) * tau
        php += c * (wi - wj) * tau
    Rm = math.exp(L0 + em)
    Rp = math.exp(L0 + ep)
    sm, cm = _sincos(phm)
    sp, cp = _sincos(php)
    return Rm * cm, Rp * cp, Rm * sm, Rp * sp


@njit_kernel_loop
def kuu_value(members, dims, K):
    """Fill the symmetric K [M, M] = Kuu (upper triangle computed, mirrored)."""
    M = K.shape[0]
    for i in range(M):
        for j in range(i, M):
            Cm, Cp, _, _ = _kuu_pair(i, j, members, dims)
            K[i, j] = Cm + Cp
            K[j, i] = Cm + Cp


@njit_kernel_loop
def kuu_contract(members, dims, W, out):
    """Contract W = dL/dKuu [M, M] with the derivatives of Kuu; ``out`` = (dmu [M, D],
    domega [M, D], domega0 [M], du [D], dv [D], sum_ij W_ij Kuu_ij [1]), overwritten.

    Kuu[i, j] = Kuu[j, i]: member i moves the first argument of row i and column i, so the pair
    (i < j) has weight W_ij + W_ji for both members (2 W_ii on the diagonal counts once)."""
    mu, omega, omega0 = members
    u, v, A, _ = dims
    dmu, domega, domega0, du, dv, dvar = out
    M, D = mu.shape[0], mu.shape[1]
    dmu[:] = 0.0
    domega[:] = 0.0
    domega0[:] = 0.0
    du[:] = 0.0
    dv[:] = 0.0
    dvar[0] = 0.0
    for i in range(M):
        for j in range(i, M):
            Cm, Cp, Sm, Sp = _kuu_pair(i, j, members, dims)
            K = Cm + Cp
            w = W[i, j] + W[j, i]
            wshared = w if j > i else W[i, i]
            dvar[0] += wshared * K
            domega0[i] += w * (Sm + Sp)
            if j > i:
                domega0[j] += w * (Sp - Sm)
            for d in range(D):
                tau = mu[i, d] - mu[j, d]
                wi = omega[i, d]
                wj = omega[j, d]
                Ad = A[d]
                c = u[d] / Ad
                g_mu = -K * tau / Ad - Sm * c * (wi + wj) - Sp * c * (wi - wj)
                uc = u[d] * c
                g_wi = -K * (u[d] * v[d] / Ad) * wi - Cm * uc * (wi - wj) - Cp * uc * (wi + wj) - (Sm + Sp) * c * tau
                dmu[i, d] += w * g_mu
                domega[i, d] += w * g_wi
                if j > i:
                    g_wj = -K * (u[d] * v[d] / Ad) * wj + Cm * uc * (wi - wj) - Cp * uc * (wi + wj) - (Sm - Sp) * c * tau
                    dmu[j, d] -= w * g_mu
                    domega[j, d] += w * g_wj
                om2 = wi * wi + wj * wj
                dm = (wi - wj) * (wi - wj)
                dp = (wi + wj) * (wi + wj)
                A2 = Ad * Ad
                quad = (tau * tau + u[d] * v[d] * om2) / A2
                dL0_du = -1.0 / Ad - v[d] * om2 / (2.0 * Ad) + quad
                dL0_dv = 0.5 * (1.0 / v[d] - 1.0 / Ad) - u[d] * om2 / (2.0 * Ad) + 0.5 * quad
                uu = u[d] * u[d]
                g_u = (K * dL0_du + Cm * (-u[d] * dm / Ad + uu * dm / A2) + Cp * (-u[d] * dp / Ad + uu * dp / A2)
                       - (Sm * (wi + wj) + Sp * (wi - wj)) * tau * v[d] / A2)
                g_v = (K * dL0_dv + (Cm * dm + Cp * dp) * uu / (2.0 * A2)
                       + (Sm * (wi + wj) + Sp * (wi - wj)) * tau * u[d] / A2)
                du[d] += wshared * g_u
                dv[d] += wshared * g_v
