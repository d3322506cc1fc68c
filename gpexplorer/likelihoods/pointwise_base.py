"""Base class of the pointwise likelihoods p(y_n | f_n) used by sparse variational inference.

SAVIGP (Dezfouli & Bonilla, NIPS 2015) needs only that the conditional likelihood factorises over
the data points, p(y | f) = prod_n p(y_n | f_n.) (paper eq. 2), where f_n. holds the Q latent
values at input n. A :class:`PointwiseLikelihood` evaluates log p(y_n | f_n.) and its derivatives
for latent values of shape (..., N, Q): the leading axes are sample axes (Monte Carlo draws for
the expected log likelihood, paper eq. 12-17, or quadrature nodes, :mod:`quadrature`).

Conventions shared by every subclass:

* observations Y have shape (N, 1) (one output column, P = 1); ``validate`` checks them;
* parameters (``parameter_specs``) are optimised by the same :class:`~gpexplorer.parameters.Parameter`
  boxes and transforms as kernel hyperparameters; derivatives are on the natural scale;
* fixed options (Poisson's offset, softmax's number of classes) are constructor arguments, not
  parameters.
"""

from __future__ import annotations

import copy
import difflib
import math
from typing import NamedTuple

import numpy as np

from gpexplorer.parameters import POSITIVE_RANGE, Parameter, bounded_specs

__all__ = ["PointwiseLikelihood", "ExpectedLogDensity", "check_class_labels", "describe_values", "LOG_2PI",
           "MAX_PARAMETER", "KINDS"]

#: what a likelihood's observations are (its ``kind``)
KINDS = ("regression", "binary", "counts", "bounded_counts", "categorical")

LOG_2PI = math.log(2.0 * math.pi)
#: a likelihood parameter is refused beyond this size (and a positive one below its inverse):
#: squared residuals over a variance, and their derivatives, must stay finite in float64
MAX_PARAMETER = 1e50


class ExpectedLogDensity(NamedTuple):
    """E_{N(f; m, v)}[log p(y_n | f)] per data point with its derivatives (a tuple: unpack it)."""

    value: np.ndarray  # (N,)
    dmean: np.ndarray  # (N, Q)
    dvar: np.ndarray  # (N, Q)
    dparams: dict  # name -> (N,) or (N, 3)


def check_class_labels(Y, name, n_classes):
    """Y itself if every label is an integer in 0..n_classes - 1, else a ValueError naming the bad values."""
    fractional = Y[Y != np.round(Y)]
    if fractional.size:
        raise ValueError(f"likelihood {name!r} needs integer class labels; got the value(s) "
                         f"{describe_values(fractional)}")
    outside = Y[(Y < 0) | (Y > n_classes - 1)]
    if outside.size:
        raise ValueError(f"likelihood {name!r} with n_classes={n_classes} needs labels in "
                         f"0..{n_classes - 1}; got the value(s) {describe_values(outside)}")
    return Y


def describe_values(values, limit=5):
    """The distinct offending values for an error message: '2, 3.5 and 4 more'."""
    distinct = np.unique(np.asarray(values, dtype=float))
    shown = ", ".join(f"{v:g}" for v in distinct[:limit])
    return shown + (f" and {distinct.size - limit} more" if distinct.size > limit else "")


