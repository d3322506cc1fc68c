"""Sums of deltas with any kernel (thesis eq. 4.14-4.19): the M C deltas are inducing points of
the kernel, and the weights W [M, C] (w_m1 = 1) combine them,

    Kuf[m, n] = sum_c w_mc k(z_mc, x_n)                          (eq. 4.16, O(N M C)),
    Kuu[i, j] = sum_c sum_c' w_ic w_jc' k(z_ic, z_jc')            (eq. 4.19 with its weights,
                                                                   O(M^2 C^2)).

The gradient contraction runs the kernel's own ``grad_params_and_X`` on the flattened deltas
[M C, D] with dL/dk(z_ic, z_jc') = dL/dKuu[i, j] w_ic w_jc' and dL/dk(z_mc, x_n) =
dL/dKuf[m, n] w_mc, then dL/dw_mc = sum_n dL/dKuf[m, n] k(z_mc, x_n) + sum_j (dL/dKuu +
dL/dKuu^T)[m, j] sum_c' w_jc' k(z_mc, z_jc'). For stationary kernels the rank-one form of dL/dKuf
(``rank_one`` = (a, b)) passes through as (a_m w_mc, b): the corrected matrix is never built.
With C = 1 (all weights 1) every function is the inducing points' one at z_m1.

Speed: k(Z, X) of the deltas ([M C, N], the dominant cost) is computed once per evaluation and
reused by the gradient contraction, and the [M C, N] weighted dL/dKuf is written into a buffer
kept between evaluations (a fresh one page-faults in on every call: VFE objective and gradient
at N = 2000, M = 50, C = 2 took 2.2 ms with it, 1.2-1.7 ms without). Both live in the feature's ``memo``
(dropped by copies and pickles) and only while each array stays under :data:`MEMO_MAX_BYTES`.
"""

from __future__ import annotations

import threading
import weakref

import numpy as np

from gpexplorer.covariances.dispatch import Kuf, Kuu, gradients
from gpexplorer.inducing.sum_of_deltas import SumOfDeltas
from gpexplorer.kernels import Kernel, Stationary
from gpexplorer.parameters import sum_gradients

#: arrays above this size are neither remembered nor kept as buffers (computed afresh instead)
MEMO_MAX_BYTES = 2 ** 28


def _flat(feature):
    M, C, D = feature.Z.shape
    return feature.Z.reshape(M * C, D)


def _signature(kernel):
    """The kernel's type and, for sums and products, its children's (Sum(SE, Matern) and
    Sum(Matern, SE) have the same parameter names and values)."""
    children = getattr(kernel, "kernels", None)
    return (type(kernel),) + (() if children is None else tuple(_signature(k) for k in children))


def _key(kernel, arrays):
    params = tuple((n, np.shape(v), np.asarray(v, dtype=float).tobytes()) for n, v in kernel.parameters.items())
    # the values, not the addresses: a changed array may keep its address, a new one reuse an old one
    return _signature(kernel), params, tuple((a.shape, a.tobytes()) for a in arrays)


def _remembered(feature, slot, kernel, arrays, compute):
    """``compute()``, or what it returned for the same kernel object, parameters and ``arrays``
    (the objective's matrices, reused by the gradient contraction of the same evaluation)."""
    memo, key = feature.memo, _key(kernel, arrays)
    hit = memo.get(slot)  # one read: another thread may replace the entry meanwhile
    if hit is not None and hit[0]() is kernel and hit[1] == key:
        return hit[2]
    value = compute()
    if value.nbytes <= MEMO_MAX_BYTES:
        memo[slot] = (weakref.ref(kernel), key, value)
    return value


def _Kzz(feature, kernel):
    M, C = feature.Z.shape[:2]
    return _remembered(feature, "zz", kernel, (feature.Z,), lambda: kernel.K(_flat(feature)).reshape(M, C, M, C))


def _Kzf(feature, kernel, X):
    M, C = feature.Z.shape[:2]
    return _remembered(feature, "zf", kernel, (feature.Z, X), lambda: kernel.K(_flat(feature), X).reshape(M, C, -1))


def _inputs(X):
    X = np.asarray(X, dtype=float)
    return np.ascontiguousarray(X[:, None] if X.ndim == 1 else X)


@Kuu.register(SumOfDeltas, Kernel)
def sum_of_deltas_Kuu(feature, kernel):
    """Eq. 4.19 (with the weights the first expression drops): [M, M], no jitter."""
    if feature.C == 1:
        return kernel.K(feature.Z[:, 0, :])
    w = feature.weights
    return np.einsum("ic,icjd,jd->ij", w, _Kzz(feature, kernel), w)


