"""Hyperparameter learning for the EGP/UGP: the free energy (41) as an objective, its gradient,
and the searches :meth:`gpexplorer.linearized.gp.LinearizedGP.fit` runs on it.

EGP paper section 3.2 maximises the approximate free energy F of eq. 41 over the log kernel
hyperparameters and the log noise variance sigma^2 with a derivative-free method; every
evaluation of F runs the Gauss-Newton inner loop (eq. 34-37). Besides scipy's derivative-free
minimisers (:func:`gpexplorer.optimize.derivative_free`), :func:`fisher_scoring` uses the
gradient of F and the Fisher information of the linearised model: on the EGP paper's Table 1 problems (N = 200) it needs
about 6 evaluations of F and 5 gradients where COBYLA needs about 21 evaluations, and takes
about 40% of COBYLA's time (``tests/benchmarks/bench_linearized_gp.py --method fisher,cobyla``).

The linearised model. With g(f_n) ~= a_n f_n + b_n (eq. 36/37) fixed, y - b ~ N(0, B) with
B = Lambda + A K A, the matrix of eq. 34. At the posterior the inner loop returns for that
linearisation (m = H (y - b), C = (I - H A) K, eq. 34-35) F equals this model's log evidence,

    F = E = -1/2 [N log 2 pi + log|B| + (y - b)^T B^-1 (y - b)]

because m^T K^-1 m + |y - A m - b|^2 / sigma^2 = (y - b)^T B^-1 (y - b) and log|K| - log|C| =
log|B| - N log sigma^2. In the stable form of :mod:`gpexplorer.linearized.gp` (s = a / sigma,
W = I + S K S = B / sigma^2, z = (y - b) / sigma, w = W^-1 z, beta = S w = K^-1 m):

    dE/dK = 1/2 [beta beta^T - S W^-1 S],   dE/dsigma^2 = 1/2 [w^T w - tr(W^-1)] / sigma^2.

These are the derivatives of F at a fixed linearisation. F also moves through (a, b), which
follow the posterior. For the EGP (Taylor, eq. 36) that dependence is differentiated exactly:
the inner loop's fixed point is the maximiser m of the MAP objective (31), so only
-1/2 log|W| depends on m (through a = g'(m)), and with Psi = diag(a^2 - g''(m) r) / sigma^2,
r = y - g(m), implicit differentiation of grad (31) = 0 gives

    dF/dK += z beta^T,   dF/dsigma^2 += -z^T m / sigma^2,
    z = (I + Psi K)^-1 u,   u_n = -(W^-1 S K)_nn g''(m_n) / sigma,

where u = -1/2 d log|W| / dm and g'' is a central difference of g'. The UGP's slopes (eq. 37)
depend on the posterior variances as well, and its inner loop can stop short of a fixed point;
its search uses the fixed-linearisation gradient, so it ends where the linearised model's
evidence stops improving F: on the Table 1 problems a tight Nelder-Mead search from there gains
0.001-0.01 nat (g = f, poly3, exp) and 0.04 nat on average (at most 0.11) for sin. (For
g = tanh(2f) the UGP's F is not a smooth function of the hyperparameters at all: re-running the
inner loop at the same hyperparameters from its own result changes F by up to 2 nats.)

Fisher information of the linearised model (log parameters x_i, M_i = B^-1 dB/dx_i):
I_ij = 1/2 tr(M_i M_j), with M = W^-1 for log sigma^2, M = I - W^-1 for the log variance of a
kernel linear in its variance, and M = W^-1 S dK/dx_i S for every other hyperparameter, whose
dK/dx_i is a central difference of K (:class:`FisherScore`), so any kernel with a ``K`` works.
"""

from __future__ import annotations

import math

import numpy as np
from scipy.linalg import lapack

from gpexplorer.linearized.gauss_newton import NumericalFailure
from gpexplorer.linalg import CholeskyError
from gpexplorer.optimize import FAILED_OBJECTIVE, TraceEntry

__all__ = ["FreeEnergyObjective", "StopSearch", "FisherScore", "linearised_evidence_gradient", "fisher_scoring",
           "variance_like", "FAILED"]

