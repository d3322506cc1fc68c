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
from gpexplorer.inducing.sum_of_deltas import SumOfDeltas
from gpexplorer.kernels import Stationary
from gpexplorer.sparse.objectives import fused_stationary_objective

FUSED_OBJECTIVES = Dispatcher("fused objective", """fused(feature, kernel, X, y, noise, jitter, approximation,
workspace=None) -> (F, kernel gradients, feature gradients, terms, jitter used), or None when this
feature's parameters fall outside the fused path (the model then takes the generic one).

``workspace``: the model's :class:`gpexplorer.workspace.Workspace` (arrays reused
between evaluations), or None.""")


@FUSED_OBJECTIVES.register(InducingPoints, Stationary)
def points_stationary(feature, kernel, X, y, noise, jitter, approximation, workspace=None):
    kind, variance, lengthscale, alpha = kernel.fused_arguments(X.shape[1])
    out = fused_stationary_objective(kind, X, y, feature.Z, variance, lengthscale, alpha, noise, jitter=jitter,
                                     approximation=approximation, workspace=workspace)
    grads = kernel.pack_gradients(out.d_variance, out.d_lengthscale, out.d_alpha)
    grads["noise_variance"] = out.d_noise
    return out.value, grads, {"Z": out.dZ}, out.terms, out.jitter_used


@FUSED_OBJECTIVES.register(SumOfDeltas, Stationary)
def single_deltas_stationary(feature, kernel, X, y, noise, jitter, approximation, workspace=None):
    """A sum of one delta each (C = 1, its weight fixed at 1) is inducing points at Z[:, 0]
    (eq. 4.14-4.19 with C = 1): the same fused call, dZ given back in the feature's (M, 1, D)."""
    if feature.C != 1:
        return None
    points = InducingPoints(feature.Z[:, 0, :])
    F, grads, g_points, terms, jitter_used = points_stationary(points, kernel, X, y, noise, jitter, approximation,
                                                               workspace=workspace)
    return F, grads, {"Z": g_points["Z"][:, None, :]}, terms, jitter_used
