"""The kernel base class: named positive hyperparameters with bounds, and the interface every
kernel implements (see :mod:`gpexplorer.kernels`)."""

from __future__ import annotations

import contextlib
import contextvars
import copy

import numpy as np

from gpexplorer.validation import positive as _positive
from gpexplorer.parameters import POSITIVE_RANGE, Parameter

EMPTY = np.empty(0)

_GRADIENTS_FOLLOW = contextvars.ContextVar("gradients_follow", default=False)


@contextlib.contextmanager
def gradients_follow(flag=True):
    """A hint to kernels within the block: gradients of the covariances formed here will be asked
    for (an objective with its gradient), so a kernel may keep what they need (the convolutional
    SE route keeps its Kuf sums' parts); outside it (predictions, values alone) nothing is kept."""
    token = _GRADIENTS_FOLLOW.set(bool(flag))
    try:
        yield
    finally:
        _GRADIENTS_FOLLOW.reset(token)


def gradients_expected():
    """Whether the caller is inside :func:`gradients_follow` (per thread and task)."""
    return _GRADIENTS_FOLLOW.get()


def as_inputs(X, name="X"):
    X = np.asarray(X, dtype=float)
    if X.ndim == 1:
        X = X[:, None]
    if X.ndim != 2:
        raise ValueError(f"{name} must be a 2-D array of shape (N, D); got shape {X.shape}")
    return np.ascontiguousarray(X)


class Kernel:
    """Base class: holds named positive hyperparameters; subclasses implement the maths."""

    #: registry name and the text a lab shows (:func:`gpexplorer.kernels.register`)
    name: str | None = None
    label: str | None = None
    #: names of the (positive) hyperparameters, in optimiser order
    param_names: tuple[str, ...] = ()
    #: which of them may be a per-dimension (ARD) array
    ard_params: tuple[str, ...] = ()
    #: natural-scale (low, high) of a lab's slider per hyperparameter (``Parameter.slider``)
    sliders: dict = {}
    # capabilities a page asks about --------------------------------------------------------
    #: k(x, x') depends on x - x' only
    stationary: bool = False
    #: Matern smoothness nu of the spectral density (math.inf: Gaussian, as the SE kernel's);
    #: None when the kernel has no random Fourier features (:mod:`gpexplorer.random_features`)
    spectral_smoothness: float | None = None
    #: input requirement: None for vectors of any dimension, else the image shape (h, w) each
    #: input row holds (a convolutional kernel)
    input_shape: tuple | None = None

    @classmethod
    def has_lengthscale(cls) -> bool:
        return isinstance(cls.param_names, tuple) and "lengthscale" in cls.param_names

    @property
    def parameters(self) -> dict:
        return {n: copy.copy(getattr(self, n)) for n in self.param_names}

    def set_parameters(self, **values):
        for name, value in values.items():
            if name not in self.param_names:
                raise ValueError(f"{type(self).__name__} has no parameter {name!r}; it has {self.param_names}")
            setattr(self, name, _positive(name, value, name in self.ard_params))
        return self

    def assign_unchecked(self, values: dict):
        """Set already-validated values (the optimiser's exp() of bounded logs)."""
        for name, value in values.items():
            setattr(self, name, value)

    @property
    def parameter_specs(self) -> dict:
        """name -> :class:`gpexplorer.parameters.Parameter`: every hyperparameter is positive,
        optimised on the log scale within its bounds (POSITIVE_RANGE unless ``set_bounds``)."""
        bounds = self.__dict__.get("_bounds", {})
        return {n: Parameter(n, *bounds.get(n, POSITIVE_RANGE), slider=self.sliders.get(n)) for n in self.param_names}

    def set_bounds(self, **bounds):
        """Natural-scale (lower, upper) of some hyperparameters of this kernel instance."""
        for name, (lo, hi) in bounds.items():
            if name not in self.param_names:
                raise ValueError(f"{type(self).__name__} has no parameter {name!r}; it has {self.param_names}")
            Parameter(name, float(lo), float(hi))  # validates the box
            self.__dict__.setdefault("_bounds", {})[name] = (float(lo), float(hi))
        return self

    def copy(self):
        return copy.deepcopy(self)

    def check_input_dim(self, D):
        for name in self.ard_params:
            v = getattr(self, name)
            if np.ndim(v) == 1 and len(v) != D:
                raise ValueError(f"{type(self).__name__}.{name} has {len(v)} entries but the inputs have {D} dimensions")

    def __add__(self, other):
        return Sum(self, other)

    def __mul__(self, other):
        return Product(self, other)

    def __repr__(self):
        args = ", ".join(f"{n}={np.round(getattr(self, n), 4).tolist()}" for n in self.param_names)
        return f"{type(self).__name__}({args})"

    # interface -------------------------------------------------------------------------
    def K(self, X, X2=None):
        raise NotImplementedError

    def Kdiag(self, X):
        raise NotImplementedError

    def grad_params(self, dL_dK, X, X2=None, K=None) -> dict:
        """From :meth:`grad_params_and_X` where a kernel implements only that single pass."""
        if type(self).grad_params_and_X is Kernel.grad_params_and_X:
            raise NotImplementedError
        return self.grad_params_and_X(dL_dK, X, X2, K=K)[0]

    def grad_params_diag(self, dL_dKdiag, X) -> dict:
        raise NotImplementedError

    def grad_X(self, dL_dK, X, X2=None, K=None):
        """From :meth:`grad_params_and_X` where a kernel implements only that single pass."""
        if type(self).grad_params_and_X is Kernel.grad_params_and_X:
            raise NotImplementedError
        return self.grad_params_and_X(dL_dK, X, X2, K=K)[1]

    def grad_params_and_X(self, dL_dK, X, X2=None, K=None):
        """Both contractions; kernels override this with a single pass where it pays."""
        return self.grad_params(dL_dK, X, X2), self.grad_X(dL_dK, X, X2)


