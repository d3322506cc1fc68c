"""EGP, UGP, EKS and UKS side by side on one inversion problem: the linearised lab's back end.

The counterpart of :mod:`gpexplorer.sparse.comparison`. Everything here takes plain values (a
:class:`ComparisonSettings`, an :class:`InversionProblem`, a forward model) and returns plain
results, so notebooks, tests and the dashboard (``gpexplorer.ui.linearized``) share it:

* :data:`METHODS` -- the method table: EGP / UGP (:class:`~gpexplorer.linearized.gp.LinearizedGP`,
  EGP paper section 3) and EKS / UKS
  (:class:`~gpexplorer.linearized.kitchen_sinks.LinearizedKitchenSinks`, EKS paper sections 4-5),
  each with a Taylor (EGP eq. 36, EKS eq. 21-23) or unscented (EGP eq. 37, EKS eq. 24-34)
  linearisation;
* :func:`build_model` / :func:`evaluate` -- one method's inner loop at fixed hyperparameters, its
  q(f*), predicted y* (:func:`observation_moments`, eq. 39 or 40), metrics and free energy;
* :func:`closeup` -- the linearisation one point at x0 gets from a method's posterior marginal;
* :func:`learn_hyperparameters` / :func:`profile_methods` -- the long computations (free-energy
  maximisation, EGP section 3.2 / EKS section 4.4; F along one hyperparameter). Their progress
  and cancellation are injected as plain callables, so they run on any worker.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, fields

import numpy as np

from gpexplorer import kernels, metrics
from gpexplorer._threads import threads_for
from gpexplorer.linearized.methods import METHODS, Method
from gpexplorer.linearized import linearization
from gpexplorer.linearized.convergence import search_verdict
from gpexplorer.linearized.free_energy_profile import free_energy_profile, log_grid
from gpexplorer.linearized.gauss_newton import NumericalFailure
from gpexplorer.linearized.gp import PAPER_BOUNDS, LinearizedGP
from gpexplorer.linearized.kitchen_sinks import LinearizedKitchenSinks

__all__ = ["Method", "METHODS", "SEARCH_LABELS", "HYPERPARAMETERS", "PROFILE_FACTOR", "PROFILE_POINTS",
           "ComparisonSettings", "InversionProblem", "MethodResult", "Closeup", "active_methods", "fit_method",
           "search_label", "build_model", "model_parameters", "observation_moments", "evaluate", "closeup",
           "learn_hyperparameters", "profile_methods"]


#: fit method -> its name in the page: the GP family's choice, and the kitchen sinks' own COBYQA
SEARCH_LABELS = {"fisher": "Fisher scoring", "cobyla": "COBYLA", "cobyqa": "COBYQA"}
KITCHEN_SINKS_SEARCH = "cobyqa"
#: the hyperparameters every method shares (EKS/UKS: "variance" is the weight variance omega^2, eq. 7)
HYPERPARAMETERS = ("variance", "lengthscale", "noise_variance")
#: a profile spans the shown value / PROFILE_FACTOR .. x PROFILE_FACTOR in PROFILE_POINTS log steps
PROFILE_FACTOR, PROFILE_POINTS = 10.0, 21
#: what a learnt entry says about its search (:func:`gpexplorer.linearized.convergence.search_verdict`)
VERDICT = ("converged", "reason", "last_change_per_evaluation", "window", "budget", "message")


@dataclass(frozen=True)
class ComparisonSettings:
    """What the comparison needs besides the data and g; the defaults are the page's.

    ``variance``, ``lengthscale``, ``noise_variance``: the hyperparameters shared by every method
    unless a method is given its own. ``kernel``: a :data:`gpexplorer.kernels.KERNELS` name that
    the random features support too. ``max_iter``: Gauss-Newton iterations of each inner loop;
    ``ugp_inner_loop``: "map-search" (the paper's) or "fixed-point" for the UGP;
    ``y_prediction``: "quadrature" (eq. 39) or "unscented" (eq. 40); ``n_features``: D of
    EKS / UKS (rounded down to even); ``max_evals``: free-energy evaluations per method when
    learning; ``gp_search``: "fisher" or "cobyla" for EGP / UGP learning.
    """

    kernel: str = "matern52"
    variance: float = 0.64
    lengthscale: float = 0.6
    noise_variance: float = 0.04
    kappa: float = 0.5
    ugp_inner_loop: str = "map-search"
    y_prediction: str = "quadrature"
    max_iter: int = 50
    n_features: int = 200
    feature_seed: int = 0
    max_evals: int = 150
    gp_search: str = "fisher"

    @classmethod
    def from_object(cls, source) -> ComparisonSettings:
        """The fields read by name from any object that has them (e.g. the page's Param settings)."""
        return cls(**{f.name: getattr(source, f.name) for f in fields(cls)})

    @property
    def hyperparameters(self) -> dict:
        """The shared hyperparameters as {variance, lengthscale, noise_variance}."""
        return {name: float(getattr(self, name)) for name in HYPERPARAMETERS}

    @property
    def features(self) -> int:
        """D rounded down to even: the features come in cos/sin pairs (EKS eq. 6)."""
        return max(2, int(self.n_features) - int(self.n_features) % 2)


@dataclass(frozen=True, eq=False)
class InversionProblem:
    """Training data plus where the views are drawn.

    ``grid`` (G,) sorted inputs of the predictions; for a toy problem (EGP paper 4.1) the true
    latent ``f_true`` and noisy ``y_grid`` on that grid and ``test`` (indices into the grid of the
    points not used for training), from which :func:`evaluate` scores the methods. For data
    without a known f (an uploaded CSV) those three are None.
    """

    X: np.ndarray
    y: np.ndarray
    grid: np.ndarray
    name: str
    f_true: np.ndarray | None = None
    y_grid: np.ndarray | None = None
    test: np.ndarray | None = None

    @property
    def n(self):
        return int(self.X.shape[0])

    @property
    def scored(self) -> bool:
        """Whether there are test points with a true f to score predictions on."""
        return self.test is not None and self.test.size >= 2


def active_methods(chosen, forward):
    """(methods to run, methods refused), in table order: Taylor needs a differentiable g (EGP eq. 36)."""
    chosen = [m for m in METHODS if m in chosen]
    if forward.differentiable:
        return chosen, []
    taylor = [m for m in chosen if METHODS[m].linearization == "taylor"]
    return [m for m in chosen if m not in taylor], taylor


def fit_method(method, gp_search="fisher"):
    """The ``method=`` of ``model.fit`` learning uses for ``method``: the GP family's choice, or
    the kitchen sinks' own derivative-free search."""
    return gp_search if METHODS[method].family == "gp" else KITCHEN_SINKS_SEARCH


def search_label(method, gp_search="fisher"):
    """Name of the hyperparameter search learning uses for ``method``."""
    return SEARCH_LABELS[fit_method(method, gp_search)]


def build_model(method, data: InversionProblem, forward, s: ComparisonSettings, params=None):
    """An unfitted model of ``method`` at ``params`` (default: the shared hyperparameters).

    For EKS / UKS the kernel variance is the weight prior variance omega^2 (EKS eq. 7) and the
    lengthscale that of the random features (EKS eq. 10)."""
    p = params or s.hyperparameters
    spec = METHODS[method]
    if spec.family == "gp":
        kernel = kernels.KERNELS[s.kernel](variance=p["variance"], lengthscale=p["lengthscale"])
        inner_loop = s.ugp_inner_loop if spec.linearization == "unscented" else "map-search"
        return LinearizedGP(data.X, data.y, forward=forward, linearization=spec.linearization, kernel=kernel,
                            noise_variance=p["noise_variance"], kappa=s.kappa, max_iter=s.max_iter,
                            inner_loop=inner_loop)
    return LinearizedKitchenSinks(data.X, data.y, forward=forward, linearization=spec.linearization,
                                  n_features=s.features, kernel=s.kernel, lengthscale=p["lengthscale"],
                                  weight_variance=p["variance"], noise_variance=p["noise_variance"],
                                  kappa=s.kappa, seed=s.feature_seed, max_iter=s.max_iter)


def model_parameters(model) -> dict:
    """{variance, lengthscale, noise_variance} of either model family (EKS: omega^2 as variance)."""
    p = model.parameters
    names = dict(zip(HYPERPARAMETERS, HYPERPARAMETERS))
    if "weight_variance" in p:
        names["variance"] = "weight_variance"
    return {k: float(np.ravel(p[name])[0]) for k, name in names.items()}


def _work(method, data: InversionProblem, s: ComparisonSettings):
    """Flops scale of one inner-loop step, for the BLAS-thread policy: a Cholesky of the N x N
    kernel matrix (GP), or N D min(N, D) (kitchen sinks, as that model counts it)."""
    n = data.n
    return n ** 3 if METHODS[method].family == "gp" else n * s.features * min(n, s.features)


# --- evaluation: inner loops, predictions, metrics, close-up -------------------------------

@dataclass(eq=False)
class MethodResult:
    """One method at fixed hyperparameters: its posterior on the grid and how it got there.

    ``mean_f``/``var_f``: q(f*) (EGP eq. 38, EKS eq. 35-36); ``mean_y``/``var_y``: the predicted
    observation including the noise (eq. 39 or 40); ``trace``: the Gauss-Newton iterations
    (IterationRecord: MAP objective eq. 31, step length, cuts, status); ``free_energy``: EGP
    eq. 41 or EKS eq. 20; ``status``: "converged", "diverged" (the step search's 'diverge'
    condition, section 2.5) or "max_iter"; ``error`` instead of all that when the model failed.
    """

    method: str
    params: dict
    model: object = None
    mean_f: np.ndarray | None = None
    var_f: np.ndarray | None = None
    mean_y: np.ndarray | None = None
    var_y: np.ndarray | None = None
    trace: list = None
    status: str = ""
    free_energy: float = float("nan")
    map_objective: float = float("nan")
    metrics: dict = None
    seconds: float = 0.0
    error: str | None = None


class _ComputedMarginals:
    """q(f*) already computed, offering what :meth:`LinearizedGP.predict_y` reads from a model
    (``predict_f``, ``forward``, ``kappa``, ``noise_variance``), so y* is predicted by that very
    method without running ``predict_f`` again."""

    def __init__(self, forward, mean_f, var_f, kappa, noise_variance):
        self.forward, self.kappa, self.noise_variance = forward, kappa, noise_variance
        self._moments = (np.asarray(mean_f, dtype=float), np.asarray(var_f, dtype=float))

    def predict_f(self, _Xnew):
        return self._moments


def observation_moments(forward, mean_f, var_f, how="quadrature", kappa=0.5, noise_variance=0.0, n_nodes=40):
    """Mean and variance of y* = g(f*) + eps under f* ~ N(mean_f, var_f) (each (G,)).

    ``LinearizedGP.predict_y`` applied to the given q(f*), whichever model family computed it, so
    every method's y* is predicted the same way: "quadrature" by Gauss-Hermite with ``n_nodes``
    nodes (EGP eq. 39, the variance likewise), "unscented" by the three sigma points
    m*, m* +- sqrt((1 + kappa) C*) with the weights of eq. 26 (EGP eq. 40). ValueError
    (NumericalFailure) when g overflows over q(f*).
    """
    marginals = _ComputedMarginals(forward, mean_f, var_f, kappa, noise_variance)
    return LinearizedGP.predict_y(marginals, None, method=how, n_points=n_nodes)


def _status(model):
    if model.diverged:
        return "diverged"
    return "converged" if model.converged else "max_iter"


def _metrics(data: InversionProblem, mean_f, var_f, mean_y):
    """NLPD and SMSE of f* and SMSE of y* on the toy problem's test points (EGP paper Table 1)."""
    if not data.scored:
        return {}
    t, f = data.test, data.f_true[data.test]
    return {"nlpd_f": metrics.nlpd(f, mean_f[t], np.maximum(var_f[t], 1e-300)),
            "smse_f": metrics.smse(f, mean_f[t]), "smse_y": metrics.smse(data.y_grid[t], mean_y[t])}


def evaluate(method, data: InversionProblem, forward, s: ComparisonSettings, params=None,
             model=None) -> MethodResult:
    """Inner loop only (posterior at fixed hyperparameters), then predictions and metrics.

    Starts every time from the prior, so the same settings always give the same picture; a
    ``model`` whose posterior is already computed (a learnt one) is shown as it is. Any numerical
    failure becomes ``error``, never an exception."""
    p = dict(params or s.hyperparameters)
    t0 = time.perf_counter()
    try:
        with np.errstate(all="ignore"), threads_for(_work(method, data, s)):  # errstate: thread-local
            if model is None:
                model = build_model(method, data, forward, s, p)
                model.fit_posterior()
            mean_f, var_f = (np.ravel(a) for a in model.predict_f(data.grid[:, None]))
            try:
                if not (np.all(np.isfinite(mean_f)) and np.all(np.isfinite(var_f))):
                    raise NumericalFailure("q(f*) is not finite")
                mean_y, var_y = observation_moments(forward, mean_f, var_f, s.y_prediction, s.kappa,
                                                    p["noise_variance"])
            except NumericalFailure:
                raise FloatingPointError("predictions are not finite (g overflows over the posterior)") from None
            result = MethodResult(method, p, model, mean_f, var_f, mean_y, var_y, list(model.trace),
                                  _status(model), float(model.free_energy()), float(model.map_objective()))
            result.metrics = _metrics(data, mean_f, var_f, mean_y)
    except (ValueError, FloatingPointError, ArithmeticError, np.linalg.LinAlgError) as err:
        return MethodResult(method, p, error=f"{METHODS[method].label} failed: {err}",
                            seconds=time.perf_counter() - t0)
    result.seconds = time.perf_counter() - t0
    return result


@dataclass(frozen=True)
class Closeup:
    """The linearisation a point at x0 gets from one method's posterior marginal N(m0, v0).

    Taylor (EGP eq. 36): the tangent of g at m0. Unscented (EGP eq. 37): the weighted least-squares
    line through the sigma points m0, m0 +- sqrt((1 + kappa) v0) (``points``/``values``/``weights``).
    At a training input this is the a_n, b_n of the converged inner loop."""

    method: str
    m0: float
    v0: float
    slope: float
    intercept: float
    points: np.ndarray
    values: np.ndarray
    weights: np.ndarray | None


def closeup(result: MethodResult, forward, x0, kappa) -> Closeup:
    """The :class:`Closeup` at ``x0`` of a successful ``result`` (ValueError if g fails there)."""
    mean, var = result.model.predict_f(np.array([[float(x0)]]))
    m0, v0 = float(np.ravel(mean)[0]), max(float(np.ravel(var)[0]), 0.0)
    if METHODS[result.method].linearization == "taylor":
        lin = linearization.taylor(forward, np.array([[m0]]))
        points, values, weights = np.array([m0]), lin.y_mean[0], None
    else:
        lin = linearization.unscented(forward, np.array([[m0]]), np.array([[v0]]), kappa=kappa)
        points, values, weights = lin.sigma_points[0, :, 0], lin.sigma_values[0, :, 0], lin.weights
    return Closeup(result.method, m0, v0, float(lin.A[0, 0, 0]), float(lin.b[0, 0]), points, values, weights)


# --- long computations (run on a worker; progress and cancellation injected) ----------------

def learn_hyperparameters(methods, data: InversionProblem, forward, s: ComparisonSettings, start=None,
                          progress=None, cancelled=None, previous=None):
    """Fit each method's hyperparameters in turn, from ``start`` (default: the shared ones).

    Every model is fitted by ``model.fit(max_iter=s.max_evals, method=fit_method(...))``; EGP / UGP
    search the EGP paper's box (:data:`gpexplorer.linearized.gp.PAPER_BOUNDS`), EKS / UKS their
    own. ``progress(fraction, message)`` is called after every free-energy evaluation (it may
    raise to abandon learning); ``cancelled()`` returning True stops the current fit and skips the
    rest. Returns method -> {variance, lengthscale, noise_variance, free_energy, evaluations,
    seconds, search, model, converged, reason, last_change_per_evaluation, budget} for the
    methods fitted (the last four: :func:`gpexplorer.linearized.convergence.search_verdict`:
    did the search stop on its own test or on the budget ``s.max_evals``).

    ``previous`` (an earlier result of this function) continues learning: each method starts
    from its learnt values with the same budget again; its evaluations and seconds add up, and
    where the new search ends below the free energy already learnt the earlier values and model
    are kept (F is maximised: continuing never lowers it).
    """
    out = {}
    for k, method in enumerate(methods):
        label, evaluations = METHODS[method].label, 0
        before = (previous or {}).get(method)

        def report(k=k, label=label):
            if progress is not None:
                progress((k + min(evaluations / s.max_evals, 1.0)) / len(methods),
                         f"{label}: {evaluations} evaluations ({k + 1} of {len(methods)} methods)")

        def on_evaluation(_entry):
            nonlocal evaluations
            evaluations += 1
            report()
            return bool(cancelled is not None and cancelled())

        report()
        t0 = time.perf_counter()
        at = {h: before[h] for h in HYPERPARAMETERS} if before else dict(start or s.hyperparameters)
        model = build_model(method, data, forward, s, at)
        if METHODS[method].family == "gp":
            model.set_bounds(**PAPER_BOUNDS)
        with threads_for(_work(method, data, s)):
            result = model.fit(max_iter=s.max_evals, callback=on_evaluation, method=fit_method(method, s.gp_search))
        out[method] = {**model_parameters(model), "free_energy": float(model.free_energy()),
                       "evaluations": evaluations, "seconds": time.perf_counter() - t0,
                       "search": search_label(method, s.gp_search), "model": model,
                       **search_verdict(result, s.max_evals)}
        if before:
            kept = before if before["free_energy"] > out[method]["free_energy"] else out[method]
            out[method] = {**kept, **{n: out[method][n] for n in VERDICT},
                           "evaluations": before["evaluations"] + evaluations,
                           "seconds": before["seconds"] + out[method]["seconds"]}
        if cancelled is not None and cancelled():
            break
    return out


class _ProfileCancelled(Exception):
    """Raised through free_energy_profile's progress callback to stop a profile."""


def _test_nlpd(data: InversionProblem):
    x, f = data.grid[data.test, None], data.f_true[data.test]

    def nlpd(model):
        mean, var = model.predict_f(x)
        return metrics.nlpd(f, np.ravel(mean), np.maximum(np.ravel(var), 1e-300))

    return nlpd


def profile_methods(methods, data: InversionProblem, forward, s: ComparisonSettings, parameters, parameter,
                    progress=None, cancelled=None):
    """method -> :class:`~gpexplorer.linearized.free_energy_profile.Profile` of F along
    ``parameter`` (one of :data:`HYPERPARAMETERS`) around ``parameters[method]``, the others held.

    Each grid point is one inner loop from the prior; the NLPD of f* on the test points is
    recorded beside F when the data have a true f. ``progress(fraction, message)`` follows every
    point (it may raise to abandon the profile); ``cancelled()`` returning True stops it, and the
    methods profiled so far are returned.
    """
    score = _test_nlpd(data) if data.scored else None
    out = {}
    for k, method in enumerate(methods):
        base = dict(parameters[method])

        def make(value, method=method, base=base):
            return build_model(method, data, forward, s, dict(base, **{parameter: value}))

        def on_point(done, total, k=k, label=METHODS[method].label):
            if progress is not None:
                progress((k + done / total) / len(methods), f"{label}: {done} of {total} points")
            if cancelled is not None and cancelled():
                raise _ProfileCancelled

        try:
            with threads_for(_work(method, data, s)):
                out[method] = free_energy_profile(make, log_grid(base[parameter], PROFILE_FACTOR, PROFILE_POINTS),
                                                  score=score, progress=on_point)
        except _ProfileCancelled:
            break
    return out
