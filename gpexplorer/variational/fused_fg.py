"""The SAVIGP ELBO's fast path for its most common shape: one latent (Q = 1), the full-Gaussian
posterior (FG, K = 1), inducing points with a stationary kernel, Gauss-Hermite quadrature.

Same value and gradients as :func:`gpexplorer.variational.elbo.elbo`'s general path (the tests
compare every term and gradient), by fewer and cheaper passes. With Kuu + jitter I = L L^T,
A^T = Kuu^-1 Kuf, S = L_S L_S^T, a = Kuu^-1 m and C = Kuu^-1 - Kuu^-1 S Kuu^-1 (M x M):

    b = m^T A^T,   sigma^2_n = kdiag_n - [Kuf^T C Kuf]_nn                           (eq. 11)
    dL/dm = A^T g_b,   dL/dS = A^T diag(g_v) A =: P
    dL/dKuf = -2 C Kuf diag(g_v) + a g_b^T
    dL/dKuu = sym(P - 2 Kuu^-1 S P - a (A^T g_b)^T) - 1/2 (C - a a^T)   (the last from eq. 20)

with g_b = d ell / d b and g_v = d ell / d sigma^2 from the quadrature (eq. 12). C Kuf and
A^T come from one GEMM of [C; Kuu^-1] with Kuf (one call of twice the height runs faster than
two), P from a second. P is not formed as Kuu^-1 (Kuf diag(g_v) Kuf^T) Kuu^-1, which would save
a product but multiplies rounding errors by cond(Kuu)^2 (a relative error of 1e-5 in dL/dL_S at
M = 50, jitter 1e-6, where this form keeps 1e-11). The rank-one a g_b^T goes to the kernel
contraction beside the matrix (``rank_one``), never summed into it. The [M, N] and [nodes, N]
work arrays come from a :class:`gpexplorer.workspace.Workspace`; the Bernoulli-logit
expectations are computed by the compiled loops of :mod:`._loops` around numpy's
vectorised exp and log1p. Entropy (exact, K = 1) and cross term (eq. 20) are the FG closed forms,
m^T Kuu^-1 m + tr(Kuu^-1 S) by triangular solves.
"""

from __future__ import annotations

import numpy as np

from gpexplorer.inducing.points import InducingPoints
from gpexplorer.kernels import Stationary
from gpexplorer.kernels import _loops as kernel_loops
from gpexplorer.likelihoods.pointwise_zoo import BernoulliLogit
from gpexplorer.linalg import inv_from_cholesky, jittered_cholesky, solve_lower
from gpexplorer.variational import _loops as loops
from gpexplorer.variational import estimators
from gpexplorer.variational.marginals import LatentMarginals
from gpexplorer.variational.packing import diag_positions, tril_flat_positions
from gpexplorer.variational.posterior import LOG_2PI, FullGaussian
from gpexplorer.workspace import array, borrow, give_back


def applies(kernels, features, posterior, estimator):
    """Whether :func:`fg_points_stationary` serves this configuration."""
    return (estimator == "quadrature" and type(posterior) is FullGaussian and posterior.Q == 1
            and len(kernels) == 1 and isinstance(kernels[0], Stationary)
            and type(features[0]) is InducingPoints)


def fg_points_stationary(X, Y, kernel, feature, likelihood, posterior, *, n_points, jitter, eval_gradient,
                         min_variance, workspace=None, ell_weight=1.0):
    """(value, terms, grads or None, Estimate, LatentMarginals) as :func:`elbo` assembles them;
    X and Y already validated. Nothing returned refers to ``workspace``'s arrays. ``ell_weight``: as
    :func:`gpexplorer.variational.elbo.elbo`."""
    arrays = borrow(workspace)
    try:
        return _evaluate(X, Y, kernel, feature, likelihood, posterior, n_points=n_points, jitter=jitter,
                         eval_gradient=eval_gradient, min_variance=min_variance, arrays=arrays, ell_weight=ell_weight)
    finally:
        give_back(workspace, arrays)


