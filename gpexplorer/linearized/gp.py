"""Extended and unscented Gaussian processes (EGP, UGP): a full GP with a nonlinear likelihood.

Steinberg & Bonilla (2014), "Extended and Unscented Gaussian Processes" (the EGP paper),
sections 2.5-3.2. The model is eq. 32: f ~ GP(0, k), y_n = g(f_n) + N(0, sigma^2). The
posterior q(f) = N(m, C) is found by linearising g about the current posterior, g(f_n) ~=
a_n f_n + b_n, by a first-order Taylor series (EGP, eq. 36) or by statistical linearisation with
sigma points drawn from the posterior marginals N(m_n, C_nn) (UGP, eq. 37).

Numerically stable form used throughout. With A = diag(a), Lambda = sigma^2 I and s = a / sigma:

    B = Lambda + A K A = sigma^2 W,   W = I + diag(s) K diag(s)      (eigenvalues >= 1)
    H (y - b) = K diag(s) W^-1 (y - b) / sigma                       (eq. 34)
    C = (I - H A) K = K - K diag(s) W^-1 diag(s) K                   (eq. 35)
    log|C| - log|K| = -log|W|                                        (eq. 41)

so every iteration factorises W only (one Cholesky), a flat likelihood (a_n ~ 0, e.g. a
saturated logistic) just makes W ~ I, and K is never inverted. The mean is carried together with
beta = K^-1 m (the update (34) keeps m = K beta exactly), hence m^T K^-1 m = m^T beta in (31) and
(41), and the predictions (38) become m* = k*^T beta and C* = k** - |L_W^-1 diag(s) k*|^2,
because K^-1 [I - C K^-1] = diag(s) W^-1 diag(s).

The outer loop (section 3.2) maximises the approximate free energy (41) over the log kernel
hyperparameters and the log noise variance (:mod:`gpexplorer.linearized.learning`): by default
by Fisher scoring on the gradient of F in a trust region, which on the Table 1 problems needs
4-10 evaluations of F (and one gradient per iteration) against about 20 for scipy's COBYLA, 70
for Nelder-Mead and 170+ for Powell, in about 40% of COBYLA's time
(``tests/benchmarks/bench_linearized_gp.py --method fisher,cobyla``); or with one of those
derivative-free methods, as the paper did (BOBYQA). Every inner loop of a search restarts from
the posterior of the best evaluation so far (:func:`gauss_newton`, ``restart_from``), which
needs no factorisation of K.
"""

from __future__ import annotations

import math

import numpy as np
from scipy.linalg import lapack

from gpexplorer import kernels
from gpexplorer.linearized.gauss_newton import (Linearizer, NumericalFailure, gauss_newton, posterior_var,
                                                scaled_rows)
from gpexplorer.linalg import CholeskyError, jittered_cholesky
from gpexplorer import validation
from gpexplorer.validation import prediction_inputs, validate_data as _validate_data
from gpexplorer.parameters import NOISE, KernelAndNoise
from gpexplorer.linearized.linearization import LINEARIZATION_ALIASES, sigma_point_weights
from gpexplorer.linearized.fixed_point import posterior_fixed_point
from gpexplorer.linearized.fitting import check_count, fit_free_energy
from gpexplorer import _threads

__all__ = ["LinearizedGP", "LINEARIZATIONS", "FIT_METHODS", "INNER_LOOPS", "PAPER_BOUNDS"]

