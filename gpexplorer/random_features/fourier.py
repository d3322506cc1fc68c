"""Random Fourier feature bases whose inner products approximate stationary kernels.

Bochner / Wiener-Khintchine (EKS paper eq. 3-4): a stationary kernel with k(0) = 1 is the
characteristic function of its normalised spectral density p(w), k(tau) = E_w[cos(w^T tau)].
Drawing m frequencies w_i ~ p and setting (EKS eq. 5-6)

    phi(x) = m^{-1/2} [cos(w_1^T x), ..., cos(w_m^T x), sin(w_1^T x), ..., sin(w_m^T x)]

gives phi(x)^T phi(x') = m^{-1} sum_i cos(w_i^T (x - x')) -> k(x - x') with error O(m^{-1/2}).
We use angular frequencies w (EKS eq. 6 writes 2 pi s with s ~ S(s); same thing).

**Why cos/sin pairs and not cos(w^T x + b) with a random phase b**: the pair is exactly eq. 6,
it needs no phase draws, and its per-frequency estimate cos(w^T tau) has variance
(1 + k(2 tau))/2 - k(tau)^2, never larger than the random-phase estimator's (which adds the
phase noise 1/2 on top); so for the same number D of columns the pair is at least as accurate
(Sutherland & Schneider 2015 make the same point). ``n_features`` = D is the number of columns
of Phi, so it must be even (D/2 frequencies).

Spectral densities for the ARD-scaled distance r^2 = sum_d (x_d - x'_d)^2 / l_d^2 (the same
parameterisation as :mod:`gpexplorer.kernels`):

* squared exponential: w = z / l with z ~ N(0, I_d);
* Matern nu (nu = 1/2, 3/2, 5/2): its spectral density is proportional to
  (2 nu / l^2 + |w|^2)^{-(nu + d/2)}, a multivariate Student-t with 2 nu degrees of freedom,
  so w = z / sqrt(g) / l with z ~ N(0, I_d) and g ~ Gamma(shape nu, rate nu) (one g per
  frequency, shared by its d coordinates).

How many: eq. 6 maps D frequencies to 2D columns; ``n_features`` here counts columns. Every kernel
entry has Monte Carlo error O(m^{-1/2}), but a posterior built on the features also needs the
frequencies to cover the spectral density where the data have power. The Student-t density of a
Matern kernel has heavy tails that few draws sample poorly: for Matern 5/2 at lengthscale 0.6 on
the toy problems' [-2 pi, 2 pi] (200 points, g = identity, the true hyperparameters) 200 columns
give NLPD f* +1.6 against -0.89 for the exact GP, 1000 give -0.64 and 4000 -0.82; with the SE
kernel of the EKS paper's toy data 1000 columns already match it.

The base draws z / sqrt(g) are made once from ``seed`` and only divided by the lengthscale, so
Phi is a smooth, deterministic function of the lengthscale, which the derivative-free
hyperparameter search of EKS section 4.4 relies on. The kernel variance is not in the features:
it is the weight prior variance omega_q^2 of EKS eq. 7 (f = Phi w, w ~ N(0, omega^2 I)).
"""

from __future__ import annotations

import numpy as np

from gpexplorer import kernels
from gpexplorer.random_features.trig_loops import cos_sin_columns

__all__ = ["RandomFourierFeatures", "fourier_kernels", "kernel_name", "base_frequencies"]

_ALIASES = {"rbf": "se", "squared_exponential": "se", "squaredexponential": "se", "gaussian": "se",
            "laplace": "matern12", "exponential": "matern12"}
#: largest absolute lengthscale ratio accepted (beyond it the features are numerically constant
#: or alias at machine precision)
_LENGTHSCALE_RANGE = (1e-8, 1e8)


def fourier_kernels() -> dict:
    """name -> class of the registered kernels with random Fourier features: those declaring the
    Matern smoothness of their spectral density (``spectral_smoothness``; inf for the SE's Gaussian)."""
    return {name: cls for name, cls in kernels.KERNELS.items() if cls.spectral_smoothness is not None}


def kernel_name(kernel) -> str:
    """Registry name ("se", "matern12", ...) of a kernel name or object with Fourier features."""
    supported = fourier_kernels()
    if isinstance(kernel, kernels.Kernel):
        name = next((n for n, cls in supported.items() if type(kernel) is cls), None)
        if name is None:
            raise ValueError(f"random Fourier features support the kernels {sorted(supported)}; "
                             f"got {type(kernel).__name__} (not stationary with a known spectral density)")
        return name
    if not isinstance(kernel, str):
        raise ValueError(f"kernel must be a name or a gpexplorer.kernels object; got {type(kernel).__name__}")
    key = kernel.strip().lower()
    if key not in supported:
        key = key.replace("-", "").replace(" ", "")
        key = _ALIASES.get(key, key)
    if key not in supported:
        raise ValueError(f"unknown kernel {kernel!r}; choose one of {sorted(supported)}")
    return key


