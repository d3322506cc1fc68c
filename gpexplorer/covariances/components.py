"""Per-component inducing variables of a sum kernel (thesis eq. 5.50-5.60; the feature is
:class:`gpexplorer.inducing.components.Components`): Kuu = blockdiag(Kuu_j), Kuf = [Kuf_1; ...; Kuf_J]
with (feature j, kernel component j) covarying as registered for that pair, and no covariance
between components (the f_j are independent a priori)."""

from __future__ import annotations

import numpy as np
from scipy import linalg as sla

from gpexplorer.covariances import dispatch
from gpexplorer.inducing.components import Components
from gpexplorer.kernels.base import Sum


def _pairs(feature, kernel):
    if len(feature.features) != len(kernel.kernels):
        raise ValueError(f"Components has {len(feature.features)} features but the sum kernel has "
                         f"{len(kernel.kernels)} components; give one feature per component")
    return list(zip(feature.features, kernel.kernels))


def _offsets(feature):
    return np.concatenate([[0], np.cumsum(feature.sizes)])


@dispatch.Kuu.register(Components, Sum)
def components_Kuu(feature, kernel):
    return sla.block_diag(*[dispatch.Kuu(f, k) for f, k in _pairs(feature, kernel)])


@dispatch.Kuf.register(Components, Sum)
def components_Kuf(feature, kernel, X):
    return np.vstack([dispatch.Kuf(f, k, X) for f, k in _pairs(feature, kernel)])


@dispatch.gradients.register(Components, Sum)
def components_gradients(feature, kernel, X, dKuu, dKuf, *, Kuu=None, Kuf=None, rank_one=None):
    """Each block of dKuu / row block of dKuf (and of a) through its own pair; names prefixed by j."""
    o = _offsets(feature)
    kernel_grads, feature_grads = {}, {}
    for j, (f, k) in enumerate(_pairs(feature, kernel)):
        block = slice(o[j], o[j + 1])
        r1 = None if rank_one is None else (rank_one[0][block], rank_one[1])
        gk, gf = dispatch.gradients(f, k, X, dKuu[block, block], dKuf[block],
                                    Kuu=None if Kuu is None else Kuu[block, block],
                                    Kuf=None if Kuf is None else Kuf[block], rank_one=r1)
        kernel_grads.update({f"{j}.{n}": v for n, v in gk.items()})
        feature_grads.update({f"{j}.{n}": v for n, v in gf.items()})
    return kernel_grads, feature_grads
