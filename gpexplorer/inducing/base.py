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

Every parameter a user sets (constructor, ``set_parameters``) is checked by the validation layer:
numeric, finite and at most ``parameter_limits[name]`` in magnitude (default 1e100,
:data:`gpexplorer.validation.MAX_MAGNITUDE`; angles such as frequencies and phases have a
tighter limit, see the features), so that an absurd value is refused naming the parameter
rather than surfacing as a NaN gradient or a CholeskyError naming Kuu.
"""

from __future__ import annotations

import copy

import numpy as np

from gpexplorer.validation import MAX_MAGNITUDE

#: largest |angle| (radians) a feature's frequencies and phases may reach: beyond ~1e15 a float64
#: step of the angle is a sizeable fraction of a turn (a full turn at 2.8e16), so cos(a +- b) is
#: no longer consistent with cos a cos b -+ sin a sin b and Kuu stops being positive definite
#: (measured: a Frequency or TimeFrequency Kuu fails its Cholesky from phases of 1e17 and
#: frequencies of 1e23 on inputs of order one)
ANGLE_LIMIT = 1e15


class InducingFeature:
    """Base class. Subclasses set ``param_names`` and implement the abstract methods."""

    #: registry name and the text a lab shows (:func:`gpexplorer.inducing.register`)
    name: str | None = None
    label: str | None = None
    #: names of the arrays an optimiser may move, in optimiser order
    param_names: tuple[str, ...] = ()
    #: what a lab's feature editor sets (:meth:`from_editor`): "width" (a standard deviation),
    #: "frequency" (an angular frequency), "count" (deltas per member); "member": the width and
    #: frequency edits act on one selected member (:meth:`with_width`, :meth:`with_frequency`)
    editable: tuple[str, ...] = ()
    #: whether the members sit in input space (``locations``), where a lab draws and drags them
    draggable: bool = True
    #: name -> (largest |value| accepted, why); others are limited to MAX_MAGNITUDE (module docstring)
    parameter_limits: dict = {}

    # state -------------------------------------------------------------------------------
    @property
    def parameters(self) -> dict:
        """name -> a copy of each parameter array."""
        return {n: np.array(getattr(self, n), dtype=float) for n in self.param_names}

    @property
    def parameter_specs(self) -> dict:
        """name -> :class:`gpexplorer.parameters.Parameter`."""
        raise NotImplementedError

    def set_parameters(self, **values):
        """Validated assignment by name (shapes must stay as they are)."""
        for name, value in values.items():
            if name not in self.param_names:
                raise ValueError(f"{type(self).__name__} has no parameter {name!r}; it has {self.param_names}")
            old = np.asarray(getattr(self, name))
            new = self._checked(name, value)
            if new.shape != old.shape:
                raise ValueError(f"{type(self).__name__}.{name} must keep shape {old.shape}; got {new.shape}")
            setattr(self, name, new)
        self._check_joint()
        return self

    def _check_joint(self):
        """Checks across parameters (a time-frequency feature's omega . mu); none by default."""

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
        limit, why = self.parameter_limits.get(name, (MAX_MAGNITUDE, ""))
        if a.size and float(np.max(np.abs(a))) > limit:
            raise ValueError(f"{type(self).__name__}.{name} has values up to {float(np.max(np.abs(a))):.3g} in "
                             f"magnitude; at most {limit:.0e} is accepted"
                             + (f" ({why})" if why else " (beyond it float64 squares and products overflow)"))
        return np.ascontiguousarray(a)

    def copy(self):
        return copy.deepcopy(self)

    # what a lab's editor does (see ``editable``) -------------------------------------------
    @classmethod
    def from_editor(cls, locations, *, width=1.0, frequency=1.0, count=1) -> "InducingFeature":
        """One member at each row of ``locations`` [M, D], with the editor's ``width``,
        ``frequency`` and ``count`` where the type has them (the default: ``cls(locations)``)."""
        return cls(locations)

    @classmethod
    def editor_defaults(cls, lengthscale, X, M) -> dict:
        """{"width": ..., "frequency": ...}: what a lab starts this type from for a kernel of
        ``lengthscale`` on inputs X [N, D] with M members (the editable entries only)."""
        return {}

    def with_width(self, member, width) -> "InducingFeature":
        """The editor's width applied (to ``member`` or to every member, as the type shares it)."""
        return self

    def with_frequency(self, member, omega) -> "InducingFeature":
        """``member``'s angular frequency (first input dimension) set to ``omega``."""
        return self

    def member_values(self, member):
        """(width, frequency) the editor shows for ``member`` (None where the type has none)."""
        return None, None

    def delta_positions(self):
        """[M, C] positions (first input dimension) of each member's point masses, or None."""
        return None

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
        name = next((n for n in self.param_names if getattr(self, n) is self.locations), None)
        if name is None:
            raise NotImplementedError(f"{type(self).__name__} does not say how to move one member")
        values = np.array(getattr(self, name), dtype=float)
        values[m] = np.asarray(location, dtype=float).reshape(values.shape[1:])
        return self.copy().set_parameters(**{name: values})

    def concatenate(self, other) -> "InducingFeature":
        """This feature's members followed by ``other``'s (same type)."""
        raise NotImplementedError

    def __repr__(self):
        return f"{type(self).__name__}(M={len(self)}, D={self.input_dim})"
