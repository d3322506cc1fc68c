"""``SparseVariationalGP``: SAVIGP (Dezfouli & Bonilla 2015) as a thin model over
:func:`gpexplorer.variational.elbo.elbo`.

>>> m = SparseVariationalGP(X, Y, kernel=kernels.SquaredExponential(), Z=20, likelihood="bernoulli_logit",
...                         posterior="fg", estimator="score", num_samples=2000, seed=0)
>>> m.elbo(eval_gradient=True)        # (value, {"posterior": ..., "kernel0.variance": ..., ...})
>>> m.fit(max_iter=50)   # "auto": natural gradients for an FG q(u) with exact gradients, else "lbfgs";
...                       # or method="block-lbfgs" (the paper's), "adam" (minibatches)
>>> mean, var = m.predict_f(Xnew)     # mixture moments per latent, (N*, Q) each
>>> m.predict_y(Xnew); m.predict_log_density(Xnew, Ynew); m.error_rate(Xnew, Ynew)

``likelihood`` is a registered name (options in ``likelihood_options``, see
:func:`gpexplorer.likelihoods.get_likelihood`) or an object with the pointwise-likelihood
interface. Fitting is in :mod:`.fitting`, predictions in :mod:`.prediction`.

Parameters are named ``"posterior"`` (the family's free vector, unbounded), ``"kernel{j}.{name}"``,
``"feature{j}.{name}"`` (latent j; ``"kernel.{name}"``, ``"feature.{name}"`` with ``shared=True``, where
every latent uses one kernel and one feature, as convgp's 10-class models do) and ``"likelihood.{name}"``; the last three move through their
own :class:`gpexplorer.parameters.Parameter` transforms and bounds. Monte Carlo estimators draw
eps once (``seed``) and reuse it, so the objective is deterministic (as in the paper).
Initialisation: m = 0 and S_kj = Kuu_j (q(u) = p(u) for K = 1); a mixture's component means are
drawn with sd 0.1 sqrt(diag Kuu_j) so that its components can separate.
"""

from __future__ import annotations

import numpy as np

from gpexplorer.inducing import InducingFeature, as_feature, initial_inducing_inputs
from gpexplorer.kernels import Kernel
from gpexplorer.likelihoods.pointwise import PointwiseLikelihood, get_likelihood
from gpexplorer.parameters import Parameter, sum_gradients
from gpexplorer.variational import convergence, estimators, fitting, marginals, prediction
from gpexplorer.variational.elbo import elbo as elbo_function
from gpexplorer.variational.elbo import mixture_moments
from gpexplorer.variational.mean_field import component_blocks
from gpexplorer.variational.families import make_posterior
from gpexplorer import validation
from gpexplorer.workspace import Workspace

GROUPS = ("posterior", "kernel", "inducing", "likelihood")

#: most Gauss-Hermite points per latent dimension (numpy's nodes lose accuracy beyond a few hundred)
MAX_QUADRATURE_POINTS = 300
#: (N, M) work arrays per latent and mixture component (Kuf, A = Kfu Kuu^-1, A S_k, gradients)
ARRAYS_PER_ROW = 4


