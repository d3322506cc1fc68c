"""The linear (dot-product) kernel with ARD variances."""

from __future__ import annotations

import numpy as np

from gpexplorer.kernels.base import Kernel, as_inputs as _as_inputs, reduce_ard as _reduce_ard


class Linear(Kernel):
    """Linear (dot-product) kernel: sum_d variance_d x_d x'_d. BLAS does the work."""

    name, label = "linear", "Linear"
    param_names = ("variance",)
    ard_params = ("variance",)
    sliders = {"variance": (0.01, 5.0)}

    def __init__(self, variance=1.0):
        self.set_parameters(variance=variance)

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
