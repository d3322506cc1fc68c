"""A mixture of K diagonal Gaussians over the inducing variables (SAVIGP, Dezfouli & Bonilla 2015,
eq. 7): MoG1 for K = 1, MoG2 for K = 2; pi = softmax(logits), S_kj = diag(exp(log s_kj)). The
entropy is exact for K = 1 and the Jensen bound of eq. 19 for K > 1. The shared bookkeeping and the
cross term are :class:`gpexplorer.variational.posterior.VariationalPosterior`'s."""

from __future__ import annotations

import numpy as np

from gpexplorer.validation import mixture_components
from gpexplorer.variational.posterior import LOG_2PI, VariationalPosterior, log_softmax


class MixtureOfDiagonalGaussians(VariationalPosterior):
    """MoG_K: pi = softmax(logits), S_kj = diag(exp(log s_kj)); K = 1 is MoG1, K = 2 MoG2."""

    diagonal = True

    def __init__(self, num_inducing, num_latent=None, K=1):
        self.K = mixture_components(K)  # 1 <= K <= MAX_COMPONENTS: the entropy bound is O(K^2)
        super().__init__(num_inducing, num_latent)

    @property
    def num_free(self):
        return self.K + 2 * self.K * sum(self.sizes)

    def slices(self, k, j):
        """(mean slice, log-variance slice) of component k, latent j."""
        start = self.K + 2 * (k * sum(self.sizes) + sum(self.sizes[:j]))
        m = self.sizes[j]
        return slice(start, start + m), slice(start + m, start + 2 * m)

    @property
    def logits(self):
        return self.free[:self.K]

    @property
    def log_pi(self):
        return log_softmax(self.logits)

    @property
    def means(self):
        return [np.stack([self.free[self.slices(k, j)[0]] for k in range(self.K)]) for j in range(self.Q)]

    def variances(self, j):
        """(K, M_j) diagonals s_kj."""
        return np.stack([np.exp(self.free[self.slices(k, j)[1]]) for k in range(self.K)])

    def covariance(self, k, j):
        return np.diag(self.variances(j)[k])

    def S_times(self, j, A):
        return A[None, :, :] * self.variances(j)[:, None, :]

    def trace_with(self, j, Kinv):
        return self.variances(j) @ np.diag(Kinv)

    def entropy(self):
        if self.K == 1:
            g = np.zeros(self.num_free)
            value = 0.0
            for j in range(self.Q):
                sv = self.slices(0, j)[1]
                value += 0.5 * self.sizes[j] * (LOG_2PI + 1.0) + 0.5 * np.sum(self.free[sv])
                g[sv] = 0.5
            return float(value), g
        return self.jensen_entropy()

    def jensen_entropy(self):
        """Eq. 19: H >= -sum_k pi_k c_k, c_k = log sum_l pi_l N(m_k; m_l, S_k + S_l)."""
        K, log_pi, pi = self.K, self.log_pi, self.pi
        a = np.zeros((K, K))  # a_kl = log N(m_k; m_l, S_k + S_l)
        parts = []
        for j in range(self.Q):
            m, s = self.means[j], self.variances(j)
            diff = m[:, None, :] - m[None, :, :]  # (K, K, M)
            tot = s[:, None, :] + s[None, :, :]
            a += -0.5 * np.sum(LOG_2PI + np.log(tot) + diff ** 2 / tot, axis=2)
            parts.append((diff, tot, s))
        t = log_pi[None, :] + a
        c = np.logaddexp.reduce(t, axis=1)
        value = -float(pi @ c)
        r = np.exp(t - c[:, None])  # r_kl = pi_l N_kl / sum_l' pi_l' N_kl'
        da = -pi[:, None] * r  # dH/da_kl
        dpi = -c - np.sum(pi[:, None] * np.exp(a - c[:, None]), axis=0)
        dm, dS = [], []
        for diff, tot, s in parts:
            w = da[:, :, None]
            gm_first = -w * diff / tot  # d a_kl / d m_k (as first argument)
            dm.append(gm_first.sum(axis=1) - gm_first.sum(axis=0))
            gs = w * (-0.5 / tot + 0.5 * diff ** 2 / tot ** 2)
            dS.append(gs.sum(axis=1) + gs.sum(axis=0))
        return value, self.chain(dpi, dm, dS)

    def chain(self, dpi, dm, dS):
        g = np.zeros(self.num_free)
        dpi = np.asarray(dpi, dtype=float)
        pi = self.pi
        g[:self.K] = pi * (dpi - pi @ dpi)
        for j in range(self.Q):
            s = self.variances(j)
            G = np.asarray(dS[j])
            Gd = np.diagonal(G, axis1=1, axis2=2) if G.ndim == 3 else G
            for k in range(self.K):
                sm, sv = self.slices(k, j)
                g[sm] = dm[j][k]
                g[sv] = Gd[k] * s[k]
        return g

    def _set_identity(self):
        self.free[:] = 0.0

    def initialise_from_prior(self, kuu_choleskys, mean_scale=0.0, seed=0):
        rng = np.random.default_rng(seed)
        self.free[:self.K] = 0.0
        for j in range(self.Q):
            kdiag = np.sum(np.asarray(kuu_choleskys[j]) ** 2, axis=1)
            for k in range(self.K):
                sm, sv = self.slices(k, j)
                self.free[sm] = mean_scale * np.sqrt(kdiag) * rng.standard_normal(self.sizes[j])
                self.free[sv] = np.log(kdiag)
        return self

    def set_moments(self, means, variances, pi=None):
        """Set m_kj (per j, (K, M_j)), s_kj (per j, (K, M_j), positive) and optionally pi (K,)."""
        if pi is not None:
            pi = np.asarray(pi, dtype=float)
            if pi.shape != (self.K,) or np.any(pi <= 0) or not np.isclose(pi.sum(), 1.0):
                raise ValueError(f"pi must be {self.K} positive weights summing to one; got {pi}")
            self.free[:self.K] = np.log(pi)
        for j in range(self.Q):
            m = np.asarray(means[j], dtype=float).reshape(self.K, self.sizes[j])
            s = np.asarray(variances[j], dtype=float).reshape(self.K, self.sizes[j])
            if np.any(s <= 0):
                raise ValueError(f"the variances of latent {j} must be positive")
            for k in range(self.K):
                sm, sv = self.slices(k, j)
                self.free[sm], self.free[sv] = m[k], np.log(s[k])
        return self


__all__ = ["MixtureOfDiagonalGaussians"]
