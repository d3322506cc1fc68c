"""Exact GP regression and the collapsed sparse approximations as models (thesis eq. 2.8-2.17,
2.37, 3.1): ``ExactGPR`` and ``SparseGPR``, sklearn-like with explicit fitted state.

>>> m = SparseGPR(X, y, kernel=kernels.SquaredExponential(), Z=Z, approximation="vfe")
>>> m.log_marginal_likelihood(eval_gradient=True)   # (value, {"variance", ..., "Z"})
>>> m.fit(max_iter=200, fixed=("Z",))                # L-BFGS-B on log-parameters
>>> mean, var = m.predict_y(Xnew)
"""

from __future__ import annotations

import numpy as np

from gpexplorer._checks import positive as _positive
from gpexplorer._checks import prediction_inputs, validate_data as _validate_data
from gpexplorer.inducing.placement import initial_inducing_inputs
from gpexplorer.kernels import Kernel, Stationary
from gpexplorer.linalg import CholeskyError
from gpexplorer.parameters import NOISE, KernelAndNoise, sum_gradients as _sum_dicts
from gpexplorer.sparse import objectives as sparse


class _GPRBase(KernelAndNoise):
    """Shared parameter handling, validation and fitting for the regression models."""

    def __init__(self, X, y, kernel, noise_variance):
        if not isinstance(kernel, Kernel):
            raise ValueError(f"kernel must be a gpexplorer.kernels.Kernel; got {type(kernel).__name__}")
        self.X, self.y = _validate_data(X, y)
        kernel.check_input_dim(self.X.shape[1])
        self.kernel = kernel
        self.noise_variance = _positive(NOISE, noise_variance, allow_array=False)
        self.jitter_used = 0.0
        self.fit_result = None

    def objective_terms(self) -> dict:
        """{"constant", "complexity", "data_fit", "trace"}: they sum to -log_marginal_likelihood()."""
        return dict(self._objective(grad=False).terms)

    def terms_and_predict_f(self, Xnew):
        """(objective_terms(), mean, var) of f at Xnew from one evaluation of the objective."""
        r = self._objective(grad=False)
        mean, var = self._predict_from(r, self._check_new(Xnew))
        return dict(r.terms), mean, var

    def log_marginal_likelihood(self, eval_gradient=False):
        """log p(y) (exact), the model evidence (SoR/DTC/FITC) or Titsias' bound (VFE).

        With ``eval_gradient`` returns (value, gradients) keyed like ``parameters``.
        """
        if not eval_gradient:
            return -self._objective(grad=False).value
        value, grads, _ = self.objective_and_gradient()
        return -value, {k: -v for k, v in grads.items()}

    def fit(self, max_iter=200, fixed=(), restarts=0, seed=None, callback=None, tol=None):
        """Jointly maximise the objective with L-BFGS-B; see :func:`gpexplorer.optimize.fit`."""
        from gpexplorer.optimize import fit

        self.fit_result = fit(self, max_iter=max_iter, fixed=fixed, restarts=restarts, seed=seed,
                              callback=callback, tol=tol)
        return self.fit_result

    def predict_y(self, Xnew, full_cov=False):
        """Predictive distribution of noisy observations: f's plus noise_variance."""
        mean, var = self.predict_f(Xnew, full_cov=full_cov)
        if full_cov:
            return mean, var + self.noise_variance * np.eye(len(mean))
        return mean, var + self.noise_variance

    def _check_new(self, Xnew):
        return prediction_inputs(Xnew, self.X.shape[1])

    def copy(self):
        import copy

        new = copy.copy(self)
        new.kernel = self.kernel.copy()
        new.fit_result = None
        return new


class ExactGPR(_GPRBase):
    """Exact GP regression, O(N^3) (R&W ch. 2); the reference every approximation is judged by."""

    def __init__(self, X, y, kernel, noise_variance=1.0, jitter=0.0):
        super().__init__(X, y, kernel, noise_variance)
        self.jitter = float(jitter)

    def _objective(self, grad):
        Kff = self.kernel.K(self.X)
        result = sparse.exact_objective(Kff, self.y, self.noise_variance, grad=grad, jitter=self.jitter)
        self.jitter_used = result.jitter_used
        result.extras["Kff"] = Kff
        return result

    def objective_and_gradient(self):
        """(F, dF/dparams, terms) with F = -log p(y)."""
        r = self._objective(grad=True)
        grads = self.kernel.grad_params(r.dKuu, self.X, None, K=r.extras["Kff"])
        grads[NOISE] = r.dnoise
        return r.value, grads, r.terms

    def predict_f(self, Xnew, full_cov=False):
        """Exact posterior of f at Xnew (R&W eq. 2.25-2.26)."""
        return self._predict_from(self._objective(grad=False), self._check_new(Xnew), full_cov)

    def _predict_from(self, r, Xnew, full_cov=False):
        L, alpha = r.extras["L"], r.extras["alpha"]
        Kfs = self.kernel.K(self.X, Xnew)
        mean = Kfs.T @ alpha
        V = sparse.solve_lower(L, Kfs)
        if full_cov:
            return mean, self.kernel.K(Xnew) - V.T @ V
        return mean, np.maximum(self.kernel.Kdiag(Xnew) - np.einsum("ns,ns->s", V, V), 0.0)


