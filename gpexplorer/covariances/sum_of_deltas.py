"""Sums of deltas with any kernel (thesis eq. 4.14-4.19): the M C deltas are inducing points of
the kernel, and the weights W [M, C] combine them,

    Kuf = sum_c w_mc k(z_mc, X),    Kuu = sum_cc' w_ic w_jc' k(z_ic, z_jc').

The gradient contraction runs the kernel's own contraction on the flattened deltas with
dL/dK(z, z') = dL/dKuu[i, j] w_ic w_jc' and dL/dK(z, x) = dL/dKuf[m, n] w_mc; for stationary
kernels the rank-one correction of dL/dKuf passes through as (a_m w_mc, b), never built.
"""

from __future__ import annotations

import numpy as np

from gpexplorer.covariances.dispatch import Kuf, Kuu, gradients
from gpexplorer.inducing.sum_of_deltas import SumOfDeltas
from gpexplorer.kernels import Kernel, Stationary
from gpexplorer.parameters import sum_gradients


def _flat(feature):
    M, C, D = feature.Z.shape
    return feature.Z.reshape(M * C, D)


def _key(feature, kernel, X=None):
    params = tuple((n, np.asarray(v, dtype=float).tobytes()) for n, v in kernel.params.items())
    inputs = None if X is None else (X.shape, X.tobytes())  # the values: a new array may reuse an old address
    return type(kernel), params, feature.Z.tobytes(), inputs


def _remembered(feature, slot, key, compute):
    """The kernel matrix of the deltas computed for ``key`` by the objective, reused by the
    gradient contraction of the same evaluation (it is the dominant cost at large C). Kept on
    the feature object, which belongs to one model."""
    cache = feature.__dict__.setdefault("_kernel_matrices", {})
    if slot not in cache or cache[slot][0] != key:
        cache[slot] = (key, compute())
    return cache[slot][1]


def _Kzz(feature, kernel):
    M, C = feature.Z.shape[:2]
    return _remembered(feature, "zz", _key(feature, kernel),
                       lambda: kernel.K(_flat(feature)).reshape(M, C, M, C))


def _Kzf(feature, kernel, X):
    M, C = feature.Z.shape[:2]
    X = np.asarray(X, dtype=float)
    return _remembered(feature, "zf", _key(feature, kernel, X),
                       lambda: kernel.K(_flat(feature), X).reshape(M, C, -1))


@Kuu.register(SumOfDeltas, Kernel)
def sum_of_deltas_Kuu(feature, kernel):
    w = feature.weights
    return np.einsum("ic,icjd,jd->ij", w, _Kzz(feature, kernel), w)


@Kuf.register(SumOfDeltas, Kernel)
def sum_of_deltas_Kuf(feature, kernel, X):
    return np.einsum("mc,mcn->mn", feature.weights, _Kzf(feature, kernel, X))


def _contract(feature, kernel, X, dKuu, dKuf, rank_one, pass_rank_one):
    M, C, D = feature.Z.shape
    w = feature.weights
    Kzz, Kzf = _Kzz(feature, kernel), _Kzf(feature, kernel, X)
    flat = _flat(feature)
    dKzz = (dKuu[:, None, :, None] * w[:, :, None, None] * w[None, None, :, :]).reshape(M * C, M * C)
    dKzf = (dKuf[:, None, :] * w[:, :, None]).reshape(M * C, -1)
    g_zz, dZ_zz = kernel.grad_params_and_X(dKzz, flat, None, K=Kzz.reshape(M * C, M * C))
    # d/dw_ic of sum_ij dKuu_ij sum_cd w_ic w_jd K[i, c, j, d]: w_ic appears as row i and as column i
    dw = np.einsum("mn,mcn->mc", dKuf, Kzf) + np.einsum("ij,icjd,jd->ic", dKuu + dKuu.T, Kzz, w)
    if rank_one is not None:
        a, b = rank_one
        dw -= a[:, None] * np.einsum("mcn,n->mc", Kzf, b)
        a_flat = (a[:, None] * w).reshape(-1)
        if pass_rank_one:
            g_zf, dZ_zf = kernel.grad_params_and_X(dKzf, flat, X, K=Kzf.reshape(M * C, -1), rank_one=(a_flat, b))
        else:
            g_zf, dZ_zf = kernel.grad_params_and_X(dKzf - np.outer(a_flat, b), flat, X, K=Kzf.reshape(M * C, -1))
    else:
        g_zf, dZ_zf = kernel.grad_params_and_X(dKzf, flat, X, K=Kzf.reshape(M * C, -1))
    grads = {"Z": (dZ_zz + dZ_zf).reshape(M, C, D)}
    if C > 1:
        grads["w"] = dw[:, 1:]
    return sum_gradients(g_zz, g_zf), grads


@gradients.register(SumOfDeltas, Kernel)
def sum_of_deltas_gradients(feature, kernel, X, dKuu, dKuf, *, Kuu=None, Kuf=None, rank_one=None):
    return _contract(feature, kernel, X, dKuu, dKuf, rank_one, pass_rank_one=False)


@gradients.register(SumOfDeltas, Stationary)
def sum_of_deltas_stationary_gradients(feature, kernel, X, dKuu, dKuf, *, Kuu=None, Kuf=None, rank_one=None):
    return _contract(feature, kernel, X, dKuu, dKuf, rank_one, pass_rank_one=True)