@Kuf.register(SumOfDeltas, Kernel)
def sum_of_deltas_Kuf(feature, kernel, X):
    """Eq. 4.16: [M, N]."""
    X = _inputs(X)
    if feature.C == 1:
        return kernel.K(feature.Z[:, 0, :], X)
    return np.matmul(feature.weights[:, None, :], _Kzf(feature, kernel, X))[:, 0, :]


class _Buffer:
    """One reusable array per feature, lent to one caller at a time (a busy one lends a fresh array)."""

    def __init__(self):
        self.lock, self.array = threading.Lock(), None

    def borrow(self, shape):
        if not self.lock.acquire(blocking=False):
            return np.empty(shape)
        if self.array is None or self.array.shape != shape:
            self.array = np.empty(shape)
        return self.array

    def give_back(self, array):
        if array is self.array:
            self.lock.release()


def _weighted(feature, dKuf, w):
    """([M, C, N] dL/dKuf[m, n] w_mc, the buffer it was borrowed from or None)."""
    shape = w.shape + (dKuf.shape[1],)
    buffer = None
    if 8 * np.prod(shape) <= MEMO_MAX_BYTES:
        buffer = feature.memo.setdefault("buffer", _Buffer())  # setdefault: atomic
        out = buffer.borrow(shape)
    else:
        out = np.empty(shape)
    return np.multiply(dKuf[:, None, :], w[:, :, None], out=out), buffer


def _contract(feature, kernel, X, dKuu, dKuf, Kuu, Kuf, rank_one, *, pass_rank_one):
    X = _inputs(X)
    dKuu, dKuf = np.asarray(dKuu, dtype=float), np.asarray(dKuf, dtype=float)
    if rank_one is not None and not pass_rank_one:
        dKuf, rank_one = dKuf - np.outer(*rank_one), None
    if feature.C == 1:  # inducing points at z_m1 (the matrices given are k(Z, Z), k(Z, X))
        Z = feature.Z[:, 0, :]
        g_uu, dZ_uu = kernel.grad_params_and_X(dKuu, Z, None, K=Kuu)
        extra = {} if rank_one is None else {"rank_one": rank_one}
        g_uf, dZ_uf = kernel.grad_params_and_X(dKuf, Z, X, K=Kuf, **extra)
        return sum_gradients(g_uu, g_uf), {"Z": (dZ_uu + dZ_uf)[:, None, :]}
    M, C, D = feature.Z.shape
    w, flat = feature.weights, _flat(feature)
    Kzz, Kzf = _Kzz(feature, kernel), _Kzf(feature, kernel, X)
    wf = w.reshape(-1)
    dKzz = np.repeat(np.repeat(dKuu, C, axis=0), C, axis=1)  # [M C, M C]
    dKzz *= wf[:, None]
    dKzz *= wf[None, :]
    g_zz, dZ_zz = kernel.grad_params_and_X(dKzz, flat, None, K=Kzz.reshape(M * C, M * C))
    # w_ic enters Kuu as a row (i) and as a column (i) weight
    dw = np.einsum("ij,icjd,jd->ic", dKuu + dKuu.T, Kzz, w)
    dw += np.matmul(Kzf, dKuf[:, :, None])[:, :, 0]  # sum_n dKuf[m, n] k(z_mc, x_n)
    extra = {}
    if rank_one is not None:
        a, b = (np.asarray(v, dtype=float) for v in rank_one)
        dw -= a[:, None] * (Kzf @ b)
        extra["rank_one"] = ((a[:, None] * w).reshape(-1), b)
    dKzf, buffer = _weighted(feature, dKuf, w)
    try:
        g_zf, dZ_zf = kernel.grad_params_and_X(dKzf.reshape(M * C, -1), flat, X, K=Kzf.reshape(M * C, -1), **extra)
    finally:
        if buffer is not None:
            buffer.give_back(dKzf)
    return sum_gradients(g_zz, g_zf), {"Z": (dZ_zz + dZ_zf).reshape(M, C, D), "w": dw[:, 1:]}


@gradients.register(SumOfDeltas, Kernel)
def sum_of_deltas_gradients(feature, kernel, X, dKuu, dKuf, *, Kuu=None, Kuf=None, rank_one=None):
    """(kernel gradients, {"Z": [M, C, D], "w": [M, C - 1] when C > 1}) through any kernel's
    ``grad_params_and_X`` (a ``rank_one`` correction is applied to dL/dKuf first)."""
    return _contract(feature, kernel, X, dKuu, dKuf, Kuu, Kuf, rank_one, pass_rank_one=False)


@gradients.register(SumOfDeltas, Stationary)
def sum_of_deltas_stationary_gradients(feature, kernel, X, dKuu, dKuf, *, Kuu=None, Kuf=None, rank_one=None):
    """As the generic contraction, the rank-one form of dL/dKuf passed into the compiled one."""
    return _contract(feature, kernel, X, dKuu, dKuf, Kuu, Kuf, rank_one, pass_rank_one=True)
