"""What the Bayesian linear models on features share: the data, the basis, the weight prior
N(0, Lambda) with one variance per basis block (revrand report eq. 13, 20 and 37), and the one
parameter API (``parameters``, ``parameter_specs``, ``set_parameters``, ``set_bounds``).

Parameters: the basis' own (``lengthscale``; ``0.lengthscale``, ... for a concatenation),
``weight_variance`` (a float for one block, an array with one entry per block of a concatenation:
the amplitudes lambda_p of eq. 37) and whatever the subclass adds (``noise_variance``, a
likelihood's parameters).
"""

from __future__ import annotations

import math

import numpy as np

from gpexplorer import validation
from gpexplorer.optimize import snapshot
from gpexplorer.parameters import POSITIVE_RANGE, Parameter, bounded_specs
from gpexplorer.random_features.bases import Basis
from gpexplorer.random_features.catalogue import basis as named_basis

__all__ = ["FeatureModel", "WEIGHT_VARIANCE", "resolve_basis"]

WEIGHT_VARIANCE = "weight_variance"
_ABSENT = object()  # no weight variance given (None must still be refused as a value)


def resolve_basis(basis, input_dim):
    """A :class:`Basis` from a basis or a name (``"rbf"``: 200 features, unit lengthscale)."""
    if isinstance(basis, str):
        return named_basis(basis, input_dim)
    if not isinstance(basis, Basis):
        raise TypeError(f"basis must be a gpexplorer.random_features basis or a name; got {type(basis).__name__}")
    if basis.input_dim != input_dim:
        raise ValueError(f"the basis takes {basis.input_dim} input column(s) but X has {input_dim}")
    return basis


