"""Natural-gradient steps for a full-Gaussian q(u), and the fit that alternates them with
L-BFGS-B over the hyperparameters, inducing inputs and likelihood parameters.

Natural gradients (Amari 1998; Hensman, Fusi & Lawrence 2013; Salimbeni, Eleftheriadis &
Hensman 2018). Per latent, q(v) = N(mu, Sigma) in whitened coordinates u = Lk v with
Kuu + jitter I = Lk Lk^T, so the prior is p(v) = N(0, I). With natural parameters
theta1 = Sigma^-1 mu, theta2 = -Sigma^-1 / 2 and expectation parameters eta1 = mu,
eta2 = Sigma + mu mu^T, a natural-gradient step of size gamma is

    theta <- theta + gamma dELBO/deta,
    dELBO/deta1 = dELBO/dmu - 2 dELBO/dSigma mu,   dELBO/deta2 = dELBO/dSigma.

The ELBO is ell + H[q] + E_q[log p(v)] (SAVIGP eq. 8, 18-20); with the entropy's
dH/dSigma = Sigma^-1 / 2 and the prior's -mu, -I/2 the step becomes, with g = dell/dmu and
G = dell/dSigma (symmetric), both from the expected log likelihood alone,

    Sigma^-1 <- (1 - gamma) Sigma^-1 + gamma (I - 2 G)
    theta1   <- (1 - gamma) theta1   + gamma (g - 2 G mu).

For a Gaussian likelihood G = -A^T A / (2 sigma^2) and g = A^T (y - A mu) / sigma^2 with A the
whitened projection, so one step of size 1 lands on the optimal q (the collapsed bound of
Titsias 2009); for a log-concave likelihood -2 G is positive semi-definite and the precision
stays positive. The whitened form keeps Kuu^-1 out of the update (I instead), which matters
where Kuu is ill-conditioned. g and G come from :func:`gpexplorer.variational.marginals.backward`
in the original coordinates (dell/dm, dell/dS) and are mapped by mu = Lk^-1 m, Sigma =
Lk^-1 S Lk^-T: g = Lk^T dell/dm, G = Lk^T dell/dS Lk.

Only the full Gaussian is covered. A mixture of K > 1 diagonal Gaussians is not an exponential
family (its Fisher metric has no closed form, and SAVIGP's entropy for K > 1 is itself a bound,
eq. 19), so no natural parameterisation gives these steps. One diagonal Gaussian (MoG1) is an
exponential family, with natural parameters m/s and -1/(2s) per inducing variable, but its step
moves each mean as if the others stayed: the means are coupled through Kuu^-1 and q holds no
correlation, so the steps are a Jacobi sweep. That step was tried (in the original coordinates;
whitening would break the diagonal) and not kept: on Snelson (Gaussian likelihood, M = 15) 50
steps per evaluation did not reach q's optimum and the fit ended about 90 nats below joint
L-BFGS-B's. MoG fits use L-BFGS-B or Adam.

The fit (:func:`run`): L-BFGS-B over every free parameter but q (the optimiser core's joint
strategy, :func:`gpexplorer.optimize.lbfgsb`, on the remaining entries); at each of its evaluations q(u) is first brought to its
optimum for those values by natural-gradient steps (step 1 first, halved until the ELBO does not
fall, doubled back after a success), warm-started from the previous evaluation's q. At a q that
maximises the ELBO the partial gradient in the other parameters is the total one (the envelope
theorem), so for a Gaussian likelihood the outer problem is exactly the collapsed bound's and
L-BFGS-B converges as it does on the collapsed bound.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy import linalg as sla

from gpexplorer.linalg import CholeskyError, inv_from_cholesky
from gpexplorer.optimize import FAILED_OBJECTIVE, lbfgsb
from gpexplorer.variational import estimators, marginals
from gpexplorer.variational.elbo import MIN_VARIANCE, marginal_moments

#: largest number of natural-gradient steps on q per outer evaluation: warm-started from the last
#: evaluation's q, a few steps reach the tolerance; more cost time without raising the final ELBO
#: (breast cancer, FG, quadrature, 300 iterations: 50 steps -31.390 in 6.5 s, 4 steps -31.394 in
#: 3.0 s; coal, the toys: the same ELBO to 1e-3)
MAX_Q_STEPS = 5
#: the q steps stop once a full step changes the ELBO by at most this many nats per data point
#: (the ELBO's round-off is about 1e-11 per point on the bundled data sets)
Q_TOLERANCE = 1e-10
#: smallest step size tried before the q steps end (a step this short that still lowers the
#: ELBO by more than the tolerance means the q at hand is as good as the round-off shows)
MIN_STEP = 2.0 ** -10
FAILURES = (CholeskyError, FloatingPointError, np.linalg.LinAlgError, ValueError)


@dataclass
class QGradient:
    """What one natural-gradient step needs for one latent (whitened coordinates)."""

    mu: np.ndarray  # [M] whitened mean Lk^-1 m
    precision: np.ndarray  # [M, M] Sigma^-1
    g: np.ndarray  # [M] dell/dmu
    G: np.ndarray  # [M, M] dell/dSigma (symmetric)
    Lk: np.ndarray  # [M, M] chol(Kuu + jitter I)


def supports(model):
    """None if natural-gradient fits apply to ``model``, else the reason they do not."""
    post = model.posterior
    if post.K != 1:
        return ("natural gradients need a full-Gaussian q(u) (posterior='fg'): a mixture of diagonal Gaussians is "
                "not an exponential family, so it has no natural parameters to step in")
    if post.diagonal:
        return ("natural gradients need a full-Gaussian q(u) (posterior='fg'): a diagonal Gaussian's steps move each "
                "mean as if the others stayed, and fail to reach q's optimum where the inducing values are "
                "correlated (module docstring); fit MoG1 with method='lbfgs' or 'block-lbfgs'")
    if getattr(post, "mean_field", False):
        return ("natural gradients here step a full-Gaussian q(u) (posterior='fg'); a step of the mean-field q would "
                "have to be taken per component and is not built (fit it with method='lbfgs' or 'adam')")
    if model.estimator == "score":
        return ("natural gradients need the gradient of the objective they are judged by; the score estimator's "
                "gradient is an unbiased estimate of a different value (use estimator='quadrature' or 'reparam')")
    return None


def check_minibatch(model, natgrad_step, fixed):
    """A ValueError naming the reason where fit(method="adam-natgrad") cannot run."""
    if isinstance(natgrad_step, bool) or not isinstance(natgrad_step, (int, float, np.floating)) \
            or not 0.0 < float(natgrad_step) <= 1.0:
        raise ValueError(f"natgrad_step must be a number in (0, 1]; got {natgrad_step!r}")
    reason = supports(model)
    if reason is not None:
        raise ValueError(reason)
    if "posterior" in fixed:
        raise ValueError("method 'adam-natgrad' moves q(u) by natural gradients; it cannot be fixed")


def posterior_positions(packer):
    """The positions of q(u)'s free vector in ``packer``'s vector."""
    offsets = np.cumsum([0] + [packer.sizes[n] for n in packer.names])
    at = packer.names.index("posterior")
    return np.arange(offsets[at], offsets[at + 1])


def q_gradients(model, rows=None, eps=None):
    """Per latent, the :class:`QGradient` at the model's current q(u) and parameters; with ``rows``
    (and their ``eps`` for a Monte Carlo estimator) from that minibatch, the expected log
    likelihood scaled by N / len(rows) (its unbiased estimate)."""
    post = model.posterior
    X, Y, scale = model.X, model.Y, 1.0
    if rows is not None:
        X, Y, scale = model.X[rows], model.Y[rows], model.X.shape[0] / len(rows)
    lats, b, var = marginal_moments(X, model.kernels, model.features, post, model.jitter)
    est = estimators.estimate(model.likelihood, b, np.maximum(var, MIN_VARIANCE), Y, model.estimator,
                              eps=model.eps if rows is None else eps, n_points=model.n_points,
                              control_variate=model.control_variate)
    gb = scale * est.dmean
    gv = scale * np.where(var > MIN_VARIANCE, est.dvar, 0.0)
    out = []
    for j, lat in enumerate(lats):
        dm, dS, *_ = marginals.backward(lat, post.means[j], False, gb[:, :, j], gv[:, :, j])
        Lk = lat.L
        m = post.means[j][0]
        Lv = sla.solve_triangular(Lk, post.factor(j), lower=True, check_finite=False)  # chol of Sigma
        mu = sla.solve_triangular(Lk, m, lower=True, check_finite=False)
        precision = inv_from_cholesky(Lv)
        dS = np.asarray(dS[0], dtype=float)
        G = Lk.T @ (0.5 * (dS + dS.T)) @ Lk
        out.append(QGradient(mu=mu, precision=precision, g=Lk.T @ dm[0], G=G, Lk=Lk))
    return out


def natural_step(grad: QGradient, gamma):
    """(m, L_S) in the original coordinates after a step of size ``gamma`` (module docstring);
    raises numpy's LinAlgError when the new precision is not positive definite."""
    M = len(grad.mu)
    precision = (1.0 - gamma) * grad.precision + gamma * (np.eye(M) - 2.0 * grad.G)
    theta1 = (1.0 - gamma) * (grad.precision @ grad.mu) + gamma * (grad.g - 2.0 * grad.G @ grad.mu)
    R = np.linalg.cholesky(0.5 * (precision + precision.T))  # Sigma^-1 = R R^T
    mu = sla.cho_solve((R, True), theta1, check_finite=False)
    chol_sigma = np.linalg.cholesky(inv_from_cholesky(R))  # then L_S = Lk chol(Sigma)
    return grad.Lk @ mu, grad.Lk @ chol_sigma