FAILED = FAILED_OBJECTIVE  # negative free energy reported for a point the inner loop cannot handle
#: largest trust region of :func:`fisher_scoring` (log units: a factor e^10 in one step)
_MAX_RADIUS = 10.0
#: central-difference step (log units) for dK/dx of hyperparameters without an exact form:
#: truncation error ~ h^2 / 6 and rounding ~ 1e-16 / h, both ~1e-11 relative
_FD_STEP = 1e-5


# ------------------------------------------------------------------------------------------
# the objective: -F at a vector of log-parameters (one inner loop), with the best evaluation
# ------------------------------------------------------------------------------------------
class StopSearch(Exception):
    """Raised by :class:`FreeEnergyObjective` when the callback asks to stop."""


class FreeEnergyObjective:
    """-F (eq. 41) of ``model`` at the optimiser's log-parameters x, recording every evaluation.

    Each call assigns the parameters, runs the inner loop (the first from the prior, later ones
    restarted from the posterior of the best evaluation so far) and appends a TraceEntry
    (objective = -F, its terms, the parameters). ``best`` holds the best evaluation's
    objective, parameters, posterior and kernel matrix. A point where the inner loop fails
    scores FAILED. ``callback(entry)`` returning True raises :class:`StopSearch`.
    """

    def __init__(self, model, packer, lo, hi, fixed_values, callback=None):
        self.model, self.packer, self.lo, self.hi = model, packer, lo, hi
        self.fixed_values, self.callback = fixed_values, callback
        self.trace = []
        self.best = {"objective": math.inf, "params": model.parameters, "post": None, "K": None, "x": None}

    def __call__(self, x):
        model = self.model
        x = np.clip(x, self.lo, self.hi)
        values = self.packer.unpack(x)
        values.update(self.fixed_values)
        model.set_parameters(**values)
        try:
            post, K = model.search_step(restart_from=self.best["post"])
            terms = model.free_energy_terms()
            value = math.fsum(terms.values())
            if not math.isfinite(value):
                raise NumericalFailure("the free energy is not finite")
        except (NumericalFailure, CholeskyError, np.linalg.LinAlgError):
            post, K, value, terms = None, None, FAILED, {}
        entry = TraceEntry(len(self.trace), value, terms, dict(values))
        self.trace.append(entry)
        if value < self.best["objective"]:
            self.best.update(objective=value, params=dict(values), post=post, K=K, x=x.copy())
        if self.callback is not None and self.callback(entry):
            raise StopSearch
        return value


# ------------------------------------------------------------------------------------------
# gradient of F and Fisher information of the linearised model
# ------------------------------------------------------------------------------------------
def _full_inverse(L):
    """W^-1 from the lower Cholesky factor of W, both triangles filled."""
    W_inv, info = lapack.dpotri(L, lower=1)
    if info != 0:
        raise NumericalFailure("the inverse of I + Lambda^-1/2 A K A Lambda^-1/2 failed")
    W_inv = np.tril(W_inv)
    W_inv += np.tril(W_inv, -1).T
    return W_inv


