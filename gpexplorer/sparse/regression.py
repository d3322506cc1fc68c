"""Exact GP regression and the collapsed sparse approximations as models (thesis eq. 2.8-2.17,
2.37, 3.1): ``ExactGPR`` and ``SparseGPR``, sklearn-like with explicit fitted state.

>>> m = SparseGPR(X, Y, kernel=kernels.SquaredExponential(), Z=Z, approximation="vfe")
>>> m.log_marginal_likelihood(eval_gradient=True)   # (value, {"variance", ..., "Z"})
>>> m.fit(max_iter=200, fixed=("Z",))                # L-BFGS-B on log-parameters
>>> mean, var = m.predict_y(Xnew)
"""

from __future__ import annotations

import copy

import numpy as np

from gpexplorer import covariances
from gpexplorer import validation
from gpexplorer.validation import positive as _positive
from gpexplorer.validation import prediction_inputs, validate_data as _validate_data
from gpexplorer.inducing import InducingFeature, as_feature, initial_inducing_inputs
from gpexplorer.kernels import Kernel
from gpexplorer.linalg import CholeskyError
from gpexplorer.optimize import Packer, fit, lbfgsb
from gpexplorer.parameters import NOISE, KernelAndNoise, sum_gradients as _sum_dicts
from gpexplorer.sparse import objectives as sparse
from gpexplorer.sparse.fused import FUSED_OBJECTIVES
from gpexplorer.workspace import Workspace


class _GPRBase(KernelAndNoise):
    """Shared parameter handling, validation and fitting for the regression models."""

    def __init__(self, X, Y, kernel, noise_variance):
        if not isinstance(kernel, Kernel):
            raise ValueError(f"kernel must be a gpexplorer.kernels.Kernel; got {type(kernel).__name__}")
        self.X, self.y = _validate_data(X, Y)  # Y [N, 1] or a 1-D y; kept as y [N]
        kernel.check_input_dim(self.X.shape[1])
        self.kernel = kernel
        self.noise_variance = _positive(NOISE, noise_variance, allow_array=False)
        self.jitter_used = 0.0
        self.fit_result = None

    @property
    def Y(self):
        """[N, 1] targets, as every model's ``Y`` [N, P] (``y`` is the same column, [N])."""
        return self.y[:, None]

    def objective(self) -> float:
        """-log_marginal_likelihood(): the value ``fit`` minimises (``FitResult.objective``)."""
        return -self.log_marginal_likelihood()

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

    def fit(self, max_iter=200, fixed=(), restarts=0, seed=None, callback=None, tol=None, cancel=None):
        """Jointly maximise the objective with L-BFGS-B; see :func:`gpexplorer.optimize.fit`
        (``cancel``: an Event-like object or a callable ending the fit between evaluations)."""
        max_iter = validation.count("max_iter", max_iter, 0, validation.MAX_ITERATIONS)
        restarts = validation.count("restarts", restarts, 0, validation.MAX_ITERATIONS)
        seed, tol = validation.seed(seed), validation.tolerance("tol", tol)
        if callback is not None and not callable(callback):
            raise ValueError(f"callback must be callable; got {type(callback).__name__}")
        self.fit_result = fit(self, max_iter=max_iter, fixed=fixed, restarts=restarts, seed=seed,
                              callback=callback, tol=tol, cancel=cancel)
        return self.fit_result

    def predict_y(self, Xnew, full_cov=False):
        """Predictive distribution of noisy observations: f's plus noise_variance."""
        mean, var = self.predict_f(Xnew, full_cov=full_cov)
        if full_cov:
            return mean, var + self.noise_variance * np.eye(len(mean))
        return mean, var + self.noise_variance

    def _check_new(self, Xnew):
        Xnew = prediction_inputs(Xnew, self.X.shape[1])
        m = len(self.inducing) if hasattr(self, "inducing") else self.X.shape[0]
        validation.check_memory(f"Xnew with {len(Xnew):,} rows", 8 * 2 * m * len(Xnew),
                                "predict in smaller blocks of rows")
        return Xnew

    def copy(self):
        new = copy.copy(self)
        new.kernel = self.kernel.copy()
        if hasattr(self, "inducing"):
            new.inducing = self.inducing.copy()
            new.workspace = Workspace()  # a copy evaluated on another thread must not wait
        new.fit_result = None
        return new


