"""Gauss-Hermite quadrature for expectations of pointwise log likelihoods under Gaussians.

The expected log likelihood of SAVIGP (paper eq. 8, 12) is a sum over data points of
E_{q(f_n.)}[log p(y_n | f_n.)] with q(f_n.) a Q-dimensional diagonal Gaussian N(m_n, diag(v_n))
(paper eq. 10-11 per mixture component). The paper estimates these by Monte Carlo (eq. 12-17);
for Q <= 3 a product Gauss-Hermite rule is deterministic and far more accurate, and is what this
module computes. With f = m + sqrt(v) eps, eps ~ N(0, I), and nodes/weights (eps_s, w_s):

    E[log p]      ~ sum_s w_s log p(y | m + sqrt(v) eps_s),
    d/dm_q        = sum_s w_s d log p / df_q,
    d/dv_q        = sum_s w_s (d log p / df_q) eps_sq / (2 sqrt(v_q)),
    d/dtheta      = sum_s w_s d log p / dtheta,

i.e. the exact derivatives of the quadrature sum (so they agree with its finite differences).
"""

from __future__ import annotations

import functools
import itertools

import numpy as np
from numpy.polynomial.hermite_e import hermegauss

from gpexplorer.likelihoods.pointwise_base import ExpectedLogDensity, PointwiseLikelihood

__all__ = ["gauss_hermite", "expected_log_density", "MAX_QUADRATURE_LATENTS"]

#: the product grid has n_points**Q nodes; beyond this Q use Monte Carlo (paper eq. 12-17)
MAX_QUADRATURE_LATENTS = 3
#: at most this many (node, data point) pairs are evaluated at once (memory bound)
_BLOCK = 400_000


def gauss_hermite(n):
    """Nodes x_s and weights w_s with sum_s w_s g(x_s) ~ E_{N(0, 1)}[g(x)], exact for polynomials of
    degree <= 2n - 1 (probabilists' Hermite rule, weights normalised to sum to 1)."""
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or not 1 <= n <= 200:
        raise ValueError(f"the number of Gauss-Hermite points must be an integer between 1 and 200; got {n!r}")
    x, w = hermegauss(int(n))
    return x, w / w.sum()


def product_rule(n, Q):
    """Product Gauss-Hermite rule for E_{N(0, I_Q)}: nodes (n**Q, Q), weights (n**Q,) (fresh
    copies of a cached rule: building it costs more than the sums it serves)."""
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)):
        gauss_hermite(n)  # raises its ValueError
    nodes, weights = _cached_rule(int(n), int(Q))
    return nodes.copy(), weights.copy()


@functools.lru_cache(maxsize=32)
def _cached_rule(n, Q):
    x, w = gauss_hermite(n)
    nodes = np.array(list(itertools.product(x, repeat=Q)), dtype=float).reshape(-1, Q)
    weights = np.prod(np.array(list(itertools.product(w, repeat=Q)), dtype=float).reshape(-1, Q), axis=1)
    nodes.flags.writeable = False
    weights.flags.writeable = False
    return nodes, weights


def expected_log_density(likelihood, mean, var, Y, n_points=20) -> ExpectedLogDensity:
    """E_{N(f; mean_n, diag var_n)}[log p(y_n | f)] per data point, with derivatives, by the
    product Gauss-Hermite rule of the module docstring (paper eq. 12 with quadrature in place of
    Monte Carlo).

    ``mean`` and ``var`` have shape (N, Q) with Q = ``likelihood.n_latent`` <= 3 ((N,) accepted for
    Q = 1), ``var`` > 0; Y (N, 1). Returns ``ExpectedLogDensity(value (N,), dmean (N, Q),
    dvar (N, Q), dparams {name: (N,) or (N, 3)})``. A likelihood with ``reduced_expectation``
    (robust max) gives its exact form instead, for any Q (``n_points`` nodes of its own rule).
    """
    if not isinstance(likelihood, PointwiseLikelihood):
        raise ValueError(f"expected_log_density needs a PointwiseLikelihood; got {type(likelihood).__name__} "
                         "(use get_likelihood to build one from a name)")
    if likelihood.reduced_expectation:
        return likelihood.expected_log_density_exact(mean, var, Y, n_points=n_points)
    Q = likelihood.n_latent
    if Q > MAX_QUADRATURE_LATENTS:
        raise ValueError(f"likelihood {likelihood.name!r} has Q={Q} latent values per point: a product "
                         f"quadrature grid would need n_points**{Q} nodes; quadrature is offered for "
                         f"Q <= {MAX_QUADRATURE_LATENTS}, use Monte Carlo estimates (SAVIGP eq. 12-17) instead")
    mean, var, Y = likelihood.validate_moments(mean, var, Y)
    nodes, weights = product_rule(n_points, Q)
    N = Y.shape[0]
    sd = np.sqrt(var)
    value, dmean, dvar = np.empty(N), np.empty((N, Q)), np.empty((N, Q))
    dparams = {}
    step = max(1, _BLOCK // weights.size)
    for start in range(0, N, step):
        rows = slice(start, min(N, start + step))
        F = mean[rows] + sd[rows] * nodes[:, None, :]  # (S, n, Q)
        value[rows] = weights @ likelihood.log_density(F, Y[rows])
        g = likelihood.dlog_density_df(F, Y[rows])  # (S, n, Q)
        dmean[rows] = np.einsum("s,snq->nq", weights, g)
        dvar[rows] = np.einsum("s,snq,sq->nq", weights, g, nodes) / (2.0 * sd[rows])
        for name, d in likelihood.dlog_density_dparams(F, Y[rows]).items():
            if name not in dparams:
                dparams[name] = np.empty((N,) + d.shape[2:])
            dparams[name][rows] = np.tensordot(weights, d, axes=(0, 0))
    return ExpectedLogDensity(value, dmean, dvar, dparams)
