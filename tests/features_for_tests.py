"""Inducing features that exist only in the tests: they prove the seam of issue 13, item 2.

Nothing in ``gpexplorer/`` knows these classes. Each is an :class:`InducingFeature` subclass
with its covariances registered here, through the public dispatchers of
:mod:`gpexplorer.covariances`, for (feature, :class:`Kernel`): so every kernel reaches them by
the generic path (no fused fast path), and the tests can compare that path with the inducing
points' (fused for stationary kernels).

* :class:`ShiftedPoints` (the worked example of CONTRIBUTING.md): u_m = f(c_m + offset); the
  parameter is ``centres`` [M, D] (not "Z"), the ``offset`` [D] is fixed, never optimised.
* :class:`ScaledPoints`: u_m = f(spread * a_m); two parameters, ``anchors`` [M, D] (real) and
  ``spread`` (a positive scalar, optimised on the log scale within its own bounds), so the
  optimiser's packing, transforms and restarts are exercised for more than one array.
* :class:`OffsetInducingPoints`: a subclass of InducingPoints (parameter "Z") with inducing
  inputs Z + offset and covariances of its own, so nothing registered for its parent (the
  fused stationary path above all) may be used for it.

The contractions use only the base kernel interface (``grad_params`` and ``grad_X``), not
``grad_params_and_X`` nor the stationary kernels' ``rank_one`` argument, so they share as
little code as possible with the inducing points' registrations they are compared with.
"""

from __future__ import annotations

import numpy as np

from gpexplorer import covariances
from gpexplorer.inducing import InducingFeature, InducingPoints, random_subset
from gpexplorer.kernels import Kernel
from gpexplorer.parameters import Parameter, sum_gradients

#: natural-scale box of ScaledPoints.spread (a feature's own bounds, not a global table)
SPREAD_BOUNDS = (1e-2, 1e2)


class ShiftedPoints(InducingFeature):
    """u_m = f(c_m + offset): ``centres`` [M, D] move, ``offset`` [D] is fixed."""

    param_names = ("centres",)

    def __init__(self, centres, offset=0.0):
        centres = self._checked("centres", centres)
        if centres.ndim == 1:
            centres = centres[:, None]
        if centres.ndim != 2 or centres.shape[0] == 0:
            raise ValueError(f"centres must have shape (M, D) with M >= 1; got {centres.shape}")
        self.centres = centres
        self.offset = np.broadcast_to(np.asarray(offset, dtype=float), (centres.shape[1],)).copy()

    @property
    def parameter_specs(self):
        return {"centres": Parameter.real("centres")}

    @property
    def locations(self):
        return self.centres + self.offset  # [M, D]

    def restart_from(self, X, rng):
        return {"centres": random_subset(X, len(self.centres), rng) - self.offset}

    def at_locations(self, locations):
        locations = np.asarray(locations, dtype=float).reshape(-1, self.input_dim)
        return ShiftedPoints(locations - self.offset, self.offset)

    def concatenate(self, other):
        return ShiftedPoints(np.vstack([self.centres, other.locations - self.offset]), self.offset)


class ScaledPoints(InducingFeature):
    """u_m = f(spread * a_m): ``anchors`` [M, D] (real) and ``spread`` > 0 (log scale) both move."""

    param_names = ("anchors", "spread")

    def __init__(self, anchors, spread=1.0):
        anchors = self._checked("anchors", anchors)
        if anchors.ndim == 1:
            anchors = anchors[:, None]
        if anchors.ndim != 2 or anchors.shape[0] == 0:
            raise ValueError(f"anchors must have shape (M, D) with M >= 1; got {anchors.shape}")
        self.anchors = anchors
        self.spread = self._checked_spread(spread)

    @staticmethod
    def _checked_spread(value):
        value = float(value)
        if not (np.isfinite(value) and value > 0):
            raise ValueError(f"spread must be a positive finite number; got {value!r}")
        return value

    def set_parameters(self, **values):
        if "spread" in values:
            self.spread = self._checked_spread(values.pop("spread"))
        return super().set_parameters(**values)

    def assign_unchecked(self, values):
        values = dict(values)
        if "spread" in values:
            self.spread = float(values.pop("spread"))
        return super().assign_unchecked(values)

    @property
    def parameters(self):
        return {"anchors": self.anchors.copy(), "spread": float(self.spread)}

    @property
    def parameter_specs(self):
        return {"anchors": Parameter.real("anchors"), "spread": Parameter("spread", *SPREAD_BOUNDS)}

    @property
    def locations(self):
        return self.spread * self.anchors  # [M, D]

    def restart_from(self, X, rng):
        return {"anchors": random_subset(X, len(self.anchors), rng) / self.spread}

    def at_locations(self, locations):
        locations = np.asarray(locations, dtype=float).reshape(-1, self.input_dim)
        return ScaledPoints(locations / self.spread, self.spread)

    def concatenate(self, other):
        return ScaledPoints(np.vstack([self.anchors, other.locations / self.spread]), self.spread)


