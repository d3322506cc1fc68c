"""Inducing patches with a convolutional kernel (thesis eq. 5.15-5.16, 5.47, 5.62): Kuu = k_g(Z, Z)
(block-diagonal over channels for the multi-channel kernel), Kuf = scale sum_p w_p k_g(z, x^[p]).
The sums over patches live with the kernel (:mod:`gpexplorer.kernels.convolutional_sums`), which
chooses the exact unique-patch, compiled stationary or generic route per batch of images."""

from __future__ import annotations

import numpy as np

from gpexplorer.covariances.dispatch import Kuf, Kuu, gradients
from gpexplorer.inducing.patches import InducingPatches
from gpexplorer.kernels.convolutional import Convolutional
from gpexplorer.parameters import sum_gradients


@Kuu.register(InducingPatches, Convolutional)
def patches_Kuu(feature, kernel):
    feature.check_kernel(kernel)
    return kernel.inducing_covariance(feature.Z)


@Kuf.register(InducingPatches, Convolutional)
def patches_Kuf(feature, kernel, X):
    feature.check_kernel(kernel)
    return kernel.cross_covariance(feature.Z, X)


@gradients.register(InducingPatches, Convolutional)
def patches_gradients(feature, kernel, X, dKuu, dKuf, *, Kuu=None, Kuf=None, rank_one=None):
    """({kernel parameter: gradient}, {"Z": [M, E]}) of sum dKuu * Kuu + sum (dKuf - a b^T) * Kuf."""
    feature.check_kernel(kernel)
    W = dKuf if rank_one is None else dKuf - np.outer(*rank_one)
    g_uu, dZ_uu = kernel.inducing_gradients(feature.Z, dKuu, Kuu)
    g_uf, dZ_uf = kernel.cross_gradients(feature.Z, X, W)
    return sum_gradients(g_uu, g_uf), {"Z": dZ_uu + dZ_uf}
