"""The optimiser's one flat vector: each parameter through its own transform
(:class:`gpexplorer.parameters.Parameter`: log of every positive parameter, real ones such as
inducing inputs as they are), within the parameter's bounds; and the ``fixed`` groups.

Gradients are chained analytically (dF/dlog t = t dF/dt). Any subset can be frozen by name; the
group names ``"kernel"`` (all kernel hyperparameters), ``"hyperparameters"`` (the same) and
``"inducing"`` (every parameter of the inducing feature) are accepted.
"""

from __future__ import annotations

import math

import numpy as np

__all__ = ["Packer", "expand_fixed", "feature_parameter_names"]


class Packer:
    """Maps a model's parameter dict to and from the optimiser's flat vector.

    ``specs`` maps every name to its :class:`gpexplorer.parameters.Parameter` (transform and
    bounds); names in ``fixed`` are left out of the vector.
    """

    def __init__(self, specs, values, fixed=()):
        self.names = [n for n in values if n not in fixed]
        self.specs = {n: specs[n] for n in self.names}
        self.shapes = {n: np.shape(values[n]) for n in self.names}
        self.sizes = {n: int(np.prod(self.shapes[n], dtype=int)) for n in self.names}
        self.bounds = []  # per entry, (low, high) in optimiser coordinates, None where unbounded
        for n in self.names:
            self.bounds += [self.specs[n].free_bounds()] * self.sizes[n]

    def box(self):
        """(low, high) arrays of the bounds in optimiser coordinates (-inf / inf where unbounded)."""
        lo = np.array([-math.inf if b[0] is None else b[0] for b in self.bounds])
        hi = np.array([math.inf if b[1] is None else b[1] for b in self.bounds])
        return lo, hi

    def pack(self, params):
        parts = [self.specs[n].to_free(params[n]) for n in self.names]
        return np.concatenate(parts) if parts else np.zeros(0)

    def unpack(self, x):
        out, i = {}, 0
        for n in self.names:
            out[n] = self.specs[n].from_free(x[i:i + self.sizes[n]], self.shapes[n])  # never a view of x
            i += self.sizes[n]
        return out

    def chain(self, values, grads):
        """Flat gradient in optimiser coordinates from natural-parameter gradients."""
        parts = [self.specs[n].chain(values[n], grads[n]) for n in self.names]
        return np.concatenate(parts) if parts else np.zeros(0)

    # the flat forms the fit driver works with ---------------------------------------------------
    @property
    def _layout(self):
        if "_slices" not in self.__dict__:
            offsets = np.cumsum([0] + [self.sizes[n] for n in self.names])
            self._slices = [(n, int(offsets[i]), int(offsets[i + 1]), self.shapes[n]) for i, n in enumerate(self.names)]
            self._is_log = np.concatenate([np.full(self.sizes[n], self.specs[n].is_log) for n in self.names]
                                          ) if self.names else np.zeros(0, bool)
        return self._slices, self._is_log

    @property
    def is_log(self):
        """Boolean per entry of the flat vector: True where the entry is a log-parameter."""
        return self._layout[1]

    def natural(self, x):
        """The natural values of the flat vector x as one new flat array (exp where log)."""
        nat = x.copy()
        return np.exp(x, out=nat, where=self._layout[1])

    def values_of(self, nat):
        """{name: value} from a flat natural vector: floats for scalars, views of ``nat`` else
        (as :meth:`unpack`, but the arrays share ``nat``'s memory)."""
        out = {}
        for n, i, j, shape in self._layout[0]:
            out[n] = nat[i:j].reshape(shape) if shape else float(nat[i])
        return out

    def chain_natural(self, nat, grads):
        """:meth:`chain` from a flat natural vector: dF/du = t dF/dt for log parameters."""
        slices, is_log = self._layout
        flat = np.empty(nat.shape[0])
        for n, i, j, shape in slices:
            if shape:
                flat[i:j] = grads[n].reshape(-1) if isinstance(grads[n], np.ndarray) else np.ravel(grads[n])
            else:
                flat[i] = grads[n]
        return np.multiply(flat, nat, out=flat, where=is_log)


def feature_parameter_names(model):
    """Names of the model's inducing-feature parameters (none for a model without one)."""
    feature = getattr(model, "inducing", None)
    return tuple(feature.param_names) if feature is not None else ()


def expand_fixed(model, fixed):
    """The set of parameter names that ``fixed`` (names or groups) freezes."""
    if isinstance(fixed, str):
        fixed = (fixed,)
    names = set(model.parameters)
    if hasattr(model, "parameter_groups"):
        groups = model.parameter_groups()
    else:
        groups = {"kernel": set(model.kernel.param_names), "hyperparameters": set(model.kernel.param_names),
                  "inducing": set(feature_parameter_names(model))}
    out = set()
    for f in fixed:
        if f in groups:
            out |= groups[f]
        elif f in names:
            out.add(f)
        else:
            raise ValueError(f"cannot fix {f!r}: the model's parameters are {sorted(names)} "
                             f"(or the groups {sorted(groups)})")
    return out
