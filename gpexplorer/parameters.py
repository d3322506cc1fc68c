"""Named model parameters: the flat dict every model exposes and the optimisers work on.

Each parameter declares how an optimiser may move it (scikit-learn's ``Hyperparameter`` idea):
a :class:`Parameter` carries its natural-scale bounds and its transform ("log" for positive
quantities, optimised as log t with dF/dlog t = t dF/dt; "identity" for real ones such as
inducing inputs). Kernels, inducing features and models hand out their ``parameter_specs``;
``set_bounds`` changes the box of one instance (a paper's set-up, say), never a global table.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

import numpy as np

from gpexplorer.validation import positive

NOISE = "noise_variance"

#: natural-scale box of a positive parameter unless its owner says otherwise
POSITIVE_RANGE = (1e-6, 1e6)


@dataclass(frozen=True)
class Parameter:
    """How an optimiser sees one named parameter (scalar or array)."""

    name: str
    lower: float = POSITIVE_RANGE[0]
    upper: float = POSITIVE_RANGE[1]
    transform: str = "log"  # "log" (positive) or "identity" (real)
    #: natural-scale (low, high) a lab's slider spans by default (None: the lab's own choice)
    slider: tuple | None = None

    def __post_init__(self):
        if self.transform not in ("log", "identity"):
            raise ValueError(f"transform of {self.name!r} must be 'log' or 'identity'; got {self.transform!r}")
        if not self.lower < self.upper:
            raise ValueError(f"bounds of {self.name!r} must satisfy lower < upper; got ({self.lower}, {self.upper})")
        if self.transform == "log" and not (self.lower > 0 and math.isfinite(self.upper)):
            raise ValueError(f"bounds of the positive parameter {self.name!r} must be positive and finite; "
                             f"got ({self.lower}, {self.upper})")

    @classmethod
    def real(cls, name):
        """An unbounded real parameter, optimised as is (inducing inputs, centres)."""
        return cls(name, -math.inf, math.inf, "identity")

    def with_bounds(self, lower, upper) -> "Parameter":
        return replace(self, lower=float(lower), upper=float(upper))

    def renamed(self, name) -> "Parameter":
        """The same spec under another name (a child's parameter under its prefix: ``0.variance``)."""
        return replace(self, name=name)

    @property
    def is_log(self):
        return self.transform == "log"

    def free_bounds(self):
        """(low, high) in the optimiser's coordinates; None where unbounded."""
        if self.is_log:
            return math.log(self.lower), math.log(self.upper)
        return (None if math.isinf(self.lower) else self.lower), (None if math.isinf(self.upper) else self.upper)

    def to_free(self, value):
        """Flat array in the optimiser's coordinates (positive values clipped into the box)."""
        v = np.asarray(value, dtype=float).ravel()
        return np.log(np.clip(v, self.lower, self.upper)) if self.is_log else v.copy()

    def from_free(self, u, shape):
        """Natural value from optimiser coordinates: a float for a scalar, else a fresh array."""
        v = np.exp(u) if self.is_log else np.array(u, dtype=float)
        return v.reshape(shape) if shape else float(v[0])

    def chain(self, value, grad):
        """Gradient in optimiser coordinates from the natural-value gradient (flat)."""
        g = np.asarray(grad, dtype=float).ravel()
        return g * np.asarray(value, dtype=float).ravel() if self.is_log else g


def bounded_specs(specs: dict, bounds: dict | None) -> dict:
    """``specs`` with the (lower, upper) of ``bounds`` applied by name; unknown names refused."""
    if not bounds:
        return specs
    unknown = set(bounds) - set(specs)
    if unknown:
        raise ValueError(f"no parameter(s) {sorted(unknown)} to bound; the parameters are {sorted(specs)}")
    out = dict(specs)
    for name, (lo, hi) in bounds.items():
        out[name] = specs[name].with_bounds(lo, hi)
    return out


def sum_gradients(*dicts):
    """Add gradient dicts key by key (contributions of Kuu, Kuf and diag Kff to one parameter)."""
    out = {}
    for d in dicts:
        for k, v in d.items():
            out[k] = out[k] + v if k in out else v
    return out


class KernelAndNoise:
    """``parameters`` / ``set_parameters`` of a model with a ``kernel`` and a scalar ``noise_variance``
    (the flat dict the optimisers and the dashboards work with)."""

    _noise_bounds = None  # (lower, upper) set by set_bounds

    @property
    def parameters(self) -> dict:
        p = dict(self.kernel.parameters)
        p[NOISE] = self.noise_variance
        return p

    @property
    def parameter_specs(self) -> dict:
        """name -> :class:`Parameter` (bounds and transform) for every entry of ``parameters``."""
        specs = dict(self.kernel.parameter_specs)
        lo, hi = self._noise_bounds or POSITIVE_RANGE
        specs[NOISE] = Parameter(NOISE, lo, hi)
        return specs

    def set_bounds(self, **bounds):
        """Natural-scale (lower, upper) per parameter name, for this model's fits only."""
        specs = bounded_specs(self.parameter_specs, bounds)  # validates names and boxes
        for name in bounds:
            if name == NOISE:
                self._noise_bounds = (specs[name].lower, specs[name].upper)
            else:
                self._set_component_bounds(name, specs[name])
        return self

    def _set_component_bounds(self, name, spec):
        self.kernel.set_bounds(**{name: (spec.lower, spec.upper)})

    def set_parameters(self, **values):
        """Assign parameters by name, validated: ``set_parameters(lengthscale=0.5)`` or
        ``set_parameters(**other.parameters)`` (an optimiser's values too: one path, always checked)."""
        params = dict(values)
        if NOISE in params:
            self.noise_variance = positive(NOISE, params.pop(NOISE), allow_array=False)
        if params:
            self.kernel.set_parameters(**params)
        return self