class SparseVariationalGP:
    """Q latent GPs with inducing variables, a black-box pointwise likelihood and a mixture
    posterior q(u) (FG, MoG1, MoG2 or ("mog", K)), fitted by maximising the ELBO (eq. 8)."""

    def __init__(self, X, Y, kernel, Z, likelihood, *, posterior="fg", estimator="quadrature", num_samples=2000,
                 num_latent=None, seed=0, jitter=1e-6, z_init="kmeans", n_points=None, control_variate=False,
                 likelihood_options=None, shared=False):
        self.X = validation.inputs(X, "X")  # the layer first: nothing is placed or allocated before
        seed = validation.seed(seed)
        self.likelihood = likelihood = self._likelihood(likelihood, likelihood_options)
        self.Y = validation.targets(likelihood.validate(Y), "Y")
        N, D = self.X.shape
        if self.Y.shape[0] != N:
            raise ValueError(f"X has {N} rows but Y has {self.Y.shape[0]}")
        Q = likelihood.n_latent if num_latent is None else validation.count("num_latent", num_latent, 1)
        if Q != likelihood.n_latent:
            raise ValueError(f"the likelihood needs {likelihood.n_latent} latent function(s); num_latent is {Q}")
        self.shared = bool(shared)
        self.kernels = self._per_latent(kernel, Q, "kernel")
        for k in self.kernels:
            if not isinstance(k, Kernel):
                raise ValueError(f"kernel must be a gpexplorer.kernels.Kernel; got {type(k).__name__}")
            k.check_input_dim(D)
        self._check_magnitudes(self._named_values(self.kernels, "kernel"))
        if estimator not in estimators.METHODS:
            raise ValueError(f"estimator must be one of {estimators.METHODS}; got {estimator!r}")
        self.jitter = validation.jitter(jitter)
        self.n_points = validation.optional_count("n_points", n_points, 1, MAX_QUADRATURE_POINTS)
        self.num_samples = validation.count("num_samples", num_samples, 2)
        self._check_sizes(Z, posterior, estimator, N, Q)
        self.features = [self._feature(z, z_init, seed) for z in self._per_latent(Z, Q, "Z")]
        self._check_likelihood_at_prior_mean()
        self.estimator = estimator
        self.control_variate = bool(control_variate)
        self.seed = seed
        self.eps = None if estimator == "quadrature" else estimators.draw_eps(num_samples, N, Q, seed)
        blocks = [component_blocks(f, k) for f, k in zip(self.features, self.kernels)] \
            if isinstance(posterior, str) and posterior == "mean_field" else None
        self.posterior = make_posterior(posterior, [len(f) for f in self.features], Q, blocks=blocks)
        self.reset_posterior(seed)
        self.fit_result = None
        self.workspace = Workspace()  # work arrays of the fused FG path, reused between evaluations

    def reset_posterior(self, seed=0):
        """q(u) back to the prior at the current hyperparameters (module docstring); returns self.
        The means start at 0 unless a mixture's components or the likelihood
        (``prior_start_is_saddle``, e.g. the GPRN) need random means to break a symmetry."""
        chols = [lat.L for lat in self._latents(self.X)]
        if getattr(self.likelihood, "prior_start_is_saddle", False):
            scale = 0.5
        else:
            scale = 0.0 if self.posterior.K == 1 else 0.1
        self.posterior.initialise_from_prior(chols, mean_scale=scale, seed=seed)
        return self

    def redraw_samples(self, seed):
        """A fresh eps for the Monte Carlo estimators (from ``seed``); returns self. For the score
        estimator with Q <= 3 the value L-BFGS follows is quadrature's, so a fit continued after
        a redraw follows the same objective with another gradient estimate (what continuing a
        stalled fit needs, :mod:`.convergence`); for the reparameterised one the objective itself
        changes. Quadrature has no samples: nothing changes."""
        if self.eps is not None:
            self.eps = estimators.draw_eps(self.num_samples, self.X.shape[0], self.Q, seed)
        return self

    # construction helpers ----------------------------------------------------------------------
    @staticmethod
    def _likelihood(likelihood, options):
        """A registered name (with ``options``), a PointwiseLikelihood, or a duck-typed object."""
        options = dict(options or {})
        if isinstance(likelihood, (str, PointwiseLikelihood)):
            return get_likelihood(likelihood, **options)
        needed = ("n_latent", "validate", "log_density", "parameter_specs", "parameters", "set_parameters")
        missing = [n for n in needed if not hasattr(likelihood, n)]
        if missing:
            raise ValueError(f"likelihood must be a registered name or a pointwise likelihood; "
                             f"{type(likelihood).__name__} lacks {missing}")
        if options:
            raise ValueError(f"likelihood_options {sorted(options)} need a likelihood given by name")
        return likelihood

    def _per_latent(self, obj, Q, what):
        """One object per latent: copies of one, or the same object for every latent (``shared``)."""
        if isinstance(obj, (list, tuple)):
            if self.shared:
                raise ValueError(f"with shared=True give one {what} (every latent uses it); got a list")
            if len(obj) != Q:
                raise ValueError(f"{what} must be one object or a list of {Q} (one per latent); got {len(obj)}")
            if len({id(o) for o in obj}) < len(obj):
                raise ValueError(f"the same {what} object appears for several latents; pass one {what} with "
                                 f"shared=True to share it, or give each latent its own")
            return list(obj)
        if self.shared:
            return [obj] * Q
        return [obj] + [obj.copy() if hasattr(obj, "copy") else obj for _ in range(Q - 1)]

    def _feature(self, Z, z_init, seed):
        if not isinstance(Z, InducingFeature) and np.ndim(Z) == 0:
            Z = initial_inducing_inputs(self.X, Z, z_init, seed)
        return as_feature(Z, self.X.shape[1])

    # the validation layer's model-specific part ------------------------------------------------
    @staticmethod
    def _named_values(owners, prefix):
        return {f"{prefix}{j}.{n}": v for j, o in enumerate(owners) for n, v in o.parameters.items()}

    @staticmethod
    def _check_magnitudes(values):
        """Every value finite and within 1e100 in magnitude (:data:`gpexplorer.validation.MAX_MAGNITUDE`):
        a kernel variance of 1e300 makes q(u)'s start overflow."""
        for name, v in values.items():
            validation.bounded(name, np.asarray(v, dtype=float))

    def _check_sizes(self, Z, posterior, estimator, N, Q):
        """M, K, S and the quadrature grid against the memory cap, before anything is allocated."""
        zs = Z if isinstance(Z, (list, tuple)) else [Z]
        sizes = []
        for z in zs:
            if isinstance(z, InducingFeature):
                sizes.append(len(z))
            elif np.ndim(z) == 0:
                sizes.append(validation.inducing_count(z, N, "Z", ARRAYS_PER_ROW))
            else:
                sizes.append(int(np.shape(z)[0]))
        K = validation.mixture_components(posterior[1], "posterior K") \
            if isinstance(posterior, tuple) and len(posterior) == 2 and posterior[0] == "mog" else getattr(posterior, "K", 2)
        M = max(sizes)
        validation.check_memory(f"Z with M = {M:,} inducing variables, N = {N:,}, Q = {Q} and K = {K}",
                                8 * Q * (M * M + (ARRAYS_PER_ROW + K) * M * N), "use a smaller M or fewer data")
        if estimator != "quadrature":
            validation.check_memory(f"num_samples = {self.num_samples:,} with N = {N:,}",
                                    8 * 3 * self.num_samples * N * Q, "use fewer samples")
        if self.n_points is not None:
            validation.check_memory(f"n_points = {self.n_points} with Q = {Q} and N = {N:,}",
                                    8 * 3 * float(self.n_points) ** min(Q, 3) * N, "use fewer points")

    def _check_likelihood_at_prior_mean(self):
        """log p(y | f) finite at f = 0 (the prior mean) for every observation, or a ValueError
        naming Y and the likelihood's options (Y = 1e300, Poisson offset = 1e300)."""
        with np.errstate(all="ignore"):
            logp = np.asarray(self.likelihood.log_density(np.zeros((self.X.shape[0], self.likelihood.n_latent)),
                                                          self.Y))
        bad = ~np.isfinite(logp)
        if bad.any():
            name = getattr(self.likelihood, "name", type(self.likelihood).__name__)
            raise ValueError(f"the likelihood {name!r} gives a log density of {logp[bad].flat[0]} at f = 0 (the prior "
                             f"mean) for {int(bad.sum())} of the observations (first at row {int(np.argmax(bad))}); "
                             "check Y and likelihood_options (such as an offset) for values out of range")

    def _latents(self, X):
        return [marginals.forward(k, f, X, self.posterior, j, self.jitter)
                for j, (k, f) in enumerate(zip(self.kernels, self.features))]

    # parameters --------------------------------------------------------------------------------
    @property
    def Q(self):
        return len(self.kernels)

    def _owners(self):
        """(name prefix, kernel, feature) per latent, or once for ``shared`` ("kernel.", "feature.")."""
        if self.shared:
            return [("", self.kernels[0], self.features[0])]
        return [(str(j), k, f) for j, (k, f) in enumerate(zip(self.kernels, self.features))]

    def _named(self):
        """name -> (owner, owner's name, Parameter spec) for every parameter but "posterior"."""
        out = {}
        for j, k, f in self._owners():
            out.update({f"kernel{j}.{n}": (k, n, s) for n, s in k.parameter_specs.items()})
            out.update({f"feature{j}.{n}": (f, n, s) for n, s in f.parameter_specs.items()})
        out.update({f"likelihood.{n}": (self.likelihood, n, s) for n, s in self.likelihood.parameter_specs.items()})
        return out

    @property
    def parameters(self) -> dict:
        out = {"posterior": self.posterior.free.copy()}
        for name, (owner, n, _) in self._named().items():
            v = owner.parameters[n]
            out[name] = v.copy() if isinstance(v, np.ndarray) else v
        return out

    def set_parameters(self, **values):
        """Validated assignment by name (see the module docstring for the names); an optimiser's
        values take the same path (one spelling, always checked)."""
        named = self._named()
        unknown = set(values) - set(named) - {"posterior"}
        if unknown:
            raise ValueError(f"unknown parameter(s) {sorted(unknown)}; the parameters are {sorted(self.parameters)}")
        if "posterior" in values:
            self.posterior.set_free(values.pop("posterior"))
        for name, v in values.items():
            owner, n, _ = named[name]
            if not name.startswith("feature"):
                self._check_magnitudes({name: v})
            owner.set_parameters(**{n: v})
        return self

    @property
    def parameter_specs(self) -> dict:
        """name -> :class:`gpexplorer.parameters.Parameter`; "posterior" is real and unbounded."""
        return {"posterior": Parameter.real("posterior"), **{n: s.renamed(n) for n, (_, _, s) in self._named().items()}}

    def set_bounds(self, **bounds):
        """Natural-scale (lower, upper) of kernel and likelihood parameters by name."""
        named = self._named()
        for name, box in bounds.items():
            owner = named.get(name, (None,))[0]
            if owner is None or not hasattr(owner, "set_bounds"):
                raise ValueError(f"cannot bound {name!r}: bounds apply to the kernel{{j}}.* and likelihood.* "
                                 f"parameters {sorted(n for n in named if not n.startswith('feature'))}")
            owner.set_bounds(**{named[name][1]: box})
        return self

    # objective ---------------------------------------------------------------------------------
    def evaluate(self, eval_gradient=False):
        """The full :class:`gpexplorer.variational.elbo.ElboResult`."""
        return elbo_function(self.X, self.Y, self.kernels, self.features, self.likelihood, self.posterior,
                             estimator=self.estimator, eps=self.eps, n_points=self.n_points,
                             control_variate=self.control_variate, jitter=self.jitter, eval_gradient=eval_gradient,
                             workspace=self.workspace)

    def elbo(self, eval_gradient=False):
        """The ELBO; with ``eval_gradient``, (value, {name: gradient}) on the natural scale."""
        r = self.evaluate(eval_gradient)
        if not eval_gradient:
            return r.value
        return r.value, self.gradients_by_name(r)

    def objective(self) -> float:
        """-elbo(): the value ``fit`` minimises (``FitResult.objective``; with the score estimator
        the fit traces the quadrature value instead, :mod:`.fitting`)."""
        return -self.elbo()

    def gradients_by_name(self, r):
        """{parameter name: gradient} from an :class:`ElboResult` evaluated with gradients."""
        g = {"posterior": r.grads["posterior"]}
        g.update(self.latent_gradients_by_name(r.grads["kernels"], r.grads["features"]))
        g.update({f"likelihood.{n}": v for n, v in r.grads["likelihood"].items()})
        return g

    def latent_gradients_by_name(self, kernel_grads, feature_grads):
        """{"kernel{j}.*", "feature{j}.*": gradient} from per-latent gradient dicts; with ``shared``,
        {"kernel.*", "feature.*"}: the sum over the latents (one dict when the ELBO summed them already)."""
        if not self.shared:
            return {**{f"kernel{j}.{n}": v for j, gk in enumerate(kernel_grads) for n, v in gk.items()},
                    **{f"feature{j}.{n}": v for j, gf in enumerate(feature_grads) for n, v in gf.items()}}
        return {**{f"kernel.{n}": v for n, v in sum_gradients(*kernel_grads).items()},
                **{f"feature.{n}": v for n, v in sum_gradients(*feature_grads).items()}}

    def _fixed_names(self, fixed):
        fixed = (fixed,) if isinstance(fixed, str) else tuple(fixed)
        names = set(self.parameters)
        out = set()
        for f in fixed:
            if f == "posterior" or f in names:
                out.add(f)
            elif f in ("kernel", "inducing", "likelihood"):
                prefix = {"kernel": "kernel", "inducing": "feature", "likelihood": "likelihood."}[f]
                out |= {n for n in names if n.startswith(prefix)}
            else:
                raise ValueError(f"cannot fix {f!r}: the parameters are {sorted(names)} (or the groups {GROUPS})")
        return out

    def fit(self, max_iter=200, fixed=(), restarts=0, seed=None, callback=None, *, method="auto",
            batch_size=None, learning_rate=0.01, evals_per_block=25, trace_every=10, tol=None, whiten=True,
            stop_when_converged=False, convergence_tol=convergence.CONVERGENCE_TOL, natgrad_step=0.1):
        """Maximise the ELBO; returns a :class:`gpexplorer.optimize.FitResult` (also ``fit_result``).

        ``method``: "auto" (the default: "natgrad" where it applies, a full-Gaussian q(u) that is
        not fixed and an estimator other than the score function, else "lbfgs"), "natgrad"
        (L-BFGS-B over everything but q, ``max_iter`` iterations, with q(u) at its optimum for the
        other parameters by natural-gradient steps at each evaluation:
        :mod:`gpexplorer.variational.natural_gradients`),
        "lbfgs" (L-BFGS-B jointly over every free parameter, ``max_iter`` iterations),
        "block-lbfgs" (the paper's scheme: ``max_iter`` rounds of L-BFGS-B over the blocks q,
        hyperparameters, likelihood, ``evals_per_block`` evaluations each) or "adam" (``max_iter``
        minibatch steps of ``batch_size`` rows, ``learning_rate``, a trace entry every
        ``trace_every`` steps) or "adam-natgrad" (the same Adam over everything but a full-Gaussian
        q(u), which takes a natural-gradient step of ``natgrad_step`` on each minibatch). ``fixed``: names or the groups "posterior", "kernel", "inducing",
        "likelihood". ``whiten``: L-BFGS moves an FG q(u) in whitened coordinates (same objective).
        ``callback(entry)`` returning True stops the fit. ``result.details["convergence"]``: converged,
        ended on the budget or stalled (:mod:`gpexplorer.variational.convergence`; ``convergence_tol``
        in nats per data point and iteration); ``stop_when_converged``: block-cyclic L-BFGS stops
        once the fit has converged (or stalled) by that rule.
        Calling ``fit`` again continues from where the model is (q(u), hyperparameters, Z and
        likelihood parameters kept). Details, and what the score estimator does under L-BFGS, in
        :mod:`gpexplorer.variational.fitting`.
        """
        seed = validation.seed(seed)
        tol = validation.tolerance("tol", tol)
        convergence_tol = validation.tolerance("convergence_tol", convergence_tol, allow_none=False)
        self.fit_result = fitting.fit(self, max_iter=max_iter, fixed=self._fixed_names(fixed), restarts=restarts,
                                      seed=seed, callback=callback, method=method, batch_size=batch_size,
                                      learning_rate=learning_rate, evals_per_block=evals_per_block,
                                      trace_every=trace_every, tol=tol, whiten=whiten,
                                      stop_when_converged=stop_when_converged, convergence_tol=convergence_tol,
                                      natgrad_step=natgrad_step)
        return self.fit_result

    # prediction --------------------------------------------------------------------------------
    def predict_components(self, Xnew):
        """(pi (K,), means (K, N*, Q), variances (K, N*, Q)) of q(f*) per mixture component."""
        lats = self._latents(self._check_new(Xnew))
        means = np.stack([lat.mean for lat in lats], axis=-1)
        var = np.maximum(np.stack([lat.var for lat in lats], axis=-1), 0.0)
        return self.posterior.pi, means, var

    def predict_f(self, Xnew, full_cov=False):
        """Mean and variance (N*, Q) of the mixture q(f*) per latent (its first two moments); with
        ``full_cov`` the mixture's covariance over the rows of Xnew per latent, (Q, N*, N*):
        sum_k pi_k (C_k + b_k b_k^T) - b b^T with C_k = K** - A Kuf + A S_k A^T (eq. 11)."""
        if not full_cov:
            return mixture_moments(*self.predict_components(Xnew))
        Xnew = self._check_new(Xnew)
        pi, means, covs = self.posterior.pi, [], []
        for j, lat in enumerate(self._latents(Xnew)):
            mean = pi @ lat.mean  # [N*]
            second = sum(p * (AS_k @ lat.At + np.outer(b_k, b_k)) for p, AS_k, b_k in zip(pi, lat.AS, lat.mean))
            means.append(mean)
            covs.append(self.kernels[j].K(Xnew) - lat.Kuf.T @ lat.At + second - np.outer(mean, mean))
        return np.stack(means, axis=-1), np.stack(covs)

    def predict_f_quantiles(self, Xnew, probabilities=(0.025, 0.975)):
        """(N*, Q, len(probabilities)) quantiles of the mixture q(f*) per latent (not of a
        moment-matched Gaussian): :func:`.prediction.latent_quantiles`."""
        return prediction.latent_quantiles(self, self._check_new(Xnew), probabilities)

    def predict_y(self, Xnew, n_points=None, num_samples=2000, seed=0):
        """Mean and variance (N*, 1) of y* under q(f*): see :func:`.prediction.predict_y`."""
        Xnew = self._check_new(Xnew)
        return prediction.predict_y(self, Xnew, *self._prediction_options(n_points, num_samples, seed, len(Xnew)))

    def predict_log_density(self, Xnew, Ynew, n_points=None, num_samples=2000, seed=0):
        """log p(y* | data) = log E_q(f*)[p(y* | f*)] per point (N*,): :func:`.prediction.predict_log_density`."""
        Xnew = self._check_new(Xnew)
        return prediction.predict_log_density(self, Xnew, Ynew,
                                              *self._prediction_options(n_points, num_samples, seed, len(Xnew)))

    def predict_class_probabilities(self, Xnew, n_points=None, num_samples=2000, seed=0):
        """(N*, C) class probabilities (C = 2 for Bernoulli: columns p(y=0), p(y=1))."""
        Xnew = self._check_new(Xnew)
        return prediction.class_probabilities(self, Xnew, *self._prediction_options(n_points, num_samples, seed,
                                                                                    len(Xnew)))

    def nlpd(self, Xnew, Ynew):
        """Mean negative log predictive density -mean log p(y* | data)."""
        return prediction.nlpd(self, self._check_new(Xnew), Ynew)

    def error_rate(self, Xnew, Ynew):
        """Classification error (Bernoulli: p(y=1) > 0.5; softmax: the most probable class)."""
        return prediction.error_rate(self, self._check_new(Xnew), Ynew)

    def sse(self, Xnew, Ynew):
        """Standardised squared error (paper sec. 6): MSE of the predictive mean / var of Ynew."""
        return prediction.sse(self, self._check_new(Xnew), Ynew)

    def _check_new(self, Xnew):
        """Xnew (N*, D) through the validation layer: numeric, N* >= 1, finite, |Xnew| <= 1e100,
        and the (K, N*, M) prediction arrays under the memory cap."""
        Xnew = validation.prediction_inputs(Xnew, self.X.shape[1], min_rows=1, rows="N*")
        M = max(len(f) for f in self.features)
        validation.check_memory(f"Xnew with N* = {len(Xnew):,} rows", 8 * self.Q * (self.posterior.K + 2) * M * len(Xnew),
                                "predict in smaller blocks of rows")
        return Xnew

    def _prediction_options(self, n_points, num_samples, seed, rows):
        n_points = validation.optional_count("n_points", n_points, 1, MAX_QUADRATURE_POINTS)
        num_samples = validation.count("num_samples", num_samples, 2)
        seed = validation.seed(seed)
        if n_points is not None:
            validation.check_memory(f"n_points = {n_points} with N* = {rows:,}",
                                    8 * 3 * float(n_points) ** min(self.Q, 3) * rows, "use fewer points")
        return n_points, num_samples, seed

    def __repr__(self):
        return (f"SparseVariationalGP(N={self.X.shape[0]}, Q={self.Q}, M={[len(f) for f in self.features]}, "
                f"posterior={type(self.posterior).__name__}(K={self.posterior.K}), estimator={self.estimator!r})")


__all__ = ["GROUPS", "SparseVariationalGP"]
