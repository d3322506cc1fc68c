"""Jitted leaves of the GLM's entropy bound (revrand report eq. 24, :mod:`.mixture_elbo`): the
pairwise quadratic terms sum_d (m_kd - m_jd)^2 / (psi_kd + psi_jd) and the backward pass through
every pair, each one sweep over the K^2 D pairs instead of numpy's dozen [K, K, D] temporaries
(the bound was half of a USPS step: K = 10, D = 1,600). The log-determinants stay in numpy,
whose float64 ``log`` is vectorised. The module is public (not ``_loops``) so that
``mixture_elbo`` may import it (tests/test_architecture.py).
"""

import numpy as np

from gpexplorer._jit import njit_kernel_loop


@njit_kernel_loop
def pair_quadratics(means, variances):
    """Q [K, K]: Q_kj = sum_d (m_kd - m_jd)^2 / (psi_kd + psi_jd) (symmetric, zero diagonal)."""
    K, D = means.shape
    Q = np.zeros((K, K))
    for k in range(K):
        for j in range(k + 1, K):
            acc = 0.0
            for d in range(D):
                t = means[k, d] - means[j, d]
                acc += t * t / (variances[k, d] + variances[j, d])
            Q[k, j] = acc
            Q[j, k] = acc
    return Q


@njit_kernel_loop
def pair_backward(means, variances, R, dmeans, dvars):
    """Add to dmeans and dvars [K, D] the gradient of sum_kj R_kj z_kj, z_kj = log N(m_k | m_j,
    psi_k + psi_j): dz/dm_k = -t / s = -dz/dm_j, dz/ds = (t^2 / s - 1) / (2 s), t = m_k - m_j."""
    K, D = means.shape
    for k in range(K):
        for j in range(K):
            w = R[k, j]
            for d in range(D):
                inv = 1.0 / (variances[k, d] + variances[j, d])
                t = means[k, d] - means[j, d]
                g = w * t * inv
                dmeans[k, d] -= g
                dmeans[j, d] += g
                u = 0.5 * w * (t * t * inv - 1.0) * inv
                dvars[k, d] += u
                dvars[j, d] += u
    return dmeans, dvars
