"""Fused objective-and-gradient paths, registered per (feature type, kernel type) pair.

A pair registered here computes Kuu, Kuf, the collapsed objective (eq. 3.1) and the whole
gradient contraction in one compiled call, instead of the generic path of
:class:`gpexplorer.sparse.regression.SparseGPR` (covariances, objective, contraction, each in
Python). Only a speed-up: a pair without a fused path is evaluated generically, with the same
value and gradients (the tests compare the two).
"""

from __future__ import annotations

from gpexplorer.covariances.dispatch import Dispatcher
from gpexplorer.inducing.points import InducingPoints
from gpexplorer.kernels import Stationary
from gpexplorer.sparse.objectives import fused_stationary_objective

FUSED_OBJECTIVES = Dispatcher("fused objective", """fused(feature, kernel, X, y, noise, jitter, approximation,
workspace=None) -> (F, kernel gradients, feature gradients, terms, jitter used).

``workspace``: the model's :class:`gpexplorer.sparse.objectives.Workspace` (arrays reused
between evaluations), or None.""")


@FUSED_OBJECTIVES.register(InducingPoints, Stationary)
def points_stationary(feature, kernel, X, y, noise, jitter, approximation, workspace=None):
    kind, variance, lengthscale, alpha = kernel.fused_arguments(X.shape[1])
    F, terms, dvar, dl, dalpha, dnoise, dZ, jitter_used = fused_stationary_objective(
        kind, X, y, feature.Z, variance, lengthscale, alpha, noise, jitter, approximation, workspace=workspace)
    grads = kernel.pack_gradients(dvar, dl, dalpha)
    grads["noise_variance"] = dnoise
    return F, grads, {"Z": dZ}, terms, jitter_used
