"""The periodic kernel (MacKay) with ARD lengthscales."""

from __future__ import annotations

import numpy as np

from gpexplorer.kernels import _loops as loops
from gpexplorer.kernels.base import Kernel, as_inputs as _as_inputs, reduce_ard as _reduce_ard


class Periodic(Kernel):
    """Periodic (MacKay): variance * exp(-2 sum_d sin^2(pi (x_d - x'_d) / period) / l_d^2)."""

    name, label = "periodic", "Periodic"
    param_names = ("variance", "lengthscale", "period")
    ard_params = ("lengthscale",)
    sliders = {"variance": (0.01, 5.0), "lengthscale": (0.02, 5.0), "period": (0.05, 10.0)}
    stationary = True

    def __init__(self, variance=1.0, lengthscale=1.0, period=1.0):
        self.set_parameters(variance=variance, lengthscale=lengthscale, period=period)

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
        kern = loops.PeriodicParams(float(self.variance), np.ascontiguousarray(ls, dtype=float), float(self.period))
        return loops.periodic_contract(kern, X1, X2_, K, dL_dK)

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