def _evaluate(X, Y, kernel, feature, likelihood, posterior, *, n_points, jitter, eval_gradient, min_variance, arrays,
              ell_weight=1.0):
    (N, D), Z = X.shape, feature.Z
    M = Z.shape[0]
    kernel.check_input_dim(D)
    feature.check_input_dim(D)
    if M != posterior.sizes[0]:
        raise ValueError(f"latent 0 has {M} inducing variables but the posterior expects {posterior.sizes[0]}")
    kind, variance, ls, alpha = kernel.fused_arguments(D)
    kern = kernel_loops.stationary_params(kind, variance, ls, alpha)
    Xs = np.divide(X, kern.lengthscale, out=array(arrays, "Xs", (N, D)))
    Zs = np.ascontiguousarray(Z / kern.lengthscale)
    Kuf = kernel_loops.kernel_matrix(kern, Zs, Xs)  # returned with the marginals: fresh
    Kuu = kernel_loops.stationary_K_symmetric(kind, Zs, variance, alpha)
    kdiag = np.full(N, variance)
    L, jitter_used = jittered_cholesky(Kuu, jitter, what="Kuu")
    Kinv = inv_from_cholesky(L)
    m = posterior.means[0][0]
    LS = posterior.factor(0)
    a = Kinv @ m
    KinvLS = Kinv @ LS
    stacked = array(arrays, "C;Kinv", (2 * M, M))
    np.subtract(Kinv, KinvLS @ KinvLS.T, out=stacked[:M])  # C
    stacked[M:] = Kinv
    products = np.dot(stacked, Kuf, out=array(arrays, "CK;At", (2 * M, N)))  # one GEMM: faster than two
    CK, At = products[:M], products[M:]
    C = stacked[:M]
    b = m @ At
    var = loops.marginal_variances(Kuf, CK, kdiag, np.empty(N))
    lat = LatentMarginals(Kuu=Kuu, Kuf=Kuf, kdiag=kdiag, L=L, At=None, AS=None, mean=b[None], var=var[None],
                          jitter_used=jitter_used, Kinv=Kinv, factor=LS)
    est = _quadrature(likelihood, b, np.maximum(var, min_variance), Y, n_points, arrays)
    ell = float(est.value.sum())
    # entropy (exact, K = 1) and cross term (eq. 20)
    log_diag_S = np.log(np.diag(LS))
    entropy = 0.5 * M * (LOG_2PI + 1.0) + float(np.sum(log_diag_S))
    Lm = solve_lower(L, np.column_stack([m, LS]))  # by solves: m^T Kuu^-1 m cancels less than m^T a
    quad_trace = float(np.sum(Lm * Lm))  # m^T Kuu^-1 m + tr(Kuu^-1 S)
    cross = -0.5 * (M * LOG_2PI + 2.0 * float(np.sum(np.log(np.diag(L)))) + quad_trace)
    terms = {"ell": ell, "entropy": entropy, "cross": cross}
    if not eval_gradient:
        return ell_weight * ell + entropy + cross, terms, None, est, lat
    gb = ell_weight * est.dmean[0, :, 0]
    gv = ell_weight * np.where(var > min_variance, est.dvar[0, :, 0], 0.0)
    dm = At @ gb
    AG = array(arrays, "AG", (M, N))
    loops.scale_columns(At, CK, gv, AG)  # AG = A^T diag(gv); CK <- -2 CK diag(gv), dL/dKuf less its rank one
    P = AG @ At.T  # dL/dS = A^T diag(gv) A; not Kuu^-1 (Kuf diag(gv) Kuf^T) Kuu^-1, which squares cond(Kuu)
    KS = KinvLS @ LS.T  # Kuu^-1 S
    KSP = KS @ P
    am = np.outer(a, dm)
    dKuu = P - (KSP + KSP.T) - 0.5 * (am + am.T) - 0.5 * (C - np.outer(a, a))  # C = Kuu^-1 - Kuu^-1 S Kuu^-1
    dKuu = 0.5 * (dKuu + dKuu.T)
    # posterior: d/dm = dm - a; d/dS = P - Kuu^-1 / 2, through S = L_S L_S^T (log-diagonal)
    g_post = np.empty(posterior.num_free)
    g_post[:M] = dm - a
    dS = P - 0.5 * Kinv
    dL = (dS + dS.T) @ LS
    tail = dL.reshape(-1)[tril_flat_positions(M)]
    diag = diag_positions(M)
    tail[diag] = tail[diag] * np.diag(LS) + 1.0  # + 1: the entropy's sum of log L_S,ii
    g_post[M:] = tail
    # kernel and Z: dL/dKuf = -2 CK diag(gv) + a gb^T (the rank one passed apart)
    W = CK
    g_uu = kernel_loops.stationary_contract(tuple(kern), Zs, Zs, Kuu, (dKuu, _E1, _E1), True)
    g_uf = kernel_loops.stationary_contract(tuple(kern), Zs, Xs, Kuf, (W, -a, gb), False)
    g_kernel = kernel.pack_gradients(g_uu.variance + g_uf.variance + float(np.sum(gv)),
                                     g_uu.lengthscale + g_uf.lengthscale, g_uu.extra + g_uf.extra)
    g_feature = {"Z": g_uu.dX1 + g_uu.dX2 + g_uf.dX1}
    g_lik = {n: ell_weight * g[0].sum(axis=0) for n, g in est.dparams.items()}
    g_lik = {n: float(g) if np.ndim(g) == 0 else g for n, g in g_lik.items()}
    grads = {"posterior": g_post, "kernels": [g_kernel], "features": [g_feature], "likelihood": g_lik}
    return ell_weight * ell + entropy + cross, terms, grads, est, lat


_E1 = np.empty(0)


def _quadrature(likelihood, b, var, Y, n_points, arrays):
    """The Estimate of ell_n (K = 1, Q = 1) by Gauss-Hermite quadrature."""
    if type(likelihood) is not BernoulliLogit:
        return estimators.estimate(likelihood, b[None, :, None], var[None, :, None], Y, "quadrature",
                                   n_points=n_points)
    nodes, w = estimators.gauss_hermite_grid(1, int(n_points or estimators.DEFAULT_POINTS[1]))
    x = np.ascontiguousarray(nodes[:, 0])
    N, P = b.shape[0], x.shape[0]
    sd = np.sqrt(var)
    s = 2.0 * Y[:, 0] - 1.0
    work = array(arrays, "logit", (3, P, N))  # z, e = exp(-|z|), log1p(e)
    loops.logit_arguments(x, b, sd, s, work)
    np.exp(work[1], out=work[1])
    np.log1p(work[1], out=work[2])
    value, dmean, dvar = out = np.empty((3, N))
    loops.logit_moments(w, x, work, s, sd, out)
    zeros = np.zeros((1, N, 1))
    return estimators.Estimate(value=value[None], dmean=dmean[None, :, None], dvar=dvar[None, :, None], dparams={},
                               report={"value": zeros[..., 0], "dmean": zeros, "dvar": zeros.copy()},
                               method="quadrature", num_samples=P)


__all__ = ["applies", "fg_points_stationary"]