def minibatch_step(model, rows, eps, gamma):
    """The posterior's free vector after one natural-gradient step of size ``gamma`` on the minibatch
    ``rows`` (the stochastic natural gradient of Hensman et al. 2013 and Salimbeni et al. 2018,
    which GPflow alternates with Adam); None where the step fails (a precision that is not
    positive definite), and q then stays."""
    try:
        grads = q_gradients(model, rows, eps)
        post = model.posterior.copy()
        moves = [natural_step(g, gamma) for g in grads]
        post.set_moments([mv[0] for mv in moves], [mv[1] for mv in moves])
    except FAILURES:
        return None
    return post.free.copy() if np.all(np.isfinite(post.free)) else None


class QUpdater:
    """Brings q(u) to its optimum for the model's other parameters by natural-gradient steps;
    remembers the last accepted step size between calls."""

    def __init__(self, model, value_of):
        self.model = model
        self.value_of = value_of  # () -> ELBO at the model's current state (nan where it fails)
        self.gamma = 1.0
        # one unit step is exact only under a likelihood quadratic in f whose expectation is exact:
        # quadrature (fixed-eps Monte Carlo adds a term linear in the standard deviation)
        self.conjugate = bool(getattr(model.likelihood, "conjugate", False)) and model.estimator == "quadrature"
        self.n_steps = 0
        self.n_rejected = 0

    def _candidate(self, grads, gamma):
        post = self.model.posterior.copy()
        moves = [natural_step(g, gamma) for g in grads]
        post.set_moments([mv[0] for mv in moves], [mv[1] for mv in moves])
        return post.free.copy()

    def optimise(self, max_steps=None):
        """Natural-gradient steps until a step of size >= 1/2 changes the ELBO by at most
        Q_TOLERANCE nats per data point (a step that lowers it by more is halved, down to
        MIN_STEP); returns the ELBO there (the model is left at that q)."""
        model = self.model
        value = np.nan if self.conjugate else self.value_of()  # a conjugate unit step needs no comparison
        tol = Q_TOLERANCE * model.X.shape[0]
        self.gamma = min(1.0, 4.0 * self.gamma)  # a step cut at the last parameters may fit these
        for _ in range(int(MAX_Q_STEPS if max_steps is None else max_steps)):
            try:
                grads = q_gradients(model)
            except FAILURES:
                return value
            start = model.posterior.free.copy()
            gamma, accepted = self.gamma, None
            while gamma >= MIN_STEP:
                try:
                    model.posterior.set_free(self._candidate(grads, gamma))
                    new = self.value_of()
                except FAILURES:
                    new = np.nan
                if np.isfinite(new) and (not np.isfinite(value) or new >= value - tol):
                    accepted = new
                    break
                model.posterior.set_free(start)
                self.n_rejected += 1
                gamma *= 0.5
            if accepted is None:
                return value
            self.n_steps += 1
            # a cut step's small gain says little about how far the optimum is
            converged = np.isfinite(value) and abs(accepted - value) <= tol and gamma >= 0.5
            if self.conjugate and gamma == 1.0:
                break  # a unit step is exact for a likelihood quadratic in f
            self.gamma = min(1.0, 2.0 * gamma)
            value = accepted
            if converged:
                break
        return value


