"""Fastfood random features of the squared-exponential kernel (Le, Sarlos & Smola 2013).

Dense random Fourier features project X [N, d] on m frequencies W [d, m] at cost O(N d m).
Fastfood replaces each block of d' frequencies (d' the power of two at or above d, inputs padded
with zeros) by the structured matrix (paper eq. 7-8)

    V = S H G Pi H B / l,

B a diagonal of random signs, H the d' x d' Walsh-Hadamard matrix (unnormalised), Pi a random
permutation, G a Gaussian diagonal and S a diagonal scaling each row: a row of H G Pi H B has norm
sqrt(d') ||G||, so S_ii = s_i / (sqrt(d') ||G||) with s_i ~ chi_{d'} gives each frequency vector the
norm of a d'-dimensional standard Gaussian (eq. 9), as N(0, I / l^2) frequencies have. Applying V
costs O(d' log d') per input row (two fast Hadamard transforms, :mod:`.hadamard_loops`), so the
features cost O(N m log d); ceil(m / d') independent blocks give m frequencies. ARD lengthscales
divide the input columns before the transform. The features are phi = [cos(V x), sin(V x)] / sqrt(m)
(:mod:`.spectral`, eq. 35), estimating exp(-r^2 / 2), r^2 = sum_d tau_d^2 / l_d^2.

Gradient (``vjp``): with A = dL/dproj (as in :mod:`.spectral`), dL/d(x / l) = A V, which is the
transposed chain u -> u S, u H, u G, u Pi^T, u H, u B (H is symmetric): two more transforms; then
dL/dl_d = -sum_n (dL/d(x/l))_nd x_nd / l_d^2 (summed over d for an isotropic lengthscale).
"""

from __future__ import annotations

import numpy as np

from gpexplorer import validation
from gpexplorer.random_features.bases import Basis, lengthscale_parameter
from gpexplorer.random_features.hadamard_loops import hadamard_rows
from gpexplorer.random_features.spectral import stationary_kernel
from gpexplorer.random_features.trig_loops import cos_sin_columns
from gpexplorer.validation.arrays import as_float_array

__all__ = ["FastfoodBasis"]


class FastfoodBasis(Basis):
    """Fastfood features of the RBF kernel (module docstring); parameters as
    :class:`gpexplorer.random_features.spectral.RandomFourierBasis` with ``kernel="rbf"``."""

    name = kernel_name = "fastfood_rbf"

    def __init__(self, input_dim, n_features=200, lengthscale=1.0, seed=0, columns=None):
        super().__init__(input_dim, columns)
        n = validation.count("n_features", n_features, minimum=2)
        if n % 2:
            raise ValueError(f"n_features must be even (cos/sin pairs); got {n_features!r}")
        self.n_features, self.n_frequencies = n, n // 2
        self.seed = validation.seed(seed)
        d = self.active_dim
        self.padded_dim = 1 << max(0, int(np.ceil(np.log2(d))))
        dp = self.padded_dim
        self.n_blocks = -(-self.n_frequencies // dp)
        validation.check_memory("the Fastfood diagonals", 8 * 4 * self.n_blocks * dp, "use fewer features")
        rng = np.random.default_rng(self.seed)
        self._signs = rng.choice([-1.0, 1.0], size=(self.n_blocks, dp))
        self._perms = np.array([rng.permutation(dp) for _ in range(self.n_blocks)])
        self._gauss = rng.standard_normal((self.n_blocks, dp))
        chi = np.sqrt(rng.chisquare(dp, size=(self.n_blocks, dp)))
        self._scale = chi / (np.sqrt(dp) * np.linalg.norm(self._gauss, axis=1, keepdims=True))
        ls = as_float_array("lengthscale", lengthscale)
        if ls.ndim > 1 or (ls.ndim == 1 and ls.shape[0] != d):
            raise ValueError(f"lengthscale must be a scalar or have {d} entries (one per selected input column); "
                             f"got shape {ls.shape}")
        self._declare("lengthscale", 1.0 if ls.ndim == 0 else np.ones(d), lengthscale_parameter())
        self.set_parameters(lengthscale=lengthscale)

    def _scaled_inputs(self, Xc):
        Xs = np.zeros((Xc.shape[0], self.padded_dim))
        Xs[:, :self.active_dim] = Xc / self._values["lengthscale"]
        return Xs

    def projections(self, Xc):
        """V x for the selected columns Xc [N, d]: [N, m] without forming V."""
        Xs = self._scaled_inputs(Xc)
        dp, out = self.padded_dim, np.empty((Xc.shape[0], self.n_blocks * self.padded_dim))
        for b in range(self.n_blocks):
            v = Xs * self._signs[b]
            hadamard_rows(v)
            v = v[:, self._perms[b]]
            v *= self._gauss[b]
            hadamard_rows(v)
            v *= self._scale[b]
            out[:, b * dp:(b + 1) * dp] = v
        return out[:, :self.n_frequencies]

    @property
    def frequencies(self):
        """The dense frequencies [m, d] (V applied to the unit vectors; for tests and small cases)."""
        return self.projections(np.eye(self.active_dim)).T.copy()

    def _features(self, Xc):
        validation.check_memory("the features Phi", 8 * Xc.shape[0] * self.n_features, "use fewer points or features")
        proj = self.projections(Xc)
        return cos_sin_columns(np.ascontiguousarray(proj), np.empty((Xc.shape[0], self.n_features)),
                               1.0 / np.sqrt(self.n_frequencies))

    def _kernel(self, Xc, X2c):
        return stationary_kernel("rbf", Xc, X2c, self._values["lengthscale"])

    def _vjp(self, Xc, dPhi, Phi):
        if Phi is None:
            Phi = self._features(Xc)
        m, dp = self.n_frequencies, self.padded_dim
        A = np.zeros((Xc.shape[0], self.n_blocks * dp))
        A[:, :m] = dPhi[:, m:] * Phi[:, :m] - dPhi[:, :m] * Phi[:, m:]  # dL/dproj
        grad_inputs = np.zeros((Xc.shape[0], dp))  # dL/d(x / l), padded
        for b in range(self.n_blocks):
            u = A[:, b * dp:(b + 1) * dp] * self._scale[b]
            hadamard_rows(u)
            u *= self._gauss[b]
            back = np.empty_like(u)
            back[:, self._perms[b]] = u  # u Pi^T
            hadamard_rows(back)
            grad_inputs += back * self._signs[b]
        ls = self._values["lengthscale"]
        per_dim = -(grad_inputs[:, :self.active_dim] * (Xc / ls)).sum(0) / ls
        return {"lengthscale": float(per_dim.sum()) if np.ndim(ls) == 0 else per_dim}