#: accepted spellings of the two linearisations
#: the linearisation names this model accepts: the shared aliases without the kitchen sinks' own
LINEARIZATIONS = {k: v for k, v in LINEARIZATION_ALIASES.items() if k not in ("eks", "uks")}
#: hyperparameter searches accepted by :meth:`LinearizedGP.fit`: Fisher scoring
#: (:mod:`gpexplorer.linearized.learning`) and scipy's derivative-free minimisers
FIT_METHODS = ("fisher", "cobyla", "nelder-mead", "powell")
#: EGP paper section 4.1's search box, natural scale (``model.set_bounds(**PAPER_BOUNDS)``): amplitude
#: and lengthscale bounded below at 0.1, the noise at 0.01. The original code bounds the noise
#: *standard deviation* at 0.01 (``learnLB(..., ynoise=1e-2)``), i.e. sigma^2 >= 1e-4, and the
#: amplitude sigma_m52 at 0.1, i.e. variance >= 0.01; we follow the code.
PAPER_BOUNDS = {"variance": (0.01, 1e6), "lengthscale": (0.1, 1e6), "noise_variance": (1e-4, 1e6)}
#: inner loops: the paper's step search on the MAP objective (31), or the fixed point of the
#: statistical linearisation (:mod:`gpexplorer.linearized.fixed_point`, UGP only)
INNER_LOOPS = ("map-search", "fixed-point")
_LOG_2PI = math.log(2.0 * math.pi)
#: numpy's hermegauss returns NaN nodes from about 400 points on
MAX_QUADRATURE_POINTS = 300


# ------------------------------------------------------------------------------------------
# the model
# ------------------------------------------------------------------------------------------
def _check_positive(name, value):
    try:
        v = float(value)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be a positive number; got {value!r}") from None
    if not (math.isfinite(v) and v > 0.0):
        raise ValueError(f"{name} must be a positive finite number; got {value!r}")
    return v