class OffsetInducingPoints(InducingPoints):
    """A *subclass* of InducingPoints (parameter still "Z") whose inducing inputs are Z + offset.

    It registers its own covariances, so no implementation registered for InducingPoints (in
    particular the fused stationary path of gpexplorer.sparse.fused) may serve it.
    """

    def __init__(self, Z, offset=0.0, input_dim=None):
        super().__init__(Z, input_dim=input_dim)
        self.offset = np.broadcast_to(np.asarray(offset, dtype=float), (self.Z.shape[1],)).copy()

    @property
    def locations(self):
        return self.Z + self.offset

    def restart_from(self, X, rng):
        return {"Z": random_subset(X, len(self.Z), rng) - self.offset}

    def at_locations(self, locations):
        locations = np.asarray(locations, dtype=float).reshape(-1, self.input_dim)
        return OffsetInducingPoints(locations - self.offset, self.offset)

    def concatenate(self, other):
        return OffsetInducingPoints(np.vstack([self.Z, other.locations - self.offset]), self.offset)


#: the test-only features, as gpexplorer.inducing.FEATURES lists the package's (name -> class)
TEST_FEATURES = {"shifted": ShiftedPoints, "scaled": ScaledPoints, "offset-points": OffsetInducingPoints}


# covariances: registered here, for any kernel --------------------------------------------------
def _contract(kernel, Z, X, dKuu, dKuf, rank_one):
    """Kernel gradients and dF/dZ [M, D] at inducing inputs Z, through the base kernel interface."""
    if rank_one is not None:
        dKuf = dKuf - np.outer(*rank_one)
    g = sum_gradients(kernel.grad_params(dKuu, Z), kernel.grad_params(dKuf, Z, X))
    dZ = kernel.grad_X(dKuu, Z) + kernel.grad_X(dKuf, Z, X)
    return g, dZ


@covariances.Kuu.register(ShiftedPoints, Kernel)
def shifted_Kuu(feature, kernel):
    return kernel.K(feature.centres + feature.offset)  # [M, M]


@covariances.Kuf.register(ShiftedPoints, Kernel)
def shifted_Kuf(feature, kernel, X):
    return kernel.K(feature.centres + feature.offset, X)  # [M, N]


@covariances.gradients.register(ShiftedPoints, Kernel)
def shifted_gradients(feature, kernel, X, dKuu, dKuf, *, Kuu=None, Kuf=None, rank_one=None):
    g, dZ = _contract(kernel, feature.centres + feature.offset, X, dKuu, dKuf, rank_one)
    return g, {"centres": dZ}  # dZ/dc = I; the offset is fixed


@covariances.Kuu.register(ScaledPoints, Kernel)
def scaled_Kuu(feature, kernel):
    return kernel.K(feature.spread * feature.anchors)  # [M, M]


@covariances.Kuf.register(ScaledPoints, Kernel)
def scaled_Kuf(feature, kernel, X):
    return kernel.K(feature.spread * feature.anchors, X)  # [M, N]


@covariances.gradients.register(ScaledPoints, Kernel)
def scaled_gradients(feature, kernel, X, dKuu, dKuf, *, Kuu=None, Kuf=None, rank_one=None):
    g, dZ = _contract(kernel, feature.spread * feature.anchors, X, dKuu, dKuf, rank_one)
    # Z = s a: dF/da = s dF/dZ, dF/ds = sum(dF/dZ * a)
    return g, {"anchors": feature.spread * dZ, "spread": float(np.sum(dZ * feature.anchors))}


@covariances.Kuu.register(OffsetInducingPoints, Kernel)
def offset_points_Kuu(feature, kernel):
    return kernel.K(feature.Z + feature.offset)  # [M, M]


@covariances.Kuf.register(OffsetInducingPoints, Kernel)
def offset_points_Kuf(feature, kernel, X):
    return kernel.K(feature.Z + feature.offset, X)  # [M, N]


@covariances.gradients.register(OffsetInducingPoints, Kernel)
def offset_points_gradients(feature, kernel, X, dKuu, dKuf, *, Kuu=None, Kuf=None, rank_one=None):
    g, dZ = _contract(kernel, feature.Z + feature.offset, X, dKuu, dKuf, rank_one)
    return g, {"Z": dZ}
