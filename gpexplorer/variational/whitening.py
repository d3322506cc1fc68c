"""Whitened coordinates for the q(u) block of an optimiser: the same ELBO, better conditioned.

With Kuu_j = Lk_j Lk_j^T held fixed (the hyperparameters do not move while the q block is
optimised), every mean is written m_kj = Lk_j m~_kj and, for FG, the factor S_j = L_j L_j^T as
L_j = Lk_j L~_j (lower triangular with diagonal Lk_j,ii L~_j,ii > 0, so its log-diagonal is
log Lk_j,ii + log L~_j,ii). The prior term of eq. 20 becomes -1/2 (|m~|^2 + |L~|_F^2) + const,
whose curvature is the identity, where in the free coordinates it is Kuu^-1 (condition number
1e6 and more for a dozen inducing points on a smooth kernel): L-BFGS then needs a handful of
evaluations where it needed hundreds. This is GPflow's ``whiten=True`` applied as a change of
the optimiser's variables only: the posterior's own parameters, the ELBO and its optimum are
unchanged. Only the full Gaussian is whitened: a diagonal family cannot whiten its variances
(Lk diag(s) Lk^T is not diagonal), and whitening its means alone measured worse (on the lab's
binary toy MoG1 ended at an ELBO of -105 against -74 unwhitened: the q block left the variances
where the hyperparameter block then shrank the prior).

z is laid out as the posterior's free vector (same slices).
"""

from __future__ import annotations

import numpy as np
from scipy import linalg as sla

from gpexplorer import covariances
from gpexplorer.linalg import CholeskyError, jittered_cholesky
from gpexplorer.variational.packing import pack_factor, tril_flat_positions, unpack_factor


class WhitenedCoordinates:
    """z <-> the free vector of ``posterior`` for the Kuu Cholesky factors ``choleskys`` (per latent)."""

    def __init__(self, posterior, choleskys):
        self.posterior = posterior
        self.L = [np.asarray(L, dtype=float) for L in choleskys]
        if len(self.L) != posterior.Q or any(L.shape != (m, m) for L, m in zip(self.L, posterior.sizes)):
            raise ValueError("one (M_j, M_j) Cholesky factor of Kuu per latent is needed")
        if posterior.diagonal or posterior.K != 1:
            raise ValueError("whitened coordinates are for the full Gaussian (FG) posterior")

    def _parts(self):
        for j, L in enumerate(self.L):
            for k in range(self.posterior.K):
                yield j, L, self.posterior.slices(k, j)

    def _triangles(self, j, L):
        """(Lk block, slice of the free vector) per free triangle of L_j: the whole of Lk for FG, its
        diagonal blocks for a mean-field q (Kuu is block-diagonal over independent components)."""
        return [(L[o:o + b, o:o + b], sc) for o, b, sc in self.posterior.triangles(j)]

    def to_z(self, free):
        z = np.array(free, dtype=float)
        for j, L, (sm, _) in self._parts():
            z[sm] = sla.solve_triangular(L, free[sm], lower=True, check_finite=False)
            for Lb, sc in self._triangles(j, L):
                LS = unpack_factor(free[sc], Lb.shape[0])
                z[sc] = pack_factor(sla.solve_triangular(Lb, LS, lower=True, check_finite=False))
        return z

    def to_free(self, z):
        free = np.array(z, dtype=float)
        for j, L, (sm, _) in self._parts():
            free[sm] = L @ z[sm]
            for Lb, sc in self._triangles(j, L):
                free[sc] = pack_factor(Lb @ unpack_factor(z[sc], Lb.shape[0]))
        return free

    def gradient(self, z, g_free):
        """d/dz from d/dfree (the free vector at ``to_free(z)``)."""
        g = np.array(g_free, dtype=float)
        for j, L0, (sm, _) in self._parts():
            g[sm] = L0.T @ g_free[sm]
            for L, sc in self._triangles(j, L0):
                m = L.shape[0]
                Lt = unpack_factor(z[sc], m)
                LS = L @ Lt
                G = np.zeros((m, m))
                G.reshape(-1)[tril_flat_positions(m)] = g_free[sc]
                d = np.arange(m)
                G[d, d] /= LS[d, d]  # the free vector holds log L_ii
                Gt = np.tril(L.T @ G)
                Gt[d, d] *= Lt[d, d]
                g[sc] = Gt.reshape(-1)[tril_flat_positions(m)]
        return g


def whitened_block(model, packer, x):
    """(positions of "posterior" in ``packer``'s vector, WhitenedCoordinates at the Kuu of the
    parameters ``x``), or None when the posterior is fixed or not a full Gaussian, or Kuu cannot
    be factorised; ``model`` is left at ``x``. The optimiser's q block (:mod:`.fitting`)."""
    if "posterior" not in packer.names or model.posterior.diagonal or model.posterior.K != 1:
        return None
    start = 0
    for n in packer.names:
        if n == "posterior":
            break
        start += packer.sizes[n]
    model.set_parameters(**packer.unpack(x))
    try:
        chols = [jittered_cholesky(covariances.Kuu(f, k), model.jitter, what="Kuu", warn=False)[0]
                 for k, f in zip(model.kernels, model.features)]
    except (CholeskyError, FloatingPointError, np.linalg.LinAlgError, ValueError):
        return None
    return np.arange(start, start + packer.sizes["posterior"]), WhitenedCoordinates(model.posterior, chols)


__all__ = ["WhitenedCoordinates", "whitened_block"]
