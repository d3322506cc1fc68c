"""Extended and unscented kitchen sinks (EKS / UKS): multi-task linearised GP inference on
random Fourier features (Bonilla, Steinberg & Reid, "Extended and Unscented Kitchen Sinks").

Model (EKS eq. 7-8): Q latent tasks f_q = c_q + Phi w_q with w_q ~ N(0, omega_q^2 I_D) and Phi the
[N, D] random-feature matrix of :mod:`gpexplorer.random_features.fourier`; observations
y_n ~ N(g(f_n), Sigma), Sigma = diag(sigma_1^2 .. sigma_P^2), g: R^Q -> R^P a forward model. (The
constant prior means c_q default to 0; EKS section 7.4 centres the seismic priors on average
depths and velocities, which is what they are for.)

Posterior q(W) = prod_q N(w_q | m_q, C_q) (eq. 9), found by linearising g around the current
posterior, g(f_n) ~= A_n f_n + b_n (eq. 14), either by a Taylor series (EKS, eq. 21-23) or by the
unscented transform with E_n from eq. 25 (UKS, eq. 24-34), then taking Newton steps
(eq. 16-18):

    Lambda_q = I / omega_q^2 + Phi^T diag(w_q) Phi,   w_nq = a_nq^T Sigma^-1 a_nq        (eq. 18)
    grad_q   = Phi^T r_q - m_q / omega_q^2,           r_nq = a_nq^T Sigma^-1 eps_n      (eq. 17)
    m_q     <- m_q + alpha Lambda_q^-1 grad_q,        eps_n = y_n - A_n mu_n - b_n

The step length alpha starts at 1 and is halved until the MAP objective (EGP paper eq. 31 for
this model, the log posterior of W up to constants)

    -1/2 sum_n (y_n - g(mu_n))^T Sigma^-1 (y_n - g(mu_n)) - 1/2 sum_q |m_q|^2 / omega_q^2

does not decrease; after ``max_cuts`` halvings the loop stops with the paper's 'diverge'
condition and keeps the last good mean with the posterior of the linearisation that produced it
(EGP paper section 2.5, via
:func:`gpexplorer.linearized.gauss_newton.step_length_search`). The objective does not depend on C_q, so the
trace is monotone for both linearisations; as the paper notes, a statistically linearised step
need not ascend it, which is when 'diverge' happens (mostly for UKS). For UKS the covariances,
hence E_n, are refreshed from every iteration's Lambda_q (EGP paper section 2.4). The converged
covariances are C_q = Lambda_q^-1 (eq. 19) at the final mean, held as Cholesky factors of
Lambda_q; the free energy is eq. 20 and predictions eq. 35-37.

Newton step: the paper's eq. 16 uses the per-task Hessian eq. 18. With several interacting
tasks (softmax, seismic) the Hessian of the linearised objective also has cross-task blocks
Phi^T diag(a_nq^T Sigma^-1 a_nk) Phi, and stepping every task with its own block alone
zig-zags (measured on a 2-layer seismic problem: > 300 iterations against 6). The default
``newton_step="coupled"`` therefore solves the full Gauss-Newton system by conjugate gradients
preconditioned with the per-task factors of eq. 18; ``"per_task"`` is the literal eq. 16-18. Both
have the same fixed points and coincide for Q = 1.

Note on eq. 17: the paper prints the residual as y_n - a_nq m_q^T phi_n - b_n, which keeps only
task q's own term of A_n M phi_n. The gradient of eq. 15 with respect to m_q has the full
linearised residual eps_n = y_n - A_n M phi_n - b_n (both coincide for Q = 1); we use the latter,
which makes the EKS fixed point a stationary point of the MAP objective (31).

Cost per Newton iteration and task: the data term sum_n phi_n phi_n^T a_nq^T Sigma^-1 a_nq is
Phi^T diag(w_q) Phi, one BLAS syrk (N D^2), then a D x D Cholesky; when D > N the same
quantities come from the N x N Woodbury form instead (:mod:`gpexplorer.linearized.kitchen_sinks_algebra`).

Mean-field caveat: C_q of eq. 19 is the inverse of task q's own block of the Gauss-Newton
precision, i.e. task q's spread with every other task held at its mean. Where tasks trade off
(seismic: only thickness / velocity is observed) that is far narrower than the marginal spread;
``predict_f(..., covariance="coupled")`` gives the marginals of the unfactorised Gaussian of the
same linearised model for comparison.

Hyperparameters (noise variances, weight variances omega_q^2, feature lengthscales) are learnt
by maximising eq. 20 with a derivative-free scipy optimiser (COBYQA by default), re-running the
Newton loop at every evaluation (EKS section 4.4), followed by a lengthscale scan against the
ruggedness of eq. 20 in the lengthscale (:mod:`gpexplorer.linearized.kitchen_sinks_learning`).
"""

