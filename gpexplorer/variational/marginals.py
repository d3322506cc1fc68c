"""Marginals of q(f) per latent and their backward pass (SAVIGP eq. 10-11 and 15).

For latent j with Kuu = Kuu_j + jitter I = L L^T, Kuf = Kuf_j and kdiag = diag K_ff,j:

    A_j = Kfu Kuu^-1                                             (eq. 5; by Cholesky solves)
    b_kjn = [A_j m_kj]_n                                         (eq. 11, 15)
    sigma^2_kjn = kdiag_n - [A_j Kuf]_nn + [A_j S_kj A_j^T]_nn   (eq. 11, 15)

Everything is O(N M^2) per latent (O(N M) for the S-term of a diagonal family).
:func:`backward` turns dL/db_kj and dL/dsigma^2_kj (N,) into dL/dm_kj, dL/dS_kj and
dL/dKuu, dL/dKuf, dL/dkdiag, which :func:`parameter_gradients` contracts through
:mod:`gpexplorer.covariances` and ``kernel.grad_params_diag`` into kernel and feature
gradients.

Speed: Kuu^-1 is formed once from the Cholesky factor (LAPACK potri, M^3/3) and every product
with it is a GEMM (LAPACK's potrs with N right-hand sides costs several GEMMs). :func:`forward`
knows the family. For the full Gaussian (S = L_S L_S^T, K = 1) with C = Kuu^-1 - Kuu^-1 S Kuu^-1
(M x M) and CK = C Kuf,

    sigma^2_n = kdiag_n - [Kuf^T C Kuf]_nn,   dL/dKuf = Kuu^-1 m db^T - 2 CK diag(dvar),
    dL/dS = A^T diag(dvar) A,   dL/dKuu = dS - (Kuu^-1 S dS + dS S Kuu^-1) - sym(Kuu^-1 m (A^T db)^T)

with B = Kuu^-1 L_S formed once (M^3; the cross term of eq. 20 reuses it): CK = A^T - B (B^T Kuf) and
Kuu^-1 S dS = B (L_S^T A^T diag(dvar)) A by rank-N products, so the passes are M^2 N products, one
Kuu^-1 and one B (at M = 750 and N = 100 the M x M products they replace took a quarter of a step);
A S_k is formed only if asked for (``LatentMarginals.AS``).
For a diagonal family nothing of size K N M is formed.
:func:`forward_reference` / :func:`backward_reference` are the plain Cholesky-solve versions,
kept as the reference the tests compare these against.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy import linalg as sla

from gpexplorer import covariances
from gpexplorer.linalg import inv_from_cholesky, jittered_cholesky
from gpexplorer.parameters import sum_gradients


@dataclass
class LatentMarginals:
    """The forward quantities of one latent, kept for the backward pass."""

    Kuu: np.ndarray  # [M, M] without jitter
    Kuf: np.ndarray  # [M, N]
    kdiag: np.ndarray  # [N]
    L: np.ndarray  # chol(Kuu + jitter I)
    At: np.ndarray  # [M, N] A^T = Kuu^-1 Kuf (formed on first access if given as None with Kinv)
    AS: np.ndarray  # [K, N, M] A S_k (formed on first access on the fast paths)
    mean: np.ndarray  # [K, N] b_k
    var: np.ndarray  # [K, N] sigma^2_k
    jitter_used: float
    Kinv: np.ndarray = None  # [M, M] (Kuu + jitter I)^-1 (None from forward_reference)
    factor: np.ndarray = None  # [M, M] L_S of a full Gaussian (S = L_S L_S^T, K = 1), else None
    CK: np.ndarray = None  # [M, N] (Kuu^-1 - Kuu^-1 S Kuu^-1) Kuf with ``factor``
    svar: np.ndarray = None  # [K, M] the diagonals s_k of a diagonal family, else None
    KinvL: np.ndarray = None  # [M, M] Kuu^-1 L_S with ``factor`` (also the cross term's)


def _get_AS(lat):
    if lat._AS is None:
        A = lat.At.T
        lat._AS = (A * lat.svar[:, None, :] if lat.svar is not None else (A @ lat.factor @ lat.factor.T)[None])
    return lat._AS


def _set_AS(lat, value):
    lat._AS = value


def _get_At(lat):
    if lat._At is None and lat.Kinv is not None:  # the fused FG path leaves A^T unformed
        lat._At = lat.Kinv @ lat.Kuf
    return lat._At


def _set_At(lat, value):
    lat._At = value


LatentMarginals.AS = property(_get_AS, _set_AS)
LatentMarginals.At = property(_get_At, _set_At)


def covariance_blocks(kernel, feature, X):
    """(Kuu, Kuf, kdiag) of one latent from :mod:`gpexplorer.covariances`."""
    Kuu = covariances.Kuu(feature, kernel)
    Kuf = covariances.Kuf(feature, kernel, X)
    kdiag = kernel.Kdiag(X)
    return Kuu, Kuf, kdiag


def _checked(Kuu, Kuf, kdiag, means):
    Kuu = np.asarray(Kuu, dtype=float)
    Kuf = np.asarray(Kuf, dtype=float)
    M, N = Kuf.shape
    if Kuu.shape != (M, M) or np.shape(kdiag) != (N,):
        raise ValueError(f"Kuu must be ({M}, {M}) and kdiag ({N},) for Kuf of shape {Kuf.shape}; "
                         f"got {Kuu.shape} and {np.shape(kdiag)}")
    means = np.asarray(means, dtype=float)
    if means.ndim != 2 or means.shape[1] != M:
        raise ValueError(f"means must be (K, {M}); got {means.shape}")
    return Kuu, Kuf, np.asarray(kdiag, dtype=float), means


def forward_blocks(Kuu, Kuf, kdiag, means, S_times, jitter=1e-6, *, factor=None, svar=None):
    """Eq. 11 / 15 from the matrices: ``means`` (K, M), ``S_times(A)`` -> (K, N, M) = A S_k.

    Kuu gets ``jitter`` on its diagonal, escalated (with a JitterWarning) if the Cholesky fails.
    Give ``factor`` (L_S of a full Gaussian, K = 1) or ``svar`` ((K, M) diagonals of a diagonal
    family) for the fast forms of the module docstring; ``S_times`` is then not called.
    """
    Kuu, Kuf, kdiag, means = _checked(Kuu, Kuf, kdiag, means)
    L, jitter_used = jittered_cholesky(Kuu, jitter, what="Kuu")
    Kinv = inv_from_cholesky(L)
    At = Kinv @ Kuf
    mean = means @ At  # (K, N)
    var = kdiag - np.einsum("mn,mn->n", At, Kuf)
    CK = AS = KinvL = None
    if factor is not None:
        factor = np.asarray(factor, dtype=float)
        KinvL = Kinv @ factor
        CK = At - KinvL @ (KinvL.T @ Kuf)  # rank-N products, not the M x M C
        var = (kdiag - np.einsum("mn,mn->n", Kuf, CK))[None]
    elif svar is not None:
        svar = np.asarray(svar, dtype=float)
        var = var[None] + svar @ (At * At)
    else:
        AS = S_times(At.T)
        var = var[None] + np.einsum("knm,mn->kn", AS, At)
    lat = LatentMarginals(Kuu=Kuu, Kuf=Kuf, kdiag=kdiag, L=L, At=At, AS=AS, mean=mean, var=var,
                          jitter_used=jitter_used, Kinv=Kinv, factor=factor, CK=CK, svar=svar, KinvL=KinvL)
    return lat


def forward_reference(Kuu, Kuf, kdiag, means, S_times, jitter=1e-6):
    """:func:`forward_blocks` by Cholesky solves and ``S_times``: the plain path (reference)."""
    Kuu, Kuf, kdiag, means = _checked(Kuu, Kuf, kdiag, means)
    L, jitter_used = jittered_cholesky(Kuu, jitter, what="Kuu")
    At = sla.cho_solve((L, True), Kuf, check_finite=False)  # Kuu^-1 Kuf
    A = At.T
    mean = means @ At  # (K, N)
    AS = S_times(A)
    qff = np.einsum("mn,mn->n", At, Kuf)
    var = kdiag[None, :] - qff[None, :] + np.einsum("knm,nm->kn", AS, A)
    return LatentMarginals(Kuu=Kuu, Kuf=Kuf, kdiag=kdiag, L=L, At=At, AS=AS, mean=mean, var=var,
                           jitter_used=jitter_used)


def forward(kernel, feature, X, posterior, j, jitter=1e-6):
    """:class:`LatentMarginals` of latent j of ``posterior`` (a :mod:`.posterior` family)."""
    Kuu, Kuf, kdiag = covariance_blocks(kernel, feature, X)
    structure = {}
    if getattr(posterior, "diagonal", False) and hasattr(posterior, "variances"):
        structure["svar"] = posterior.variances(j)
    elif posterior.K == 1 and hasattr(posterior, "factor"):
        structure["factor"] = posterior.factor(j)
    return forward_blocks(Kuu, Kuf, kdiag, posterior.means[j], lambda A: posterior.S_times(j, A), jitter,
                          **structure)


def backward(lat: LatentMarginals, means, diagonal, dmean, dvar):
    """Reverse of :func:`forward_blocks` (same outputs as :func:`backward_reference`), by GEMMs
    with Kuu^-1 and the family's structure when ``lat`` comes from :func:`forward_blocks`."""
    if lat.Kinv is None:
        return backward_reference(lat, means, diagonal, dmean, dvar)
    At, Kinv = lat.At, lat.Kinv
    dmean = np.asarray(dmean, dtype=float)
    dvar = np.asarray(dvar, dtype=float)
    means = np.asarray(means, dtype=float)
    dm = dmean @ At.T  # A^T db_k as rows
    G = dvar.sum(axis=0)
    AG = At * G  # (M, N) scratch below: few fresh (M, N) arrays (page faults cost as much as flops)
    AGA = AG @ At.T  # A^T diag(G) A
    alpha = Kinv @ means.T  # (M, K)
    if lat.CK is not None and dvar.shape[0] == 1:  # the full Gaussian: module docstring
        KinvL = Kinv @ lat.factor if lat.KinvL is None else lat.KinvL
        KSd = (KinvL @ (lat.factor.T @ AG)) @ At.T  # Kuu^-1 S A^T diag(G) A by rank-N products
        dKuf = np.multiply(lat.CK, -2.0 * G)
        dKuf += np.multiply(alpha, dmean, out=AG)
        am = alpha @ dm
        dKuu = AGA - (KSd + KSd.T) - 0.5 * (am + am.T)
        dS = np.diag(AGA)[None] if diagonal else AGA[None]
        return dm, dS, 0.5 * (dKuu + dKuu.T), dKuf, G
    # P = Kuu^-1 dA^T with dA = db^T m + 2 sum_k diag(dvar_k) A S_k; W = P A
    if lat.svar is not None:
        scratch = np.multiply(At, lat.svar.T @ dvar, out=np.empty_like(At))
    else:
        scratch = np.einsum("kn,knm->mn", dvar, lat.AS)
    P = (2.0 * Kinv) @ scratch
    if dmean.shape[0] == 1:  # an outer product: broadcasting beats a GEMM with inner dimension 1
        P += np.multiply(alpha, dmean, out=scratch)
    else:
        P += np.matmul(alpha, dmean, out=scratch)
    W = P @ At.T
    if diagonal:
        dS = dvar @ (At * At).T
    else:
        dS = np.stack([(At * dvar[k]) @ At.T for k in range(dvar.shape[0])])
    AG *= 2.0
    P -= AG  # dKuf = P - 2 A^T diag(G)
    dKuu = -0.5 * (W + W.T) + AGA
    return dm, dS, 0.5 * (dKuu + dKuu.T), P, G


def backward_reference(lat: LatentMarginals, means, diagonal, dmean, dvar):
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


__all__ = ["LatentMarginals", "backward", "backward_reference", "covariance_blocks", "forward", "forward_blocks",
           "forward_reference", "parameter_gradients", "predict_latent"]
