"""Inducing points: u_m = f(z_m) (thesis §2.2), the feature every sparse approximation starts from."""

from __future__ import annotations

import numpy as np

from gpexplorer.inducing.base import InducingFeature
from gpexplorer.inducing.placement import random_subset
from gpexplorer.parameters import Parameter


class InducingPoints(InducingFeature):
    """M inducing inputs Z [M, D], moved freely (no bounds, no transform) by the optimisers."""

    name, label = "points", "Inducing points"
    param_names = ("Z",)

    def __init__(self, Z, input_dim=None):
        Z = self._checked("Z", Z)
        if Z.ndim == 1:
            Z = Z[:, None] if input_dim in (None, 1) else Z[None, :]
        if Z.ndim != 2:
            raise ValueError(f"Z must have shape (M, {input_dim or 'D'}); got {Z.shape}")
        if input_dim is not None and Z.shape[1] != input_dim:
            raise ValueError(f"Z must have shape (M, {input_dim}); got {Z.shape}")
        if Z.shape[0] == 0:
            raise ValueError("Z is empty; at least one inducing input is needed")
        self.Z = Z

    @property
    def parameter_specs(self) -> dict:
        return {"Z": Parameter.real("Z")}

    @property
    def locations(self):
        return self.Z

    def restart_from(self, X, rng):
        return {"Z": random_subset(X, self.Z.shape[0], rng)}

    def at_locations(self, locations):
        return InducingPoints(locations, input_dim=self.input_dim)

    def concatenate(self, other):
        return InducingPoints(np.vstack([self.Z, other.locations]))
