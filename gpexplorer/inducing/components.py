"""Inducing variables per component of a sum kernel (thesis §5.7.2, eq. 5.50-5.60): for
f = f_1 + ... + f_J with independent f_j ~ GP(0, k_j), u = [u_1; ...; u_J] with u_j observing f_j
in its own domain (inducing patches for a convolutional component, inducing points in image space
for a squared-exponential one). With the prior's block-diagonal Kuu and a full q(u) over the
stacked u, the usual sparse variational marginals are the thesis' joint posterior: the mean is
sum_j k_uj^T Kuu_j^-1 m_j and the variance is eq. 5.60 (with its delta on the -k Kuu^-1 k term,
the corrected placement), cross terms S_ij included. The covariances are in
:mod:`gpexplorer.covariances.components`.

Parameters are named ``<j>.<name>`` (component j's feature), as a Sum kernel names its children.
"""

from __future__ import annotations

import numpy as np

from gpexplorer.inducing.base import InducingFeature

__all__ = ["Components"]


class Components(InducingFeature):
    """One inducing feature per component of a :class:`gpexplorer.kernels.Sum` kernel."""

    name, label = "components", "Per kernel component"
    draggable = False

    def __init__(self, features):
        features = list(features)
        if len(features) < 2 or not all(isinstance(f, InducingFeature) for f in features):
            raise ValueError("Components needs a list of at least two inducing features (one per kernel component)")
        if any(isinstance(f, Components) for f in features):
            raise ValueError("Components cannot be nested")
        self.features = features

    @property
    def param_names(self):
        return tuple(f"{j}.{n}" for j, f in enumerate(self.features) for n in f.param_names)

    @property
    def parameters(self):
        return {f"{j}.{n}": v for j, f in enumerate(self.features) for n, v in f.parameters.items()}

    @property
    def parameter_specs(self):
        return {f"{j}.{n}": s.renamed(f"{j}.{n}") for j, f in enumerate(self.features)
                for n, s in f.parameter_specs.items()}

    def _split(self, values):
        out = {}
        for name, value in values.items():
            head, _, rest = name.partition(".")
            if not head.isdigit() or int(head) >= len(self.features):
                raise ValueError(f"Components has no parameter {name!r}; it has {self.param_names}")
            out.setdefault(int(head), {})[rest] = value
        return out

    def set_parameters(self, **values):
        for j, part in self._split(values).items():
            self.features[j].set_parameters(**part)
        return self

    def assign_unchecked(self, values):
        for j, part in self._split(values).items():
            self.features[j].assign_unchecked(part)
        return self

    def __len__(self):
        return sum(len(f) for f in self.features)

    @property
    def sizes(self):
        return [len(f) for f in self.features]

    @property
    def locations(self):
        raise ValueError("Components has no single input space (its parts live in different domains); "
                         "see .features[j].locations")

    @property
    def input_dim(self):
        raise ValueError("Components has no single input space; see .features[j]")

    def check_input_dim(self, D):
        for f in self.features:
            f.check_input_dim(D)

    def restart_from(self, X, rng):
        return {f"{j}.{n}": v for j, f in enumerate(self.features) for n, v in f.restart_from(X, rng).items()}

    def copy(self):
        return Components([f.copy() for f in self.features])

    def __repr__(self):
        return f"Components({', '.join(map(repr, self.features))})"
