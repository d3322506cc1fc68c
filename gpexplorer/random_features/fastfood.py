"""Fastfood random features of the squared-exponential kernel (Le, Sarlos & Smola 2013).

Dense random Fourier features project X [N, d] on m frequencies W [d, m] at cost O(N d m).
Fastfood replaces each block of d' frequencies (d' the power of two at or above d, inputs padded
with zeros) by the structured matrix (paper eq. 7-8)

    V = S H G Pi H B / l,

B a diagonal of random signs, H the d' x d' Walsh-Hadamard matrix (unnormalised), Pi a random
permutation, G a Gaussian diagonal and S a diagonal scaling each row: H B is d'^{1/2} times an
orthogonal matrix, so row i of H G Pi H B has squared norm d' sum_k H_ik^2 G_k^2 = d' ||G||^2 and
S_ii = s_i / (d'^{1/2} ||G||) with s_i ~ chi_{d'} gives every frequency vector the norm of a
d'-dimensional standard Gaussian (eq. 9; the paper's 1 / (sigma d^{1/2}) is this d'^{1/2} with
sigma = l). Each coordinate then has E[w_j^2] = 1 / l_j^2 (checked: kurtosis 3, no correlation
between coordinates; tests/test_fastfood.py), as N(0, I / l^2) frequencies have. ceil(m / d')
independent blocks give m frequencies (the last block truncated); ARD lengthscales divide the
input columns before the transform (folded into B). The features are
phi = [cos(V x), sin(V x)] / sqrt(m) (:mod:`.spectral`, eq. 35), estimating exp(-r^2 / 2),
r^2 = sum_d tau_d^2 / l_d^2.

V is never formed: :func:`.hadamard_loops.fastfood_project` applies the chain row by row with two
fast Walsh-Hadamard transforms per block, O(N m log d') against O(N d m), and
:func:`.hadamard_loops.fastfood_features` takes the cos and sin of a chunk of rows while it is
in cache (``frequencies`` builds the dense [m, d] matrix, for tests and small cases only).

Gradient (``vjp``): with A = dL/dproj (as in :mod:`.spectral`), dL/dx = A V, the transposed chain
u -> u S, u H, u G, u Pi^T, u H, u B / l (H symmetric), again two transforms per block
(:func:`.hadamard_loops.fastfood_project_transpose`); proj depends on x / l only, so
dL/dl_d = -sum_n (dL/dx)_nd x_nd / l_d (summed over d for an isotropic lengthscale).
"""

from __future__ import annotations

import numpy as np

from gpexplorer import validation
from gpexplorer.random_features.bases import Basis, lengthscale_parameter
from gpexplorer.random_features.hadamard_loops import fastfood_features, fastfood_project, fastfood_project_transpose
from gpexplorer.random_features.spectral import stationary_kernel
from gpexplorer.random_features.trig_loops import fill_rows
from gpexplorer.validation.arrays import as_float_array

__all__ = ["FastfoodBasis"]