def linearised_evidence_gradient(K, y, noise_variance, s, chol_W, b, curvature=None):
    """Gradient of F (eq. 41) with respect to K and sigma^2 at a posterior of the inner loop.

    ``s`` = a / sigma and ``chol_W`` (lower Cholesky factor of W = I + S K S) and the
    intercepts ``b`` describe the linearisation the posterior belongs to. Without
    ``curvature`` the linearisation is held fixed: the derivatives of the linearised model's
    evidence E (module docstring). With ``curvature`` = g''(m) at the posterior mean (Taylor
    linearisation, m the MAP of eq. 31) the implicit dependence of a = g'(m) on the
    hyperparameters is added (module docstring). Returns (dF_dK (N, N) symmetric,
    dF_dnoise, W^-1).
    """
    sigma = math.sqrt(noise_variance)
    z = (y - b) / sigma
    w = lapack.dpotrs(chol_W, z, lower=1)[0]
    W_inv = _full_inverse(chol_W)
    beta = s * w
    dF_dK = np.outer(beta, beta)
    dF_dK -= s[:, None] * W_inv * s[None, :]
    dF_dK *= 0.5
    dF_dnoise = 0.5 * (float(w @ w) - float(np.trace(W_inv))) / noise_variance
    if curvature is not None and np.any(curvature != 0.0):
        a = s * sigma
        mean = K @ beta
        r = sigma * w                                        # y - A m - b = y - g(m) at the MAP
        diag_WSK = np.einsum("ij,ji->i", W_inv * s[None, :], K)  # (W^-1 S K)_nn
        u = -diag_WSK * curvature / sigma
        psi = (a * a - curvature * r) / noise_variance
        system = psi[:, None] * K
        system[np.diag_indices_from(system)] += 1.0
        try:
            zeta = np.linalg.solve(system, u)
        except np.linalg.LinAlgError:  # (31) is singular here: keep the fixed-linearisation gradient
            zeta = None
        if zeta is not None and np.all(np.isfinite(zeta)):
            dF_dK += 0.5 * (np.outer(zeta, beta) + np.outer(beta, zeta))
            dF_dnoise -= float(zeta @ mean) / noise_variance
    return dF_dK, dF_dnoise, W_inv


def _linear_in_variance(kernel):
    """True for a kernel whose matrix is variance * (something free of the variance)."""
    from gpexplorer import kernels

    return isinstance(kernel, (kernels.Stationary, kernels.Periodic)) and np.ndim(kernel.variance) == 0


class FisherScore:
    """Gradient of F (eq. 41) over the optimiser's log-parameters, and the Fisher information.

    dF/dx_i = sum_jk dF/dK_jk dK_jk/dx_i for a kernel hyperparameter (dF/dK from
    :func:`linearised_evidence_gradient`), sigma^2 dF/dsigma^2 for the noise. dK/dx_i is K for
    the log variance of a kernel linear in it, and a central difference of K for every other
    hyperparameter (relative error ~1e-10): two kernel matrices per hyperparameter, shared with
    the Fisher information and, for inputs with many columns, far cheaper than the kernels'
    analytic contraction (USPS, 767 x 256: 0.09 s per K against 1.5 s for ``grad_params``).
    ``kernel`` is copied (the differences never disturb the model); ``packer`` and ``fixed``
    map the flat vector to parameter values; ``forward`` and ``exact_implicit``
    (True for the Taylor linearisation) decide whether the implicit term of the EGP is added.
    """

    def __init__(self, kernel, X, y, forward, packer, fixed, exact_implicit, noise_name="noise_variance"):
        self.kernel = kernel.copy()
        self.X, self.y, self.forward = X, y, forward
        self.packer, self.fixed, self.noise_name = packer, dict(fixed), noise_name
        self.exact_implicit = exact_implicit
        linear = _linear_in_variance(kernel)
        self.kinds = []  # per coordinate: "noise", "variance" (dK/dx = K) or "other" (differences)
        for name in packer.names:
            kind = "noise" if name == noise_name else "variance" if (name == "variance" and linear) else "other"
            self.kinds += [kind] * packer.sizes[name]

    def _curvature(self, mean):
        h = 1e-5 * np.maximum(1.0, np.abs(mean))
        up = self.forward.jacobian((mean + h)[:, None])[:, 0, 0]
        down = self.forward.jacobian((mean - h)[:, None])[:, 0, 0]
        return (up - down) / (2.0 * h)

    def _kernel_at(self, x):
        values = self.packer.unpack(x)
        values.update(self.fixed)
        self.kernel.assign_unchecked({k: v for k, v in values.items() if k != self.noise_name})
        return self.kernel.K(self.X)

    def _kernel_derivatives(self, x):
        """{coordinate: dK/dx_i} by central differences for the "other" coordinates."""
        derivatives = {}
        for i, kind in enumerate(self.kinds):
            if kind == "other":
                step = np.zeros_like(x)
                step[i] = _FD_STEP
                derivatives[i] = (self._kernel_at(x + step) - self._kernel_at(x - step)) / (2.0 * _FD_STEP)
        return derivatives

    def __call__(self, x, K, post):
        """(gradient (P,), fisher) at log-parameters x, where the inner loop returned ``post``
        with kernel matrix ``K``; ``fisher()`` computes the Fisher information (P, P) there
        (on demand: a search that only needs the gradient skips its cost)."""
        values = self.packer.unpack(x)
        values.update(self.fixed)
        noise = float(values[self.noise_name])
        curvature = self._curvature(post.mean) if self.exact_implicit else None
        dF_dK, dF_dnoise, W_inv = linearised_evidence_gradient(
            K, self.y, noise, post.s, post.chol_W, post.linearization.b[:, 0], curvature)
        derivatives = self._kernel_derivatives(x)
        gradient = np.empty(len(self.kinds))
        for i, kind in enumerate(self.kinds):
            if kind == "noise":
                gradient[i] = noise * dF_dnoise
            else:
                gradient[i] = np.vdot(dF_dK, K if kind == "variance" else derivatives[i])
        return gradient, lambda: self._fisher(derivatives, post.s, W_inv)

    def _fisher(self, derivatives, s, W_inv):
        """I_ij = 1/2 tr(M_i M_j) with M = W^-1 (log noise), I - W^-1 (log variance of a kernel
        linear in it) or P = W^-1 S dK/dx_i S (the others), through the traces
        tr(W^-1), tr(W^-1 W^-1), tr(P W^-1) and tr(P), so only P needs a matrix product."""
        n, kinds = W_inv.shape[0], self.kinds
        products = {i: W_inv @ (s[:, None] * dK * s[None, :]) for i, dK in derivatives.items()}
        t, q = float(np.trace(W_inv)), float(np.vdot(W_inv, W_inv))  # tr(W^-1), tr(W^-2)
        cross = {i: (float(np.vdot(P, W_inv)), float(np.trace(P))) for i, P in products.items()}
        fisher = np.empty((len(kinds), len(kinds)))
        for a, ka in enumerate(kinds):
            for b in range(a, len(kinds)):
                kb = kinds[b]
                if ka == "other" and kb == "other":
                    value = float(np.sum(products[a] * products[b].T))
                elif "other" in (ka, kb):
                    c, trace_p = cross[a if ka == "other" else b]
                    value = c if "noise" in (ka, kb) else trace_p - c
                elif ka == kb == "noise":
                    value = q
                elif ka == kb == "variance":
                    value = n - 2.0 * t + q
                else:
                    value = t - q
                fisher[a, b] = fisher[b, a] = 0.5 * value
        return fisher


