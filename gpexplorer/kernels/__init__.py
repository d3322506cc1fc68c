"""Covariance functions with analytic gradients (van der Wilk thesis §1.2.4; R&W ch. 4).

Every kernel offers the same five operations, which is all the sparse objectives need:

* ``K(X, X2=None)`` and ``Kdiag(X)``: covariance matrix [N1, N2] and its diagonal [N];
* ``grad_params(dL_dK, X, X2=None)``: sum_ij dL/dK_ij dK_ij/dtheta for every hyperparameter,
  returned as a dict keyed like ``params`` (natural, not log, parameters);
* ``grad_params_diag(dL_dKdiag, X)``: the same for the diagonal;
* ``grad_X(dL_dK, X, X2=None)``: d/dX of sum_ij dL/dK_ij K_ij [N1, D] (with ``X2=None`` both
  arguments move, as needed for Kuu and the inducing inputs Z).

Parameterisations (s = variance, r2 = sum_d (x_d - x'_d)^2 / l_d^2, lengthscale scalar or [D]):
SE s exp(-r2/2); Matern12 s exp(-r); Matern32 s (1+sqrt3 r) exp(-sqrt3 r);
Matern52 s (1 + sqrt5 r + 5 r2/3) exp(-sqrt5 r); RQ s (1 + r2/(2 alpha))^-alpha;
Periodic s exp(-2 sum_d sin^2(pi (x_d-x'_d)/p) / l_d^2); Linear sum_d v_d x_d x'_d.
Sums and products combine kernels; their parameters are named "<index>.<name>".
"""

from __future__ import annotations

import copy
import math

import numpy as np

from gpexplorer._checks import positive as _positive
from gpexplorer.kernels import _loops as loops

_EMPTY = np.empty(0)


def _as_inputs(X, name="X"):
    X = np.asarray(X, dtype=float)
    if X.ndim == 1:
        X = X[:, None]
    if X.ndim != 2:
        raise ValueError(f"{name} must be a 2-D array of shape (N, D); got shape {X.shape}")
    return np.ascontiguousarray(X)


class Kernel:
    """Base class: holds named positive hyperparameters; subclasses implement the maths."""

    #: names of the (positive) hyperparameters, in optimiser order
    param_names: tuple[str, ...] = ()
    #: which of them may be a per-dimension (ARD) array
    ard_params: tuple[str, ...] = ()

    @property
    def params(self) -> dict:
        return {n: copy.copy(getattr(self, n)) for n in self.param_names}

    def set_params(self, **values):
        for name, value in values.items():
            if name not in self.param_names:
                raise ValueError(f"{type(self).__name__} has no parameter {name!r}; it has {self.param_names}")
            setattr(self, name, _positive(name, value, name in self.ard_params))
        return self

    def assign_unchecked(self, values: dict):
        """Set already-validated values (the optimiser's exp() of bounded logs)."""
        for name, value in values.items():
            setattr(self, name, value)

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

    def grad_params(self, dL_dK, X, X2=None) -> dict:
        raise NotImplementedError

    def grad_params_diag(self, dL_dKdiag, X) -> dict:
        raise NotImplementedError

    def grad_X(self, dL_dK, X, X2=None):
        raise NotImplementedError


def _reduce_ard(value, template):
    """Sum a per-dimension gradient back to a scalar when the parameter is isotropic."""
    if isinstance(template, float):
        return float(value.sum()) if isinstance(value, np.ndarray) else float(value)
    return np.asarray(value, dtype=float)


