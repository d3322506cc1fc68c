"""Feature bases phi: R^d -> R^D for Bayesian linear models (revrand report section 1.4).

A basis maps inputs X [N, d] to features Phi [N, D] so that phi(x)^T phi(x') approximates (or, for
the deterministic bases, equals) a kernel k(x, x') of unit variance; the weight prior variance of
the model on top is the kernel's amplitude (report eq. 37). Every basis offers:

* ``basis(X)`` -> Phi [N, D] and ``kernel_approximation(X, X2=None)`` = Phi Phi2^T;
* ``kernel(X, X2=None)``: the kernel the features estimate, by its closed form;
* ``parameters`` / ``parameter_specs`` / ``set_parameters(**values)`` (the one parameter API;
  children of a concatenation or product under the prefixes ``0.``, ``1.``, ...);
* ``vjp(X, dPhi)`` -> {name: dL/dtheta}: the gradient of a loss L with respect to the basis'
  hyperparameters given dL/dPhi [N, D]. Models need only this product, never dPhi/dtheta, whose
  ARD form is an [N, D, d] array (the memory revrand's users asked to save).

``a + b`` concatenates two bases (report eq. 36: a sum of kernels once each block has its own weight
variance); ``a * b`` multiplies them (the row-wise outer product, Phi [N, D_a D_b], whose inner
products are the product of the two kernel estimates; revrand does not have it). ``columns``
applies a basis to a subset of the input columns (report eq. 38).
"""

from __future__ import annotations

import numpy as np

from gpexplorer import validation
from gpexplorer.parameters import Parameter, bounded_specs
from gpexplorer.validation.arrays import as_float_array

__all__ = ["Basis", "Concatenation", "Product", "LinearBasis", "BiasBasis", "check_columns"]


def check_columns(columns, input_dim):
    """``columns`` as a sorted tuple of distinct indices into ``input_dim`` inputs (None: all)."""
    if columns is None:
        return None
    try:
        cols = [int(c) for c in np.atleast_1d(columns)]
    except (TypeError, ValueError):
        raise ValueError(f"columns must be integer indices of the inputs; got {columns!r}") from None
    if not cols or any(c < 0 or c >= input_dim for c in cols) or len(set(cols)) != len(cols):
        raise ValueError(f"columns must be distinct indices in 0..{input_dim - 1}; got {columns!r}")
    return tuple(cols)


