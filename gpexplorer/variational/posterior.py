"""Variational families over the inducing variables of Q latent GPs (SAVIGP, Dezfouli & Bonilla
2015, eq. 7): q(u) = sum_k pi_k prod_j N(u_j; m_kj, S_kj), u_j with M_j entries.

* :class:`FullGaussian` (FG): K = 1, S_j = L_j L_j^T with L_j lower triangular; the free vector
  holds, per latent, m_j then the lower triangle of L_j row by row with its diagonal as log L_ii.
* :class:`gpexplorer.variational.mixture.MixtureOfDiagonalGaussians` (MoG1 for K = 1, MoG2 for
  K = 2): S_kj = diag(s_kj), the free vector holds the K logits of pi = softmax(logits), then per
  component and latent m_kj and log s_kj.

:func:`gpexplorer.variational.families.make_posterior` builds any of them by name.

Both map one flat unconstrained vector (``free``) to the moments and give

* the entropy term: the exact Gaussian entropy sum_j 1/2 log|2 pi e S_j| when K = 1, the Jensen
  lower bound (eq. 19) -sum_k pi_k log sum_l pi_l N(m_k; m_l, S_k + S_l) when K > 1
  (``entropy_kind`` says which);
* the cross term E_q[log p(u)] (eq. 20) from the Cholesky factors of Kuu_j;
* :meth:`chain`: gradients with respect to (pi, m_kj, S_kj) turned into a gradient of ``free``.

Initialisation: m = 0 and S = I (L = I, log s = 0) unless :meth:`initialise_from_prior` sets
S_kj = Kuu_j (L_j = chol Kuu_j, s_kj = diag Kuu_j), which makes q(u) = p(u) for K = 1.
"""

from __future__ import annotations

import numpy as np

from gpexplorer.linalg import inv_from_cholesky
from gpexplorer.variational.packing import diag_positions, pack_factor, tril_flat_positions, unpack_factor

LOG_2PI = float(np.log(2.0 * np.pi))


def inducing_sizes(num_inducing, num_latent):
    """Per latent, its number of inducing variables (one count for all, or a list), validated."""
    if np.ndim(num_inducing) == 0:
        if num_latent is None:
            num_latent = 1
        sizes = [int(num_inducing)] * int(num_latent)
    else:
        sizes = [int(m) for m in num_inducing]
        if num_latent is not None and len(sizes) != int(num_latent):
            raise ValueError(f"num_inducing lists {len(sizes)} latents but num_latent is {num_latent}")
    if not sizes or min(sizes) < 1:
        raise ValueError(f"every latent needs at least one inducing variable; got sizes {sizes}")
    return sizes


def log_softmax(logits):
    z = np.asarray(logits, dtype=float) - np.max(logits)
    return z - np.log(np.sum(np.exp(z)))


