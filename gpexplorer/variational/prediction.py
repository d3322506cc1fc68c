"""Predictions of a fitted :class:`~gpexplorer.variational.savigp.SparseVariationalGP` (SAVIGP,
Dezfouli & Bonilla 2015, sec. 5 "Predictions" and the measures of sec. 6).

At a new input the posterior over the Q latents is the mixture (eq. 10-11 at x*)

    q(f*) = sum_k pi_k prod_j N(f*_j; b_kj, sigma^2_kj),

and every predictive quantity is an expectation under it, computed per component by the
product Gauss-Hermite rule (:func:`gpexplorer.likelihoods.quadrature.product_rule`) when
Q <= 3, else by Monte Carlo (``num_samples`` draws, ``seed``), then mixed with the weights pi_k:

* :func:`predict_y`: E[y*] = E_q[E[y | f*]] and, by the law of total variance,
  Var[y*] = E_q[Var[y | f*]] + E_q[E[y | f*]^2] - E[y*]^2 (the likelihood's
  ``conditional_mean`` / ``conditional_variance``; the paper's eq. for E[y*]);
* :func:`predict_log_density`: log p(y* | data) = log E_q[p(y* | f*)] (the density of the
  predictive, not E_q[log p]), as one log-sum-exp over components and nodes;
* :func:`class_probabilities`: E_q[p(y* = c | f*)] (no probit approximation);
* :func:`latent_quantiles`: quantiles of the mixture q(f*_j) itself (bands that stay honest
  for a bimodal MoG2);
* :func:`nlpd`, :func:`error_rate`, :func:`sse`: the measures of sec. 6 (NLP / NLPD, error
  rate, SSE = MSE / variance of the test targets), through :mod:`gpexplorer.metrics`.

A likelihood with ``predictive_class_probabilities(mean, var, n_points)`` (robust max, eq. R5 of
:mod:`gpexplorer.likelihoods.pointwise_robustmax`) knows p(y* = c) under a Gaussian exactly: class
probabilities, the predictive density and the moments of the label come from those, mixed with
the weights pi_k, and no nodes or samples over the Q latents are drawn.
"""

from __future__ import annotations

import numpy as np
from scipy import special

from gpexplorer import _threads, metrics
from gpexplorer.likelihoods.quadrature import product_rule

#: Gauss-Hermite points per latent for the predictive moments (n^Q nodes)
MOMENT_POINTS = {1: 40, 2: 20, 3: 10}
#: points per latent for the predictive density: p(y | f) may be much narrower than q(f*)
DENSITY_POINTS = {1: 100, 2: 30, 3: 14}
#: largest (nodes x rows x Q) block evaluated at once
BLOCK = 2_000_000


