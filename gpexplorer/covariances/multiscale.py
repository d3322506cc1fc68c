"""Multiscale features with the squared-exponential kernel (thesis eq. 4.8, and its Kuu, which
the thesis does not print; both checked against quadrature of eq. 4.3-4.4 in the tests).

With s_md = l_d^2 + delta_md^2 and S_ijd = l_d^2 + delta_id^2 + delta_jd^2:

    Kuf[m, n] = sigma^2 prod_d (l_d^2 / s_md)^(1/2) exp(-1/2 sum_d (x_nd - mu_md)^2 / s_md)
    Kuu[i, j] = sigma^2 prod_d (l_d^2 / S_ijd)^(1/2) exp(-1/2 sum_d (mu_id - mu_jd)^2 / S_ijd)

so that delta -> 0 gives k(mu, x) and k(mu, mu'): inducing points. The gradient contraction
uses d log K / d s = (r^2 / s - 1) / (2 s) for a squared distance r^2 over a scale s, with
ds/d delta = 2 delta and ds/dl = 2 l (plus 1/l from the prefactor); the Kuf part needs only
matrix-vector products of the [M, N] weight, so dL/dKuf's rank-one correction a b^T is applied
to those products and never built.
"""

from __future__ import annotations

import numpy as np

from gpexplorer.covariances.dispatch import Kuf, Kuu, gradients
from gpexplorer.inducing.multiscale import Multiscale
from gpexplorer.kernels import SquaredExponential
from gpexplorer.kernels.base import reduce_ard


def _scales(feature, kernel):
    ls2 = np.broadcast_to(np.asarray(kernel.lengthscale, dtype=float) ** 2, (feature.input_dim,))
    return ls2, ls2[None, :] + feature.delta ** 2  # [D], s [M, D]


@Kuu.register(Multiscale, SquaredExponential)
def multiscale_Kuu(feature, kernel):
    ls2 = _scales(feature, kernel)[0]
    d2 = feature.delta ** 2
    S = ls2[None, None, :] + d2[:, None, :] + d2[None, :, :]  # [M, M, D]
    rho = feature.mu[:, None, :] - feature.mu[None, :, :]
    log_k = 0.5 * np.sum(np.log(ls2) - np.log(S) - rho ** 2 / S, axis=2)
    return kernel.variance * np.exp(log_k)


@Kuf.register(Multiscale, SquaredExponential)
def multiscale_Kuf(feature, kernel, X):
    X = np.asarray(X, dtype=float)
    ls2, s = _scales(feature, kernel)
    prefactor = kernel.variance * np.exp(0.5 * np.sum(np.log(ls2)[None, :] - np.log(s), axis=1))  # [M]
    scaled_mu = feature.mu / np.sqrt(s)
    # sum_d (x_d - mu_md)^2 / s_md as ||x / sqrt(s_m)||^2 - 2 x.(mu_m / s_m) + ||mu_m / sqrt(s_m)||^2
    quad = (X ** 2) @ (1.0 / s).T - 2.0 * X @ (feature.mu / s).T + np.sum(scaled_mu ** 2, axis=1)[None, :]
    return prefactor[:, None] * np.exp(-0.5 * quad.T)


def _kuf_part(feature, kernel, X, dKuf, Kuf_, rank_one):
    """Contract dL/dKuf (minus a b^T) with dKuf/d(theta): (dvariance, dl [D], dmu, d delta)."""
    X = np.asarray(X, dtype=float)
    ls2, s = _scales(feature, kernel)
    G = dKuf * Kuf_  # [M, N]

    def products(v):  # G @ v for v [N, K], with the rank-one correction -(a b^T) * Kuf
        out = G @ v
        if rank_one is not None:
            a, b = rank_one
            out -= a[:, None] * (Kuf_ @ (b[:, None] * v))
        return out

    ones = np.ones((X.shape[0], 1))
    g0, g1, g2 = products(ones)[:, 0], products(X), products(X ** 2)  # [M], [M, D], [M, D]
    mu = feature.mu
    weighted_r2 = g2 - 2.0 * mu * g1 + mu ** 2 * g0[:, None]  # sum_n G_mn (x_nd - mu_md)^2
    T = weighted_r2 / (2.0 * s ** 2) - g0[:, None] / (2.0 * s)  # sum_n G_mn d log Kuf / d s_md
    dvar = g0.sum() / kernel.variance
    dl = g0.sum() / np.sqrt(ls2) + 2.0 * np.sqrt(ls2) * T.sum(axis=0)
    dmu = (g1 - mu * g0[:, None]) / s
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
    Kuu_ = multiscale_Kuu(feature, kernel) if Kuu is None else Kuu
    Kuf_ = multiscale_Kuf(feature, kernel, X) if Kuf is None else Kuf
    a = _kuu_part(feature, kernel, dKuu, Kuu_)
    b = _kuf_part(feature, kernel, X, dKuf, Kuf_, rank_one)
    dl = a[1] + b[1]
    kernel_grads = {"variance": float(a[0] + b[0]), "lengthscale": reduce_ard(dl, kernel.lengthscale)}
    return kernel_grads, {"mu": a[2] + b[2], "delta": a[3] + b[3]}