def base_frequencies(kernel: str, n_frequencies: int, input_dim: int, seed=0) -> np.ndarray:
    """Unit-lengthscale spectral draws [n_frequencies, input_dim] for ``kernel`` (see module doc)."""
    nu = fourier_kernels()[kernel_name(kernel)].spectral_smoothness
    rng = np.random.default_rng(seed)
    z = rng.standard_normal((n_frequencies, input_dim))
    if np.isinf(nu):
        return z
    g = rng.gamma(shape=nu, scale=1.0 / nu, size=(n_frequencies, 1))
    return z / np.sqrt(g)


def _check_lengthscale(lengthscale, input_dim):
    ls = np.asarray(lengthscale, dtype=float)
    if ls.ndim > 1 or (ls.ndim == 1 and ls.shape[0] not in (1, input_dim)):
        raise ValueError(f"lengthscale must be a scalar or have {input_dim} entries (one per input "
                         f"dimension); got shape {ls.shape}")
    if ls.size == 0:
        raise ValueError("lengthscale must not be empty")
    if not np.all(np.isfinite(ls)) or np.any(ls <= 0):
        raise ValueError(f"lengthscale must be positive and finite; got {lengthscale!r}")
    lo, hi = _LENGTHSCALE_RANGE
    if np.any(ls < lo) or np.any(ls > hi):
        raise ValueError(f"lengthscale {lengthscale!r} is outside [{lo:g}, {hi:g}]; rescale the inputs")
    if ls.ndim == 1 and ls.shape[0] == 1:
        ls = ls.reshape(())
    return float(ls) if ls.ndim == 0 else ls.copy()


class RandomFourierFeatures:
    """phi(x) in R^D (EKS eq. 6) with E[phi(x)^T phi(x')] = k(x, x') / variance.

    Parameters
    ----------
    input_dim : number of input dimensions d.
    n_features : D, the number of columns of Phi (even; D/2 frequencies, a cos and a sin each).
    kernel : "se", "matern12", "matern32", "matern52" or a matching :mod:`gpexplorer.kernels`
        object (its lengthscale is used unless ``lengthscale`` is given; its variance is not:
        that is the weight prior variance of the model using these features).
    lengthscale : scalar or [d] ARD lengthscales.
    seed : seed of the fixed frequency draws.
    """

    def __init__(self, input_dim, n_features=200, kernel="se", lengthscale=None, seed=0):
        if isinstance(input_dim, bool) or not isinstance(input_dim, (int, np.integer)) or input_dim < 1:
            raise ValueError(f"input_dim must be a positive integer; got {input_dim!r}")
        if (isinstance(n_features, bool) or not isinstance(n_features, (int, np.integer))
                or n_features < 2 or n_features % 2):
            raise ValueError(f"n_features must be an even integer >= 2 (cos/sin pairs); got {n_features!r}")
        self.kernel = kernel_name(kernel)
        if lengthscale is None:
            lengthscale = kernel.lengthscale if isinstance(kernel, kernels.Kernel) else 1.0
        self.input_dim = int(input_dim)
        self.n_features = int(n_features)
        self.n_frequencies = self.n_features // 2
        self.seed = seed
        self._base = base_frequencies(self.kernel, self.n_frequencies, self.input_dim, seed)
        self._base.setflags(write=False)
        self.lengthscale = lengthscale

    @property
    def lengthscale(self):
        return self._lengthscale

    @lengthscale.setter
    def lengthscale(self, value):
        self._lengthscale = _check_lengthscale(value, self.input_dim)
        self._frequencies = np.ascontiguousarray((self._base / self._lengthscale).T)  # [d, m]

    @property
    def base_frequencies(self) -> np.ndarray:
        """Unit-lengthscale draws [m, d] (read-only)."""
        return self._base

    @property
    def frequencies(self) -> np.ndarray:
        """Angular frequencies w_i = base_i / lengthscale, [m, d]."""
        return self._frequencies.T.copy()

    def _inputs(self, X, name="X"):
        try:
            X = np.asarray(X, dtype=float)
        except (TypeError, ValueError):
            raise ValueError(f"{name} must be a numeric array") from None
        if X.ndim == 1 and self.input_dim == 1:
            X = X[:, None]
        if X.ndim != 2 or X.shape[1] != self.input_dim:
            raise ValueError(f"{name} must have shape (N, {self.input_dim}); got {X.shape}")
        if not np.all(np.isfinite(X)):
            raise ValueError(f"{name} contains {int(np.sum(~np.isfinite(X)))} NaN or infinite value(s)")
        return X

    def __call__(self, X) -> np.ndarray:
        """Phi = phi(X), shape [N, D]: cos block then sin block (EKS eq. 6)."""
        X = self._inputs(X)
        proj = X @ self._frequencies  # [N, m]
        return cos_sin_columns(proj, np.empty((X.shape[0], self.n_features)), 1.0 / np.sqrt(self.n_frequencies))

    transform = __call__

    def kernel_approximation(self, X, X2=None) -> np.ndarray:
        """phi(X) phi(X2)^T, the Monte Carlo estimate of k(X, X2) / variance (EKS eq. 5)."""
        P1 = self(X)
        P2 = P1 if X2 is None else self(self._inputs(X2, "X2"))
        return P1 @ P2.T

    def __repr__(self):
        return (f"RandomFourierFeatures(input_dim={self.input_dim}, n_features={self.n_features}, "
                f"kernel={self.kernel!r}, lengthscale={np.round(self.lengthscale, 4).tolist()}, seed={self.seed})")
