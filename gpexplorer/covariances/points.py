"""Inducing points with any kernel: Kuu = k(Z, Z), Kuf = k(Z, X) (thesis eq. 2.8), and the
contraction of dL/dKuu, dL/dKuf into gradients of the kernel's hyperparameters and of Z.

Stationary kernels get their own registration only to pass the rank-one correction of dL/dKuf
straight into the compiled contraction (the corrected [M, N] matrix is never built).
"""

from __future__ import annotations

import numpy as np

from gpexplorer.covariances.dispatch import Kuf, Kuu, gradients
from gpexplorer.inducing.points import InducingPoints
from gpexplorer.kernels import Kernel, Stationary
from gpexplorer.parameters import sum_gradients


@Kuu.register(InducingPoints, Kernel)
def points_Kuu(feature, kernel):
    return kernel.K(feature.Z)  # [M, M]


@Kuf.register(InducingPoints, Kernel)
def points_Kuf(feature, kernel, X):
    return kernel.K(feature.Z, X)  # [M, N]


@gradients.register(InducingPoints, Kernel)
def points_gradients(feature, kernel, X, dKuu, dKuf, *, Kuu=None, Kuf=None, rank_one=None):
    Z = feature.Z
    if rank_one is not None:
        dKuf = dKuf - np.outer(*rank_one)
    g_uu, dZ_uu = kernel.grad_params_and_X(dKuu, Z, None, K=Kuu)
    g_uf, dZ_uf = kernel.grad_params_and_X(dKuf, Z, X, K=Kuf)
    return sum_gradients(g_uu, g_uf), {"Z": dZ_uu + dZ_uf}


@gradients.register(InducingPoints, Stationary)
def points_stationary_gradients(feature, kernel, X, dKuu, dKuf, *, Kuu=None, Kuf=None, rank_one=None):
    Z = feature.Z
    g_uu, dZ_uu = kernel.grad_params_and_X(dKuu, Z, None, K=Kuu)
    g_uf, dZ_uf = kernel.grad_params_and_X(dKuf, Z, X, K=Kuf, rank_one=rank_one)
    return sum_gradients(g_uu, g_uf), {"Z": dZ_uu + dZ_uf}