class ExactGPR(_GPRBase):
    """Exact GP regression, O(N^3) (R&W ch. 2); the reference every approximation is judged by."""

    def __init__(self, X, Y, kernel, noise_variance=1.0, jitter=0.0):
        super().__init__(X, Y, kernel, noise_variance)
        self.jitter = float(jitter)

    @property
    def evaluation_work(self):
        """N^3: the flops scale of one evaluation (decides BLAS threads)."""
        return self.X.shape[0] ** 3

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
    """Sparse GP regression with any inducing feature: SoR, DTC, FITC or VFE (thesis eq. 2.8-2.17,
    2.37, 3.1).

    ``Z`` is an inducing feature (:mod:`gpexplorer.inducing`), an (M, D) array of inducing
    inputs, or an int M to place M inducing inputs with ``z_init`` ("even", "random", "kmeans")
    and ``seed``. The feature's parameters join the model's (``"Z"`` for inducing points); its
    covariances come from :mod:`gpexplorer.covariances`. ``jitter`` is added to diag(Kuu); if
    the Cholesky still fails it is escalated by factors of 10, the value used is kept in
    ``jitter_used`` and a :class:`gpexplorer.linalg.JitterWarning` is issued.
    """

    def __init__(self, X, Y, kernel, Z, approximation="vfe", *, noise_variance=1.0, jitter=1e-6,
                 z_init="kmeans", seed=None):
        super().__init__(X, Y, kernel, noise_variance)
        if approximation not in sparse.APPROXIMATIONS:
            raise ValueError(f"approximation must be one of {sparse.APPROXIMATIONS}; got {approximation!r}")
        self.approximation = approximation
        self.jitter = validation.jitter(jitter)
        N = self.X.shape[0]
        if not isinstance(Z, InducingFeature) and np.ndim(Z) == 0:
            M = validation.inducing_count(Z, N, "Z")  # before placement allocates anything
            Z = initial_inducing_inputs(self.X, M, z_init, validation.seed(seed))
        self.inducing = as_feature(Z, self.X.shape[1])
        validation.inducing_count(len(self.inducing), N, "Z")
        self.workspace = Workspace()  # [M, N] work arrays reused between evaluations
        clash = set(self.inducing.param_names) & (set(self.kernel.param_names) | {NOISE})
        if clash:
            raise ValueError(f"the inducing feature's parameter(s) {sorted(clash)} clash with the kernel's or the noise")

    @classmethod
    def from_model(cls, other, approximation, **overrides):
        """A new model started at another fitted model's hyperparameters and inducing feature
        (thesis §3.2.5: 'VFE initialised with the FITC solution')."""
        kwargs = dict(X=other.X, Y=other.y, kernel=other.kernel.copy(), Z=other.inducing.copy(),
                      approximation=approximation, noise_variance=other.noise_variance, jitter=other.jitter)
        kwargs.update(overrides)
        return cls(**kwargs)

    @property
    def Z(self):
        """[M, D] locations of the inducing feature (the inducing inputs for inducing points)."""
        return self.inducing.locations

    @property
    def evaluation_work(self):
        """N M^2: the flops scale of one evaluation (decides BLAS threads)."""
        return self.X.shape[0] * len(self.inducing) ** 2

    @property
    def parameters(self) -> dict:
        return {**super().parameters, **self.inducing.parameters}

    @property
    def parameter_specs(self) -> dict:
        return {**super().parameter_specs, **self.inducing.parameter_specs}

    def _feature_values(self, params):
        return {n: params.pop(n) for n in self.inducing.param_names if n in params}

    def set_parameters(self, **values):
        params = dict(values)
        feature = self._feature_values(params)
        if feature:
            self.inducing.set_parameters(**feature)
        return super().set_parameters(**params)

    def _set_component_bounds(self, name, spec):
        if name in self.inducing.param_names:
            raise ValueError(f"{name!r} is a parameter of the inducing feature; its bounds are the feature's")
        super()._set_component_bounds(name, spec)

    def _matrices(self):
        Kuu = covariances.Kuu(self.inducing, self.kernel)
        Kuf = covariances.Kuf(self.inducing, self.kernel, self.X)
        kdiag = self.kernel.Kdiag(self.X)
        return Kuu, Kuf, kdiag

    def _objective(self, grad):
        Kuu, Kuf, kdiag = self._matrices()
        result, posterior = sparse.collapsed_objective(
            Kuu, Kuf, kdiag, self.y, self.noise_variance, self.jitter, self.approximation, grad=grad,
            workspace=self.workspace)
        self.jitter_used = result.jitter_used
        result.extras.update(Kuu=Kuu, Kuf=Kuf, posterior=posterior)
        return result

    def _chain(self, r):
        """Contract matrix gradients through the covariances: dF/dtheta, dF/d(feature)."""
        g_kernel, g_feature = covariances.gradients(self.inducing, self.kernel, self.X, r.dKuu, r.dKuf,
                                                    Kuu=r.extras["Kuu"], Kuf=r.extras["Kuf"])
        grads = _sum_dicts(g_kernel, self.kernel.grad_params_diag(r.dKdiag, self.X))
        grads[NOISE] = r.dnoise
        grads.update(g_feature)
        return grads

    def objective_and_gradient(self):
        """(F, dF/dparams, terms) with F = -log_marginal_likelihood().

        A (feature, kernel) pair with a fused path (:mod:`gpexplorer.sparse.fused`: inducing
        points, or sums of single deltas, with a stationary kernel) computes matrices, objective and contraction in one
        compiled call; every other pair goes through :mod:`gpexplorer.covariances`.
        """
        fused = FUSED_OBJECTIVES.find(type(self.inducing), type(self.kernel))
        out = None if fused is None else fused(self.inducing, self.kernel, self.X, self.y, self.noise_variance,
                                               self.jitter, self.approximation, workspace=self.workspace)
        if out is not None:
            F, grads, g_feature, terms, self.jitter_used = out
            grads.update(g_feature)
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
        """Titsias' upper bound minimised over its own inducing feature, hyperparameters fixed.

        Thesis §3.2.6, variant 2: starting from this model's feature, L-BFGS-B moves the bound's
        M inducing variables (every feature parameter, in its own bounds) to make it as tight
        as possible. Returns (bound, locations [M, D] of the bound's feature); the model itself
        is unchanged. Any bound value is valid, so a failed step only costs tightness.
        """
        probe = self.copy()
        packer = Packer(self.inducing.parameter_specs, self.inducing.parameters)

        def value_and_grad(x):
            values = packer.unpack(x)
            probe.set_parameters(**values)
            try:
                value, grads = probe.upper_bound(eval_gradient=True)
            except CholeskyError:
                return np.inf, np.zeros_like(x)
            return value, packer.chain(values, grads)

        start = self.upper_bound()
        run = lbfgsb(value_and_grad, packer.pack(self.inducing.parameters), *packer.box(), max_iter=max_iter)
        if not np.isfinite(run.objective) or run.objective >= start:
            return start, self.Z.copy()
        probe.set_parameters(**packer.unpack(run.x))
        return run.objective, probe.Z.copy()

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
        Kus = covariances.Kuf(self.inducing, self.kernel, Xnew)
        conditional = "deterministic" if self.approximation == "sor" else "exact"
        if full_cov:
            return post.predict(Kus, Kss=self.kernel.K(Xnew), conditional=conditional)
        return post.predict(Kus, kss_diag=self.kernel.Kdiag(Xnew), conditional=conditional)

    def predict_components(self, Xnew):
        """The g(.)/h(.) split of eq. 2.22-2.24: (g mean, g var, h var) at Xnew."""
        Xnew = self._check_new(Xnew)
        Kus = covariances.Kuf(self.inducing, self.kernel, Xnew)
        return self.posterior().gh_split(Kus, self.kernel.Kdiag(Xnew))
