"""Argument checks and parameters of :class:`gpexplorer.linearized.kitchen_sinks.LinearizedKitchenSinks`:
every bad input (wrong shape, NaN / inf, empty data, absurd hyperparameters or loop options) becomes
a ValueError that says what was expected; :class:`KitchenSinksParameters` gives the model the
``parameters`` / ``set_parameters`` / ``parameter_specs`` / ``set_bounds``
of every model (:mod:`gpexplorer.parameters`), the noise variances Sigma, weight variances omega_q^2
(EKS eq. 7-8) and feature lengthscales (eq. 10)."""

from __future__ import annotations

import math

import numpy as np

from gpexplorer.parameters import POSITIVE_RANGE, Parameter, bounded_specs
from gpexplorer.validation import inputs

__all__ = ["positive_parameter", "training_data", "prior_means", "newton_options", "ACCEPTED_RANGE",
           "PARAMETER_NAMES", "KitchenSinksParameters"]

#: the hyperparameters of the model, in the order of ``parameters``
PARAMETER_NAMES = ("noise_variance", "weight_variance", "lengthscale")

#: accepted range of every positive hyperparameter (outside it the model is numerically meaningless);
#: the search box of a fit is each parameter's own (``LinearizedKitchenSinks.parameter_specs``)
ACCEPTED_RANGE = (1e-12, 1e12)


def positive_parameter(name, value, size, size_label):
    """A float array of ``size`` entries from a scalar or a matching 1-D array; (array, tied)."""
    try:
        arr = np.asarray(value, dtype=float)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be numeric; got {value!r}") from None
    if arr.ndim > 1 or (arr.ndim == 1 and arr.shape[0] not in (1, size)):
        raise ValueError(f"{name} must be a scalar or have {size} entries ({size_label}); got shape {arr.shape}")
    if arr.size == 0:
        raise ValueError(f"{name} must not be empty")
    if not np.all(np.isfinite(arr)) or np.any(arr <= 0):
        raise ValueError(f"{name} must be positive and finite; got {value!r}")
    lo, hi = ACCEPTED_RANGE
    if np.any(arr < lo) or np.any(arr > hi):
        raise ValueError(f"{name} = {value!r} is outside [{lo:g}, {hi:g}]; rescale the data")
    tied = arr.ndim == 0 or arr.shape[0] == 1
    return np.full(size, float(arr.reshape(-1)[0])) if tied else arr.copy(), tied


def training_data(X, Y, n_outputs):
    """(X (N, d), Y (N, P)) as contiguous float arrays; Y may be (N,) when P = 1."""
    X = inputs(X, "X")  # the validation layer: numeric, (N, d), non-empty, finite, |X| <= 1e100
    try:
        Y = np.array(Y, dtype=float)
    except (TypeError, ValueError):
        raise ValueError("Y must be a numeric array") from None
    if Y.ndim == 1 and n_outputs == 1:
        Y = Y[:, None]
    if Y.ndim != 2 or Y.shape[1] != n_outputs:
        raise ValueError(f"Y must have shape (N, {n_outputs}) for this forward model"
                         f"{' (or (N,))' if n_outputs == 1 else ''}; got {Y.shape}")
    if Y.shape[0] != X.shape[0]:
        raise ValueError(f"X has {X.shape[0]} rows but Y has {Y.shape[0]}")
    for name, arr in (("X", X), ("Y", Y)):
        if not np.all(np.isfinite(arr)):
            raise ValueError(f"{name} contains {int(np.sum(~np.isfinite(arr)))} NaN or infinite value(s)")
    return np.ascontiguousarray(X), np.ascontiguousarray(Y)


def prior_means(value, Q):
    """The constant prior mean of each latent task, (Q,) from a scalar or (Q,)."""
    try:
        means = np.broadcast_to(np.asarray(value, dtype=float), (Q,)).copy()
    except ValueError:
        raise ValueError(f"prior_mean must be a scalar or have {Q} entries; got {value!r}") from None
    if not np.all(np.isfinite(means)):
        raise ValueError("prior_mean must be finite")
    return means


