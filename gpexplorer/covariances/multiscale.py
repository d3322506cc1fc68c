"""Multiscale features with the squared-exponential kernel (thesis eq. 4.8, and its Kuu, which
the thesis does not print; both checked against quadrature of eq. 4.3-4.4 in the tests).

With s_md = l_d^2 + delta_md^2 and S_ijd = l_d^2 + delta_id^2 + delta_jd^2:

    Kuf[m, n] = sigma^2 prod_d (l_d^2 / s_md)^(1/2) exp(-1/2 sum_d (x_nd - mu_md)^2 / s_md)
    Kuu[i, j] = sigma^2 prod_d (l_d^2 / S_ijd)^(1/2) exp(-1/2 sum_d (mu_id - mu_jd)^2 / S_ijd)

so that delta -> 0 gives k(mu, x) and k(mu, mu'): inducing points. The gradient contraction
uses d log K / d s = (r^2 / s - 1) / (2 s) for a squared distance r^2 over a scale s, with
ds/d delta = 2 delta and ds/dl = 2 l (plus 1/l from the prefactor): with s_d = l_d^2 + delta_d^2,
dKuf/dmu_d = Kuf (x_d - mu_d) / s_d and dKuf/d delta_d^2 = Kuf [(x_d - mu_d)^2 / (2 s_d^2) - 1 / (2 s_d)]
(docs: design/specs/inter-domain.md). The Kuf part needs only the centred moments over n of the
weight (dL/dKuf - a b^T) * Kuf, summed in one compiled pass (:mod:`multiscale_loops`) that never
builds the rank-one-corrected [M, N] matrix; Kuf itself is a compiled exponent and numpy's exp.
"""

from __future__ import annotations

import numpy as np

from gpexplorer.covariances import multiscale_loops as loops
from gpexplorer.covariances.dispatch import Kuf, Kuu, gradients
from gpexplorer.inducing.multiscale import Multiscale
from gpexplorer.kernels import SquaredExponential
from gpexplorer.kernels.base import reduce_ard


def _scales(feature, kernel):
    ls2 = np.broadcast_to(np.asarray(kernel.lengthscale, dtype=float) ** 2, (feature.input_dim,))
    return ls2, ls2[None, :] + feature.delta ** 2  # [D], s [M, D]


@Kuu.register(Multiscale, SquaredExponential)
def multiscale_Kuu(feature, kernel):
    """Kuu of eq. 4.4 for the windows of eq. 4.5 (not printed in the thesis): the SE kernel with
    every lengthscale widened by both members' widths, S_ijd = l_d^2 + delta_id^2 + delta_jd^2. [M, M]"""
    ls2 = _scales(feature, kernel)[0]
    d2 = feature.delta ** 2
    S = ls2[None, None, :] + d2[:, None, :] + d2[None, :, :]  # [M, M, D]
    rho = feature.mu[:, None, :] - feature.mu[None, :, :]
    log_k = 0.5 * np.sum(np.log(ls2) - np.log(S) - rho ** 2 / S, axis=2)
    return kernel.variance * np.exp(log_k)


def _inputs(feature, X):
    X = np.asarray(X, dtype=float)
    X = X.reshape(X.shape[0], -1) if X.ndim != 2 else X
    feature.check_input_dim(X.shape[1])
    return X


@Kuf.register(Multiscale, SquaredExponential)
def multiscale_Kuf(feature, kernel, X):
    """Eq. 4.8: sigma^2 prod_d (l_d^2 / s_md)^(1/2) exp(-1/2 sum_d (x_nd - mu_md)^2 / s_md), [M, N]."""
    X = _inputs(feature, X)
    ls2, s = _scales(feature, kernel)
    log_c = np.log(kernel.variance) + 0.5 * np.sum(np.log(ls2)[None, :] - np.log(s), axis=1)  # [M]
    return loops.kuf(X, feature.mu, s, log_c)


def _kuf_part(feature, kernel, X, dKuf, Kuf_, rank_one):
    """Contract dL/dKuf (minus a b^T, never built) with dKuf/d(theta): (dvariance, dl [D],
    dmu, d delta), from the centred moments of the weight w = (dL/dKuf - a b^T) * Kuf."""
    X = _inputs(feature, X)
    ls2, s = _scales(feature, kernel)
    g0, g1, g2 = loops.kuf_moments(X, feature.mu, dKuf, Kuf_, rank_one)  # [M], [M, D], [M, D]
    T = g2 / (2.0 * s ** 2) - g0[:, None] / (2.0 * s)  # sum_n w_mn d log Kuf_mn / d s_md
    dvar = g0.sum() / kernel.variance
    dl = g0.sum() / np.sqrt(ls2) + 2.0 * np.sqrt(ls2) * T.sum(axis=0)
    dmu = g1 / s  # d log Kuf / d mu_md = (x_d - mu_md) / s_md
    ddelta = 2.0 * feature.delta * T
    return dvar, dl, dmu, ddelta


def _kuu_part(feature, kernel, dKuu, Kuu_):
    ls2 = _scales(feature, kernel)[0]
    d2 = feature.delta ** 2
    S = ls2[None, None, :] + d2[:, None, :] + d2[None, :, :]
    rho = feature.mu[:, None, :] - feature.mu[None, :, :]
    H = dKuu * Kuu_
    Hs = H + H.T
    Q = (rho ** 2 / S - 1.0) / (2.0 * S)  # d log Kuu_ij / d S_ijd
    dvar = H.sum() / kernel.variance
    dl = H.sum() / np.sqrt(ls2) + 2.0 * np.sqrt(ls2) * np.einsum("ij,ijd->d", H, Q)
    dmu = -np.einsum("ij,ijd->id", Hs, rho / S)
    ddelta = 2.0 * feature.delta * np.einsum("ij,ijd->id", Hs, Q)
    return dvar, dl, dmu, ddelta


@gradients.register(Multiscale, SquaredExponential)
def multiscale_gradients(feature, kernel, X, dKuu, dKuf, *, Kuu=None, Kuf=None, rank_one=None):
    """Chain rule of dL/dKuu, dL/dKuf (minus a b^T for ``rank_one`` = (a, b)) through eq. 4.8 and its
    Kuu: ({"variance", "lengthscale" (the kernel's shape)}, {"mu" [M, D], "delta" [M, D]})."""
    Kuu_ = multiscale_Kuu(feature, kernel) if Kuu is None else Kuu
    Kuf_ = multiscale_Kuf(feature, kernel, X) if Kuf is None else Kuf
    a = _kuu_part(feature, kernel, dKuu, Kuu_)
    b = _kuf_part(feature, kernel, X, dKuf, Kuf_, rank_one)
    dl = a[1] + b[1]
    kernel_grads = {"variance": float(a[0] + b[0]), "lengthscale": reduce_ard(dl, kernel.lengthscale)}
    return kernel_grads, {"mu": a[2] + b[2], "delta": a[3] + b[3]}
