"""GeneralizedLinearModel: a Bayesian GLM on a feature basis with a mixture-of-diagonal-Gaussians
posterior (revrand report section 1.3, eq. 19-31; the bound in :mod:`.mixture_elbo`).

y_n ~ p(y | f_n), f_n = phi(x_n)^T w, w ~ N(0, Lambda) (19-20), for any registered pointwise
likelihood (gaussian, bernoulli_logit, binomial, poisson, ...). The mixture's means and variances
(``q_mean``, ``q_variance``: [K, D]), the basis' hyperparameters, the weight variances and the
likelihood's parameters are learnt together by minibatch Adam on the bound through the one
optimiser core (:func:`gpexplorer.optimize.adam`). ``fit(random_starts=R)`` first evaluates the
full-data bound at R random draws of the hyperparameters (revrand's 500 "random starts") and
starts from the best.

Predictions integrate over the mixture: f* under q_k is N(phi*^T m_k, sum_d phi*_d^2 psi_kd), so
E[y*] (29), p(y*) (28) and the log predictive density are one-dimensional Gauss-Hermite integrals per
component (deterministic, where the report samples); the log density is the log of the averaged
density (revrand averages log p, a biased NLPD). Quantiles (30-31) come from draws of y*.
"""

from __future__ import annotations

import math
import time

import numpy as np
from scipy import special

from gpexplorer import validation
from gpexplorer.likelihoods import gauss_hermite, get_likelihood
from gpexplorer.optimize import FitResult, Packer, TraceEntry, adam, expand_fixed, snapshot
from gpexplorer.random_features.feature_model import WEIGHT_VARIANCE, FeatureModel
from gpexplorer.random_features.mixture_elbo import (ESTIMATORS, entropy_bound, expected_log_likelihood,
                                                     expected_log_prior)
from gpexplorer.parameters import Parameter

__all__ = ["GeneralizedLinearModel", "Q_MEAN", "Q_VARIANCE"]

Q_MEAN, Q_VARIANCE = "q_mean", "q_variance"
LIK_PREFIX = "likelihood."


