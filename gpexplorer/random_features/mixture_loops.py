"""Jitted leaves of the GLM's entropy bound (revrand report eq. 24, :mod:`.mixture_elbo`): the
pairwise log densities z_kj = log N(m_k | m_j, diag(psi_k + psi_j)) and the backward pass through
them, each one sweep over the K(K+1)/2 unordered pairs (z is symmetric in k and j) instead of
numpy's dozen [K, K, D] temporaries (the log-determinants stay in numpy, whose ``log`` is
vectorised) (the bound was half of a USPS step: K = 10, D = 1,600). The
module is public (not ``_loops``) so that ``mixture_elbo`` may import it
(tests/test_architecture.py).
"""

import math

import numpy as np

from gpexplorer._jit import njit_kernel_loop

LOG_2PI = math.log(2.0 * math.pi)


@njit_kernel_loop
def pair_log_densities(means, variances, logdets):
    """Z [K, K]: Z_kj = -1/2 [D log 2 pi + logdets_kj + sum_d (m_kd - m_jd)^2 / s_d], s = psi_k + psi_j
    (``logdets`` [K, K] = sum_d log s_d, from numpy's vectorised log)."""
    K, D = means.shape
    Z = np.empty((K, K))
    for k in range(K):
        for j in range(k, K):
            acc = 0.0
            for d in range(D):
                t = means[k, d] - means[j, d]
                acc += t * t / (variances[k, d] + variances[j, d])
            z = -0.5 * (acc + logdets[k, j] + D * LOG_2PI)
            Z[k, j] = z
            Z[j, k] = z
    return Z


@njit_kernel_loop
def pair_backward(means, variances, R, dmeans, dvars):
    """Add to dmeans and dvars [K, D] the gradient of sum_kj R_kj z_kj (z of :func:`pair_log_densities`):
    dz/dm_k = -t / s = -dz/dm_j, dz/ds = (t^2 / s - 1) / (2 s), t = m_k - m_j; a pair k != j
    carries R_kj + R_jk, and z_kk depends on psi_k through s = 2 psi_k."""
    K, D = means.shape
    for k in range(K):
        for j in range(k, K):
            w = R[k, j] + R[j, k] if j != k else R[k, k]
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


@njit_kernel_loop
def log_prior_terms(means, variances, lam, dmeans, dvars, dlam):
    """(1/K) sum_k E_{q_k} log N(w | 0, diag lam) (:func:`.mixture_elbo.expected_log_prior`) in one
    sweep: returns the value and fills its gradients dmeans, dvars [K, D] and dlam [D]."""
    K, D = means.shape
    value = -0.5 * D * LOG_2PI
    for d in range(D):
        second = 0.0
        for k in range(K):
            second += means[k, d] * means[k, d] + variances[k, d]
        second /= K
        inv = 1.0 / lam[d]
        value -= 0.5 * (math.log(lam[d]) + second * inv)
        dlam[d] = 0.5 * (second * inv - 1.0) * inv
        for k in range(K):
            dmeans[k, d] = -means[k, d] * inv / K
            dvars[k, d] = -0.5 * inv / K
    return value