from __future__ import annotations

import math

import numpy as np

from gpexplorer import kernels as _kernels
from gpexplorer.linearized import linearization
from gpexplorer.linearized.linearization import LINEARIZATION_ALIASES
from gpexplorer.likelihoods.forward_models import get_forward_model
from gpexplorer.linearized.gauss_newton import IterationRecord, step_length_search
from gpexplorer.linearized.kitchen_sinks_algebra import coupled_latent_variances, monte_carlo_moments, newton_system
from gpexplorer._threads import threads_for
from gpexplorer.linearized.kitchen_sinks_checks import (PARAMETER_NAMES, KitchenSinksParameters, newton_options,
                                                       positive_parameter, prior_means, training_data)
from gpexplorer.linearized.fitting import check_count
from gpexplorer.linearized.kitchen_sinks_learning import fit_hyperparameters
from gpexplorer import validation
from gpexplorer.validation import prediction_inputs
from gpexplorer.random_features.fourier import RandomFourierFeatures

__all__ = ["LinearizedKitchenSinks", "PARAMETER_NAMES"]

_LOG_2PI = math.log(2.0 * math.pi)
#: the linearisation names this model accepts: the shared aliases without the GP's own
LINEARIZATIONS = {k: v for k, v in LINEARIZATION_ALIASES.items() if k not in ("egp", "ugp")}