def reduce_ard(value, template):
    """Sum a per-dimension gradient back to a scalar when the parameter is isotropic."""
    if isinstance(template, float):
        return float(value.sum()) if isinstance(value, np.ndarray) else float(value)
    return np.asarray(value, dtype=float)


class Combination(Kernel):
    """Shared bookkeeping for Sum and Product: child parameters are named '<i>.<name>'."""

    def __init__(self, *kernels):
        flat = []
        for k in kernels:
            if not isinstance(k, Kernel):
                raise ValueError(f"can only combine Kernel objects, got {type(k).__name__}")
            flat.extend(k.kernels if type(k) is type(self) else [k])
        if len(flat) < 2:
            raise ValueError(f"{type(self).__name__} needs at least two kernels")
        self.kernels = flat

    @property
    def param_names(self):
        return tuple(f"{i}.{n}" for i, k in enumerate(self.kernels) for n in k.param_names)

    @property
    def ard_params(self):
        return tuple(f"{i}.{n}" for i, k in enumerate(self.kernels) for n in k.param_names if n in k.ard_params)

    @property
    def parameters(self):
        return {f"{i}.{n}": v for i, k in enumerate(self.kernels) for n, v in k.parameters.items()}

    def set_parameters(self, **values):
        for name, value in values.items():
            head, _, rest = name.partition(".")
            if not head.isdigit() or int(head) >= len(self.kernels):
                raise ValueError(f"{type(self).__name__} has no parameter {name!r}; it has {self.param_names}")
            self.kernels[int(head)].set_parameters(**{rest: value})
        return self

    def assign_unchecked(self, values: dict):
        for name, value in values.items():
            head, _, rest = name.partition(".")
            self.kernels[int(head)].assign_unchecked({rest: value})

    @property
    def parameter_specs(self) -> dict:
        return {f"{i}.{n}": spec.renamed(f"{i}.{n}")
                for i, k in enumerate(self.kernels) for n, spec in k.parameter_specs.items()}

    def set_bounds(self, **bounds):
        for name, box in bounds.items():
            head, _, rest = name.partition(".")
            if not head.isdigit() or int(head) >= len(self.kernels):
                raise ValueError(f"{type(self).__name__} has no parameter {name!r}; it has {self.param_names}")
            self.kernels[int(head)].set_bounds(**{rest: box})
        return self

    def check_input_dim(self, D):
        for k in self.kernels:
            k.check_input_dim(D)

    def __repr__(self):
        return f"{type(self).__name__}({', '.join(map(repr, self.kernels))})"

    @staticmethod
    def _prefix(i, d):
        return {f"{i}.{n}": v for n, v in d.items()}


class Sum(Combination):
    """k = k_0 + k_1 + ..."""

    def K(self, X, X2=None):
        return sum(k.K(X, X2) for k in self.kernels)

    def Kdiag(self, X):
        return sum(k.Kdiag(X) for k in self.kernels)

    def grad_params(self, dL_dK, X, X2=None, K=None):
        out = {}
        for i, k in enumerate(self.kernels):
            out.update(self._prefix(i, k.grad_params(dL_dK, X, X2)))
        return out

    def grad_params_diag(self, dL_dKdiag, X):
        out = {}
        for i, k in enumerate(self.kernels):
            out.update(self._prefix(i, k.grad_params_diag(dL_dKdiag, X)))
        return out

    def grad_X(self, dL_dK, X, X2=None, K=None):
        return sum(k.grad_X(dL_dK, X, X2) for k in self.kernels)

    def grad_params_and_X(self, dL_dK, X, X2=None, K=None):
        """One contraction pass per child (the hot path of the generic sparse objective)."""
        params, dX = {}, 0.0
        for i, k in enumerate(self.kernels):
            p, g = k.grad_params_and_X(dL_dK, X, X2)
            params.update(self._prefix(i, p))
            dX = dX + g
        return params, dX


class Product(Combination):
    """k = k_0 * k_1 * ...; child i sees dL/dK times the product of the other children."""

    def K(self, X, X2=None):
        out = self.kernels[0].K(X, X2)
        for k in self.kernels[1:]:
            out = out * k.K(X, X2)
        return out

    def Kdiag(self, X):
        out = self.kernels[0].Kdiag(X)
        for k in self.kernels[1:]:
            out = out * k.Kdiag(X)
        return out

    def _others(self, parts, i):
        out = np.ones_like(parts[0])
        for j, p in enumerate(parts):
            if j != i:
                out = out * p
        return out

    def grad_params_and_X(self, dL_dK, X, X2=None, K=None):
        parts = [k.K(X, X2) for k in self.kernels]
        params, dX = {}, 0.0
        for i, k in enumerate(self.kernels):
            p, g = k.grad_params_and_X(dL_dK * self._others(parts, i), X, X2, K=parts[i])
            params.update(self._prefix(i, p))
            dX = dX + g
        return params, dX

    def grad_params_diag(self, dL_dKdiag, X):
        parts = [k.Kdiag(X) for k in self.kernels]
        out = {}
        for i, k in enumerate(self.kernels):
            out.update(self._prefix(i, k.grad_params_diag(dL_dKdiag * self._others(parts, i), X)))
        return out
