"""What every inducing feature is: M inducing variables u_m = integral f(x) v(x; z_m) dx
(thesis §4.1; inducing points have v = delta(x - z_m)), held as named arrays.

A feature knows nothing of kernels (GPflow's habit): its covariances with f are registered per
(feature type, kernel type) pair in :mod:`gpexplorer.covariances`. A feature only

* holds its arrays, names them and declares how an optimiser may move each one
  (``parameter_specs``: bounds and transform, see :mod:`gpexplorer.parameters`);
* says where its members sit in input space (``locations`` [M, D]: what the labs draw and
  drag, what the clumping badge measures);
* makes the variants the optimiser and the studies need: a copy, a restart drawn from the
  data, members at new locations (the add-one curve), a concatenation.
"""

from __future__ import annotations

import copy

import numpy as np


class InducingFeature:
    """Base class. Subclasses set ``parameter_names`` and implement the abstract methods."""

    #: names of the arrays an optimiser may move, in optimiser order
    parameter_names: tuple[str, ...] = ()

    # state -------------------------------------------------------------------------------
    @property
    def params(self) -> dict:
        """name -> a copy of each parameter array."""
        return {n: np.array(getattr(self, n), dtype=float) for n in self.parameter_names}

    @property
    def parameter_specs(self) -> dict:
        """name -> :class:`gpexplorer.parameters.Parameter`."""
        raise NotImplementedError

    def set_params(self, **values):
        """Validated assignment by name (shapes must stay as they are)."""
        for name, value in values.items():
            if name not in self.parameter_names:
                raise ValueError(f"{type(self).__name__} has no parameter {name!r}; it has {self.parameter_names}")
            old = np.asarray(getattr(self, name))
            new = self._checked(name, value)
            if new.shape != old.shape:
                raise ValueError(f"{type(self).__name__}.{name} must keep shape {old.shape}; got {new.shape}")
            setattr(self, name, new)
        return self

    def assign_unchecked(self, values: dict):
        """Set values an optimiser produced from its own bounded coordinates."""
        for name, value in values.items():
            setattr(self, name, np.ascontiguousarray(value, dtype=float))
        return self

    def _checked(self, name, value):
        try:
            a = np.array(value, dtype=float)
        except (TypeError, ValueError) as err:
            raise ValueError(f"{type(self).__name__}.{name} must be numeric ({err})") from None
        if not np.all(np.isfinite(a)):
            raise ValueError(f"{type(self).__name__}.{name} contains NaN or infinite values")
        return np.ascontiguousarray(a)

    def copy(self):
        return copy.deepcopy(self)

    # geometry ----------------------------------------------------------------------------
    def __len__(self):
        """M, the number of inducing variables."""
        return int(self.locations.shape[0])

    @property
    def input_dim(self) -> int:
        return int(self.locations.shape[1])

    @property
    def locations(self) -> np.ndarray:
        """[M, D] where each member sits in input space."""
        raise NotImplementedError

    def check_input_dim(self, D):
        if self.input_dim != D:
            raise ValueError(f"the inducing features live in {self.input_dim} dimension(s) but the inputs have {D}")

    # variants ----------------------------------------------------------------------------
    def restart_from(self, X, rng) -> dict:
        """Parameter values for a random restart of an optimiser, drawn from the data X."""
        raise NotImplementedError

    def at_locations(self, locations) -> "InducingFeature":
        """A feature of this type with one member at each row of ``locations`` [K, D]."""
        raise NotImplementedError

    def moved(self, m, location) -> "InducingFeature":
        """A copy with member ``m`` at ``location`` [D], every other parameter unchanged (a drag
        in the labs; the bound against one feature's position, thesis fig. 4.4).

        This default moves the row of the parameter that ``locations`` returns (``Z``, ``mu``);
        a feature whose locations are derived from several parameters overrides it."""
        name = next((n for n in self.parameter_names if getattr(self, n) is self.locations), None)
        if name is None:
            raise NotImplementedError(f"{type(self).__name__} does not say how to move one member")
        values = np.array(getattr(self, name), dtype=float)
        values[m] = np.asarray(location, dtype=float).reshape(values.shape[1:])
        return self.copy().set_params(**{name: values})

    def concatenate(self, other) -> "InducingFeature":
        """This feature's members followed by ``other``'s (same type)."""
        raise NotImplementedError

    def __repr__(self):
        return f"{type(self).__name__}(M={len(self)}, D={self.input_dim})"