class Stationary(Kernel):
    """k(x, x') = variance * phi(r2) with ARD lengthscales; phi is chosen by ``_kind``."""

    param_names = ("variance", "lengthscale")
    ard_params = ("lengthscale",)
    _kind = -1

    def __init__(self, variance=1.0, lengthscale=1.0):
        self.set_params(variance=variance, lengthscale=lengthscale)

    @property
    def _alpha(self):
        return 1.0

    def fused_arguments(self, D):
        """(kind, variance, lengthscale[D], alpha): what the compiled fused path needs."""
        ls = self.lengthscale
        ls = np.full(D, ls) if isinstance(ls, float) else self._lengthscale_vector(D)
        return self._kind, self.variance, ls, self._alpha

    def _lengthscale_vector(self, D):
        self.check_input_dim(D)
        return np.broadcast_to(np.asarray(self.lengthscale, dtype=float), (D,)).copy()

    def _scaled(self, X, X2):
        X = _as_inputs(X)
        ls = self._lengthscale_vector(X.shape[1])
        X1s = np.ascontiguousarray(X / ls)
        if X2 is None:
            return X, X, X1s, X1s, ls
        X2 = _as_inputs(X2, "X2")
        if X2.shape[1] != X.shape[1]:
            raise ValueError(f"X has {X.shape[1]} columns but X2 has {X2.shape[1]}")
        return X, X2, X1s, np.ascontiguousarray(X2 / ls), ls

    def K(self, X, X2=None):
        _, _, X1s, X2s, _ = self._scaled(X, X2)
        if X2 is None:
            return loops.stationary_K_symmetric(self._kind, X1s, self.variance, self._alpha)
        return loops.stationary_K(self._kind, X1s, X2s, self.variance, self._alpha)

    def Kdiag(self, X):
        X = _as_inputs(X)
        self.check_input_dim(X.shape[1])
        return np.full(X.shape[0], self.variance)

    def _grads(self, dL_dK, X, X2, K=None):
        _, _, X1s, X2s, ls = self._scaled(X, X2)
        if K is None:
            K = self.K(X, X2)
        dL_dK = np.ascontiguousarray(dL_dK, dtype=float)
        if dL_dK.shape != K.shape:
            raise ValueError(f"dL_dK has shape {dL_dK.shape}, expected {K.shape}")
        return loops.stationary_grads(self._kind, X1s, X2s, K, dL_dK, _EMPTY, _EMPTY, self.variance, ls,
                                      self._alpha, X2 is None)

    def grad_params(self, dL_dK, X, X2=None, K=None):
        dvar, dl, dalpha, _, _ = self._grads(dL_dK, X, X2, K)
        return self._pack(dvar, dl, dalpha)

    def _pack(self, dvar, dl, dalpha):
        return {"variance": dvar, "lengthscale": _reduce_ard(dl, self.lengthscale)}

    def grad_params_diag(self, dL_dKdiag, X):
        self.check_input_dim(_as_inputs(X).shape[1])
        zero_l = 0.0 if np.ndim(self.lengthscale) == 0 else np.zeros_like(self.lengthscale)
        out = {n: 0.0 for n in self.param_names}
        out.update(variance=float(np.sum(dL_dKdiag)), lengthscale=zero_l)
        return out

    def grad_X(self, dL_dK, X, X2=None, K=None):
        _, _, _, dX1, dX2 = self._grads(dL_dK, X, X2, K)
        return dX1 + dX2 if X2 is None else dX1

    def grad_params_and_X(self, dL_dK, X, X2=None, K=None):
        """Both contractions in one pass (the hot path of the sparse objectives)."""
        dvar, dl, dalpha, dX1, dX2 = self._grads(dL_dK, X, X2, K)
        return self._pack(dvar, dl, dalpha), (dX1 + dX2 if X2 is None else dX1)


class SquaredExponential(Stationary):
    """Squared exponential (RBF): variance * exp(-r2 / 2)."""

    _kind = loops.SE


class Matern12(Stationary):
    """Matérn 1/2 (exponential): variance * exp(-r)."""

    _kind = loops.MATERN12


class Matern32(Stationary):
    """Matérn 3/2: variance * (1 + sqrt(3) r) exp(-sqrt(3) r)."""

    _kind = loops.MATERN32


class Matern52(Stationary):
    """Matérn 5/2: variance * (1 + sqrt(5) r + 5 r^2 / 3) exp(-sqrt(5) r)."""

    _kind = loops.MATERN52


class RationalQuadratic(Stationary):
    """Rational quadratic: variance * (1 + r2 / (2 alpha))^(-alpha)."""

    param_names = ("variance", "lengthscale", "alpha")
    _kind = loops.RQ

    def __init__(self, variance=1.0, lengthscale=1.0, alpha=1.0):
        self.set_params(variance=variance, lengthscale=lengthscale, alpha=alpha)

    @property
    def _alpha(self):
        return self.alpha

    def _pack(self, dvar, dl, dalpha):
        return {"variance": dvar, "lengthscale": _reduce_ard(dl, self.lengthscale), "alpha": dalpha}


class Periodic(Kernel):
    """Periodic (MacKay): variance * exp(-2 sum_d sin^2(pi (x_d - x'_d) / period) / l_d^2)."""

    param_names = ("variance", "lengthscale", "period")
    ard_params = ("lengthscale",)

    def __init__(self, variance=1.0, lengthscale=1.0, period=1.0):
        self.set_params(variance=variance, lengthscale=lengthscale, period=period)

    def _prep(self, X, X2):
        X = _as_inputs(X)
        self.check_input_dim(X.shape[1])
        X2 = X if X2 is None else _as_inputs(X2, "X2")
        if X2.shape[1] != X.shape[1]:
            raise ValueError(f"X has {X.shape[1]} columns but X2 has {X2.shape[1]}")
        ls = np.broadcast_to(np.asarray(self.lengthscale, float), (X.shape[1],)).copy()
        return X, X2, ls

    def K(self, X, X2=None):
        X, X2, ls = self._prep(X, X2)
        return loops.periodic_K(X, X2, self.variance, ls, self.period)

    def Kdiag(self, X):
        X = _as_inputs(X)
        self.check_input_dim(X.shape[1])
        return np.full(X.shape[0], self.variance)

    def _grads(self, dL_dK, X, X2, K=None):
        X1, X2_, ls = self._prep(X, X2)
        if K is None:
            K = loops.periodic_K(X1, X2_, self.variance, ls, self.period)
        dL_dK = np.ascontiguousarray(dL_dK, dtype=float)
        if dL_dK.shape != K.shape:
            raise ValueError(f"dL_dK has shape {dL_dK.shape}, expected {K.shape}")
        return loops.periodic_grads(X1, X2_, K, dL_dK, self.variance, ls, self.period)

    def grad_params(self, dL_dK, X, X2=None, K=None):
        dvar, dl, dper, _, _ = self._grads(dL_dK, X, X2, K)
        return {"variance": dvar, "lengthscale": _reduce_ard(dl, self.lengthscale), "period": dper}

    def grad_params_diag(self, dL_dKdiag, X):
        self.check_input_dim(_as_inputs(X).shape[1])
        zero_l = 0.0 if np.ndim(self.lengthscale) == 0 else np.zeros_like(self.lengthscale)
        return {"variance": float(np.sum(dL_dKdiag)), "lengthscale": zero_l, "period": 0.0}

    def grad_X(self, dL_dK, X, X2=None, K=None):
        _, _, _, dX1, dX2 = self._grads(dL_dK, X, X2, K)
        return dX1 + dX2 if X2 is None else dX1

    def grad_params_and_X(self, dL_dK, X, X2=None, K=None):
        dvar, dl, dper, dX1, dX2 = self._grads(dL_dK, X, X2, K)
        params = {"variance": dvar, "lengthscale": _reduce_ard(dl, self.lengthscale), "period": dper}
        return params, (dX1 + dX2 if X2 is None else dX1)


