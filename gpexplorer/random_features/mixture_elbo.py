"""The GLM's evidence lower bound on a mixture of diagonal Gaussians over the weights (revrand
report eq. 19-27, corrected), term by term with gradients.

q(w) = (1/K) sum_k N(w | m_k, diag psi_k) (21); prior N(0, Lambda), Lambda = diag(lam) (20). The
bound (23) with the entropy bound (24) is

    L = (1/K) sum_k sum_n E_{q_k}[log p(y_n | phi_n^T w)]                (expected log likelihood)
      + (1/K) sum_k [log N(m_k | 0, Lambda) - 1/2 tr(Lambda^-1 Psi_k)]   (E_q log prior, (27))
      - (1/K) sum_k log sum_j (1/K) N(m_k | m_j, Psi_k + Psi_j)          (entropy bound, (24))

((27) misplaces a bracket; revrand's code drops the (1 - 1/K) log K the 1/K inside the log gives,
so its reported bound is off by that constant.) Under q_k the latent f_n = phi_n^T w is Gaussian
with mean mu_kn = phi_n^T m_k and variance v_kn = sum_d phi_nd^2 psi_kd, so each expected log
likelihood is a one-dimensional integral:

* ``estimator="quadrature"`` (default): Gauss-Hermite in f (:func:`gpexplorer.likelihoods.expected_log_density`),
  deterministic (the Gaussian likelihood's closed form, which the rule reproduces to rounding); gradients through (mu, v): dm_k = Phi^T dmu_k, dpsi_k = (Phi^2)^T dv_k,
  dPhi = sum_k [dmu_k m_k^T + 2 Phi * (dv_k psi_k^T)];
* ``estimator="monte_carlo"``: the report's reparameterised samples w = m_k + sqrt(psi_k) * eps (26),
  L draws per component, dm_k = (1/L) sum_l Phi^T g_kl, dpsi_k = (1/L) sum_l (Phi^T g_kl) * eps_kl / (2 sqrt psi_k),
  dPhi = (1/L) sum_kl g_kl w_kl^T with g = d log p / d f; computed per component without forming
  the [K L, D] draws w (phi_n^T w_kl = mu_kn + eps_kl^T (sqrt(psi_k) * phi_n)).

A minibatch B of the N points scales the likelihood term and all its gradients, including the
basis' and likelihood's hyperparameters', by N/|B| (report eq. 6; revrand omits the factor for
the hyperparameters).
"""

from __future__ import annotations

import functools
import math

import numpy as np

from gpexplorer.likelihoods import expected_log_density
from gpexplorer.random_features.mixture_loops import log_prior_terms, pair_backward, pair_log_densities

__all__ = ["entropy_bound", "expected_log_prior", "expected_log_likelihood", "LOG_2PI", "ESTIMATORS"]

LOG_2PI = math.log(2.0 * math.pi)
ESTIMATORS = ("quadrature", "monte_carlo")


def entropy_bound(means, variances):
    """(H_lb, dH/dmeans [K, D], dH/dvariances [K, D]) of eq. 24; O(K^2 D) (:mod:`.mixture_loops`)."""
    K = means.shape[0]
    k, j = _pairs(K)
    logdets = np.empty((K, K))
    logdets[k, j] = np.log(variances[k] + variances[j]).sum(1)
    z = pair_log_densities(means, variances, logdets)  # log N(m_k | m_j, S_kj); only k <= j of logdets is read
    top = z.max(axis=1, keepdims=True)
    e = np.exp(z - top)
    total = e.sum(axis=1, keepdims=True)
    value = -float(np.mean(np.log(total) + top)) + math.log(K)
    R = e / (-K * total)  # dH/dz_kj
    dmeans, dvars = pair_backward(means, variances, np.ascontiguousarray(R), np.zeros_like(means), np.zeros_like(means))
    return value, dmeans, dvars


@functools.lru_cache(maxsize=16)
def _pairs(K):
    """(k, j) of the pairs k <= j (numpy's triu_indices costs more than the loops at K = 10)."""
    return np.triu_indices(K)