class Basis:
    """Base class: a feature map with named hyperparameters (module docstring).

    Subclasses set ``n_features`` and implement ``_features(Xc, out)`` (fill and return ``out``),
    ``_kernel(Xc, X2c)`` and, if they have hyperparameters, ``_vjp(Xc, dPhi, Phi)`` on the
    selected columns Xc.
    """

    #: registry name (set by subclasses)
    name = "basis"

    def __init__(self, input_dim, columns=None):
        self.input_dim = validation.count("input_dim", input_dim)
        self.columns = check_columns(columns, self.input_dim)
        self.active_dim = self.input_dim if self.columns is None else len(self.columns)
        self._values = {}
        self._specs = {}

    # parameters ---------------------------------------------------------------------------------
    @property
    def parameters(self) -> dict:
        return {k: (v.copy() if isinstance(v, np.ndarray) else v) for k, v in self._values.items()}

    @property
    def parameter_specs(self) -> dict:
        return dict(self._specs)

    def set_bounds(self, **bounds):
        self._specs = bounded_specs(self._specs, bounds)
        return self

    def set_parameters(self, **values):
        unknown = set(values) - set(self._values)
        if unknown:
            raise ValueError(f"{type(self).__name__} has no parameter(s) {sorted(unknown)}; "
                             f"its parameters are {sorted(self._values)}")
        checked = {k: self._check(k, v) for k, v in values.items()}
        self._values.update(checked)
        if checked:
            self._changed()
        return self

    def assign_in_box(self, values):
        """Set values an optimiser unpacked from its box (right shapes, finite, within the bounds)
        without re-checking them: the per-step path of a fit."""
        if values:
            self._values.update({k: float(v) if np.ndim(self._values[k]) == 0 else v for k, v in values.items()})
            self._changed()

    def _check(self, name, value):
        spec = self._specs[name]
        old = self._values[name]
        arr = as_float_array(name, value)
        if arr.shape != np.shape(old) and not (arr.size == 1 and np.ndim(old) == 0):
            raise ValueError(f"{name} must have shape {np.shape(old)}; got {arr.shape}")
        if not np.all(np.isfinite(arr)):
            raise ValueError(f"{name} must be finite; got {value!r}")
        if spec.is_log and (np.any(arr < spec.lower) or np.any(arr > spec.upper)):
            raise ValueError(f"{name} must lie in [{spec.lower:g}, {spec.upper:g}]; got {value!r}")
        return float(arr.reshape(())) if np.ndim(old) == 0 else arr.reshape(np.shape(old)).copy()

    def _changed(self):
        """Hook: recompute what depends on the parameters (frequencies)."""

    def _declare(self, name, value, spec):
        self._values[name] = value
        self._specs[name] = spec

    # features -------------------------------------------------------------------------------------
    def inputs(self, X, name="X"):
        """X validated as [N, input_dim] (a 1-D array is one column when input_dim is 1)."""
        X = as_float_array(name, X) if not isinstance(X, np.ndarray) else X
        if X.ndim == 1 and self.input_dim == 1:
            X = X[:, None]
        if X.ndim != 2 or X.shape[1] != self.input_dim:
            raise ValueError(f"{name} must have shape (N, {self.input_dim}); got {np.shape(X)}")
        return validation.bounded(name, np.asarray(X, dtype=float))

    def _output(self, n, out):
        """``out`` checked as a writable float64 [n, n_features] array, or a new one."""
        if out is None:
            validation.check_memory("the features Phi", 8 * n * self.n_features, "use fewer points or features")
            return np.empty((n, self.n_features))
        if not isinstance(out, np.ndarray) or out.dtype != np.float64 or out.shape != (n, self.n_features) \
                or not out.flags.writeable:
            raise ValueError(f"out must be a writable float64 array of shape ({n}, {self.n_features}); got "
                             f"{getattr(out, 'dtype', type(out).__name__)} {np.shape(out)}")
        return out

    def _select(self, X):
        return X if self.columns is None else X[:, self.columns]

    def __call__(self, X, out=None) -> np.ndarray:
        """Phi [N, n_features], written into ``out`` when given (float64 [N, n_features], any row
        stride): a stream of row blocks then reuses one buffer instead of faulting in a new one."""
        return self.checked_features(self.inputs(X), out)

    def checked_features(self, X, out=None):
        """Phi of inputs already validated by :meth:`inputs` (composites and models call this so
        that the finiteness scan runs once per call, not once per part)."""
        return self._features(self._select(X), self._output(X.shape[0], out))

    features = __call__

    def kernel_approximation(self, X, X2=None) -> np.ndarray:
        """Phi(X) Phi(X2)^T: the features' estimate of :meth:`kernel`."""
        P1 = self(X)
        return P1 @ (P1 if X2 is None else self(self.inputs(X2, "X2"))).T

    def kernel(self, X, X2=None) -> np.ndarray:
        """The kernel (unit variance) the features estimate, by its closed form."""
        Xc = self._select(self.inputs(X))
        X2c = Xc if X2 is None else self._select(self.inputs(X2, "X2"))
        return self._kernel(Xc, X2c)

    def vjp(self, X, dPhi, Phi=None) -> dict:
        """{name: dL/dtheta} from dL/dPhi [N, n_features] (``Phi`` if the caller has it)."""
        if not self._values:
            return {}
        X = self.inputs(X)
        dPhi = np.asarray(dPhi, dtype=float)
        if dPhi.shape != (X.shape[0], self.n_features):
            raise ValueError(f"dPhi must have shape ({X.shape[0]}, {self.n_features}); got {dPhi.shape}")
        return self.checked_vjp(X, dPhi, Phi)

    def checked_vjp(self, X, dPhi, Phi=None):
        """:meth:`vjp` for inputs and a dPhi already checked."""
        return self._vjp(self._select(X), dPhi, Phi) if self._values else {}

    def _vjp(self, Xc, dPhi, Phi):
        raise NotImplementedError

    @property
    def blocks(self):
        """The bases whose features share one weight variance (one here; a concatenation's parts)."""
        return [self]

    def __add__(self, other):
        return Concatenation([self, other])

    def __mul__(self, other):
        return Product(self, other)

    def __repr__(self):
        shown = {k: np.round(v, 4).tolist() for k, v in self._values.items()}
        cols = "" if self.columns is None else f", columns={list(self.columns)}"
        return f"{type(self).__name__}(input_dim={self.input_dim}, n_features={self.n_features}{cols}, {shown})"


class _Composite(Basis):
    """Children's parameters under "i." prefixes."""

    def __init__(self, parts):
        dims = {p.input_dim for p in parts}
        if len(dims) != 1:
            raise ValueError(f"bases to combine must take the same inputs; got input_dim {sorted(dims)}")
        self.parts = list(parts)
        self.input_dim = dims.pop()
        self.columns = None
        self.active_dim = self.input_dim

    @property
    def parameters(self):
        return {f"{i}.{k}": v for i, p in enumerate(self.parts) for k, v in p.parameters.items()}

    @property
    def parameter_specs(self):
        return {f"{i}.{k}": s.renamed(f"{i}.{k}") for i, p in enumerate(self.parts)
                for k, s in p.parameter_specs.items()}

    def _route(self, values):
        per_part = [{} for _ in self.parts]
        for key, v in values.items():
            head, _, rest = key.partition(".")
            if not head.isdigit() or int(head) >= len(self.parts) or not rest:
                raise ValueError(f"{type(self).__name__} has no parameter {key!r}; its parameters are "
                                 f"{sorted(self.parameters)}")
            per_part[int(head)][rest] = v
        return per_part

    def set_parameters(self, **values):
        routed = self._route(values)
        for p, vals in zip(self.parts, routed):  # validate all before any is set
            for k, v in vals.items():
                if k not in p._values:
                    raise ValueError(f"{type(self).__name__} has no parameter; its parameters are "
                                     f"{sorted(self.parameters)}")
                p._check(k, v)
        for p, vals in zip(self.parts, routed):
            if vals:
                p.set_parameters(**vals)
        return self

    def assign_in_box(self, values):
        for p, vals in zip(self.parts, self._route(values)):
            p.assign_in_box(vals)

    def set_bounds(self, **bounds):
        for p, vals in zip(self.parts, self._route(bounds)):
            if vals:
                p.set_bounds(**vals)
        return self

    @property
    def _values(self):
        return self.parameters

    def _prefixed(self, i, grads):
        return {f"{i}.{k}": v for k, v in grads.items()}


