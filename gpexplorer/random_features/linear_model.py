"""StandardLinearModel: Bayesian linear regression on a feature basis (revrand report section 1.2).

y_n = phi(x_n)^T w + e_n, w ~ N(0, Lambda), e_n ~ N(0, s2) (eq. 12-13). The basis'
hyperparameters, the weight variances (one per basis block, eq. 37) and the noise variance s2 are
learnt by maximising the evidence (eq. 14) with analytic gradients
(:mod:`gpexplorer.random_features.evidence`) through the one optimiser core (joint L-BFGS-B,
:func:`gpexplorer.optimize.fit`); the weights' posterior is exact (eq. 15); predictions follow
eq. 15-17 ((17) has a stray transpose).

Starts: ``fit(random_starts=R)`` first evaluates the evidence (no gradients) at R random draws of
the parameters and optimises from the best of them and the current point (what revrand's
``nstarts`` does: 100 draws for the report's Boston run); ``restarts`` adds further whole L-BFGS
runs from perturbed starts, keeping the best.
"""

from __future__ import annotations

import math

import numpy as np
from scipy import special

from gpexplorer import _threads, validation
from gpexplorer.optimize import fit as optimiser_fit
from gpexplorer.optimize import expand_fixed, snapshot
from gpexplorer.parameters import NOISE, Parameter
from gpexplorer.random_features.evidence import Predictive, log_evidence, weight_posterior
from gpexplorer.random_features.feature_model import WEIGHT_VARIANCE, FeatureModel
from gpexplorer.validation.arrays import as_float_array

__all__ = ["StandardLinearModel"]

LOG_2PI = math.log(2.0 * math.pi)
#: L-BFGS-B's stored corrections in revrand's StandardLinearModel (``options={'maxcor': 100}``)
REVRAND_MEMORY = 100