class VariationalPosterior:
    """Shared bookkeeping; subclasses define the free-vector layout and the covariance maths."""

    K = 1
    diagonal = False

    def __init__(self, num_inducing, num_latent=None):
        self.sizes = inducing_sizes(num_inducing, num_latent)
        self.free = np.zeros(self.num_free)
        self._set_identity()

    # layout ------------------------------------------------------------------------------------
    @property
    def Q(self):
        return len(self.sizes)

    @property
    def num_free(self) -> int:
        raise NotImplementedError

    def set_free(self, x):
        """Set the free vector (a copy is kept); any finite vector is valid."""
        x = np.array(x, dtype=float).ravel()
        if x.shape != (self.num_free,):
            raise ValueError(f"the free vector of {type(self).__name__} has {self.num_free} entries; got {x.size}")
        if not np.all(np.isfinite(x)):
            raise ValueError("the free vector contains NaN or infinite values")
        self.free = x
        return self

    def copy(self):
        new = object.__new__(type(self))
        new.__dict__.update(self.__dict__)
        new.free = self.free.copy()
        return new

    @property
    def entropy_kind(self) -> str:
        """"exact" (K = 1: the Gaussian entropy) or "jensen" (K > 1: the bound of eq. 19)."""
        return "exact" if self.K == 1 else "jensen"

    # moments -----------------------------------------------------------------------------------
    @property
    def pi(self):
        """(K,) mixture weights (on the simplex for any free vector)."""
        return np.exp(self.log_pi)

    @property
    def log_pi(self):
        return np.zeros(1)

    @property
    def means(self):
        """Per latent j, the (K, M_j) means m_kj."""
        raise NotImplementedError

    def mean_array(self):
        """The means as one (K, Q, M) array (every latent must have the same M)."""
        if len(set(self.sizes)) != 1:
            raise ValueError(f"the latents have different numbers of inducing variables {self.sizes}; use means")
        return np.stack(self.means, axis=1)

    def covariance(self, k, j):
        """S_kj as a dense (M_j, M_j) matrix."""
        raise NotImplementedError

    def S_times(self, j, A):
        """(K, N, M_j): A S_kj for every component k (A is (N, M_j))."""
        raise NotImplementedError

    def trace_with(self, j, Kinv):
        """(K,): tr(Kinv S_kj)."""
        return np.array([np.sum(Kinv * self.covariance(k, j)) for k in range(self.K)])

    # terms -------------------------------------------------------------------------------------
    def cross_term(self, kuu_choleskys, kuu_inverses=None, kinv_factors=None, raw=False):
        """E_q[log p(u)] (eq. 20) with p(u_j) = N(0, Kuu_j), Kuu_j = L_j L_j^T.

        Returns (value, d/dfree, [d/dKuu_j]); -1/2 sum_k pi_k sum_j [M_j log 2pi + log|Kuu_j|
        + m_kj^T Kuu_j^-1 m_kj + tr(Kuu_j^-1 S_kj)]. ``kuu_inverses``: the Kuu_j^-1 if known;
        ``kinv_factors``: a full Gaussian's Kuu_j^-1 L_S,j if known. ``raw``: d/dfree as the
        (d/dpi, [d/dm_kj], [d/dS_kj]) that :meth:`chain` takes (linear, so a caller adds its own first)."""
        if len(kuu_choleskys) != self.Q:
            raise ValueError(f"cross_term needs {self.Q} Cholesky factors (one per latent); got {len(kuu_choleskys)}")
        pi = self.pi
        per_k = np.zeros(self.K)
        dm, dS, dKuu = [], [], []
        for j, (L, mj) in enumerate(zip(kuu_choleskys, self.means)):
            if L.shape != (self.sizes[j], self.sizes[j]):
                raise ValueError(f"Kuu of latent {j} must be ({self.sizes[j]}, {self.sizes[j]}); got {L.shape}")
            Kinv = inv_from_cholesky(L) if kuu_inverses is None else kuu_inverses[j]
            logdet = 2.0 * np.sum(np.log(np.diag(L)))
            alpha = mj @ Kinv  # (K, M): rows Kuu^-1 m_kj
            quad = np.einsum("km,km->k", alpha, mj)
            tr, sandwiched = self.trace_and_sandwich(j, Kinv, None if kinv_factors is None else kinv_factors[j])
            per_k += -0.5 * (self.sizes[j] * LOG_2PI + logdet + quad + tr)
            dm.append(-pi[:, None] * alpha)
            if self.diagonal:
                dS.append(-0.5 * pi[:, None] * np.diag(Kinv)[None, :])
            else:
                dS.append(-0.5 * pi[:, None, None] * Kinv[None])
            G = sum(pi[k] * (np.outer(alpha[k], alpha[k]) + sandwiched[k]) for k in range(self.K))
            dKuu.append(-0.5 * (Kinv - G))
        value = float(pi @ per_k)
        return value, ((per_k, dm, dS) if raw else self.chain(per_k, dm, dS)), dKuu

    def trace_and_sandwich(self, j, Kinv, kinv_factor=None):
        """(tr(Kuu^-1 S_kj) (K,), [Kuu^-1 S_kj Kuu^-1 per k]) for the cross term and its gradient."""
        return self.trace_with(j, Kinv), [Kinv @ self.covariance(k, j) @ Kinv for k in range(self.K)]

    def entropy(self):
        """(value, d/dfree) of the entropy term: exact for K = 1, eq. 19 for K > 1."""
        raise NotImplementedError

    def chain(self, dpi, dm, dS):
        """d/dfree from d/dpi (K,), d/dm_kj (per j: (K, M_j)) and d/dS_kj (per j: (K, M_j, M_j),
        symmetric, or (K, M_j) for a diagonal family; a dense one is reduced to its diagonal)."""
        raise NotImplementedError

    # initialisation ----------------------------------------------------------------------------
    def _set_identity(self):
        raise NotImplementedError

    def initialise_from_prior(self, kuu_choleskys, mean_scale=0.0, seed=0):
        """m_kj = mean_scale * sqrt(diag Kuu_j) * N(0, 1) draws (0 by default; a mixture needs
        mean_scale > 0 to break the symmetry between its components), S_kj = Kuu_j."""
        raise NotImplementedError


