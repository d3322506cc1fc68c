"""Marginals of q(f) per latent and their backward pass (SAVIGP eq. 10-11 and 15).

For latent j with Kuu = Kuu_j + jitter I = L L^T, Kuf = Kuf_j and kdiag = diag K_ff,j:

    A_j = Kfu Kuu^-1                                             (eq. 5; by Cholesky solves)
    b_kjn = [A_j m_kj]_n                                         (eq. 11, 15)
    sigma^2_kjn = kdiag_n - [A_j Kuf]_nn + [A_j S_kj A_j^T]_nn   (eq. 11, 15)

Everything is O(N M^2) per latent (O(N M) for the S-term of a diagonal family); no inverse
is formed. :func:`backward` turns dL/db_kj and dL/dsigma^2_kj (N,) into dL/dm_kj, dL/dS_kj and
dL/dKuu, dL/dKuf, dL/dkdiag, which :func:`parameter_gradients` contracts through
:mod:`gpexplorer.covariances` and ``kernel.grad_params_diag`` into kernel and feature
gradients.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy import linalg as sla

from gpexplorer import covariances
from gpexplorer.linalg import jittered_cholesky
from gpexplorer.parameters import sum_gradients


@dataclass
class LatentMarginals:
    """The forward quantities of one latent, kept for the backward pass."""

    Kuu: np.ndarray  # [M, M] without jitter
    Kuf: np.ndarray  # [M, N]
    kdiag: np.ndarray  # [N]
    L: np.ndarray  # chol(Kuu + jitter I)
    At: np.ndarray  # [M, N] A^T = Kuu^-1 Kuf
    AS: np.ndarray  # [K, N, M] A S_k
    mean: np.ndarray  # [K, N] b_k
    var: np.ndarray  # [K, N] sigma^2_k
    jitter_used: float


def covariance_blocks(kernel, feature, X):
    """(Kuu, Kuf, kdiag) of one latent from :mod:`gpexplorer.covariances`."""
    Kuu = covariances.Kuu(feature, kernel)
    Kuf = covariances.Kuf(feature, kernel, X)
    kdiag = kernel.Kdiag(X)
    return Kuu, Kuf, kdiag


def forward_blocks(Kuu, Kuf, kdiag, means, S_times, jitter=1e-6):
    """Eq. 11 / 15 from the matrices: ``means`` (K, M), ``S_times(A)`` -> (K, N, M) = A S_k.

    Kuu gets ``jitter`` on its diagonal, escalated (with a JitterWarning) if the Cholesky fails.
    """
    Kuu = np.asarray(Kuu, dtype=float)
    Kuf = np.asarray(Kuf, dtype=float)
    M, N = Kuf.shape
    if Kuu.shape != (M, M) or np.shape(kdiag) != (N,):
        raise ValueError(f"Kuu must be ({M}, {M}) and kdiag ({N},) for Kuf of shape {Kuf.shape}; "
                         f"got {Kuu.shape} and {np.shape(kdiag)}")
    L, jitter_used = jittered_cholesky(Kuu, jitter, what="Kuu")
    At = sla.cho_solve((L, True), Kuf, check_finite=False)  # Kuu^-1 Kuf
    A = At.T
    means = np.asarray(means, dtype=float)
    if means.ndim != 2 or means.shape[1] != M:
        raise ValueError(f"means must be (K, {M}); got {means.shape}")
    mean = means @ At  # (K, N)
    AS = S_times(A)
    qff = np.einsum("mn,mn->n", At, Kuf)
    var = kdiag[None, :] - qff[None, :] + np.einsum("knm,nm->kn", AS, A)
    return LatentMarginals(Kuu=Kuu, Kuf=Kuf, kdiag=np.asarray(kdiag, dtype=float), L=L, At=At, AS=AS,
                           mean=mean, var=var, jitter_used=jitter_used)


def forward(kernel, feature, X, posterior, j, jitter=1e-6):
    """:class:`LatentMarginals` of latent j of ``posterior`` (a :mod:`.posterior` family)."""
    Kuu, Kuf, kdiag = covariance_blocks(kernel, feature, X)
    return forward_blocks(Kuu, Kuf, kdiag, posterior.means[j], lambda A: posterior.S_times(j, A), jitter)


def backward(lat: LatentMarginals, means, diagonal, dmean, dvar):
    """Reverse of :func:`forward_blocks`.

    ``dmean``, ``dvar`` (K, N) are dL/db_k and dL/dsigma^2_k. Returns (dm (K, M), dS, dKuu
    (M, M, symmetric), dKuf (M, N), dkdiag (N,)); dS is (K, M) (the diagonal) when
    ``diagonal`` else (K, M, M) symmetric.
    """
    At, AS = lat.At, lat.AS
    A = At.T
    dmean = np.asarray(dmean, dtype=float)
    dvar = np.asarray(dvar, dtype=float)
    dm = dmean @ A  # A^T db_k as rows
    if diagonal:
        dS = dvar @ (A * A)
    else:
        dS = np.stack([(At * dvar[k]) @ A for k in range(dvar.shape[0])])
    G = dvar.sum(axis=0)
    dkdiag = G
    # dL/dA from b = A m and the A S A^T term
    dA = dmean.T @ np.asarray(means, dtype=float) + 2.0 * np.einsum("kn,knm->nm", dvar, AS)
    # through A = Kfu Kuu^-1: dKuf += Kuu^-1 dA^T, dKuu -= sym(Kuu^-1 dA^T A)
    P = sla.cho_solve((lat.L, True), dA.T, check_finite=False)  # [M, N]
    W = P @ A
    # the -diag(Kfu Kuu^-1 Kuf) term: dKuf -= 2 A^T diag(G), dKuu += A^T diag(G) A
    AG = At * G[None, :]
    dKuf = P - 2.0 * AG
    dKuu = -0.5 * (W + W.T) + AG @ A
    return dm, dS, 0.5 * (dKuu + dKuu.T), dKuf, dkdiag


def parameter_gradients(kernel, feature, X, lat: LatentMarginals, dKuu, dKuf, dkdiag):
    """(kernel gradient dict, feature gradient dict) of the natural parameters."""
    g_kernel, g_feature = covariances.gradients(feature, kernel, X, dKuu, dKuf, Kuu=lat.Kuu, Kuf=lat.Kuf)
    g_kernel = sum_gradients(g_kernel, kernel.grad_params_diag(dkdiag, X))
    return g_kernel, g_feature


def predict_latent(kernel, feature, Xnew, posterior, j, jitter=1e-6):
    """Per component (K, N*) mean and variance of f_j at Xnew (eq. 10-11 at new inputs)."""
    lat = forward(kernel, feature, Xnew, posterior, j, jitter)
    return lat.mean, np.maximum(lat.var, 0.0)


__all__ = ["LatentMarginals", "backward", "covariance_blocks", "forward", "forward_blocks", "parameter_gradients",
           "predict_latent"]