class PointwiseLikelihood:
    """Base class: p(y_n | f_n) for f_n in R^Q and a scalar y_n (paper eq. 2).

    Subclasses set ``name``, ``n_latent`` and ``param_layout`` (name -> (transform, size): size 0
    for a scalar, 3 for an array of three values) and implement on validated arrays (F of shape
    (..., N, Q), y of shape (N,)): ``_log_density``, ``_dlog_df``, ``_dlog_dparams`` (if they have
    parameters), ``_sample``, ``_mean``, ``_variance``; ``_check_support`` may reject or recode y.
    """

    name: str = "pointwise"
    #: the text a lab shows (:func:`gpexplorer.likelihoods.register`)
    label: str | None = None
    #: what observations it models, one of KINDS: "regression" (real y), "binary" (two classes),
    #: "counts" (non-negative integers) or "categorical" (one of K classes); None: any (typed)
    kind: str | None = None
    n_latent: int = 1
    n_outputs: int = 1
    #: True where log p(y | f) is quadratic in f (a Gaussian): one natural-gradient step of size 1
    #: then lands on the optimal q(u) (:mod:`gpexplorer.variational.natural_gradients`)
    conjugate: bool = False
    #: True where q(u) = p(u) (zero means) is a saddle point of the ELBO, so a fit must start
    #: from random means (a product of latents, as in the GPRN, has zero gradient there)
    prior_start_is_saddle: bool = False
    #: True where E_q[log p(y | f)] under diagonal Gaussian marginals has an exact low-dimensional
    #: form that ``expected_log_density_exact(mean, var, Y, n_points=None)`` gives with its
    #: derivatives (robust max): the estimators use it instead of a product grid or samples
    reduced_expectation: bool = False
    param_layout: dict = {}
    #: natural-scale (low, high) of a page's slider per parameter (``Parameter.slider``)
    sliders: dict = {}

    def __init__(self):
        self._values = {}
        self._bounds = {}

    # parameters ---------------------------------------------------------------------------------
    @property
    def parameter_specs(self) -> dict:
        """name -> :class:`Parameter`: "log" for positive parameters (box POSITIVE_RANGE unless
        ``set_bounds``), "identity" for real ones (unbounded)."""
        out = {}
        for name, (transform, _) in self.param_layout.items():
            default = POSITIVE_RANGE if transform == "log" else (-math.inf, math.inf)
            out[name] = Parameter(name, *self._bounds.get(name, default), transform, slider=self.sliders.get(name))
        return out

    @property
    def parameters(self) -> dict:
        """name -> value (a float, or a fresh array for array parameters)."""
        return {n: copy.copy(self._values[n]) for n in self.param_layout}

    def set_parameters(self, mapping=None, /, **values):
        """Assign parameters by name, all validated before any is set; returns self."""
        values = {**(mapping or {}), **values}
        checked = {name: self._checked_param(name, value) for name, value in values.items()}
        self._values.update(checked)
        return self

    def assign_unchecked(self, values: dict):
        """Set already-valid values (an optimiser's exp() of bounded logs)."""
        self._values.update(values)
        return self

    def set_bounds(self, **bounds):
        """Natural-scale (lower, upper) of some parameters, for this instance only."""
        specs = bounded_specs(self.parameter_specs, bounds)  # validates names and boxes
        for name in bounds:
            self._bounds[name] = (specs[name].lower, specs[name].upper)
        return self

    def _checked_param(self, name, value):
        if name not in self.param_layout:
            close = difflib.get_close_matches(name, list(self.param_layout), n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            have = ", ".join(self.param_layout) or "none"
            raise ValueError(f"likelihood {self.name!r} has no parameter {name!r}{hint}; its parameters: {have}")
        transform, size = self.param_layout[name]
        try:
            arr = np.array(value, dtype=float)
        except (TypeError, ValueError):
            raise ValueError(f"parameter {name!r} of likelihood {self.name!r} must be numeric; got {value!r}") from None
        if size == 0 and arr.ndim != 0:
            raise ValueError(f"parameter {name!r} of likelihood {self.name!r} must be a scalar; got shape {arr.shape}")
        if size and arr.shape not in ((), (size,)):
            raise ValueError(f"parameter {name!r} of likelihood {self.name!r} must be a scalar or have {size} "
                             f"entries; got shape {arr.shape}")
        if not np.all(np.isfinite(arr)):
            raise ValueError(f"parameter {name!r} of likelihood {self.name!r} must be finite; got {value!r}")
        if transform == "log" and np.any(arr <= 0):
            raise ValueError(f"parameter {name!r} of likelihood {self.name!r} must be positive; got {value!r}")
        small = 1.0 / MAX_PARAMETER if transform == "log" else 0.0
        if np.any(np.abs(arr) > MAX_PARAMETER) or np.any(np.abs(arr) < small):
            raise ValueError(f"parameter {name!r} of likelihood {self.name!r} must lie within "
                             f"[{small:g}, {MAX_PARAMETER:g}] in size (its squares and their derivatives must "
                             f"stay finite); got {value!r}")
        return float(arr) if size == 0 else np.broadcast_to(arr, (size,)).copy()

    def copy(self):
        return copy.deepcopy(self)

    # validation ---------------------------------------------------------------------------------
    def validate(self, Y):
        """Y as a float (N, 1) array (a 1-D (N,) array is taken as one column), checked: numeric,
        non-empty, finite and inside the likelihood's support (ValueError otherwise)."""
        try:
            Y = np.array(Y, dtype=float)
        except (TypeError, ValueError):
            raise ValueError(f"observations Y for likelihood {self.name!r} must be a numeric array") from None
        if Y.ndim == 1:
            Y = Y[:, None]
        if Y.ndim != 2 or Y.shape[1] != 1:
            raise ValueError(f"likelihood {self.name!r} expects observations Y of shape (N, 1) or (N,); "
                             f"got shape {Y.shape}")
        if Y.shape[0] == 0:
            raise ValueError(f"observations Y for likelihood {self.name!r} are empty; "
                             "at least one data point is needed")
        bad = ~np.isfinite(Y[:, 0])
        if bad.any():
            raise ValueError(f"observations Y for likelihood {self.name!r} contain {int(bad.sum())} NaN or "
                             f"infinite value(s) (first at row {int(np.argmax(bad))})")
        return np.ascontiguousarray(self._check_support(Y))

    def _check_support(self, Y):
        return Y

    def _latent(self, F, N=None):
        try:
            F = np.asarray(F, dtype=float)
        except (TypeError, ValueError):
            raise ValueError(f"latent values F for likelihood {self.name!r} must be a numeric array") from None
        n = "N" if N is None else f"N={N}"
        if F.ndim < 2 or F.shape[-1] != self.n_latent or (N is not None and F.shape[-2] != N):
            raise ValueError(f"likelihood {self.name!r} expects latent values F of shape (..., {n}, "
                             f"Q={self.n_latent}); got shape {F.shape}")
        if not np.all(np.isfinite(F)):
            raise ValueError(f"latent values F passed to likelihood {self.name!r} contain NaN or inf")
        return F

    def _pair(self, F, Y):
        Y = self.validate(Y)
        return self._latent(F, Y.shape[0]), Y[:, 0]

    def validate_moments(self, mean, var, Y):
        """(mean, var, Y) checked for the expected log density: mean and var of shape (N, Q)
        ((N,) accepted when Q = 1), finite, var > 0; Y as in ``validate``."""
        Y = self.validate(Y)
        N, Q = Y.shape[0], self.n_latent
        out = []
        for label, arr in (("mean", mean), ("var", var)):
            try:
                arr = np.array(arr, dtype=float)
            except (TypeError, ValueError):
                raise ValueError(f"{label} must be a numeric array") from None
            if arr.ndim == 1 and Q == 1:
                arr = arr[:, None]
            if arr.shape != (N, Q):
                raise ValueError(f"{label} must have shape (N={N}, Q={Q}) to match Y and likelihood {self.name!r}; "
                                 f"got shape {arr.shape}")
            if not np.all(np.isfinite(arr)):
                raise ValueError(f"{label} contains NaN or infinite values")
            out.append(arr)
        if np.any(out[1] <= 0):
            raise ValueError(f"var must be positive (the derivative with respect to the variance divides by its "
                             f"square root); got minimum {out[1].min():g}")
        return out[0], out[1], Y

    # public evaluation --------------------------------------------------------------------------
    def log_density(self, F, Y):
        """log p(y_n | f_n): F (..., N, Q), Y (N, 1) -> (..., N)."""
        F, y = self._pair(F, Y)
        return self._log_density(F, y)

    def dlog_density_df(self, F, Y):
        """d log p(y_n | f_n) / d f_n: F (..., N, Q), Y (N, 1) -> (..., N, Q)."""
        F, y = self._pair(F, Y)
        return self._dlog_df(F, y)

    def dlog_density_dparams(self, F, Y):
        """name -> d log p(y_n | f_n) / d theta on the natural scale: (..., N) for a scalar
        parameter, (..., N, 3) for an array of three; {} for a likelihood without parameters."""
        F, y = self._pair(F, Y)
        return self._dlog_dparams(F, y) if self.param_layout else {}

    def log_density_terms(self, F, y, slope=True, params=True):
        """(log p (..., N), d log p / df (..., N, Q) or None, {name: d log p / d theta}) at once, on
        arrays already checked: F (..., N, Q) finite, y = ``validate(Y)[:, 0]``. No input checks
        (the estimators' fast path validates Y once and its moments once); subclasses override it
        to share work between the three (one exp for the logit's value and slope)."""
        lp = self._log_density(F, y)
        g = self._dlog_df(F, y) if slope else None
        return lp, g, (self._dlog_dparams(F, y) if params and self.param_layout else {})

    def sample(self, F, rng=None):
        """Draws y ~ p(y | f) for F (..., N, Q) -> (..., N, 1); ``rng`` a numpy Generator (or a seed)."""
        F = self._latent(F)
        return np.asarray(self._sample(F, np.random.default_rng(rng)), dtype=float)[..., None]

    def conditional_mean(self, F):
        """E[y | f]: F (..., N, Q) -> (..., N)."""
        return self._mean(self._latent(F))

    def conditional_variance(self, F):
        """Var[y | f]: F (..., N, Q) -> (..., N)."""
        return self._variance(self._latent(F))

    def conditional_moments(self, F):
        """(E[y | f], Var[y | f]) at once: F (..., N, Q) -> two (..., N) arrays (a likelihood whose
        two moments share their work overrides it)."""
        return self.conditional_mean(F), self.conditional_variance(F)

    def _dlog_dparams(self, F, y):
        raise NotImplementedError

    def __repr__(self):
        def show(v):
            return f"{v:g}" if np.ndim(v) == 0 else "(" + ", ".join(f"{x:g}" for x in v) + ")"

        inner = ", ".join(f"{n}={show(v)}" for n, v in self._values.items())
        return f"{type(self).__name__}({inner})"