class FullGaussian(VariationalPosterior):
    """FG: K = 1, per latent m_j and S_j = L_j L_j^T (diag of L_j through exp). Written over the
    lower-triangular diagonal blocks ("triangles") of L_j, of which FG has one per latent and
    :class:`gpexplorer.variational.mean_field.MeanFieldGaussian` one per component."""

    K = 1
    diagonal = False

    def block_sizes(self, j):
        """The sizes of the diagonal blocks of L_j that are free (FG: one, the whole of it)."""
        return (self.sizes[j],)

    @property
    def num_free(self):
        return sum(m + sum(b * (b + 1) // 2 for b in self.block_sizes(j)) for j, m in enumerate(self.sizes))

    def _blocks(self):
        i = 0
        for j, m in enumerate(self.sizes):
            t = sum(b * (b + 1) // 2 for b in self.block_sizes(j))
            yield slice(i, i + m), slice(i + m, i + m + t)
            i += m + t

    def triangles(self, j):
        """[(offset in u_j, size b, slice of ``free``)] per free diagonal block of L_j: its lower
        triangle row by row, the diagonal as log L_ii."""
        out, o, i = [], 0, list(self._blocks())[j][1].start
        for b in self.block_sizes(j):
            t = b * (b + 1) // 2
            out.append((o, b, slice(i, i + t)))
            o, i = o + b, i + t
        return out

    def slices(self, k, j):
        """(mean slice, factor slice) of latent j (k = 0: one component); the factor slice holds
        the triangles of :meth:`triangles`."""
        if k != 0:
            raise ValueError(f"{type(self).__name__} has one component; got k = {k}")
        return list(self._blocks())[j]

    @property
    def means(self):
        return [self.free[sm][None, :] for sm, _ in self._blocks()]

    def factor(self, j):
        """L_j, the lower-triangular (M_j, M_j) factor of S_j."""
        return self._factor(j).copy()

    def _factor(self, j):
        """L_j built once per free vector: cached (read-only) with the entries it came from."""
        m = self.sizes[j]
        block = self.free[list(self._blocks())[j][1]]
        cache = self.__dict__.setdefault("_factors", {})  # shared by copies: checked by content
        hit = cache.get(j)
        if hit is not None and np.array_equal(hit[0], block):
            return hit[1]
        tri = self.triangles(j)
        if len(tri) == 1:
            L = unpack_factor(block, m)
        else:
            L = np.zeros((m, m))
            for o, b, sl in tri:
                L[o:o + b, o:o + b] = unpack_factor(self.free[sl], b)
        L.flags.writeable = False
        cache[j] = (block.copy(), L)
        return L

    def covariance(self, k, j):
        L = self._factor(j)
        return L @ L.T

    def S_times(self, j, A):
        L = self._factor(j)
        return ((A @ L) @ L.T)[None]

    def trace_with(self, j, Kinv):
        L = self._factor(j)
        return np.array([np.sum(L * (Kinv @ L))])

    def trace_and_sandwich(self, j, Kinv, kinv_factor=None):
        """With B = Kuu^-1 L_j (``kinv_factor`` if given): tr(Kuu^-1 S_j) = sum(L_j * B) and
        Kuu^-1 S_j Kuu^-1 = B B^T (one product with Kuu^-1 instead of three)."""
        L = self._factor(j)
        B = Kinv @ L if kinv_factor is None else kinv_factor
        return np.array([np.sum(L * B)]), [B @ B.T]

    def entropy(self):
        """sum_j [M_j/2 log(2 pi e) + sum_i log L_j,ii]: exact."""
        g = np.zeros(self.num_free)
        value = 0.0
        for j, m in enumerate(self.sizes):
            value += 0.5 * m * (LOG_2PI + 1.0)
            for _, b, sl in self.triangles(j):
                diag_pos = sl.start + diag_positions(b)
                value += np.sum(self.free[diag_pos])
                g[diag_pos] = 1.0
        return float(value), g

    def chain(self, dpi, dm, dS):
        """dL_j = (G + G^T) L_j on each free triangle (L_j is zero off its blocks), by the log-diagonal."""
        g = np.zeros(self.num_free)
        for j, (sm, _) in enumerate(self._blocks()):
            g[sm] = np.asarray(dm[j]).reshape(-1)
            L = self._factor(j)
            G = np.asarray(dS[j])
            G = np.diag(G[0]) if G.ndim == 2 else G[0]
            for o, b, sl in self.triangles(j):
                blk = slice(o, o + b)
                dL = (G[blk, blk] + G[blk, blk].T) @ L[blk, blk]
                g[sl] = dL.reshape(-1)[tril_flat_positions(b)]
                g[sl.start + diag_positions(b)] *= np.diag(L)[blk]  # log-diagonal
        return g

    def _set_identity(self):
        self.free[:] = 0.0

    def _pack(self, j, L):
        """Write the triangles of the lower-triangular L (its diagonal blocks) into ``free``."""
        for o, b, sl in self.triangles(j):
            self.free[sl] = pack_factor(L[o:o + b, o:o + b])

    def initialise_from_prior(self, kuu_choleskys, mean_scale=0.0, seed=0):
        """m_j = 0 (or scaled draws), L_j = chol Kuu_j (its diagonal blocks: exact when Kuu_j is
        block-diagonal over them, as the prior of independent components is)."""
        rng = np.random.default_rng(seed)
        for j, (sm, _) in enumerate(self._blocks()):
            L = np.asarray(kuu_choleskys[j], dtype=float)
            self.free[sm] = mean_scale * np.sqrt(np.sum(L ** 2, axis=1)) * rng.standard_normal(self.sizes[j])
            self._pack(j, L)
        return self

    def set_moments(self, means, factors):
        """Set m_j (per j, (M_j,)) and S_j = L_j L_j^T from lower-triangular factors with a
        positive diagonal (or from covariances: a symmetric S_j is factorised)."""
        for j, (sm, _) in enumerate(self._blocks()):
            self.free[sm] = np.asarray(means[j], dtype=float).reshape(-1)
            L = np.array(factors[j], dtype=float)
            if not np.allclose(L, np.tril(L)):
                L = np.linalg.cholesky(0.5 * (L + L.T))
            if np.any(np.diag(L) <= 0):
                raise ValueError(f"the factor of latent {j} needs a positive diagonal")
            self._check_structure(j, L)
            self._pack(j, L)
        return self

    def _check_structure(self, j, L):
        """FG takes any lower-triangular factor."""


__all__ = ["FullGaussian", "LOG_2PI", "VariationalPosterior", "inducing_sizes", "log_softmax"]