# ------------------------------------------------------------------------------------------
# the searches
# ------------------------------------------------------------------------------------------
def fisher_scoring(objective, score, x0, lo, hi, variance_like, *, max_evals=200, ftol=0.05, radius=3.0,
                   min_radius=1e-3):
    """Maximise F by Fisher scoring in a trust region, accepting only steps that improve F itself.

    ``objective(x)`` returns -F (one inner loop) and keeps the best evaluation in
    ``objective.best`` (its x, kernel matrix and posterior); ``score(x, K, post)`` returns
    the gradient g of F there and a function that computes the Fisher information I there.
    Each iteration takes the Levenberg-Marquardt step p = (I + mu 1)^-1 g over the parameters
    not held at a bound, mu >= 0 the smallest damping with |p| <= ``radius`` (mu = 0, the
    Fisher-scoring step, when that is short enough). For the variance-like parameters
    (``variance_like``, a boolean per coordinate) the step is taken in the natural
    parametrisation, x -> x + log(1 + p) (Fisher scoring of a variance, which reaches the
    optimum of a pure noise variance in one step from any start; p <= -1 is clipped to -0.95).
    A step that does not improve F quarters the radius (same g and I); one that improves F by
    more than 3/4 of the predicted gain g^T p - p^T I p / 2 at the region's edge doubles it (up
    to 10 log units).
    The search stops when the Fisher-scoring step is predicted to gain less than ``ftol`` / 10
    nats (when the last iteration's I already predicts that, the search stops without a new
    one), when the radius falls below ``min_radius``, or after ``max_evals`` evaluations of F.
    Returns (success, message, iterations).
    """
    f_best = objective(x0)
    evals, iterations = 1, 0
    if f_best >= FAILED:
        return False, "the free energy could not be evaluated at the starting point", iterations
    fisher = None
    while evals < max_evals:
        best = objective.best
        x = best["x"]
        try:
            gradient, fisher_at_x = score(x, best["K"], best["post"])
            free = ~(((x <= lo) & (gradient < 0.0)) | ((x >= hi) & (gradient > 0.0)))
            if fisher is None or _newton_gain(gradient, fisher, free) >= 0.1 * ftol:
                fisher = fisher_at_x()  # else the last one already says: converged
        except (NumericalFailure, np.linalg.LinAlgError) as err:
            return False, f"the gradient of the free energy failed: {err}", iterations
        iterations += 1
        if not (np.all(np.isfinite(gradient)) and np.all(np.isfinite(fisher))):
            return False, "the gradient of the free energy is not finite", iterations
        if not (_newton_gain(gradient, fisher, free) >= 0.1 * ftol):
            return True, "converged: the Fisher-scoring step would gain less than ftol / 10", iterations
        while evals < max_evals:
            step, predicted, at_edge = _trust_region_step(gradient, fisher, free, radius)
            value = objective(np.clip(x + np.where(variance_like, np.log1p(np.maximum(step, -0.95)), step),
                                      lo, hi))
            evals += 1
            if value < f_best:
                if at_edge and f_best - value > 0.75 * predicted:
                    radius = min(2.0 * radius, _MAX_RADIUS)
                f_best = value
                break
            radius = 0.25 * float(np.linalg.norm(step))
            if radius < min_radius:
                return True, "converged: no step in the trust region improves the free energy", iterations
    return False, f"stopped: the budget of {max_evals} evaluations of the free energy is spent", iterations