def expected_log_prior(means, variances, lam):
    """(value, d/dmeans, d/dvariances, d/dlam [D]) of (1/K) sum_k E_{q_k} log N(w | 0, diag lam)
    = -1/2 sum_d [log 2 pi lam_d + (1/K) sum_k (m_kd^2 + psi_kd) / lam_d]."""
    dmeans, dvars, dlam = np.empty_like(means), np.empty_like(means), np.empty_like(lam)
    value = log_prior_terms(means, variances, lam, dmeans, dvars, dlam)  # one jitted sweep
    return value, dmeans, dvars, dlam


def expected_log_likelihood(likelihood, Phi, Y, means, variances, *, estimator="quadrature", scale=1.0,
                            n_points=20, eps=None, gradients=True):
    """scale (1/K) sum_k sum_n E_{q_k} log p(y_n | f_n) over the rows of Phi, with gradients
    (module docstring): (value, dmeans, dvariances, dPhi, {likelihood parameter: derivative}).

    ``eps`` [K, L, D]: the standard normal draws of the Monte Carlo estimator."""
    K = means.shape[0]
    c = scale / K
    if estimator == "quadrature":
        mu = Phi @ means.T  # [n, K]
        Phi2 = Phi * Phi
        v = np.maximum(Phi2 @ variances.T, 1e-300)
        n = Phi.shape[0]
        YK = np.tile(Y, (K, 1))
        if getattr(likelihood, "conjugate", False) and hasattr(likelihood, "expected_log_density_exact"):
            # Gaussian: the expectation in closed form (what the rule gives, to rounding)
            ed = likelihood.expected_log_density_exact(mu.T.reshape(-1, 1), v.T.reshape(-1, 1), YK)
        else:
            ed = expected_log_density(likelihood, mu.T.reshape(-1, 1), v.T.reshape(-1, 1), YK, n_points=n_points)
        value = c * float(ed.value.sum())
        if not gradients:
            return value, None, None, None, None
        dmu = c * ed.dmean[:, 0].reshape(K, n)  # [K, n]
        dv = c * ed.dvar[:, 0].reshape(K, n)
        dmeans = dmu @ Phi
        dvars = dv @ Phi2
        dPhi = dmu.T @ means + 2.0 * Phi * (dv.T @ variances)
        dparams = {k: c * _summed(g, 1) for k, g in ed.dparams.items()}
        return value, dmeans, dvars, dPhi, dparams
    if estimator != "monte_carlo":
        raise ValueError(f"estimator must be one of {ESTIMATORS}; got {estimator!r}")
    L = eps.shape[1]
    sd = np.sqrt(variances)
    sdPhi = sd[:, None, :] * Phi[None, :, :]  # [K, n, D]
    F = (Phi @ means.T).T[:, None, :] + eps @ sdPhi.transpose(0, 2, 1)  # [K, L, n]: phi_n^T w_kl, no [K, L, D] w
    lp, slope, dpar = likelihood.log_density_terms(F[..., None], Y[:, 0], slope=gradients, params=gradients)
    value = c * float(lp.sum()) / L
    if not gradients:
        return value, None, None, None, None
    G = (c / L) * slope[..., 0]  # [K, L, n]
    Gsum = G.sum(1)  # [K, n]
    dmeans = Gsum @ Phi
    GE = G.transpose(0, 2, 1) @ eps  # [K, n, D]: sum_l g_kln eps_kl
    dvars = 0.5 * (GE * Phi[None]).sum(1) / sd
    dPhi = Gsum.T @ means + (GE * sd[:, None, :]).sum(0)
    dparams = {k: (c / L) * _summed(g, 3) for k, g in dpar.items()}
    return value, dmeans, dvars, dPhi, dparams


def _summed(g, lead):
    """A likelihood parameter's derivative summed over the ``lead`` data/sample axes: a float for a
    scalar parameter, an array for an array one (the warped GP's a, b, c)."""
    total = np.sum(g, axis=tuple(range(lead)))
    return float(total) if np.ndim(total) == 0 else total