class LinearizedKitchenSinks(KitchenSinksParameters):
    """EKS (``linearization="taylor"``) and UKS (``"unscented"``); see the module docstring.
    ``parameters``, ``set_parameters``, ``parameter_specs`` and ``set_bounds`` follow the
    convention of every model (:class:`gpexplorer.linearized.kitchen_sinks_checks.KitchenSinksParameters`).

    Parameters
    ----------
    X : (N, d) inputs. Y : (N, P) targets, or (N,) when P = 1.
    forward : forward model spec for :func:`gpexplorer.likelihoods.forward_models.get_forward_model` (a
        registered name, an expression in ``f`` or a ForwardModel); Q and P come from it.
    n_features : D, columns of Phi (even: cos/sin pairs). kernel : "se", "matern32", "matern52"
        (or "matern12") or a :mod:`gpexplorer.kernels` object giving type, lengthscale and, unless
        ``weight_variance`` is given, the weight prior variance.
    lengthscale : scalar or (d,) ARD, shared by all tasks (one feature map, eq. 10).
    weight_variance : omega^2 of eq. 7, scalar (shared, learnt as one value) or (Q,).
    noise_variance : Sigma's diagonal, scalar (shared) or (P,).
    prior_mean : constant prior mean of each latent task, scalar or (Q,).
    kappa : unscented-transform parameter (eq. 27-30); Q + kappa must be positive.
    seed : seed of the random features (and of Monte Carlo predictions).
    max_iter, tol : Newton loop limits: it stops ("converged") when the increase of the MAP
        objective predicted by the linearised model (half the Newton decrement) or achieved by
        a step is at most tol * (1 + |objective|), or when the step search stalls at that level.
    max_cuts : step-length halvings before the 'diverge' stop (EGP paper section 2.5).
    newton_step : "coupled" (default) or "per_task" (the literal eq. 16-18); see the module doc.

    After :meth:`fit_posterior` (run on demand by the other methods): ``posterior_mean`` M
    [Q, D], :meth:`posterior_covariance`, ``linearization`` (the last
    :class:`gpexplorer.linearized.linearization.Linearization`), ``trace`` (one
    :class:`gpexplorer.linearized.gauss_newton.IterationRecord` per Newton iteration, iteration 0 the start),
    ``stop_reason`` ("converged", "diverged" or "max_iter").
    """

    def __init__(self, X, Y, forward="seismic", linearization="taylor", *, n_features=200, kernel="matern52",
                 lengthscale=None, weight_variance=None, noise_variance=1.0, prior_mean=0.0, kappa=0.5,
                 seed=0, max_iter=100, tol=1e-6, max_cuts=10, newton_step="coupled", **forward_options):
        self.forward = get_forward_model(forward, **forward_options)
        self.n_latent, self.n_outputs = int(self.forward.n_latent), int(self.forward.n_outputs)
        self.X, self.Y = training_data(X, Y, self.n_outputs)
        method = LINEARIZATIONS.get(str(linearization).lower()) if isinstance(linearization, str) else None
        if method is None:
            raise ValueError(f"linearization must be 'taylor' (EKS) or 'unscented' (UKS); got {linearization!r}")
        if method == "taylor" and not self.forward.differentiable:
            raise ValueError(f"forward model {self.forward.name!r} is not differentiable, so the Taylor "
                             "linearisation (EKS) cannot be used; use linearization='unscented' (UKS)")
        self.linearization_method = method
        seed = validation.seed(seed)
        n_features = validation.count("n_features", n_features, 1)
        validation.check_memory(f"n_features = {n_features:,} with N = {self.X.shape[0]:,}",
                                8 * 4 * n_features * self.X.shape[0], "use fewer features")
        if isinstance(kernel, _kernels.Kernel) and weight_variance is None:
            weight_variance = kernel.variance
        self.features = RandomFourierFeatures(self.X.shape[1], n_features, kernel, lengthscale, seed)
        Q, P = self.n_latent, self.n_outputs
        self.weight_variance, tied_w = positive_parameter("weight_variance", 1.0 if weight_variance is None
                                                 else weight_variance, Q, "one per latent task")
        self.noise_variance, tied_n = positive_parameter("noise_variance", noise_variance, P, "one per output")
        self._tied = {"weight_variance": tied_w, "noise_variance": tied_n}
        self.prior_mean = prior_means(prior_mean, Q)
        self.kappa, self.max_iter, self.max_cuts, self.tol = newton_options(kappa, Q, max_iter, max_cuts, tol)
        if newton_step not in ("coupled", "per_task"):
            raise ValueError(f"newton_step must be 'coupled' or 'per_task'; got {newton_step!r}")
        self.newton_step = newton_step
        self.seed = seed
        self._Phi = self.features(self.X)
        self.posterior_mean = np.zeros((Q, self.features.n_features))  # M, rows m_q
        self._precisions = None  # per task: the factorised Lambda_q = C_q^-1 (TaskPrecision)
        self._stale = True  # the posterior does not belong to the current hyperparameters
        self.linearization = None
        self.trace: list[IterationRecord] = []
        self.stop_reason = None
        self.fit_result = None
        self._bounds = {}  # name -> (lower, upper) set by set_bounds

    # parameters ------------------------------------------------------------------------
    @property
    def n_features(self):
        return self.features.n_features

    @property
    def lengthscale(self):
        return self.features.lengthscale

    # linearisation and objectives ---------------------------------------------------------
    def _latent(self, M, Phi=None):
        return (self._Phi if Phi is None else Phi) @ M.T + self.prior_mean  # [N, Q]

    def _linearize(self, M, variances):
        mu = self._latent(M)
        if self.linearization_method == "taylor":
            return linearization.taylor(self.forward, mu)
        return linearization.unscented(self.forward, mu, variances, self.kappa)

    def _map_objective(self, M):
        """MAP objective, EGP paper eq. 31 for this model (what the step-length search monitors):
        -1/2 sum_n (y_n - g(mu_n))^T Sigma^-1 (y_n - g(mu_n)) - 1/2 sum_q |m_q|^2 / omega_q^2,
        mu_n = M phi_n + c; -inf where g is not finite."""
        with np.errstate(all="ignore"):
            try:
                G = np.asarray(self.forward.value(self._latent(M)), dtype=float).reshape(self.Y.shape)
            except ValueError:  # g rejects the trial latent values
                return -math.inf
            eps = self.Y - G
            value = -0.5 * float(np.sum(eps * eps / self.noise_variance)) \
                - 0.5 * float(np.sum(np.sum(M * M, axis=1) / self.weight_variance))
        return value if math.isfinite(value) else -math.inf

    def _linearized_gradient(self, lin, M, SA=None):
        """Gradient (eq. 17, full residual) of the linearised objective with respect to M, [Q, D]."""
        if SA is None:
            SA = lin.A / self.noise_variance[None, :, None]
        eps = self.Y - (np.einsum("npq,nq->np", lin.A, self._latent(M)) + lin.b)  # [N, P]
        r = np.einsum("npq,np->nq", SA, eps)  # a_nq^T Sigma^-1 eps_n, [N, Q]
        return r.T @ self._Phi - M / self.weight_variance[:, None]

    def _newton_system(self, lin, M, with_step=True):
        """Factorised Lambda_q (eq. 18-19), the Newton step and its decrement grad . step
        (:func:`gpexplorer.linearized.kitchen_sinks_algebra.newton_system`; ``newton_step`` picks the per-task
        eq. 16-18 or the coupled Gauss-Newton step)."""
        SA = lin.A / self.noise_variance[None, :, None]  # Sigma^-1 a_nq, [N, P, Q]
        grad = self._linearized_gradient(lin, M, SA) if with_step else None
        return newton_system(self._Phi, lin.A, SA, self.weight_variance, grad,
                             coupled=self.newton_step == "coupled")

    def _marginal_variances(self, precisions, Phi):
        """E_n diagonals phi_n^T C_q phi_n (eq. 25 / 36) for every row of Phi, [N, Q]."""
        return np.stack([precision.variances(Phi) for precision in precisions], axis=1)

    def _prior_variances(self):
        return np.outer(np.einsum("nd,nd->n", self._Phi, self._Phi), self.weight_variance)

    # the Newton loop ----------------------------------------------------------------------
    def _blas_limit(self, n_rows=None):
        """One BLAS thread unless the dense work is large: N D min(N, D) flops per Newton iteration
        (the D x D primal or, for D > N, the N x N dual factorisation), or n_rows N D per prediction."""
        N, D = self.X.shape[0], self.n_features
        return threads_for(N * D * min(N, D) if n_rows is None else n_rows * N * D)

    def fit_posterior(self, warm_start=True):
        """Run the Newton loop (eq. 16-19) at the current hyperparameters; returns self.

        ``warm_start`` starts from the current posterior (mean and, for UKS, covariances);
        otherwise from the prior (M = 0, C_q = omega_q^2 I).
        """
        with self._blas_limit():
            return self._newton_loop(warm_start)

    def _newton_loop(self, warm_start):
        unscented = self.linearization_method == "unscented"
        M = self.posterior_mean.copy() if warm_start else np.zeros_like(self.posterior_mean)
        precisions = self._precisions if (warm_start and unscented) else None
        value = self._map_objective(M)
        if not math.isfinite(value):
            raise ValueError(f"the forward model {self.forward.name!r} gives non-finite values at the starting "
                             "posterior mean; check prior_mean / the forward model's offsets and the data scale")
        trace = [IterationRecord(0, value, 0.0, 0, "start")]
        stop, final, came_with_M = "max_iter", None, None
        for iteration in range(1, self.max_iter + 1):
            variances = None
            if unscented:  # E_n (eq. 25) from the latest C_q; the prior's at a cold start
                variances = (self._prior_variances() if precisions is None
                             else self._marginal_variances(precisions, self._Phi))
            lin = self._linearize(M, variances)
            precisions, step, decrement = self._newton_system(lin, M)
            tolerance = self.tol * (1.0 + abs(value))
            if 0.5 * decrement <= tolerance:  # the quadratic model predicts no useful gain
                stop, final = "converged", (lin, precisions)
                break

            def evaluate(alpha, M=M, step=step):
                candidate = M + alpha * step
                return self._map_objective(candidate), candidate

            search = step_length_search(evaluate, value, max_cuts=self.max_cuts, tolerance=tolerance)
            trace.append(IterationRecord(iteration, search.value, search.alpha, search.cuts, search.status))
            if search.status == "diverged" and came_with_M is not None:
                stop, final = "diverged", came_with_M  # the last good mean and the posterior it came with
                break
            if not search.accepted:  # stalled at rounding level, or 'diverge' at the start: keep M
                stop, final = ("converged" if search.status == "stalled" else "diverged"), (lin, precisions)
                break
            gain, M, value = search.value - value, search.point, search.value
            came_with_M = (lin, precisions)
            if gain <= tolerance:
                stop = "converged"
                break
        if final is None:  # C_q (eq. 19) from a linearisation about the final mean
            variances = self._marginal_variances(precisions, self._Phi) if unscented else None
            lin = self._linearize(M, variances)
            final = (lin, self._newton_system(lin, M, with_step=False)[0])
        self.posterior_mean, (self.linearization, self._precisions) = M, final
        self.trace, self.stop_reason, self._stale = trace, stop, False
        return self

    @property
    def converged(self):
        return self.stop_reason == "converged"

    @property
    def diverged(self):
        return self.stop_reason == "diverged"

    def _ensure_posterior(self):
        if self._stale:
            self.fit_posterior()

    def map_objective(self):
        """MAP objective (EGP paper eq. 31) at the current posterior mean."""
        self._ensure_posterior()
        return self._map_objective(self.posterior_mean)

    def _bound_parts(self):
        """The pieces of -eq. 20: N (P log 2 pi + sum_p log sigma_p^2) / 2, |eps|^2_Sigma / 2, and per
        task |m_q|^2 / omega_q^2, log|Lambda_q| and D log omega_q^2 ([Q] each)."""
        self._ensure_posterior()
        lin, M = self.linearization, self.posterior_mean
        N, P, D = self.Y.shape[0], self.n_outputs, self.n_features
        eps = self.Y - (np.einsum("npq,nq->np", lin.A, self._latent(M)) + lin.b)
        log_det_precision = np.array([precision.log_det() for precision in self._precisions])  # -log|C_q|
        return (0.5 * N * (P * _LOG_2PI + np.sum(np.log(self.noise_variance))),
                0.5 * np.sum(eps * eps / self.noise_variance),
                np.sum(M * M, axis=1) / self.weight_variance, log_det_precision, D * np.log(self.weight_variance))

    def free_energy(self):
        """Approximate lower bound eq. 20 at the current posterior (fitted first if needed)."""
        constant, data_fit, prior, log_det_precision, log_prior_det = self._bound_parts()
        return float(-constant - data_fit - 0.5 * np.sum(prior + log_det_precision + log_prior_det))

    def objective(self) -> float:
        """-free_energy(): the value ``fit`` minimises (``FitResult.objective``)."""
        return -self.free_energy()

    def free_energy_terms(self) -> dict:
        """The four parts of -eq. 20 (they sum to -free_energy() up to rounding), named as
        :meth:`gpexplorer.linearized.gp.LinearizedGP.free_energy_terms`: "constant"
        N (P log 2 pi + sum_p log sigma_p^2) / 2, "complexity" sum_q log|omega_q^2 Lambda_q| / 2,
        "prior" sum_q |m_q|^2 / (2 omega_q^2), "data_fit" sum_n |y_n - A_n mu_n - b_n|^2_Sigma / 2."""
        constant, data_fit, prior, log_det_precision, log_prior_det = self._bound_parts()
        return {"constant": float(constant), "complexity": 0.5 * float(np.sum(log_det_precision + log_prior_det)),
                "prior": 0.5 * float(np.sum(prior)), "data_fit": float(data_fit)}

    def posterior_covariance(self, q=0):
        """C_q = Lambda_q^-1 (eq. 19) as a dense (D, D) array."""
        self._ensure_posterior()
        if not 0 <= int(q) < self.n_latent:
            raise ValueError(f"task index q must be in [0, {self.n_latent}); got {q}")
        return self._precisions[int(q)].covariance()

    # prediction ---------------------------------------------------------------------------
    def predict_f(self, Xnew, full_cov=False, *, covariance="factorised"):
        """Latent predictive marginals (eq. 35-36): mean and variance, each (N*, Q); with ``full_cov``
        (factorised only) the covariance Phi* C_q Phi*^T of each task, (Q, N*, N*).

        ``covariance="factorised"`` (default) is eq. 36, phi*^T C_q phi* with the mean-field C_q of
        eq. 19. ``"coupled"`` gives the marginal variances of the unfactorised Gaussian posterior of
        the same linearised model (all tasks jointly, the cross-task blocks of the Gauss-Newton
        precision included; :func:`gpexplorer.linearized.kitchen_sinks_algebra.coupled_latent_variances`),
        which equals eq. 36 for Q = 1 and shows how much the factorisation of eq. 9 narrows the
        intervals when tasks trade off; it costs O((N P)^3).
        """
        if covariance not in ("factorised", "coupled"):
            raise ValueError(f"covariance must be 'factorised' (eq. 36) or 'coupled'; got {covariance!r}")
        if full_cov and covariance != "factorised":
            raise ValueError("full_cov=True gives the factorised covariance (eq. 36) only")
        self._ensure_posterior()
        Phi = self.features(prediction_inputs(Xnew, self.X.shape[1], rows="N*"))
        with self._blas_limit(Phi.shape[0]):
            mean = self._latent(self.posterior_mean, Phi)
            if full_cov:
                return mean, np.stack([Phi @ precision.covariance() @ Phi.T for precision in self._precisions])
            if covariance == "coupled":
                return mean, coupled_latent_variances(self._Phi, self.linearization.A, self.noise_variance,
                                                      self.weight_variance, Phi)
            return mean, self._marginal_variances(self._precisions, Phi)

    def predict_y(self, Xnew, method="unscented", num_samples=2000, seed=None):
        """Predictive mean of g(f*) (eq. 37) and variance including the noise, each (N*, P).

        ``method="unscented"`` propagates N(mu*, E*) through g with the 2Q+1 sigma points (kappa);
        ``"monte_carlo"`` averages g over ``num_samples`` draws (``seed``, default the model seed).
        For logistic / softmax forward models the mean is the class probability.
        """
        mean, var = self.predict_f(Xnew)
        if method == "unscented":
            lin = linearization.unscented(self.forward, mean, var, self.kappa)
            dev = lin.sigma_values - lin.y_mean[:, None, :]  # [N*, 2Q+1, P]
            g_var = np.einsum("i,nip->np", lin.weights, dev * dev)
            return lin.y_mean, np.maximum(g_var, 0.0) + self.noise_variance
        if method == "monte_carlo":
            if isinstance(num_samples, bool) or not isinstance(num_samples, (int, np.integer)) or num_samples < 2:
                raise ValueError(f"num_samples must be an integer >= 2; got {num_samples!r}")
            rng = np.random.default_rng(self.seed if seed is None else validation.seed(seed))
            g_mean, g_var = monte_carlo_moments(self.forward, mean, var, num_samples, rng, self.n_outputs)
            return g_mean, g_var + self.noise_variance
        raise ValueError(f"method must be 'unscented' or 'monte_carlo'; got {method!r}")

    # hyperparameter learning ------------------------------------------------------------
    def snapshot(self):
        """The hyperparameters and the fitted posterior (fitted first if needed), for :meth:`restore`."""
        self._ensure_posterior()
        return (self.parameters, self.posterior_mean.copy(), list(self._precisions), self.linearization,
                list(self.trace), self.stop_reason)

    def restore(self, state):
        """Go back to a :meth:`snapshot` (hyperparameters and posterior, without refitting)."""
        params, M, precisions, lin, trace, stop = state
        self.set_parameters(**params)
        self.posterior_mean, self._precisions, self.linearization = M, precisions, lin
        self.trace, self.stop_reason = trace, stop
        self._stale = False

    def fit(self, max_iter=200, fixed=(), restarts=0, seed=None, callback=None, *, method="cobyqa", xtol=1e-2,
            warm_start=False, scan_lengthscale=True):
        """Maximise eq. 20 over the log noise variances, weight variances and lengthscales, each in
        its box (``parameter_specs``, :meth:`set_bounds`): EKS section 4.4, the convention of
        :mod:`gpexplorer.linearized.fitting`, the search of
        :func:`gpexplorer.linearized.kitchen_sinks_learning.fit_hyperparameters` (whose module doc
        has the measurements behind these defaults).

        Each evaluation re-runs the Newton loop from the prior, so eq. 20 is a function of the
        hyperparameters alone; ``warm_start=True`` starts it from the best posterior so far
        (pays off where the Newton loop is long, e.g. USPS). ``method``: scipy's "cobyqa"
        (default; the successor of the paper's BOBYQA), "cobyla", "powell" or "nelder-mead";
        ``xtol`` its final step on the log-parameters. ``scan_lengthscale``: after the local
        search, evaluate eq. 20 on a log grid of lengthscales around the best point and restart
        the search from a better grid point. ``fixed``: names to hold. Parameters given as
        scalars at construction are learnt as one shared value. ``max_iter``: evaluations per
        search after the start; ``restarts`` extra searches from log-parameters perturbed with
        sd 0.5 (``seed``). The model is left at the best evaluation. Returns a FitResult: trace
        (best search) = the start (iteration 0) and every evaluation (objective -eq. 20,
        :meth:`free_energy_terms`, parameters), ``details["scan_restarts"]``. ``callback(entry)``
        gets each evaluation's TraceEntry; True stops the fit.
        """
        max_iter = check_count("max_iter", max_iter, 1)
        seed = validation.seed(seed)
        restarts = validation.count("restarts", restarts, 0, validation.MAX_ITERATIONS)
        self.fit_result = fit_hyperparameters(self, max_iter=max_iter, fixed=fixed, restarts=restarts, seed=seed,
                                              callback=callback, method=method, xtol=xtol, warm_start=warm_start,
                                              scan_lengthscale=scan_lengthscale)
        return self.fit_result