class GeneralizedLinearModel(FeatureModel):
    """Bayesian GLM on ``basis`` features with q(w) a mixture of ``n_components`` diagonal Gaussians.

    Parameters
    ----------
    X, y : data ([N, d], [N]).
    basis : a basis or a basis name.
    likelihood : a registered likelihood name or instance (options via ``likelihood_options``).
    n_components : K, the number of mixture components.
    weight_variance : the weight prior variance (one per basis block, or a scalar).
    estimator : "quadrature" (default) or "monte_carlo" (the report's reparameterised samples).
    num_samples : Monte Carlo draws per component and step (the report's L).
    seed : seed of the initial means and of the minibatch / sample draws.
    """

    def __init__(self, X, y, basis="rbf", likelihood="gaussian", n_components=10, *, weight_variance=1.0,
                 estimator="quadrature", num_samples=10, seed=0, likelihood_options=None):
        X, y = validation.validate_data(X, y)
        super().__init__(X, basis, weight_variance)
        self.likelihood = get_likelihood(likelihood, **(likelihood_options or {}))
        if self.likelihood.n_latent != 1:
            raise ValueError(f"likelihood {self.likelihood.name!r} has {self.likelihood.n_latent} latent values per "
                             "point; the GLM has one (f = phi^T w)")
        self.Y = self.likelihood.validate(y)
        self.y = self.Y[:, 0]
        self.n_components = validation.mixture_components(n_components, name="n_components")
        if estimator not in ESTIMATORS:
            raise ValueError(f"estimator must be one of {ESTIMATORS}; got {estimator!r}")
        self.estimator = estimator
        self.num_samples = validation.count("num_samples", num_samples, maximum=10_000)
        K, D = self.n_components, self.n_features
        validation.check_memory("the mixture's pairwise terms", 8 * 4 * K * K * D, "use fewer components")
        self.rng = np.random.default_rng(validation.seed(seed))
        lam = self.prior_variances()
        self.q_mean = self.rng.standard_normal((K, D)) * np.sqrt(lam) * 0.1
        self.q_variance = np.tile(lam, (K, 1))

    # parameters ---------------------------------------------------------------------------------
    def _own_parameters(self):
        p = {Q_MEAN: self.q_mean.copy(), Q_VARIANCE: self.q_variance.copy()}
        p.update({LIK_PREFIX + k: v for k, v in self.likelihood.parameters.items()})
        return p

    def _own_names(self):
        return {Q_MEAN, Q_VARIANCE, *(LIK_PREFIX + k for k in self.likelihood.param_layout)}

    def _own_specs_now(self):
        specs = {Q_MEAN: Parameter.real(Q_MEAN), Q_VARIANCE: Parameter(Q_VARIANCE, 1e-12, 1e12)}
        specs.update({LIK_PREFIX + k: s.renamed(LIK_PREFIX + k) for k, s in self.likelihood.parameter_specs.items()})
        specs.update(self._own_specs)
        return specs

    def _set_likelihood(self, values):
        lik = {k[len(LIK_PREFIX):]: v for k, v in values.items() if k.startswith(LIK_PREFIX)}
        if lik:
            self.likelihood.set_parameters(**lik)

    def _set_own(self, values):
        for name, attr, positive in ((Q_MEAN, "q_mean", False), (Q_VARIANCE, "q_variance", True)):
            if name in values:
                arr = np.array(values[name], dtype=float)
                if arr.shape != (self.n_components, self.n_features):
                    raise ValueError(f"{name} must have shape ({self.n_components}, {self.n_features}); got {arr.shape}")
                if not np.all(np.isfinite(arr)) or (positive and np.any(arr <= 0)):
                    raise ValueError(f"{name} must be finite{' and positive' if positive else ''}")
                setattr(self, attr, arr)
        self._set_likelihood(values)

    def _assign_own_in_box(self, values):
        if Q_MEAN in values:
            self.q_mean = np.asarray(values[Q_MEAN], dtype=float)  # the packer's arrays are never views of x
        if Q_VARIANCE in values:
            self.q_variance = np.asarray(values[Q_VARIANCE], dtype=float)
        self._set_likelihood(values)

    def parameter_groups(self):
        groups = super().parameter_groups()
        groups["posterior"] = {Q_MEAN, Q_VARIANCE}
        groups["likelihood"] = {k for k in self.parameters if k.startswith(LIK_PREFIX)}
        return groups

    # the bound ----------------------------------------------------------------------------------
    def elbo(self, rows=None, gradients=True, eps=None, n_points=20, estimator=None):
        """(the bound, {name: d bound / d value} or None, terms) on the minibatch ``rows`` (all data
        if None; the likelihood term scaled by N/|B|), with this model's estimator unless
        ``estimator`` is given (``eps`` [K, L, D] fixes the Monte Carlo draws)."""
        estimator = estimator or self.estimator
        N = self.X.shape[0]
        lam = self.prior_variances()
        if rows is None:
            X, Y, Phi = self.X, self.Y, self.features()
        else:
            X, Y = self.X[rows], self.Y[rows]
            Phi = self.basis.checked_features(X)
        m, psi = self.q_mean, self.q_variance
        if estimator == "monte_carlo" and eps is None:
            eps = self.rng.standard_normal((self.n_components, self.num_samples, self.n_features))
        ell, dm, dpsi, dPhi, dlik = expected_log_likelihood(
            self.likelihood, Phi, Y, m, psi, estimator=estimator, scale=N / X.shape[0], n_points=n_points,
            eps=eps, gradients=gradients)
        prior, dm_p, dpsi_p, dlam = expected_log_prior(m, psi, lam)
        ent, dm_h, dpsi_h = entropy_bound(m, psi)
        value = ell + prior + ent
        terms = {"expected_log_likelihood": ell, "expected_log_prior": prior, "entropy_bound": ent}
        if not gradients:
            return value, None, terms
        grads = self.basis.checked_vjp(X, dPhi, Phi)
        grads[WEIGHT_VARIANCE] = self.block_sums(dlam)
        grads[Q_MEAN] = dm + dm_p + dm_h
        grads[Q_VARIANCE] = dpsi + dpsi_p + dpsi_h
        grads.update({LIK_PREFIX + k: v for k, v in dlik.items()})
        return value, grads, terms

    # fitting --------------------------------------------------------------------------------------
    def fit(self, max_iter=2000, batch_size=None, learning_rate=0.01, fixed=(), *, random_starts=0, seed=None,
            callback=None, trace_every=50, cancel=None, start_distribution=None):
        """Minibatch Adam on the bound (module docstring); returns a :class:`FitResult` whose trace
        holds the full-data bound every ``trace_every`` steps (and after the last)."""
        N = self.X.shape[0]
        steps = validation.count("max_iter", max_iter, minimum=0)
        B = N if batch_size is None else validation.count("batch_size", batch_size, maximum=N)
        validation.positive("learning_rate", learning_rate, allow_array=False)
        trace_every = validation.count("trace_every", trace_every)
        rng = np.random.default_rng(validation.seed(seed)) if seed is not None else self.rng
        frozen = expand_fixed(self, fixed)
        if random_starts:
            self._best_random_start(validation.count("random_starts", random_starts, maximum=100_000), rng,
                                    frozen, start_distribution)
        t0 = time.perf_counter()
        initial = snapshot(self.parameters)
        packer = Packer(self.parameter_specs, initial, frozen)
        fixed_values = {k: v for k, v in initial.items() if k in frozen}
        lo, hi = packer.box()
        trace = [self._entry(0, initial)]

        def assign(x):  # Adam keeps x finite and inside the box: no re-validation per step
            self.assign_in_box(packer.unpack(x))

        def gradient(x, t):
            values = packer.unpack(x)
            self.assign_in_box(values)
            rows = None if B == N else rng.choice(N, size=B, replace=False)
            try:
                _, grads, _ = self.elbo(rows)
            except (np.linalg.LinAlgError, FloatingPointError, ValueError):
                return None
            return -packer.chain(values, grads)

        def on_step(t, x):
            if t % trace_every and t != steps:
                return False
            assign(x)
            entry = self._entry(t, {**packer.unpack(x), **fixed_values})
            trace.append(entry)
            return bool(callback(entry)) if callback is not None else False

        x0 = packer.pack(initial)
        run = adam(gradient, x0, lo, hi, steps=steps, learning_rate=learning_rate, on_step=on_step, cancel=cancel)
        assign(run.x)
        final = trace[-1] if trace[-1].iteration == run.n_iter else self._entry(run.n_iter, snapshot(self.parameters))
        if final is not trace[-1]:
            trace.append(final)
        return FitResult(success=run.success, message=run.message, objective=final.objective, n_iter=run.n_iter,
                         n_eval=run.n_iter, trace=trace, restarts=[], elapsed=time.perf_counter() - t0,
                         details={"cancelled": True} if run.cancelled else {})

    def bound(self):
        """The full-data bound with each component's expected log likelihood by quadrature (exact up
        to the rule; what the trace reports and the random starts compare, whatever the estimator)."""
        return self.elbo(gradients=False, estimator="quadrature")[0]

    def _entry(self, t, params):
        value, _, terms = self.elbo(gradients=False, estimator="quadrature")
        return TraceEntry(t, -value, terms, snapshot(params))

    def _best_random_start(self, n, rng, frozen, distribution):
        names = [k for k in self.parameters if k not in frozen and k not in (Q_MEAN, Q_VARIANCE)]
        self.screen_starts(n, rng, names, self.bound, distribution)

    # predictions ----------------------------------------------------------------------------------
    def latent_moments(self, Xnew):
        """(mu [K, S], v [K, S]): f* under each component."""
        P = self.prediction_features(Xnew)
        return self.q_mean @ P.T, np.maximum(self.q_variance @ (P * P).T, 1e-300)

    def predict_f(self, Xnew):
        """(E[f*], Var[f*]) under the mixture (exact)."""
        mu, v = self.latent_moments(Xnew)
        mean = mu.mean(0)
        return mean, np.maximum((v + mu * mu).mean(0) - mean * mean, 0.0)

    def _nodes(self, Xnew, n_points):
        mu, v = self.latent_moments(Xnew)
        x, w = gauss_hermite(n_points)
        F = mu[None] + np.sqrt(v)[None] * x[:, None, None]  # [s, K, S]
        return F, w

    def predict_y(self, Xnew, n_points=40):
        """(E[y*], Var[y*]) by quadrature over each component (eq. 29)."""
        F, w = self._nodes(Xnew, n_points)
        K = F.shape[1]
        cm, cv = self.likelihood.conditional_moments(F.reshape(-1, F.shape[2])[..., None])
        cm, cv = cm.reshape(F.shape), cv.reshape(F.shape)
        mean = np.tensordot(w, cm, axes=(0, 0)).sum(0) / K
        second = np.tensordot(w, cv + cm * cm, axes=(0, 0)).sum(0) / K
        return mean, np.maximum(second - mean * mean, 0.0)

    def predict_log_density(self, Xnew, ynew, n_points=40):
        """log p(y*_n | data): the log of the density averaged over the mixture (eq. 28)."""
        F, w = self._nodes(Xnew, n_points)
        Y = self.likelihood.validate(ynew)
        if Y.shape[0] != F.shape[2]:
            raise ValueError(f"ynew has {Y.shape[0]} entries but Xnew has {F.shape[2]} rows")
        lp = self.likelihood.log_density(F.reshape(-1, F.shape[2])[..., None], Y).reshape(F.shape)
        logw = np.log(w)[:, None, None] - math.log(F.shape[1])
        return special.logsumexp(lp + logw, axis=(0, 1))

    def sample_y(self, Xnew, num_samples=1000, seed=None):
        """Draws of y* [num_samples, S] from the predictive: w from the mixture, then y* | f*."""
        P = self.prediction_features(Xnew)
        rng = np.random.default_rng(seed)
        k = rng.integers(self.n_components, size=num_samples)
        W = self.q_mean[k] + np.sqrt(self.q_variance[k]) * rng.standard_normal((num_samples, self.n_features))
        return self.likelihood.sample((W @ P.T)[..., None], rng)[..., 0]

    def predict_quantiles(self, Xnew, levels=(0.025, 0.975), num_samples=2000, seed=0):
        """Quantiles of p(y* | data) [S, len(levels)] (eq. 30-31) from ``num_samples`` draws."""
        levels = np.atleast_1d(np.asarray(levels, dtype=float))
        if not np.all((levels > 0) & (levels < 1)):
            raise ValueError(f"levels must lie strictly between 0 and 1; got {levels.tolist()}")
        return np.quantile(self.sample_y(Xnew, num_samples, seed), levels, axis=0).T

    def __repr__(self):
        return (f"GeneralizedLinearModel(N={self.X.shape[0]}, features={self.n_features}, "
                f"likelihood={self.likelihood!r}, K={self.n_components}, estimator={self.estimator!r})")
