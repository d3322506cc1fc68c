"""The robust-max multi-class likelihood and its expectation under Gaussian marginals.

Robust max (Hernandez-Lobato et al., NIPS 2011; GPflow's ``MultiClass`` with ``RobustMax``) is the
10-class likelihood of the convolutional GPs of van der Wilk's thesis (ch. 5, sec. 5.5.3, after
Hensman et al. 2015a). With f in R^K (Q = K = n_classes latents), labels y in {0, ..., K-1} and a
fixed label-noise rate eps (default 1e-3, GPflow's):

    (R1)  p(y = k | f) = 1 - eps           if k = argmax_j f_j,
                       = eps / (K - 1)     otherwise

(ties go to the first largest, as numpy's and TensorFlow's argmax; they have probability zero
under a Gaussian). log p is piecewise constant in f: its slope is zero almost everywhere, so the
reparameterised Monte Carlo gradient vanishes and a product grid needs n^K nodes. Under the
diagonal Gaussian marginals q(f_n) = prod_j N(m_j, v_j) of the expected log likelihood (thesis
eq. 2.36, SAVIGP eq. 8, 12) the expectation is exact given one number,

    (R2)  E_q[log p(y | f)] = log(1 - eps) S + log(eps / (K - 1)) (1 - S),

    (R3)  S = P(argmax f = y) = int N(x; m_y, v_y) prod_{j != y} Phi((x - m_j) / s_j) dx
            ~ sum_i w_i P_i,   P_i = prod_{j != y} Phi(z_ij),   z_ij = (m_y + s_y t_i - m_j) / s_j,

s_j = sqrt(v_j), a one-dimensional Gauss-Hermite rule (t_i, w_i) for E_{N(0, 1)} (``n_points``
nodes, 20 by default as GPflow's). The derivatives are those of the sum itself (nodes fixed), so
they agree with its finite differences: with dP_i / dz_ij = P_i r_ij, r = phi / Phi (from
log_ndtr, stable in both tails) and G_ij = w_i P_i r_ij / s_j for j != y,

    (R4)  dS/dm_j = -sum_i G_ij,                 dS/dm_y = sum_i sum_{j != y} G_ij,
          dS/dv_j = -sum_i G_ij z_ij / (2 s_j),  dS/dv_y = sum_i sum_{j != y} G_ij t_i / (2 s_y),

and d(R2) = (log(1 - eps) - log(eps / (K - 1))) dS. Predictions: under the same marginals,

    (R5)  p(y* = k) = (1 - eps) S_k + eps / (K - 1) (1 - S_k),   S_k = (R3) with y = k,

mixed over a mixture posterior's components with their weights.

``reduced_expectation = True`` tells :mod:`gpexplorer.variational.estimators` (and
:func:`gpexplorer.likelihoods.quadrature.expected_log_density`) to take (R2)-(R4) from
``expected_log_density_exact`` instead of a product grid or samples; predictions of
:mod:`gpexplorer.variational.prediction` take (R5) from ``predictive_class_probabilities``.
"""

from __future__ import annotations

import math

import numpy as np
from scipy import special

from gpexplorer.likelihoods.pointwise_base import LOG_2PI, ExpectedLogDensity, PointwiseLikelihood, check_class_labels
from gpexplorer.likelihoods.quadrature import gauss_hermite

__all__ = ["RobustMax", "DEFAULT_EPSILON", "DEFAULT_POINTS"]

#: GPflow's RobustMax default: the fraction of labels taken to be flipped at random
DEFAULT_EPSILON = 1e-3
#: Gauss-Hermite nodes of the one-dimensional integral (R3) (GPflow's num_gauss_hermite_points)
DEFAULT_POINTS = 20
#: rows x nodes x classes per block of (R3)-(R4)
_BLOCK = 200_000
#: a predictive variance of 0 (a latent pinned at an inducing input) is floored here: (R3) then
#: takes Phi as the step it tends to
_TINY_VARIANCE = 1e-200