def run(model, ev, rec, x0, max_iter, tol, details):
    """Maximise the ELBO from ``x0`` (the packed vector of ``ev.packer``, q(u) included): L-BFGS-B
    (:func:`gpexplorer.optimize.lbfgsb`) over the entries other than q, q brought to its optimum
    by :class:`QUpdater` at each evaluation (module docstring). ``ev``/``rec``: the fit's
    evaluator and trace recorder (:mod:`gpexplorer.variational.fitting`); a callback's stop
    raises the recorder's exception. Returns (x at the best point, iterations, message)."""
    reason = supports(model)
    if reason is not None:
        raise ValueError(reason)
    packer = ev.packer
    if "posterior" not in packer.names:
        raise ValueError("natural gradients move q(u); it cannot be fixed (fixed=('posterior',))")
    post = posterior_positions(packer)
    rest = np.setdiff1d(np.arange(x0.size), post)
    updater = QUpdater(model, lambda: _elbo_value(model))
    latest = {"q": x0[post].copy()}  # each evaluation starts from the last good q
    optimised = {}  # the rest's bytes -> the full vector with q at its optimum there

    def with_optimal_q(full):
        full = full.copy()
        full[post] = latest["q"]
        ev.assign(full)
        updater.optimise()
        full[post] = model.posterior.free
        optimised[full[rest].tobytes()] = full
        return full

    def fun(full):
        full = with_optimal_q(full)
        F, g, _ = ev.at(full)
        if F < FAILED_OBJECTIVE:
            latest["q"] = full[post].copy()
        return F, g

    def on_iterate(iterate, F):
        full = optimised.get(iterate[rest].tobytes())
        if full is None:
            full = with_optimal_q(iterate)
        optimised.clear()
        F, _, terms = ev.at(full)
        rec.record(full, F, terms)  # raises the fit's Stop when the callback asks

    start = with_optimal_q(x0)
    F, _, terms = ev.at(start)
    rec.record(start, F, terms, notify=False)
    nit, message = 0, "q(u) at its optimum (nothing else to optimise)"
    if not rest.size:  # q alone: max_iter natural-gradient steps at most
        updater.optimise(max_steps=max_iter)
        start[post] = model.posterior.free
        F, _, terms = ev.at(start)
        rec.record(start, F, terms)
    else:
        lo, hi = packer.box()
        run_ = lbfgsb(fun, start, lo, hi, max_iter=int(max_iter), ftol=tol, gtol=tol, on_iterate=on_iterate, idx=rest)
        nit, message = run_.n_iter, run_.message
    details["lbfgs_message"] = message
    details["natural_gradient"] = {"q_steps": updater.n_steps, "rejected_steps": updater.n_rejected,
                                   "step_size": updater.gamma}
    return ev.best[1].copy(), nit, message


def _elbo_value(model):
    try:
        value = model.evaluate(eval_gradient=False).value
    except FAILURES:
        return np.nan
    return float(value) if np.isfinite(value) else np.nan


__all__ = ["MAX_Q_STEPS", "Q_TOLERANCE", "QGradient", "QUpdater", "natural_step", "q_gradients", "run", "supports"]
