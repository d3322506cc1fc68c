"""Stationary kernels k(x, x') = variance * phi(r2) with ARD lengthscales: SE, Matérn 1/2, 3/2,
5/2 and rational quadratic; one pair of numba loops serves them all (``kind`` selects phi)."""

from __future__ import annotations

import math

import numpy as np

from gpexplorer.kernels import _loops as loops
from gpexplorer.kernels.base import EMPTY as _EMPTY
from gpexplorer.kernels.base import Kernel, as_inputs as _as_inputs, reduce_ard as _reduce_ard


class Stationary(Kernel):
    """k(x, x') = variance * phi(r2) with ARD lengthscales; phi is chosen by ``_kind``."""

    param_names = ("variance", "lengthscale")
    ard_params = ("lengthscale",)
    sliders = {"variance": (0.01, 5.0), "lengthscale": (0.02, 5.0)}
    stationary = True
    _kind = -1

    def __init__(self, variance=1.0, lengthscale=1.0):
        self.set_parameters(variance=variance, lengthscale=lengthscale)

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

    def _grads(self, dL_dK, X, X2, K=None, rank_one=None):
        _, _, X1s, X2s, ls = self._scaled(X, X2)
        if K is None:
            K = self.K(X, X2)
        dL_dK = np.ascontiguousarray(dL_dK, dtype=float)
        if dL_dK.shape != K.shape:
            raise ValueError(f"dL_dK has shape {dL_dK.shape}, expected {K.shape}")
        a, b = (_EMPTY, _EMPTY) if rank_one is None else (np.ascontiguousarray(v, dtype=float) for v in rank_one)
        kern = loops.stationary_params(self._kind, self.variance, ls, self._alpha)
        return loops.stationary_contract(tuple(kern), X1s, X2s, K, (dL_dK, a, b), X2 is None)  # weights: PairWeights

    def grad_params(self, dL_dK, X, X2=None, K=None):
        dvar, dl, dalpha, _, _ = self._grads(dL_dK, X, X2, K)
        return self.pack_gradients(dvar, dl, dalpha)

    def pack_gradients(self, dvar, dl, dalpha):
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

    def grad_params_and_X(self, dL_dK, X, X2=None, K=None, rank_one=None):
        """Both contractions in one pass (the hot path of the sparse objectives); with
        ``rank_one`` = (a, b) the weight of K_ij is dL_dK_ij - a_i b_j."""
        dvar, dl, dalpha, dX1, dX2 = self._grads(dL_dK, X, X2, K, rank_one)
        return self.pack_gradients(dvar, dl, dalpha), (dX1 + dX2 if X2 is None else dX1)


class SquaredExponential(Stationary):
    """Squared exponential (RBF): variance * exp(-r2 / 2)."""

    name, label = "se", "Squared exponential"
    spectral_smoothness = math.inf
    _kind = loops.SE


class Matern12(Stationary):
    """Matérn 1/2 (exponential): variance * exp(-r)."""

    name, label = "matern12", "Matern 1/2"
    spectral_smoothness = 0.5
    _kind = loops.MATERN12


class Matern32(Stationary):
    """Matérn 3/2: variance * (1 + sqrt(3) r) exp(-sqrt(3) r)."""

    name, label = "matern32", "Matern 3/2"
    spectral_smoothness = 1.5
    _kind = loops.MATERN32


class Matern52(Stationary):
    """Matérn 5/2: variance * (1 + sqrt(5) r + 5 r^2 / 3) exp(-sqrt(5) r)."""

    name, label = "matern52", "Matern 5/2"
    spectral_smoothness = 2.5
    _kind = loops.MATERN52


class RationalQuadratic(Stationary):
    """Rational quadratic: variance * (1 + r2 / (2 alpha))^(-alpha)."""

    name, label = "rq", "Rational quadratic"
    param_names = ("variance", "lengthscale", "alpha")
    sliders = {**Stationary.sliders, "alpha": (0.05, 10.0)}
    _kind = loops.RQ

    def __init__(self, variance=1.0, lengthscale=1.0, alpha=1.0):
        self.set_parameters(variance=variance, lengthscale=lengthscale, alpha=alpha)

    @property
    def _alpha(self):
        return self.alpha

    def pack_gradients(self, dvar, dl, dalpha):
        return {"variance": dvar, "lengthscale": _reduce_ard(dl, self.lengthscale), "alpha": dalpha}