class RobustMax(PointwiseLikelihood):
    """Robust-max classification (module docstring, R1): p(y = k | f) = 1 - eps at the largest f_k,
    eps / (K - 1) elsewhere; Q = K = n_classes latents, labels y in {0, ..., K-1}.

    ``epsilon`` (0 < eps < 1 - 1/K) and ``n_points`` (nodes of R3) are fixed options, not
    parameters. ``class_probabilities`` gives (R1) per class; ``conditional_mean`` /
    ``conditional_variance`` are the moments of the label number, as for the softmax.
    """

    name, label, kind = "robust_max", "Robust max", "categorical"
    reduced_expectation = True

    def __init__(self, n_classes=3, epsilon=DEFAULT_EPSILON, n_points=DEFAULT_POINTS):
        super().__init__()
        if isinstance(n_classes, bool) or not isinstance(n_classes, (int, np.integer)) or not 2 <= n_classes <= 1000:
            raise ValueError(f"robust_max needs an integer n_classes between 2 and 1000; got {n_classes!r}")
        self.n_classes = self.n_latent = int(n_classes)
        top = 1.0 - 1.0 / self.n_classes
        try:
            eps = float(epsilon) if not isinstance(epsilon, (bool, str)) and np.ndim(epsilon) == 0 else math.nan
        except (TypeError, ValueError):
            eps = math.nan
        if not 0.0 < eps < top:  # False for NaN
            raise ValueError(f"robust_max needs a number epsilon with 0 < epsilon < 1 - 1/n_classes = {top:g} (at "
                             f"1 - 1/n_classes every class is equally likely); got {epsilon!r}")
        self.epsilon = eps
        self.n_points = self._checked_points(n_points)
        self.log_hit = math.log1p(-eps)
        self.log_miss = math.log(eps / (self.n_classes - 1))

    @staticmethod
    def _checked_points(n):
        if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or not 1 <= n <= 200:
            raise ValueError(f"robust_max needs an integer n_points (Gauss-Hermite nodes) between 1 and 200; got {n!r}")
        return int(n)

    def _check_support(self, Y):
        return check_class_labels(Y, self.name, self.n_classes)

    # pointwise interface (R1) -------------------------------------------------------------------
    def _probabilities(self, F):
        miss = self.epsilon / (self.n_classes - 1)
        p = np.full(F.shape, miss)
        np.put_along_axis(p, np.argmax(F, axis=-1)[..., None], 1.0 - self.epsilon, axis=-1)
        return p

    def class_probabilities(self, F):
        """(R1) per class: F (..., N, K) -> (..., N, K)."""
        return self._probabilities(self._latent(F))

    def _log_density(self, F, y):
        return np.where(np.argmax(F, axis=-1) == y.astype(np.intp), self.log_hit, self.log_miss)

    def _dlog_df(self, F, y):
        return np.zeros(F.shape)

    def _sample(self, F, rng):
        cumulative = np.cumsum(self._probabilities(F), axis=-1)
        u = rng.random(F.shape[:-1])
        return np.minimum((u[..., None] >= cumulative).sum(axis=-1), self.n_classes - 1).astype(float)

    def _mean(self, F):
        return self._probabilities(F) @ np.arange(self.n_classes, dtype=float)

    def _variance(self, F):
        k = np.arange(self.n_classes, dtype=float)
        p = self._probabilities(F)
        return np.maximum(p @ (k * k) - (p @ k) ** 2, 0.0)

    # expectations under Gaussian marginals (R2)-(R5) ---------------------------------------------
    def probability_of_largest(self, mean, var, labels, n_points=None, derivatives=False):
        """S_n = P(argmax f_n = labels_n) under prod_j N(mean_nj, var_nj) by (R3); with
        ``derivatives`` also (dS/dmean, dS/dvar) of (R4), each (N, K). ``mean``, ``var``: (N, K),
        var > 0; ``labels``: N class numbers (a label column Y[:, 0] as ``validate`` gives it)."""
        t, w = gauss_hermite(self._checked_points(self.n_points if n_points is None else n_points))
        mean, var = np.asarray(mean, dtype=float), np.asarray(var, dtype=float)
        N, K = mean.shape if mean.ndim == 2 else (-1, -1)
        if K != self.n_classes or var.shape != mean.shape or np.shape(labels) != (N,):
            raise ValueError(f"probability_of_largest needs mean and var of shape (N, K={self.n_classes}) and N "
                             f"labels; got {mean.shape}, {var.shape} and {np.shape(labels)}")
        labels = self.validate(labels)[:, 0].astype(np.intp)
        if not (np.all(np.isfinite(mean)) and np.all(np.isfinite(var)) and np.all(var > 0)):
            raise ValueError("probability_of_largest needs finite mean and positive finite variances var")
        S = np.empty(N)
        dm, dv = (np.empty((N, K)), np.empty((N, K))) if derivatives else (None, None)
        step = max(1, _BLOCK // (t.size * K))
        for start in range(0, N, step):
            rows = slice(start, min(N, start + step))
            out = _largest(mean[rows], var[rows], labels[rows], t, w, derivatives)
            S[rows] = out[0]
            if derivatives:
                dm[rows], dv[rows] = out[1], out[2]
        return (S, dm, dv) if derivatives else S

    def expected_log_density_exact(self, mean, var, Y, n_points=None) -> ExpectedLogDensity:
        """E_{N(f; mean_n, diag var_n)}[log p(y_n | f)] per point by (R2)-(R3), with the exact
        derivatives (R4) of the quadrature sum; ``mean``, ``var`` (N, K), var > 0, Y (N, 1);
        ``n_points`` nodes (default the likelihood's). No likelihood parameters: dparams = {}."""
        mean, var, Y = self.validate_moments(mean, var, Y)
        S, dS_dm, dS_dv = self.probability_of_largest(mean, var, Y[:, 0], n_points, derivatives=True)
        gap = self.log_hit - self.log_miss
        return ExpectedLogDensity(self.log_miss + gap * S, gap * dS_dm, gap * dS_dv, {})

    def predictive_class_probabilities(self, mean, var, n_points=None):
        """(R5): p(y* = k) for every class k under prod_j N(mean_nj, var_nj): (N, K) -> (N, K). The S_k
        of (R3) are divided by their sum (exactly one, up to the rule's error), so rows sum to one.
        ``var`` >= 0 (a zero variance is a point mass)."""
        mean, var = (np.asarray(a, dtype=float) for a in (mean, var))
        if mean.ndim != 2 or mean.shape[1] != self.n_classes or var.shape != mean.shape:
            raise ValueError(f"mean and var must have shape (N, K={self.n_classes}) for likelihood {self.name!r}; "
                             f"got {mean.shape} and {var.shape}")
        if not (np.all(np.isfinite(mean)) and np.all(np.isfinite(var))) or np.any(var < 0):
            raise ValueError("mean and var must be finite and var non-negative")
        var = np.maximum(var, _TINY_VARIANCE)
        S = np.stack([self.probability_of_largest(mean, var, np.full(mean.shape[0], k), n_points)
                      for k in range(self.n_classes)], axis=1)
        S /= S.sum(axis=1, keepdims=True)  # the events argmax f = k partition: removes the rule's error in the sum
        miss = self.epsilon / (self.n_classes - 1)
        return miss + (1.0 - self.epsilon - miss) * S

    def __repr__(self):
        return f"RobustMax(n_classes={self.n_classes}, epsilon={self.epsilon:g})"


def _largest(mean, var, labels, t, w, derivatives):
    """(R3) and, with ``derivatives``, (R4) for one block of rows: mean, var (n, K), labels (n,),
    nodes t and weights w (P,). Returns (S (n,), dS/dm (n, K), dS/dv (n, K)) (None, None without)."""
    n, K = mean.shape
    rows = np.arange(n)
    s = np.sqrt(var)
    m_y, s_y = mean[rows, labels], s[rows, labels]
    x = m_y[:, None] + s_y[:, None] * t  # (n, P)
    with np.errstate(over="ignore", divide="ignore", invalid="ignore"):
        z = (x[:, :, None] - mean[:, None, :]) / s[:, None, :]  # (n, P, K)
        log_cdf = special.log_ndtr(z)
        own = (labels[:, None] == np.arange(K))[:, None, :]  # the label's own latent is left out of the product
        total = np.where(own, 0.0, log_cdf).sum(axis=-1)  # log P_i, (n, P)
        S = np.exp(total) @ w
        if not derivatives:
            return S, None, None
        # G_ij = w_i P_i r_ij / s_j, with log r = log phi - log Phi: exp(log P_i + log r_ij) stays finite
        G = np.exp(total[:, :, None] + (-0.5 * z * z - 0.5 * LOG_2PI - log_cdf))
        G = np.where(own, 0.0, G) * (w[:, None] / s[:, None, :])
        Gz = np.where(own, 0.0, G * z)
    dm = -G.sum(axis=1)
    dm[rows, labels] = G.sum(axis=(1, 2))
    dv = -Gz.sum(axis=1) / (2.0 * s)
    dv[rows, labels] = np.einsum("npk,p->n", G, t) / (2.0 * s_y)
    return S, dm, dv