def newton_options(kappa, Q, max_iter, max_cuts, tol):
    """(kappa, max_iter, max_cuts, tol) of the Newton loop, checked."""
    kappa = float(kappa)
    if not math.isfinite(kappa) or Q + kappa <= 0:
        raise ValueError(f"kappa must be finite with Q + kappa > 0 (Q = {Q}); got {kappa}")
    if isinstance(max_iter, bool) or not isinstance(max_iter, (int, np.integer)) or max_iter < 1:
        raise ValueError(f"max_iter must be a positive integer; got {max_iter!r}")
    if isinstance(max_cuts, bool) or not isinstance(max_cuts, (int, np.integer)) or max_cuts < 0:
        raise ValueError(f"max_cuts must be a non-negative integer; got {max_cuts!r}")
    if not (isinstance(tol, (int, float)) and math.isfinite(tol) and tol > 0):
        raise ValueError(f"tol must be a positive number; got {tol!r}")
    return kappa, int(max_iter), int(max_cuts), float(tol)


class KitchenSinksParameters:
    """The named hyperparameters of the kitchen-sinks model (a mix-in of LinearizedKitchenSinks,
    which holds ``features``, ``noise_variance`` [P], ``weight_variance`` [Q] and the feature
    matrix). Changing one marks the posterior stale (recomputed, warm-started, on next use)."""

    _bounds = {}  # name -> (lower, upper); set_bounds gives the instance its own dict

    @property
    def parameters(self) -> dict:
        """{"noise_variance": (P,), "weight_variance": (Q,), "lengthscale": float or (d,)}."""
        ls = self.features.lengthscale
        return {"noise_variance": self.noise_variance.copy(), "weight_variance": self.weight_variance.copy(),
                "lengthscale": ls.copy() if isinstance(ls, np.ndarray) else ls}

    @property
    def parameter_specs(self) -> dict:
        """name -> :class:`gpexplorer.parameters.Parameter` for every entry of ``parameters``: all
        positive, searched on the log scale within their bounds (POSITIVE_RANGE unless
        :meth:`set_bounds`); a tied parameter (see :meth:`tied`) is one value in that box."""
        return {n: Parameter(n, *self._bounds.get(n, POSITIVE_RANGE)) for n in PARAMETER_NAMES}

    def set_bounds(self, **bounds):
        """Natural-scale (lower, upper) per parameter name, for this model's fits only."""
        specs = bounded_specs(self.parameter_specs, bounds)  # validates names and boxes
        self._bounds = {**self._bounds, **{name: (specs[name].lower, specs[name].upper) for name in bounds}}
        return self

    def set_parameters(self, **values):
        """Change hyperparameters by name, validated (``set_parameters(lengthscale=0.5)`` or
        ``set_parameters(**other.parameters)``); the posterior is recomputed (warm-started) on next use."""
        for name, value in values.items():
            if name == "noise_variance":
                values[name] = positive_parameter(name, value, self.n_outputs, "one per output")[0]
            elif name == "weight_variance":
                values[name] = positive_parameter(name, value, self.n_latent, "one per latent task")[0]
            elif name != "lengthscale":
                raise ValueError(f"unknown parameter {name!r}; choose from {list(PARAMETER_NAMES)}")
        for name, value in values.items():  # the lengthscale is checked by the feature map
            if name == "lengthscale":
                if not np.array_equal(np.asarray(value, dtype=float), np.asarray(self.features.lengthscale)):
                    self.features.lengthscale = value
                    self._Phi = self.features(self.X)
            elif name in ("noise_variance", "weight_variance"):
                size = self.n_outputs if name == "noise_variance" else self.n_latent
                setattr(self, name, np.broadcast_to(np.asarray(value, dtype=float), (size,)).copy())
        self._stale = True  # the old posterior stays as the warm start
        return self

    def tied(self, name) -> bool:
        """Whether ``name`` was given as a scalar and is learnt as one shared value."""
        return self._tied.get(name, False)