class Linear(Kernel):
    """Linear (dot-product) kernel: sum_d variance_d x_d x'_d. BLAS does the work."""

    param_names = ("variance",)
    ard_params = ("variance",)

    def __init__(self, variance=1.0):
        self.set_params(variance=variance)

    def _v(self, D):
        self.check_input_dim(D)
        return np.broadcast_to(np.asarray(self.variance, float), (D,))

    def K(self, X, X2=None):
        X = _as_inputs(X)
        X2 = X if X2 is None else _as_inputs(X2, "X2")
        return (X * self._v(X.shape[1])) @ X2.T

    def Kdiag(self, X):
        X = _as_inputs(X)
        return (X * X) @ self._v(X.shape[1])

    def grad_params(self, dL_dK, X, X2=None, K=None):
        X = _as_inputs(X)
        self.check_input_dim(X.shape[1])
        X2 = X if X2 is None else _as_inputs(X2, "X2")
        per_dim = np.sum(X * (np.asarray(dL_dK) @ X2), axis=0)
        return {"variance": _reduce_ard(per_dim, self.variance)}

    def grad_params_diag(self, dL_dKdiag, X):
        X = _as_inputs(X)
        self.check_input_dim(X.shape[1])
        return {"variance": _reduce_ard(np.asarray(dL_dKdiag) @ (X * X), self.variance)}

    def grad_X(self, dL_dK, X, X2=None, K=None):
        X = _as_inputs(X)
        v = self._v(X.shape[1])
        dL_dK = np.asarray(dL_dK)
        if X2 is None:
            return ((dL_dK + dL_dK.T) @ X) * v
        return (dL_dK @ _as_inputs(X2, "X2")) * v

    def grad_params_and_X(self, dL_dK, X, X2=None, K=None):
        return self.grad_params(dL_dK, X, X2), self.grad_X(dL_dK, X, X2)


class _Combination(Kernel):
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
    def params(self):
        return {f"{i}.{n}": v for i, k in enumerate(self.kernels) for n, v in k.params.items()}

    def set_params(self, **values):
        for name, value in values.items():
            head, _, rest = name.partition(".")
            if not head.isdigit() or int(head) >= len(self.kernels):
                raise ValueError(f"{type(self).__name__} has no parameter {name!r}; it has {self.param_names}")
            self.kernels[int(head)].set_params(**{rest: value})
        return self

    def assign_unchecked(self, values: dict):
        for name, value in values.items():
            head, _, rest = name.partition(".")
            self.kernels[int(head)].assign_unchecked({rest: value})

    def check_input_dim(self, D):
        for k in self.kernels:
            k.check_input_dim(D)

    def __repr__(self):
        return f"{type(self).__name__}({', '.join(map(repr, self.kernels))})"

    @staticmethod
    def _prefix(i, d):
        return {f"{i}.{n}": v for n, v in d.items()}


class Sum(_Combination):
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


class Product(_Combination):
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

    def grad_params(self, dL_dK, X, X2=None, K=None):
        return self.grad_params_and_X(dL_dK, X, X2)[0]

    def grad_X(self, dL_dK, X, X2=None, K=None):
        return self.grad_params_and_X(dL_dK, X, X2)[1]

    def grad_params_diag(self, dL_dKdiag, X):
        parts = [k.Kdiag(X) for k in self.kernels]
        out = {}
        for i, k in enumerate(self.kernels):
            out.update(self._prefix(i, k.grad_params_diag(dL_dKdiag * self._others(parts, i), X)))
        return out


#: registry used by generic tests and the dashboards: name -> class
KERNELS = {
    "se": SquaredExponential,
    "matern12": Matern12,
    "matern32": Matern32,
    "matern52": Matern52,
    "rq": RationalQuadratic,
    "periodic": Periodic,
    "linear": Linear,
}