def _newton_gain(gradient, fisher, free):
    """g^T p / 2 for the Fisher-scoring step I p = g on the ``free`` coordinates (the gain the
    quadratic model predicts; a pseudo-inverse where I is singular)."""
    if not np.any(free):
        return 0.0
    g = gradient[free]
    p = np.linalg.lstsq(fisher[np.ix_(free, free)], g, rcond=1e-12)[0]
    return 0.5 * float(g @ p)


def _trust_region_step(gradient, fisher, free, radius):
    """(p, predicted gain, at the edge): p = (I + mu 1)^-1 g on the ``free`` coordinates (zero
    elsewhere) with the smallest mu >= 0 for which |p|_2 <= radius, found by bisection on
    log mu with the eigen-decomposition of I (negative eigenvalues, rounding noise of a PSD
    matrix, count as 0)."""
    step = np.zeros_like(gradient)
    if not np.any(free):
        return step, 0.0, False
    sub = fisher[np.ix_(free, free)]
    lam, V = np.linalg.eigh(sub)
    lam = np.maximum(lam, 0.0)
    c = V.T @ gradient[free]
    size = float(np.linalg.norm(c))
    if size == 0.0:
        return step, 0.0, False

    def length(mu):
        return float(np.linalg.norm(c / (lam + mu)))

    mu, at_edge = 0.0, False
    if not (lam.min() > 1e-12 * lam.max() and length(0.0) <= radius):
        at_edge = True
        high = size / radius  # |p(mu)| <= |g| / mu
        low = 1e-16 * high
        if length(low) <= radius:
            high = low
        for _ in range(64):
            middle = math.sqrt(low * high)
            if high <= low * (1.0 + 1e-9):
                break
            if length(middle) > radius:
                low = middle
            else:
                high = middle
        mu = high
    p = V @ (c / (lam + mu))
    step[free] = p
    predicted = float(gradient[free] @ p) - 0.5 * float(p @ sub @ p)
    return step, predicted, at_edge


def variance_like(packer):
    """Boolean per coordinate of the packer's vector: True for variances (kernel variances and
    the noise variance, whose names end in "variance"), which Fisher scoring steps in the
    natural parametrisation."""
    return np.array([name.endswith("variance") for name in packer.names for _ in range(packer.sizes[name])],
                    dtype=bool)