class SparseGPR(_GPRBase):
    """Inducing-point GP regression: SoR, DTC, FITC or VFE (thesis eq. 2.8-2.17, 2.37, 3.1).

    ``Z`` is an (M, D) array, or an int M to place M inducing inputs with ``z_init``
    ("even", "random", "kmeans") and ``seed``. ``jitter`` is added to diag(Kuu); if the
    Cholesky still fails it is escalated by factors of 10, the value used is kept in
    ``jitter_used`` and a :class:`gpexplorer.linalg.JitterWarning` is issued.
    """

    def __init__(self, X, y, kernel, Z, approximation="vfe", noise_variance=1.0, jitter=1e-6,
                 z_init="kmeans", seed=None):
        super().__init__(X, y, kernel, noise_variance)
        if approximation not in sparse.APPROXIMATIONS:
            raise ValueError(f"approximation must be one of {sparse.APPROXIMATIONS}; got {approximation!r}")
        self.approximation = approximation
        if not np.isfinite(jitter) or jitter < 0:
            raise ValueError(f"jitter must be a non-negative finite number; got {jitter!r}")
        self.jitter = float(jitter)
        if np.ndim(Z) == 0:
            Z = initial_inducing_inputs(self.X, Z, z_init, seed)
        self.Z = self._check_Z(Z)

    @classmethod
    def from_model(cls, other, approximation, **overrides):
        """A new model started at another fitted model's hyperparameters and Z (thesis §3.2.5:
        'VFE initialised with the FITC solution')."""
        kwargs = dict(X=other.X, y=other.y, kernel=other.kernel.copy(), Z=other.Z.copy(),
                      approximation=approximation, noise_variance=other.noise_variance, jitter=other.jitter)
        kwargs.update(overrides)
        return cls(**kwargs)

    def _check_Z(self, Z):
        try:
            Z = np.array(Z, dtype=float)
        except (TypeError, ValueError) as err:
            raise ValueError(f"Z must be a numeric array ({err})") from None
        if Z.ndim == 1:
            Z = Z[:, None] if self.X.shape[1] == 1 else Z[None, :]
        if Z.ndim != 2 or Z.shape[1] != self.X.shape[1]:
            raise ValueError(f"Z must have shape (M, {self.X.shape[1]}); got {Z.shape}")
        if Z.shape[0] == 0:
            raise ValueError("Z is empty; at least one inducing input is needed")
        if not np.all(np.isfinite(Z)):
            raise ValueError("Z contains NaN or infinite values")
        return np.ascontiguousarray(Z)

    @property
    def parameters(self) -> dict:
        p = super().parameters
        p["Z"] = self.Z.copy()
        return p

    def set_parameters(self, params: dict, validate=True):
        params = dict(params)
        if "Z" in params:
            Z = params.pop("Z")
            self.Z = self._check_Z(Z) if validate else np.ascontiguousarray(Z, dtype=float)
        return super().set_parameters(params, validate)

    def _matrices(self):
        Kuu = self.kernel.K(self.Z)
        Kuf = self.kernel.K(self.Z, self.X)
        kdiag = self.kernel.Kdiag(self.X)
        return Kuu, Kuf, kdiag

    def _objective(self, grad):
        Kuu, Kuf, kdiag = self._matrices()
        result, posterior = sparse.collapsed_objective(
            Kuu, Kuf, kdiag, self.y, self.noise_variance, self.jitter, self.approximation, grad=grad)
        self.jitter_used = result.jitter_used
        result.extras.update(Kuu=Kuu, Kuf=Kuf, posterior=posterior)
        return result

    def _chain(self, r):
        """Contract matrix gradients with the kernel: dF/dtheta and dF/dZ."""
        Kuu, Kuf = r.extras["Kuu"], r.extras["Kuf"]
        g_uu, dZ_uu = self.kernel.grad_params_and_X(r.dKuu, self.Z, None, K=Kuu)
        g_uf, dZ_uf = self.kernel.grad_params_and_X(r.dKuf, self.Z, self.X, K=Kuf)
        g_diag = self.kernel.grad_params_diag(r.dKdiag, self.X)
        grads = _sum_dicts(g_uu, g_uf, g_diag)
        grads[NOISE] = r.dnoise
        grads["Z"] = dZ_uu + dZ_uf
        return grads

    def objective_and_gradient(self):
        """(F, dF/dparams, terms) with F = -log_marginal_likelihood().

        Stationary kernels take the fused path (kernel matrices, objective and gradient
        contraction in one compiled call); other kernels contract matrix gradients in Python.
        """
        if isinstance(self.kernel, Stationary):
            kind, variance, lengthscale, alpha = self.kernel.fused_arguments(self.X.shape[1])
            F, terms, dvar, dl, dalpha, dnoise, dZ, self.jitter_used = sparse.fused_stationary_objective(
                kind, self.X, self.y, self.Z, variance, lengthscale, alpha, self.noise_variance,
                self.jitter, self.approximation)
            grads = self.kernel._pack(dvar, dl, dalpha)
            grads[NOISE] = dnoise
            grads["Z"] = dZ
            return F, grads, terms
        r = self._objective(grad=True)
        return r.value, self._chain(r), r.terms

    def upper_bound(self, eval_gradient=False):
        """Titsias (2014) upper bound on the exact log marginal likelihood (eq. 2.38-2.39)."""
        Kuu, Kuf, kdiag = self._matrices()
        r = sparse.upper_bound(Kuu, Kuf, kdiag, self.y, self.noise_variance, self.jitter, grad=eval_gradient)
        if not eval_gradient:
            return r.value
        r.extras.update(Kuu=Kuu, Kuf=Kuf)
        return r.value, self._chain(r)

    def tightened_upper_bound(self, max_iter=100):
        """Titsias' upper bound minimised over its own inducing inputs, hyperparameters fixed.

        Thesis §3.2.6, variant 2: starting from this model's Z, L-BFGS-B moves the bound's M
        inducing inputs to make it as tight as possible. Returns (bound, Z of the bound); the
        model itself is unchanged. Any bound value is valid, so a failed step only costs tightness.
        """
        probe = self.copy()
        shape = self.Z.shape

        def value_and_grad(z):
            probe.Z = z.reshape(shape)
            try:
                value, grads = probe.upper_bound(eval_gradient=True)
            except CholeskyError:
                return np.inf, np.zeros_like(z)
            return value, grads["Z"].ravel()

        from scipy.optimize import minimize  # on use, as in optimize.fit

        start = self.upper_bound()
        res = minimize(value_and_grad, self.Z.ravel(), jac=True, method="L-BFGS-B",
                       options={"maxiter": int(max_iter)})
        if not np.isfinite(res.fun) or res.fun >= start:
            return start, self.Z.copy()
        return float(res.fun), res.x.reshape(shape)

    def posterior(self) -> sparse.SparsePosterior:
        return self._objective(grad=False).extras["posterior"]

    def q_u(self):
        """(mu [M], Sigma [M, M]) of the Gaussian over inducing outputs q(u)."""
        post = self.posterior()
        return post.q_mu, post.q_sigma

    def predict_f(self, Xnew, full_cov=False):
        """Predictive f at Xnew (eq. 2.10); SoR uses the deterministic conditional (fig. 2.3)."""
        return self._predict_from(self._objective(grad=False), self._check_new(Xnew), full_cov)

    def _predict_from(self, r, Xnew, full_cov=False):
        post = r.extras["posterior"]
        Kus = self.kernel.K(self.Z, Xnew)
        conditional = "deterministic" if self.approximation == "sor" else "exact"
        if full_cov:
            return post.predict(Kus, Kss=self.kernel.K(Xnew), conditional=conditional)
        return post.predict(Kus, kss_diag=self.kernel.Kdiag(Xnew), conditional=conditional)

    def predict_components(self, Xnew):
        """The g(.)/h(.) split of eq. 2.22-2.24: (g mean, g var, h var) at Xnew."""
        Xnew = self._check_new(Xnew)
        return self.posterior().gh_split(self.kernel.K(self.Z, Xnew), self.kernel.Kdiag(Xnew))