class FastfoodBasis(Basis):
    """Fastfood features of the RBF kernel (module docstring).

    Parameters as :class:`gpexplorer.random_features.spectral.RandomFourierBasis` with
    ``kernel="rbf"``: ``n_features`` D (even: D/2 frequencies, a cos and a sin each),
    ``lengthscale`` scalar (isotropic) or one per selected column (ARD), ``seed`` of the fixed
    draws B, Pi, G and s, ``columns`` the input columns the basis reads (None: all).
    """

    name = kernel_name = "fastfood_rbf"

    def __init__(self, input_dim, n_features=200, lengthscale=1.0, seed=0, columns=None):
        super().__init__(input_dim, columns)
        n = validation.count("n_features", n_features, minimum=2)
        if n % 2:
            raise ValueError(f"n_features must be even (cos/sin pairs); got {n_features!r}")
        self.n_features, self.n_frequencies = n, n // 2
        self.seed = validation.seed(seed)
        d = self.active_dim
        self.padded_dim = dp = 1 << max(0, int(np.ceil(np.log2(d))))
        self.n_blocks = -(-self.n_frequencies // dp)
        validation.check_memory("the Fastfood diagonals", 8 * 5 * self.n_blocks * dp, "use fewer features")
        ls = as_float_array("lengthscale", lengthscale)
        if ls.ndim > 1 or (ls.ndim == 1 and ls.shape[0] != d):
            raise ValueError(f"lengthscale must be a scalar or have {d} entries (one per selected input column); "
                             f"got shape {ls.shape}")
        rng = np.random.default_rng(self.seed)
        self._signs = rng.choice([-1.0, 1.0], size=(self.n_blocks, dp))
        self._perms = np.array([rng.permutation(dp) for _ in range(self.n_blocks)], dtype=np.int64)
        gauss = rng.standard_normal((self.n_blocks, dp))
        chi = np.sqrt(rng.chisquare(dp, size=(self.n_blocks, dp)))
        # per block the rows B / l (set by _changed), G and S = s / (d'^{1/2} ||G||)
        self._diagonals = np.empty((self.n_blocks, 3, dp))
        self._diagonals[:, 1] = gauss
        self._diagonals[:, 2] = chi / (np.sqrt(dp) * np.linalg.norm(gauss, axis=1, keepdims=True))
        for a in (self._signs, self._perms):
            a.setflags(write=False)
        self._declare("lengthscale", 1.0 if ls.ndim == 0 else np.ones(d), lengthscale_parameter())
        self.set_parameters(lengthscale=lengthscale)

    def _changed(self):
        inv = np.ones(self.padded_dim)
        inv[:self.active_dim] = 1.0 / np.asarray(self._values["lengthscale"])
        self._diagonals[:, 0] = self._signs * inv

    @property
    def structure(self) -> dict:
        """Copies of the draws of every block: ``signs`` (B), ``permutations`` (Pi: (Pi u)_j =
        u[perm[j]]), ``gaussian`` (G) and ``scaling`` (S), each [n_blocks, d']."""
        return {"signs": self._signs.copy(), "permutations": self._perms.copy(),
                "gaussian": self._diagonals[:, 1].copy(), "scaling": self._diagonals[:, 2].copy()}

    def projections(self, Xc):
        """V x for the selected columns Xc [N, d]: [N, m] without forming V."""
        validation.check_memory("the projections", 8 * Xc.shape[0] * self.n_frequencies, "use fewer points or features")
        out = np.empty((Xc.shape[0], self.n_frequencies))
        return fastfood_project(np.ascontiguousarray(Xc, dtype=float), self._diagonals, self._perms, out)

    @property
    def frequencies(self):
        """The dense frequencies [m, d] (V applied to the unit vectors; for tests and small cases)."""
        return self.projections(np.eye(self.active_dim)).T.copy()

    def _features(self, Xc, out=None):
        if out is None:
            out = self._output(Xc.shape[0], None)
        X = np.ascontiguousarray(Xc, dtype=float)
        scale = 1.0 / np.sqrt(self.n_frequencies)

        def rows(target, a, b):
            fastfood_features(X[a:b], self._diagonals, self._perms, target, scale)

        return fill_rows(out, X.shape[0] * self.n_frequencies, rows)

    def _kernel(self, Xc, X2c):
        return stationary_kernel("rbf", Xc, X2c, self._values["lengthscale"])

    def _vjp(self, Xc, dPhi, Phi):
        if Phi is None:
            Phi = self._features(Xc)
        m = self.n_frequencies
        A = dPhi[:, m:] * Phi[:, :m] - dPhi[:, :m] * Phi[:, m:]  # dL/dproj [N, m]
        grad_inputs = fastfood_project_transpose(np.ascontiguousarray(A), self._diagonals, self._perms, np.empty(Xc.shape))  # dL/dx
        ls = self._values["lengthscale"]
        per_dim = -np.einsum("nd,nd->d", grad_inputs, Xc) / ls
        return {"lengthscale": float(per_dim.sum()) if np.ndim(ls) == 0 else per_dim}
