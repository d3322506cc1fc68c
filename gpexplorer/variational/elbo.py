"""The SAVIGP evidence lower bound (Dezfouli & Bonilla 2015, eq. 8, 12, 18-20) as a function of
plain arrays and objects, with its gradient with respect to every free parameter.

    ELBO = sum_k pi_k sum_n ell_kn  +  L_ent  +  L_cross

* ell_kn = E_{q_k(f_n.)}[log p(y_n | f_n.)] under the marginals of eq. 10-11, 15
  (:mod:`.marginals`), estimated by :func:`.estimators.estimate` (quadrature, reparameterised or
  score-function, eq. 12-13, 17);
* L_ent: the exact Gaussian entropy for K = 1, the Jensen bound of eq. 19 for K > 1
  (``ElboResult.entropy_kind``);
* L_cross = E_q[log p(u)] (eq. 20).

Gradients: with respect to the posterior's free vector, each latent's kernel parameters and
inducing-feature parameters (natural scale, as ``kernel.parameters`` / ``feature.parameters``; via
:func:`gpexplorer.covariances.gradients` and ``kernel.grad_params_diag``) and the likelihood's
parameters (natural scale). With the score estimator the gradient is the (unbiased) score
estimate, not the derivative of the returned Monte Carlo value.

:func:`elbo` takes the fast paths of :mod:`.marginals` (Kuu^-1 formed once, GEMMs shaped by the
family), :mod:`.estimators` (the likelihood evaluated once per node or sample) and hands Kuu^-1
to the cross term; :func:`elbo_reference` is the same ELBO by the plain paths, kept as the
reference the tests compare it against.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from gpexplorer.kernels.base import as_inputs, gradients_follow
from gpexplorer.variational import estimators, fused_fg, marginals

#: smallest marginal variance passed to the estimators (round-off can leave kdiag - diag Qff < 0)
MIN_VARIANCE = 1e-12


@dataclass
class ElboResult:
    value: float
    terms: dict  # "ell", "entropy", "cross"
    entropy_kind: str  # "exact" (K = 1) or "jensen" (eq. 19)
    grads: dict = field(default_factory=dict)  # "posterior", "kernels", "features", "likelihood"
    estimate: object = None  # the estimators.Estimate of ell
    latents: list = field(default_factory=list)  # marginals.LatentMarginals per latent
    jitter_used: list = field(default_factory=list)


def _as_list(obj, Q, what):
    items = list(obj) if isinstance(obj, (list, tuple)) else [obj]
    if len(items) != Q:
        raise ValueError(f"{what} must be given once per latent (Q = {Q}); got {len(items)}")
    return items


def marginal_moments(X, kernels, features, posterior, jitter=1e-6, *, reference=False):
    """(list of :class:`marginals.LatentMarginals`, b (K, N, Q), sigma^2 (K, N, Q));
    ``reference``: by :func:`marginals.forward_reference`."""
    X = as_inputs(X)
    Q = posterior.Q
    kernels, features = _as_list(kernels, Q, "kernels"), _as_list(features, Q, "features")
    lats = []
    for j in range(Q):
        kernels[j].check_input_dim(X.shape[1])
        features[j].check_input_dim(X.shape[1])
        if len(features[j]) != posterior.sizes[j]:
            raise ValueError(f"latent {j} has {len(features[j])} inducing variables but the posterior "
                             f"expects {posterior.sizes[j]}")
        if reference:
            Kuu, Kuf, kdiag = marginals.covariance_blocks(kernels[j], features[j], X)
            lats.append(marginals.forward_reference(Kuu, Kuf, kdiag, posterior.means[j],
                                                    lambda A, j=j: posterior.S_times(j, A), jitter))
        else:
            lats.append(marginals.forward(kernels[j], features[j], X, posterior, j, jitter))
    b = np.stack([lat.mean for lat in lats], axis=-1)
    var = np.stack([lat.var for lat in lats], axis=-1)
    return lats, b, var


def elbo(X, Y, kernels, features, likelihood, posterior, *, estimator="quadrature", eps=None, num_samples=2000,
         seed=0, n_points=None, control_variate=False, jitter=1e-6, eval_gradient=False, workspace=None,
         ell_weight=1.0):
    """The ELBO (eq. 8) and, with ``eval_gradient``, its gradients; returns :class:`ElboResult`.

    ``ell_weight`` s: value and gradients of s sum_k pi_k sum_n ell_kn + L_ent + L_cross, the
    minibatch ELBO with s = N / B (``terms["ell"]`` stays the unweighted sum over the rows given).

    ``kernels``, ``features``: one per latent (Q = ``posterior.Q`` = ``likelihood.n_latent``);
    ``posterior``: a :mod:`.posterior` family; ``estimator``: "quadrature", "reparam" or
    "score" with ``eps`` (S, N, Q) reused if given (else ``num_samples`` draws from ``seed``).
    ``grads`` = {"posterior": (P,), "kernels": [dict], "features": [dict], "likelihood": dict}.
    One latent with FG, inducing points, a stationary kernel and quadrature takes
    :mod:`.fused_fg` (same results), with the work arrays of ``workspace``
    (a :class:`gpexplorer.workspace.Workspace`, or None).
    """
    return _elbo(X, Y, kernels, features, likelihood, posterior, estimator=estimator, eps=eps,
                 num_samples=num_samples, seed=seed, n_points=n_points, control_variate=control_variate,
                 jitter=jitter, eval_gradient=eval_gradient, reference=False, workspace=workspace,
                 ell_weight=ell_weight)


def elbo_reference(X, Y, kernels, features, likelihood, posterior, *, estimator="quadrature", eps=None,
                   num_samples=2000, seed=0, n_points=None, control_variate=False, jitter=1e-6, eval_gradient=False):
    """:func:`elbo` by the plain paths (Cholesky solves, every likelihood call checked)."""
    return _elbo(X, Y, kernels, features, likelihood, posterior, estimator=estimator, eps=eps,
                 num_samples=num_samples, seed=seed, n_points=n_points, control_variate=control_variate,
                 jitter=jitter, eval_gradient=eval_gradient, reference=True)


def _elbo(X, Y, kernels, features, likelihood, posterior, *, estimator, eps, num_samples, seed, n_points,
          control_variate, jitter, eval_gradient, reference, workspace=None, ell_weight=1.0):
    X = as_inputs(X)
    Y = likelihood.validate(Y)
    if X.shape[0] != Y.shape[0]:
        raise ValueError(f"X has {X.shape[0]} rows but Y has {Y.shape[0]}")
    Q = posterior.Q
    if likelihood.n_latent != Q:
        raise ValueError(f"the likelihood needs {likelihood.n_latent} latent function(s); the posterior has {Q}")
    kernels, features = _as_list(kernels, Q, "kernels"), _as_list(features, Q, "features")
    if not reference and fused_fg.applies(kernels, features, posterior, estimator):
        value, terms, grads, est, lat = fused_fg.fg_points_stationary(
            X, Y, kernels[0], features[0], likelihood, posterior, n_points=n_points, jitter=jitter,
            eval_gradient=eval_gradient, min_variance=MIN_VARIANCE, workspace=workspace, ell_weight=ell_weight)
        return ElboResult(value=value, terms=terms, entropy_kind="exact", grads=grads or {}, estimate=est,
                          latents=[lat], jitter_used=[lat.jitter_used])
    with gradients_follow(eval_gradient):
        lats, b, var = marginal_moments(X, kernels, features, posterior, jitter, reference=reference)
    estimate = estimators.estimate_reference if reference else estimators.estimate
    est = estimate(likelihood, b, np.maximum(var, MIN_VARIANCE), Y, estimator, eps=eps, num_samples=num_samples,
                   seed=seed, n_points=n_points, control_variate=control_variate)
    pi = posterior.pi
    ell = float(pi @ est.value.sum(axis=1))
    ent, d_ent = posterior.entropy()
    inverses = None if reference else [lat.Kinv for lat in lats]
    kinv_factors = None if reference or any(lat.KinvL is None for lat in lats) else [lat.KinvL for lat in lats]
    cross, raw_cross, dKuu_cross = posterior.cross_term([lat.L for lat in lats], inverses, kinv_factors, raw=True)
    result = ElboResult(value=ell_weight * ell + ent + cross, terms={"ell": ell, "entropy": ent, "cross": cross},
                        entropy_kind=posterior.entropy_kind, estimate=est, latents=lats,
                        jitter_used=[lat.jitter_used for lat in lats])
    if not eval_gradient:
        return result
    gb = ell_weight * pi[:, None, None] * est.dmean
    gv = ell_weight * pi[:, None, None] * np.where(var > MIN_VARIANCE, est.dvar, 0.0)
    means = posterior.means
    dm, dS, g_kernels, g_features = [], [], [], []
    # latents sharing one kernel and feature (SparseVariationalGP(shared=True)): their dL/dKuu, dL/dKuf
    # and dL/dkdiag add up before one contraction (the parameters' gradient is the sum over latents)
    shared = Q > 1 and all(k is kernels[0] for k in kernels) and all(f is features[0] for f in features)
    total = None
    for j, lat in enumerate(lats):
        back = marginals.backward_reference if reference else marginals.backward
        dmj, dSj, dKuu, dKuf, dkdiag = back(lat, means[j], posterior.diagonal, gb[:, :, j], gv[:, :, j])
        dm.append(dmj)
        dS.append(dSj)
        if shared:
            parts = (dKuu + dKuu_cross[j], dKuf, dkdiag)
            total = parts if total is None else tuple(a + b for a, b in zip(total, parts))
            continue
        gk, gf = marginals.parameter_gradients(kernels[j], features[j], X, lat, dKuu + dKuu_cross[j], dKuf, dkdiag)
        g_kernels.append(gk)
        g_features.append(gf)
    if shared:
        gk, gf = marginals.parameter_gradients(kernels[0], features[0], X, lats[0], *total)
        g_kernels, g_features = [gk], [gf]
    dpi_cross, dm_cross, dS_cross = raw_cross  # the chain is linear: one pass for ell and the cross term
    g_post = posterior.chain(ell_weight * est.value.sum(axis=1) + dpi_cross, [a + b for a, b in zip(dm, dm_cross)],
                             [a + b for a, b in zip(dS, dS_cross)]) + d_ent
    g_lik = {n: ell_weight * np.tensordot(pi, g.sum(axis=1), axes=(0, 0)) for n, g in est.dparams.items()}
    g_lik = {n: float(g) if np.ndim(g) == 0 else g for n, g in g_lik.items()}
    result.grads = {"posterior": g_post, "kernels": g_kernels, "features": g_features, "likelihood": g_lik}
    return result


def mixture_moments(pi, means, variances):
    """Mean and variance of sum_k pi_k N(means_k, variances_k) (axis 0 is k)."""
    pi = np.asarray(pi, dtype=float).reshape((-1,) + (1,) * (np.ndim(means) - 1))
    mean = np.sum(pi * means, axis=0)
    var = np.sum(pi * (variances + means ** 2), axis=0) - mean ** 2
    return mean, np.maximum(var, 0.0)


__all__ = ["ElboResult", "MIN_VARIANCE", "elbo", "elbo_reference", "marginal_moments", "mixture_moments"]