class StandardLinearModel(FeatureModel):
    """Bayesian linear regression on ``basis`` features (module docstring).

    Parameters
    ----------
    X : [N, d] inputs; y : [N] targets.
    basis : a :mod:`gpexplorer.random_features` basis (``basis("rbf", d, 400) + basis("linear", d)``)
        or a name.
    weight_variance : the weight prior variance (a scalar, or one per block of a concatenation).
    noise_variance : s2.
    """

    def __init__(self, X, y, basis="rbf", weight_variance=1.0, noise_variance=1.0):
        X, y = validation.validate_data(X, y)
        super().__init__(X, basis, weight_variance)
        self.y = y
        self._noise_spec = Parameter(NOISE)
        self.noise_variance = self.checked_variance(NOISE, noise_variance, (self._noise_spec.lower, self._noise_spec.upper))
        self._posterior = None

    # parameters ---------------------------------------------------------------------------------
    def _own_parameters(self):
        return {NOISE: self.noise_variance}

    def _own_specs_now(self):
        return {NOISE: self._own_specs.get(NOISE, self._noise_spec)}

    def _set_own(self, values):
        spec = self._own_specs_now()[NOISE]
        self.noise_variance = self.checked_variance(NOISE, values[NOISE], (spec.lower, spec.upper))

    @property
    def evaluation_work(self):
        """0: one BLAS thread always. At Boston's size (N = 404, D = 814) two threads made the
        report's fit slower on the 2-core machine (3.8-4.3 s against 2.2-2.7 s; earlier, one
        evaluation went from 30 to 58 ms and its Cholesky from 3 to 14 ms)."""
        return 0

    # the evidence -------------------------------------------------------------------------------
    def log_evidence(self) -> float:
        """log p(y | hyperparameters) (eq. 14)."""
        return log_evidence(self.features(), self.y, self.prior_variances(), self.noise_variance, gradients=False).value

    log_marginal_likelihood = log_evidence

    def objective_and_gradient(self):
        """(F = -log p(y), {name: dF/dvalue}, terms) for the optimiser core."""
        Phi = self.features()
        ev = log_evidence(Phi, self.y, self.prior_variances(), self.noise_variance)
        grads = {k: -v for k, v in self.basis.checked_vjp(self.X, ev.dPhi, Phi).items()}
        grads[WEIGHT_VARIANCE] = -self.block_sums(ev.dlam)
        grads[NOISE] = -ev.dnoise
        return -ev.value, grads, {"log_evidence": ev.value}

    def evidence_gradients(self) -> dict:
        """{name: d log p(y) / d value} (the gradient the fit follows, with its sign)."""
        return {k: -v for k, v in self.objective_and_gradient()[1].items()}

    # fitting --------------------------------------------------------------------------------------
    def fit(self, max_iter=1000, fixed=(), restarts=0, *, random_starts=0, seed=None, callback=None, tol=None,
            cancel=None, start_distribution=None, memory=REVRAND_MEMORY):
        """Maximise the evidence with L-BFGS-B (module docstring); returns a :class:`FitResult`.

        ``memory``: L-BFGS-B's stored corrections; revrand's 100 (its ``maxcor``) by default, where
        scipy's 10 crawls along the flat tails of the lengthscales ARD prunes (Boston, 6 seeds: a
        median of 110 evaluations against 398; the ends agree within 0.003 nats in 4 seeds, and
        differ by +0.41 and -0.54 nats in the other two: ``bench_revrand.py --memory-seeds 6``).

        ``start_distribution``: {name: callable(rng) -> value} for the random starts (default:
        each positive parameter times exp(N(0, 1)), the real ones plus N(0, 1) (|v| + 1))."""
        random_starts = validation.count("random_starts", random_starts, minimum=0, maximum=100_000)
        if random_starts:
            with _threads.single_threaded():
                self._best_random_start(random_starts, seed, start_distribution, fixed)
        result = optimiser_fit(self, max_iter=validation.count("max_iter", max_iter, minimum=0), fixed=fixed,
                               restarts=restarts, seed=seed, callback=callback, tol=tol, cancel=cancel, memory=memory)
        self._posterior = None
        return result

    def _best_random_start(self, n, seed, distribution, fixed):
        rng = np.random.default_rng(validation.seed(seed) if seed is not None else None)
        frozen = expand_fixed(self, fixed)
        self.screen_starts(n, rng, [k for k in self.parameters if k not in frozen], self.log_evidence, distribution)

    # the posterior and predictions ------------------------------------------------------------------
    def _predictive(self):
        key = repr(snapshot(self.parameters))
        if self._posterior is None or self._posterior[0] != key:
            self._posterior = (key, Predictive(self.features(), self.y, self.prior_variances(), self.noise_variance))
        return self._posterior[1]

    @property
    def posterior(self):
        """(m [D], C [D, D]): the weights' posterior N(m, C) at the current parameters (eq. 15)."""
        return weight_posterior(self.features(), self.y, self.prior_variances(), self.noise_variance)

    def predict_f(self, Xnew, full_cov=False):
        """(E[f*], Var[f*]) = (phi*^T m, phi*^T C phi*) (eq. 16-17 without the noise)."""
        return self._predictive()(self.prediction_features(Xnew), full_cov)

    def predict_y(self, Xnew, full_cov=False):
        """(E[y*], Var[y*]) (eq. 16-17)."""
        mean, var = self.predict_f(Xnew, full_cov)
        if full_cov:
            return mean, var + self.noise_variance * np.eye(var.shape[0])
        return mean, var + self.noise_variance

    def predict_log_density(self, Xnew, ynew):
        """log p(y*_n | y) per test point (eq. 15)."""
        Xnew = validation.prediction_inputs(Xnew, self.X.shape[1])
        ynew = as_float_array("ynew", ynew).reshape(-1)
        if ynew.shape[0] != Xnew.shape[0]:
            raise ValueError(f"ynew has {ynew.shape[0]} entries but Xnew has {Xnew.shape[0]} rows")
        validation.bounded("ynew", ynew)
        mean, var = self.predict_y(Xnew)
        return -0.5 * (LOG_2PI + np.log(var) + (ynew - mean) ** 2 / var)

    def predict_quantiles(self, Xnew, levels=(0.025, 0.975)):
        """Quantiles of p(y* | y) at each level, [S, len(levels)] (Gaussian, eq. 15)."""
        levels = np.atleast_1d(np.asarray(levels, dtype=float))
        if not np.all((levels > 0) & (levels < 1)):
            raise ValueError(f"levels must lie strictly between 0 and 1; got {levels.tolist()}")
        mean, var = self.predict_y(Xnew)
        return mean[:, None] + np.sqrt(var)[:, None] * (math.sqrt(2.0) * special.erfinv(2 * levels - 1))[None, :]

    def __repr__(self):
        return (f"StandardLinearModel(N={self.X.shape[0]}, features={self.n_features}, "
                f"noise_variance={self.noise_variance:.4g}, weight_variance={np.round(self.weight_variance, 4).tolist()})")