def _blocks(model, Xnew, table, n_points, num_samples, seed):
    """Yield (rows slice, pi, F (K, P, n, Q), log w (P,)) over blocks of rows of Xnew: the
    product Gauss-Hermite rule for Q <= 3 (or when ``n_points`` is given), else ``num_samples``
    standard normal draws per row, drawn block by block from one generator (``seed``)."""
    with _threads.single_threaded():
        pi, means, var = model.predict_components(Xnew)
    K, N, Q = means.shape
    quadrature = Q <= 3 or n_points is not None
    if quadrature:
        nodes, w = product_rule(int(n_points or table[Q]), Q)
        x, logw = nodes[:, None, :], np.log(w)
    else:
        if isinstance(num_samples, bool) or int(num_samples) < 1:
            raise ValueError(f"num_samples must be a positive integer; got {num_samples!r}")
        rng = np.random.default_rng(seed)
        logw = np.full(int(num_samples), -np.log(int(num_samples)))
    step = max(1, BLOCK // max(1, K * logw.size * Q))
    sd = np.sqrt(var)
    for i in range(0, N, step):
        rows = slice(i, min(N, i + step))
        xi = x if quadrature else rng.standard_normal((logw.size, rows.stop - rows.start, Q))
        F = means[:, None, rows] + sd[:, None, rows] * xi[None]
        yield rows, pi, F, logw


def predict_y(model, Xnew, n_points=None, num_samples=2000, seed=0):
    """Mean and variance (N*, 1) of y* (module docstring), (N*, P) for a multi-output likelihood
    (conditional moments (..., N, P), e.g. GPRN: the marginal variance per output); ``n_points``
    per latent overrides the quadrature size (and forces quadrature for Q > 3)."""
    N = Xnew.shape[0]
    mean = second = None
    lik = model.likelihood
    if hasattr(lik, "predictive_class_probabilities"):  # the label's moments under the exact probabilities
        p = _exact_class_probabilities(model, Xnew, n_points)
        k = np.arange(p.shape[1], dtype=float)
        mean = p @ k
        return mean[:, None], np.maximum(p @ (k * k) - mean ** 2, 0.0)[:, None]
    for rows, pi, F, logw in _blocks(model, Xnew, MOMENT_POINTS, n_points, num_samples, seed):
        w = np.exp(logw)
        if hasattr(lik, "conditional_moments"):  # one pass where the two share their work (a typed likelihood)
            cm, cv = lik.conditional_moments(F)  # (K, P, n) or (K, P, n, outputs)
        else:
            cm, cv = lik.conditional_mean(F), lik.conditional_variance(F)
        if mean is None:
            mean, second = np.empty((N,) + cm.shape[3:]), np.empty((N,) + cm.shape[3:])
        mean[rows] = np.einsum("k,p,kpn...->n...", pi, w, cm)
        second[rows] = np.einsum("k,p,kpn...->n...", pi, w, cv + cm ** 2)
    return mean.reshape(N, -1), np.maximum(second - mean ** 2, 0.0).reshape(N, -1)


def predict_log_density(model, Xnew, Ynew, n_points=None, num_samples=2000, seed=0):
    """log p(y*_n | data) = log sum_k pi_k E_{q_k}[p(y*_n | f*)] per point, (N*,), as a
    log-sum-exp over (component, node) of log pi_k + log w_p + log p(y*_n | f_p)."""
    Y = _targets(model, Xnew, Ynew)
    if hasattr(model.likelihood, "predictive_class_probabilities"):
        p = _exact_class_probabilities(model, Xnew, n_points)
        return np.log(p[np.arange(p.shape[0]), Y[:, 0].astype(np.intp)])
    out = np.empty(Xnew.shape[0])
    for rows, pi, F, logw in _blocks(model, Xnew, DENSITY_POINTS, n_points, num_samples, seed):
        with np.errstate(divide="ignore"):
            logpi = np.log(pi)
        lp = model.likelihood.log_density(F, Y[rows])  # (K, P, n)
        a = logpi[:, None, None] + logw[None, :, None] + lp
        out[rows] = special.logsumexp(a.reshape(-1, a.shape[-1]), axis=0)
    return out


def class_probabilities(model, Xnew, n_points=None, num_samples=2000, seed=0):
    """(N*, C) E_q[p(y* = c | f*)]: Bernoulli likelihoods (C = 2, columns y = 0 and y = 1) and
    likelihoods with ``class_probabilities`` (softmax, C = n_classes; robust max exactly, module
    docstring); else ValueError."""
    lik = model.likelihood
    if hasattr(lik, "predictive_class_probabilities"):
        return _exact_class_probabilities(model, Xnew, n_points)
    softmax = hasattr(lik, "class_probabilities")
    if not softmax and not _is_bernoulli(lik):
        raise ValueError(f"class probabilities need a classification likelihood (Bernoulli or softmax); "
                         f"got {getattr(lik, 'name', type(lik).__name__)!r}")
    if not softmax:
        p1 = np.clip(predict_y(model, Xnew, n_points, num_samples, seed)[0][:, 0], 0.0, 1.0)
        return np.stack([1.0 - p1, p1], axis=1)
    out = np.empty((Xnew.shape[0], lik.n_latent))
    for rows, pi, F, logw in _blocks(model, Xnew, MOMENT_POINTS, n_points, num_samples, seed):
        out[rows] = np.einsum("k,p,kpnc->nc", pi, np.exp(logw), lik.class_probabilities(F))
    return out


def mixture_quantiles(pi, means, variances, probabilities, iterations=64):
    """Quantiles of the 1-D mixtures sum_k pi_k N(means_k, variances_k) (axis 0 is k; one mixture
    per remaining index), for each of ``probabilities``: shape means.shape[1:] + (len(probabilities),).

    By bisection on the mixture's CDF between the smallest component's mean - 9 sd and the largest
    one's + 9 sd; 64 halvings leave the bracket at 2^-64 of its width. For one component these
    are the Gaussian's quantiles b + sigma Phi^-1(p); for a mixture they are not those of the
    moment-matched Gaussian (a bimodal q(f*) has its central band split or skewed)."""
    pi = np.asarray(pi, dtype=float)
    means = np.asarray(means, dtype=float)
    sd = np.sqrt(np.maximum(np.asarray(variances, dtype=float), 0.0))
    probs = np.asarray(probabilities, dtype=float)
    if np.any((probs <= 0.0) | (probs >= 1.0)):
        raise ValueError(f"probabilities must lie in (0, 1); got {probs.tolist()}")
    shape = (-1,) + (1,) * (means.ndim - 1)
    w = pi.reshape(shape)[..., None]
    b, s = means[..., None], np.maximum(sd, 1e-300)[..., None]
    lo = np.broadcast_to(np.min(means - 9.0 * sd, axis=0)[..., None], means.shape[1:] + probs.shape).copy()
    hi = np.broadcast_to(np.max(means + 9.0 * sd, axis=0)[..., None], lo.shape).copy()
    for _ in range(int(iterations)):
        mid = 0.5 * (lo + hi)
        below = np.sum(w * special.ndtr((mid[None] - b) / s), axis=0) < probs
        lo = np.where(below, mid, lo)
        hi = np.where(below, hi, mid)
    return 0.5 * (lo + hi)


def latent_quantiles(model, Xnew, probabilities):
    """(N*, Q, len(probabilities)) quantiles of q(f*_j) per latent: the mixture's own, not a
    moment-matched Gaussian's (:func:`mixture_quantiles`)."""
    with _threads.single_threaded():
        pi, means, var = model.predict_components(Xnew)  # (K,), (K, N, Q), (K, N, Q)
    return mixture_quantiles(pi, means, var, probabilities)


def nlpd(model, Xnew, Ynew):
    """Mean negative log predictive density (the paper's NLP / NLPD), -mean_n log p(y*_n | data)."""
    return float(-np.mean(predict_log_density(model, Xnew, Ynew)))


def error_rate(model, Xnew, Ynew):
    """Fraction misclassified: Bernoulli predicts y = 1 iff p(y* = 1) > 0.5
    (:func:`gpexplorer.metrics.error_rate`), softmax the class of largest probability."""
    Y = _targets(model, Xnew, Ynew)[:, 0]
    p = class_probabilities(model, Xnew)
    if p.shape[1] == 2 and _is_bernoulli(model.likelihood):
        return metrics.error_rate(Y, p[:, 1])
    return float(np.mean(np.argmax(p, axis=1) != Y.astype(int)))


def sse(model, Xnew, Ynew):
    """Standardised squared error of the predictive mean, mean (y - E[y*])^2 / var(y)
    (the paper's SSE; :func:`gpexplorer.metrics.smse`); for P > 1 outputs an array (P,), one
    per output (the paper's SARCOS SMSE per torque)."""
    Y = _targets(model, Xnew, Ynew)
    mean = predict_y(model, Xnew)[0]
    if Y.shape[1] == 1:
        return metrics.smse(Y[:, 0], mean[:, 0])
    return np.array([metrics.smse(Y[:, p], mean[:, p]) for p in range(Y.shape[1])])


def _exact_class_probabilities(model, Xnew, n_points):
    """(N*, C) sum_k pi_k p_k(y* = c), p_k the likelihood's exact class probabilities under
    component k's Gaussian marginals (module docstring)."""
    with _threads.single_threaded():
        pi, means, var = model.predict_components(Xnew)
    lik = model.likelihood
    return sum(w * lik.predictive_class_probabilities(m, v, n_points) for w, m, v in zip(pi, means, var))


def _is_bernoulli(lik):
    return getattr(lik, "kind", None) == "binary"


def _targets(model, Xnew, Ynew):
    Y = model.likelihood.validate(Ynew)
    if Y.shape[0] != Xnew.shape[0]:
        raise ValueError(f"Xnew has {Xnew.shape[0]} rows but Ynew has {Y.shape[0]}")
    return Y


__all__ = ["DENSITY_POINTS", "MOMENT_POINTS", "class_probabilities", "error_rate", "latent_quantiles",
           "mixture_quantiles", "nlpd", "predict_log_density", "predict_y", "sse"]