class FeatureModel:
    """Base of :class:`StandardLinearModel` and :class:`GeneralizedLinearModel` (module docstring)."""

    def __init__(self, X, basis, weight_variance):
        self.X = X
        self.basis = resolve_basis(basis, X.shape[1])
        sizes = [b.n_features for b in self.basis.blocks]
        self.block_sizes = np.array(sizes)
        self.n_features = int(self.block_sizes.sum())
        self._block_starts = np.concatenate([[0], np.cumsum(self.block_sizes)[:-1]])
        validation.check_memory("the features Phi", 8 * X.shape[0] * self.n_features,
                                "use fewer data points or features")
        self._weight_bounds = POSITIVE_RANGE
        self._own_specs = {}
        wv = self.checked_variance(WEIGHT_VARIANCE, weight_variance, self._weight_bounds, allow_array=True)
        n_blocks = len(sizes)
        if np.ndim(wv) == 0:
            wv = float(wv) if n_blocks == 1 else np.full(n_blocks, float(wv))
        elif np.shape(wv) != (n_blocks,):
            raise ValueError(f"weight_variance must be a scalar or have {n_blocks} entries (one per basis "
                             f"block); got shape {np.shape(wv)}")
        self.weight_variance = wv
        self._phi_key = None

    # parameters ---------------------------------------------------------------------------------
    def _own_parameters(self) -> dict:
        """name -> value of the subclass' parameters (noise, likelihood)."""
        return {}

    def _set_own(self, values):
        """Assign validated own parameters."""

    @property
    def parameters(self) -> dict:
        p = dict(self.basis.parameters)
        wv = self.weight_variance
        p[WEIGHT_VARIANCE] = wv.copy() if isinstance(wv, np.ndarray) else wv
        p.update(self._own_parameters())
        return p

    @property
    def parameter_specs(self) -> dict:
        specs = dict(self.basis.parameter_specs)
        specs[WEIGHT_VARIANCE] = Parameter(WEIGHT_VARIANCE, *self._weight_bounds)
        specs.update(self._own_specs_now())
        return specs

    def _own_specs_now(self) -> dict:
        return dict(self._own_specs)

    def parameter_groups(self) -> dict:
        """Names a ``fixed=`` argument may freeze at once."""
        return {"basis": set(self.basis.parameters), "hyperparameters": set(self.basis.parameters),
                "kernel": set(self.basis.parameters)}

    def set_bounds(self, **bounds):
        specs = bounded_specs(self.parameter_specs, bounds)
        for name in bounds:
            lo_hi = (specs[name].lower, specs[name].upper)
            if name == WEIGHT_VARIANCE:
                self._weight_bounds = lo_hi
            elif name in self.basis.parameters:
                self.basis.set_bounds(**{name: lo_hi})
            else:
                self._own_specs[name] = specs[name]
        return self

    def _own_names(self):
        """The names of the subclass' own parameters (without copying their values)."""
        return self._own_parameters().keys()

    def _split(self, values):
        """(the basis' values, the weight variance or :data:`_ABSENT`, the subclass' own values)."""
        values = dict(values)
        names = self._own_names()
        own = {k: values.pop(k) for k in list(values) if k in names}
        return values, values.pop(WEIGHT_VARIANCE, _ABSENT), own

    def set_parameters(self, **values):
        values, wv, own = self._split(values)
        if wv is not _ABSENT:
            wv = self.checked_variance(WEIGHT_VARIANCE, wv, self._weight_bounds, allow_array=True)
            if np.shape(wv) != np.shape(self.weight_variance) and not (np.size(wv) == 1 and np.ndim(self.weight_variance) == 0):
                raise ValueError(f"weight_variance must have shape {np.shape(self.weight_variance)}; got {np.shape(wv)}")
            self.weight_variance = float(np.reshape(wv, ())) if np.ndim(self.weight_variance) == 0 else np.array(wv)
        if values:
            self.basis.set_parameters(**values)
        if own:
            self._set_own(own)
        return self

    def assign_in_box(self, values):
        """Set values an optimiser unpacked from its box without re-checking them (a minibatch
        step's path; :meth:`set_parameters` validates user input)."""
        values, wv, own = self._split(values)
        if wv is not _ABSENT:
            self.weight_variance = float(wv) if np.ndim(self.weight_variance) == 0 else np.array(wv, dtype=float)
        self.basis.assign_in_box(values)
        if own:
            self._assign_own_in_box(own)
        return self

    def _assign_own_in_box(self, values):
        self._set_own(values)

    @staticmethod
    def checked_variance(name, value, bounds, allow_array=False):
        """A positive variance inside its parameter box (the range the evidence survives in float64)."""
        v = validation.positive(name, value, allow_array=allow_array)
        return validation.positive_bounded(name, v, *bounds)

    # features and prior -------------------------------------------------------------------------
    def prior_variances(self) -> np.ndarray:
        """lam [D]: each feature's weight prior variance (its block's entry of weight_variance)."""
        return np.repeat(np.atleast_1d(self.weight_variance).astype(float), self.block_sizes)

    def block_sums(self, per_feature) -> np.ndarray | float:
        """Sum of a per-feature array within each block, shaped like ``weight_variance``."""
        sums = np.add.reduceat(per_feature, self._block_starts)
        return float(sums[0]) if np.ndim(self.weight_variance) == 0 else sums

    def features(self, X=None) -> np.ndarray:
        """Phi of the training inputs (cached for the current basis parameters) or of ``X``."""
        if X is not None:
            return self.basis(X)
        key = repr(sorted((k, np.asarray(v).tobytes()) for k, v in self.basis.parameters.items()))
        if key != self._phi_key:
            self._phi = self.basis.checked_features(self.X)
            self._phi_key = key
        return self._phi

    def prediction_features(self, Xnew):
        Xnew = validation.prediction_inputs(Xnew, self.X.shape[1])
        return self.basis(Xnew)

    # random starts --------------------------------------------------------------------------------
    def screen_starts(self, n, rng, names, evaluate, distribution=None):
        """Evaluate ``evaluate()`` (higher is better) at the current parameters and at ``n`` random
        draws of ``names`` (``distribution[name](rng)`` where given, else a positive parameter times
        exp(N(0, 1)), a real one plus N(0, 1) (|v| + 1); positive draws clipped into their box); leave
        the model at the best
        (revrand's random starts). A draw whose evaluation fails counts as -inf."""
        specs = self.parameter_specs
        current = snapshot(self.parameters)
        best, best_value = current, _safe(evaluate)
        for _ in range(n):
            draw = {}
            for name in names:
                v, spec = np.asarray(current[name], dtype=float), specs[name]
                if distribution and name in distribution:
                    moved = np.asarray(distribution[name](rng), dtype=float)
                elif spec.is_log:
                    moved = v * np.exp(rng.normal(size=v.shape))
                else:
                    moved = v + rng.normal(size=v.shape) * (np.abs(v) + 1)
                if spec.is_log:  # a draw outside the box starts at its edge
                    moved = np.clip(moved, spec.lower, spec.upper)
                draw[name] = float(moved) if moved.ndim == 0 else moved
            self.set_parameters(**draw)
            value = _safe(evaluate)
            if value > best_value:
                best, best_value = snapshot(self.parameters), value
        self.set_parameters(**best)
        return best_value


def _safe(evaluate):
    try:
        value = evaluate()
    except (np.linalg.LinAlgError, ValueError, FloatingPointError):
        return -math.inf
    return value if math.isfinite(value) else -math.inf