class Concatenation(_Composite):
    """Phi = [Phi_1, Phi_2, ...] (report eq. 36); kernel k_1 + k_2 + ... (eq. 37 with unit weights).

    Its parts (nested concatenations flattened) are the blocks that each get a weight variance."""

    name = "concatenation"

    def __init__(self, parts):
        flat = []
        for p in parts:
            if not isinstance(p, Basis):
                raise TypeError(f"only bases can be concatenated; got {type(p).__name__}")
            flat += p.parts if isinstance(p, Concatenation) else [p]
        super().__init__(flat)
        self.n_features = sum(p.n_features for p in self.parts)
        self._offsets = np.cumsum([0] + [p.n_features for p in self.parts])

    @property
    def blocks(self):
        return list(self.parts)

    def block_sizes(self):
        return [p.n_features for p in self.parts]

    def checked_features(self, X, out=None):
        out = self._output(X.shape[0], out)
        for i, p in enumerate(self.parts):
            p.checked_features(X, out[:, self._offsets[i]:self._offsets[i + 1]])
        return out

    def kernel(self, X, X2=None):
        return sum(p.kernel(X, X2) for p in self.parts)

    def _vjp(self, X, dPhi, Phi):
        out = {}
        for i, p in enumerate(self.parts):
            a, b = self._offsets[i], self._offsets[i + 1]
            if p.parameters:
                out.update(self._prefixed(i, p.checked_vjp(X, dPhi[:, a:b], None if Phi is None else Phi[:, a:b])))
        return out

    def __repr__(self):
        return " + ".join(repr(p) for p in self.parts)


class Product(_Composite):
    """phi(x) = phi_1(x) (x) phi_2(x) (the outer product of one row's features, flattened), so
    phi(x)^T phi(x') = [phi_1(x)^T phi_1(x')] [phi_2(x)^T phi_2(x')]: the product of the two
    kernel estimates, unbiased for k_1 k_2 when the two bases draw independently."""

    name = "product"

    def __init__(self, left, right):
        for p in (left, right):
            if not isinstance(p, Basis):
                raise TypeError(f"only bases can be multiplied; got {type(p).__name__}")
        super().__init__([left, right])
        self.n_features = left.n_features * right.n_features

    def checked_features(self, X, out=None):
        out = self._output(X.shape[0], out)
        P1, P2 = self.parts[0].checked_features(X), self.parts[1].checked_features(X)
        out[:] = (P1[:, :, None] * P2[:, None, :]).reshape(X.shape[0], -1)
        return out

    def kernel(self, X, X2=None):
        return self.parts[0].kernel(X, X2) * self.parts[1].kernel(X, X2)

    def _vjp(self, X, dPhi, Phi):
        left, right = self.parts
        P1, P2 = left.checked_features(X), right.checked_features(X)
        G = dPhi.reshape(X.shape[0], left.n_features, right.n_features)
        out = {}
        if left.parameters:
            out.update(self._prefixed(0, left.checked_vjp(X, np.einsum("nij,nj->ni", G, P2), P1)))
        if right.parameters:
            out.update(self._prefixed(1, right.checked_vjp(X, np.einsum("nij,ni->nj", G, P1), P2)))
        return out

    def __repr__(self):
        return f"({self.parts[0]!r}) * ({self.parts[1]!r})"


class LinearBasis(Basis):
    """phi(x) = x (the selected columns): k(x, x') = x^T x', exactly."""

    name = "linear"

    def __init__(self, input_dim, columns=None):
        super().__init__(input_dim, columns)
        self.n_features = self.active_dim

    def _features(self, Xc, out):
        out[:] = Xc
        return out

    def _kernel(self, Xc, X2c):
        return Xc @ X2c.T


class BiasBasis(Basis):
    """phi(x) = 1: k(x, x') = 1, exactly (an offset whose prior variance is the weight variance)."""

    name = "bias"

    def __init__(self, input_dim, columns=None):
        super().__init__(input_dim, columns)
        self.n_features = 1

    def _features(self, Xc, out):
        out[:] = 1.0
        return out

    def _kernel(self, Xc, X2c):
        return np.ones((Xc.shape[0], X2c.shape[0]))


def lengthscale_parameter(name="lengthscale"):
    """The spec of a positive lengthscale (isotropic scalar or ARD vector)."""
    return Parameter(name, 1e-6, 1e6)