class LinearizedGP(KernelAndNoise):
    """EGP / UGP regression with a scalar forward model g (EGP paper section 3).

    >>> m = LinearizedGP(X, y, forward="sin", linearization="taylor",
    ...                  kernel=kernels.Matern52(variance=1.0, lengthscale=1.0), noise_variance=1.0)
    >>> m.fit()                          # free-energy maximisation (section 3.2)
    >>> mf, vf = m.predict_f(Xnew)       # eq. 38
    >>> my, vy = m.predict_y(Xnew)       # eq. 39 (or method="unscented": eq. 40)

    ``forward`` is a registered name, an expression in ``f`` or a ForwardModel with one latent
    input and one output (multi-output models belong to
    ``gpexplorer.linearized.kitchen_sinks.LinearizedKitchenSinks``). ``linearization`` is "taylor" (alias
    "egp") or "unscented" (alias "ugp"); ``kappa`` is the unscented spread parameter (eq. 21-26:
    sigma points m_n +- sqrt((1 + kappa) C_nn); 0.5 gives equal weights). ``max_iter``, ``tol``,
    ``max_step_cuts`` and ``step_shrink`` control the inner loop (the step length starts at 1 and
    is multiplied by ``step_shrink`` up to ``max_step_cuts`` times; 0.75 and 24 are the original
    linearizedGP code's values). ``inner_loop``: "map-search" (default) is the
    paper's Gauss-Newton loop with the step search on the MAP objective (31)
    (:func:`gauss_newton`, the EGP's only loop); "fixed-point" (UGP only) solves for the fixed
    point of the statistical linearisation
    (:func:`gpexplorer.linearized.fixed_point.posterior_fixed_point`), which makes the UGP's free
    energy a smooth function of the hyperparameters where the paper's loop stops on 'diverge',
    at about three times the cost per fit. ``jitter`` is the first
    jitter tried by the Cholesky of K that :meth:`fit_posterior` (``warm_start=True``) needs;
    the value used is kept in ``jitter_used``. The kernel defaults to Matern 5/2 with unit
    variance and lengthscale, the paper's choice.

    State after :meth:`fit_posterior` or :meth:`fit`: ``posterior_mean``, ``posterior_var``,
    ``posterior_cov``, ``linearization`` (the a_n, b_n that define the posterior), ``trace``
    (one :class:`gpexplorer.linearized.gauss_newton.IterationRecord` per Gauss-Newton iteration),
    ``converged``, ``diverged``.
    """

    def __init__(self, X, Y, forward="identity", linearization="taylor", kernel=None, *,
                 noise_variance=1.0, kappa=0.5, max_iter=100, tol=1e-6, max_step_cuts=24,
                 step_shrink=0.75, jitter=0.0, inner_loop="map-search"):
        from gpexplorer.likelihoods.forward_models import get_forward_model, not_differentiable_message

        # |X| <= 1e100 as every model; Y only finite: the forward model's overflow is checked where it happens
        self.X, self.y = _validate_data(X, Y, y_limit=None)  # Y [N, 1] or a 1-D y; kept as y [N]
        if kernel is None:
            kernel = kernels.Matern52(variance=1.0, lengthscale=1.0)
        if not isinstance(kernel, kernels.Kernel):
            raise ValueError(f"kernel must be a gpexplorer.kernels.Kernel; got {type(kernel).__name__}")
        kernel.check_input_dim(self.X.shape[1])
        self.kernel = kernel
        key = linearization.lower() if isinstance(linearization, str) else linearization
        if key not in LINEARIZATIONS:
            raise ValueError(f"linearization must be 'taylor' (EGP) or 'unscented' (UGP); got {linearization!r}")
        self.linearization_method = LINEARIZATIONS[key]
        self.forward = get_forward_model(forward)
        if self.forward.n_latent != 1 or self.forward.n_outputs != 1:
            raise ValueError(
                f"forward model {self.forward.name!r} maps {self.forward.n_latent} latent function(s) to "
                f"{self.forward.n_outputs} output(s), but LinearizedGP handles scalar models only (one latent, "
                "one output); use gpexplorer.linearized.kitchen_sinks.LinearizedKitchenSinks for multi-task models")
        if self.linearization_method == "taylor" and not self.forward.differentiable:
            raise ValueError(not_differentiable_message(self.forward.name, "no derivative everywhere"))
        self.noise_variance = _check_positive(NOISE, noise_variance)
        try:
            sigma_point_weights(1, kappa)
        except (TypeError, ValueError) as err:
            raise ValueError(f"invalid kappa: {err}") from None
        self.kappa = float(kappa)
        self.max_iter = check_count("max_iter", max_iter, 1)
        self.max_step_cuts = check_count("max_step_cuts", max_step_cuts, 0)
        self.step_shrink = _check_positive("step_shrink", step_shrink)
        if not self.step_shrink < 1.0:
            raise ValueError(f"step_shrink must lie in (0, 1); got {step_shrink!r}")
        self.tol = _check_positive("tol", tol)
        if inner_loop not in INNER_LOOPS:
            raise ValueError(f"inner_loop must be one of {INNER_LOOPS}; got {inner_loop!r}")
        if inner_loop == "fixed-point" and self.linearization_method != "unscented":
            raise ValueError("inner_loop='fixed-point' is the UGP's (linearization='unscented'); the EGP's "
                             "Gauss-Newton loop is 'map-search'")
        self.inner_loop = inner_loop
        try:
            jitter = float(jitter)
        except (TypeError, ValueError):
            raise ValueError(f"jitter must be a non-negative number; got {jitter!r}") from None
        if not (math.isfinite(jitter) and jitter >= 0.0):
            raise ValueError(f"jitter must be a non-negative finite number; got {jitter!r}")
        self.jitter = jitter
        self.jitter_used = 0.0
        self.fit_result = None
        self._linearize = Linearizer(self.forward, self.linearization_method, self.kappa)
        self._post = None
        self._last_post = None  # survives parameter changes: the source of warm starts
        self._K = None

    def set_parameters(self, **values):
        """Assign kernel hyperparameters and/or ``noise_variance`` by name; drops the posterior."""
        super().set_parameters(**values)
        self._post, self._K = None, None
        return self

    # inner loop -----------------------------------------------------------------------------
    def _kernel_matrix(self):
        if self._K is None:
            K = self.kernel.K(self.X)
            if not np.all(np.isfinite(K)):
                raise NumericalFailure("the kernel matrix contains NaN or inf; check the hyperparameters")
            self._K = K
        return self._K

    def _set_posterior(self, post):
        self._post = self._last_post = post

    def search_step(self, restart_from=None):
        """One evaluation of a hyperparameter search (:mod:`gpexplorer.linearized.learning`): the
        inner loop at the current hyperparameters, from the prior or restarted from the mean and
        variances of ``restart_from`` (an earlier search step's posterior); its posterior becomes
        current but not the source of later warm starts. Returns (posterior, kernel matrix K)."""
        source = None
        if restart_from is not None:
            source = (restart_from.mean, restart_from.var if restart_from.var is not None else restart_from.spread)
        self._post = self._inner(restart_from=source)
        return self._post, self._K

    def adopt_posterior(self, post, K):
        """Make a posterior returned by :meth:`search_step` (with its kernel matrix K) current,
        without running the inner loop again."""
        self._K = K
        self._set_posterior(post)

    def _inner(self, start=None, restart_from=None):
        if self.inner_loop == "fixed-point":
            loop, step_search = posterior_fixed_point, {}
        else:
            loop, step_search = gauss_newton, {"max_step_cuts": self.max_step_cuts, "shrink": self.step_shrink}
        with np.errstate(over="ignore", invalid="ignore"):
            return loop(self._kernel_matrix(), self.y, self.noise_variance, self.forward, self._linearize, start,
                        restart_from=restart_from, max_iter=self.max_iter, tol=self.tol, **step_search)

    def _warm_start(self, previous):
        """(mean, beta, var) that start the inner loop at a previous posterior's mean.

        beta = K^-1 m_prev needs the Cholesky of the current K (jitter escalated when needed,
        kept in ``jitter_used``); the mean is re-expressed as K beta so that m = K beta holds
        exactly. None (start from the prior) when K cannot be factorised at all.
        """
        K = self._kernel_matrix()
        try:
            L, self.jitter_used = jittered_cholesky(K, self.jitter, what="the kernel matrix K", warn=False)
        except CholeskyError:
            return None
        beta = lapack.dpotrs(L, previous.mean, lower=1)[0]
        return K @ beta, beta, previous.var if previous.var is not None else previous.spread

    def fit_posterior(self, warm_start=False):
        """Inner loop only (eq. 34-37) at the current hyperparameters; returns self.

        Starts from the prior (m = 0, C = K), or with ``warm_start`` from the last posterior
        computed by this model (possibly at other hyperparameters). Raises ValueError
        (:class:`NumericalFailure`) when g overflows at these hyperparameters.
        """
        previous = self._post or self._last_post
        with _threads.single_threaded():
            start = self._warm_start(previous) if (warm_start and previous is not None) else None
            self._set_posterior(self._inner(start))
        return self

    def _posterior(self):
        if self._post is None:
            self.fit_posterior()
        return self._post

    # results --------------------------------------------------------------------------------
    @property
    def posterior_mean(self) -> np.ndarray:
        """m, the posterior mean of f at the training inputs (N,)."""
        return self._posterior().mean.copy()

    @property
    def posterior_var(self) -> np.ndarray:
        """diag(C), the posterior variances of f at the training inputs (N,); eq. 35."""
        post = self._posterior()
        if post.var is None:
            post.var = posterior_var(self._kernel_matrix(), post.s, post.chol_W)
        return post.var.copy()

    @property
    def posterior_cov(self) -> np.ndarray:
        """C = (I - H A) K (eq. 35), the full (N, N) posterior covariance."""
        post = self._posterior()
        K = self._kernel_matrix()
        V = lapack.dtrtrs(post.chol_W, scaled_rows(post.s, K), lower=1)[0]
        return K - V.T @ V

    @property
    def linearization(self):
        """The Linearization (a_n = A[n, 0, 0], b_n = b[n, 0], ...) behind the posterior (eq. 36/37)."""
        return self._posterior().linearization

    @property
    def trace(self) -> list:
        """IterationRecords of the last inner loop (iteration 0 is its starting mean)."""
        return list(self._posterior().trace)

    @property
    def converged(self) -> bool:
        """True when the last inner loop met its tolerance (including a stalled step search)."""
        return self._posterior().converged

    @property
    def diverged(self) -> bool:
        """True when the last inner loop ended with the step search's 'diverge' condition."""
        return self._posterior().diverged

    def map_objective(self) -> float:
        """Eq. 31 at the current posterior mean."""
        return self._posterior().map_objective

    def free_energy_terms(self) -> dict:
        """The four parts of -F (eq. 41); they sum to -free_energy().

        "constant" N log(2 pi sigma^2) / 2, "complexity" (log|K| - log|C|) / 2 = log|W| / 2,
        "prior" m^T K^-1 m / 2, "data_fit" |y - A m - b|^2 / (2 sigma^2).
        """
        post = self._posterior()
        lin = post.linearization
        r = self.y - lin.A[:, 0, 0] * post.mean - lin.b[:, 0]
        n = self.y.shape[0]
        return {"constant": 0.5 * n * (_LOG_2PI + math.log(self.noise_variance)),
                "complexity": float(np.sum(np.log(np.diag(post.chol_W)))),
                "prior": 0.5 * float(post.mean @ post.beta),
                "data_fit": 0.5 * float(r @ r) / self.noise_variance}

    def free_energy(self) -> float:
        """The approximate free energy F of eq. 41 at the current posterior."""
        return -math.fsum(self.free_energy_terms().values())

    def objective(self) -> float:
        """-free_energy(): the value ``fit`` minimises (``FitResult.objective``)."""
        return -self.free_energy()

    @property
    def Y(self):
        """[N, 1] targets, as every model's ``Y`` [N, P] (``y`` is the same column, [N])."""
        return self.y[:, None]

    # prediction -----------------------------------------------------------------------------
    def _check_new(self, Xnew):
        return prediction_inputs(Xnew, self.X.shape[1], min_rows=1)

    def predict_f(self, Xnew, full_cov=False):
        """Mean and variance of the latent f* (eq. 38), each (S,); with ``full_cov`` the (S, S) covariance.

        m* = k*^T K^-1 m and C* = k** - k*^T K^-1 [I - C K^-1] k*, evaluated as m* = k*^T beta
        and C* = k** - |L_W^-1 S k*|^2 (module docstring).
        """
        Xnew = self._check_new(Xnew)
        post = self._posterior()
        Ks = self.kernel.K(self.X, Xnew)
        V = lapack.dtrtrs(post.chol_W, scaled_rows(post.s, Ks), lower=1)[0]
        if full_cov:
            return Ks.T @ post.beta, self.kernel.K(Xnew) - V.T @ V
        var = self.kernel.Kdiag(Xnew) - np.einsum("ij,ij->j", V, V)
        return Ks.T @ post.beta, np.maximum(var, 0.0)

    def predict_y(self, Xnew, method="quadrature", n_points=40):
        """Mean and variance of a noisy observation y* = g(f*) + eps, each (S,).

        "quadrature": E[g(f*)] (eq. 39) and Var[g(f*)] under f* ~ N(m*, C*) by Gauss-Hermite
        quadrature with ``n_points`` nodes (at most 300). A g with a jump (sign_cubic) limits its
        accuracy: a jump near the bulk of N(m*, C*) costs about jump x node weight there, and more
        nodes barely help (tests/test_linearized_gp.py measures it). "unscented": the unscented
        transform of eq. 40 with this model's kappa. The variance includes the noise variance
        sigma^2.
        """
        mean_f, var_f = self.predict_f(Xnew)
        if method == "quadrature":
            n_points = check_count("n_points", n_points, 1)
            if n_points > MAX_QUADRATURE_POINTS:
                raise ValueError(f"n_points must be at most {MAX_QUADRATURE_POINTS} (numpy's Gauss-Hermite nodes are "
                                 f"not finite beyond that); got {n_points}")
            nodes, weights = np.polynomial.hermite_e.hermegauss(n_points)
            weights = weights / weights.sum()
            F = mean_f[:, None] + np.sqrt(var_f)[:, None] * nodes
        elif method == "unscented":
    
            weights = sigma_point_weights(1, self.kappa)
            spread = np.sqrt((1.0 + self.kappa) * var_f)
            F = np.stack([mean_f, mean_f + spread, mean_f - spread], axis=1)
        else:
            raise ValueError(f"method must be 'quadrature' (eq. 39) or 'unscented' (eq. 40); got {method!r}")
        with np.errstate(over="ignore", invalid="ignore"):
            G = self.forward.value(F.reshape(-1, 1)).reshape(F.shape)
            mean_y = G @ weights
            var_y = ((G - mean_y[:, None]) ** 2) @ weights
        if not (np.all(np.isfinite(mean_y)) and np.all(np.isfinite(var_y))):
            raise NumericalFailure(f"forward model {self.forward.name!r} overflowed over the predictive "
                                   "distribution of f*")
        return mean_y, np.maximum(var_y, 0.0) + self.noise_variance

    # outer loop -----------------------------------------------------------------------------
    def fit(self, max_iter=200, fixed=(), restarts=0, seed=None, callback=None, *, method="fisher", xtol=0.1,
            ftol=0.05, initial_step=1.0):
        """Maximise the free energy (41) over the log hyperparameters and log noise variance.

        ``method`` "fisher" (default): Fisher scoring with the gradient of F and the Fisher
        information of the linearised model in a trust region, accepting only steps that improve
        F (:func:`gpexplorer.linearized.learning.fisher_scoring`); the gradient is exact for the
        EGP and holds the linearisation fixed for the UGP. Derivative-free, as EGP paper section
        3.2 (which used BOBYQA): scipy's "cobyla", "nelder-mead" or "powell". All work on the
        logs of the free parameters inside their bounds (``parameter_specs``; change them with
        :meth:`set_bounds`). ``fixed`` names parameters to keep ("kernel" fixes every kernel
        hyperparameter). ``max_iter`` is the budget of free-energy evaluations (each one an inner
        loop). ``ftol`` is the change of F in nats that no longer matters (Fisher scoring stops
        when its next step is predicted to gain less than ftol / 10; Nelder-Mead stops when its
        simplex's values differ by less); ``xtol`` the final step in log units and
        ``initial_step`` the first step for the derivative-free methods (COBYLA's final and
        first trust radius, the simplex size, Powell's line tolerance and first steps). The
        first inner loop of a search starts from the prior, each later one from the posterior of
        the search's best evaluation so far. ``restarts`` extra searches start from the
        log-parameters perturbed with sd 0.5 (``seed``); the best search is kept.
        ``callback(entry)`` receives each evaluation's TraceEntry (objective = -F, its terms,
        the parameters); returning True stops the fit. The model is left at the best
        parameters found, with that evaluation's posterior; returns a FitResult (``n_iter``:
        Fisher iterations, or evaluations for the derivative-free methods) whose trace is the
        best search's (:mod:`gpexplorer.linearized.fitting`).
        """
        if method not in FIT_METHODS:
            raise ValueError(f"method must be one of {FIT_METHODS}; got {method!r}")
        max_iter = check_count("max_iter", max_iter, 1)
        xtol, ftol = _check_positive("xtol", xtol), _check_positive("ftol", ftol)
        initial_step = _check_positive("initial_step", initial_step)
        if callback is not None and not callable(callback):
            raise ValueError("callback must be callable")
        seed = validation.seed(seed)
        restarts = validation.count("restarts", restarts, 0, validation.MAX_ITERATIONS)
        self.fit_result = fit_free_energy(self, max_iter, fixed, restarts, seed, callback, method=method, xtol=xtol,
                                          ftol=ftol, initial_step=initial_step)
        return self.fit_result
