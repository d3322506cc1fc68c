"""Fit SAVIGP posteriors side by side (FG, MoG1, MoG2; Dezfouli & Bonilla 2015) on one problem and
read off what the black-box lab shows, as :mod:`gpexplorer.sparse.comparison` does for the sparse
approximations: a :class:`Problem` and fit options in, one :class:`PosteriorResult` per posterior
out (traces, latent and predictive bands, q(u)'s components, metrics, the fit's convergence
verdict from :mod:`gpexplorer.variational.convergence`), and the estimator variance against S.
Fits that did not converge continue from where they stopped.

The fit options are a dict: ``M`` (inducing inputs), ``likelihood`` (a name or an object) and
``likelihood_options``, ``estimator``, ``num_samples``, ``control_variate``, ``rounds`` and
``evals_per_block`` (the budget: block-cyclic L-BFGS-B rounds, or ``rounds`` x ``evals_per_block``
L-BFGS-B iterations where natural gradients move q(u), :func:`optimiser`), ``stop_when_converged``
(default True).

Everything runs on the caller's thread and returns plain numpy arrays and dicts; a job's
``report(fraction, message)`` and ``cancelled()`` are taken as plain callables. The inference is
:class:`gpexplorer.models.SparseVariationalGP`'s and
:func:`gpexplorer.variational.estimators.variance_curve`'s; this module only calls them.
"""

from __future__ import annotations

import itertools
import threading
import time
from dataclasses import dataclass, field

import numpy as np

from gpexplorer import kernels
from gpexplorer.variational.savigp import SparseVariationalGP
from gpexplorer.variational import estimators, natural_gradients
from gpexplorer.variational.elbo import mixture_moments
from gpexplorer.variational.prediction import mixture_quantiles

#: sample sizes of the estimator-variance view (the page's S is added)
VARIANCE_SIZES = (20, 50, 100, 300, 1000)
VARIANCE_REPEATS = 8
VARIANCE_ROWS = 100  # the curve is measured on at most this many training points
Z_90 = 1.6448536269514722  # the 95 % quantile of N(0, 1): a central 90 % band


@dataclass
class Problem:
    """One data set as the lab fits it: training ``X`` [N, D] and ``Y`` [N, 1], the points the
    metrics are computed on, ``kind`` ("count", "binary" or "real"), the likelihood the data call
    for, a sentence saying what was done to the data (``note``) and where the 1-D views draw
    (``grid``; None for N-D inputs, whose views show the test points in order)."""

    name: str
    X: np.ndarray
    Y: np.ndarray  # (N, 1)
    X_test: np.ndarray
    Y_test: np.ndarray
    kind: str
    likelihood: str
    note: str
    grid: np.ndarray | None = None
    options: dict = field(default_factory=dict)  # likelihood options (the Poisson offset)
    lengthscale: float = 1.0
    x_label: str = "x"
    test_label: str = "test"  # what the metrics are computed on
    extra: dict = field(default_factory=dict)  # bin_years (counts), f_true, features, ...

    @property
    def input_dim(self):
        return int(self.X.shape[1])

    @property
    def one_d(self):
        return self.grid is not None


@dataclass
class PosteriorResult:
    """What the views show of one fitted posterior (arrays over ``problem.grid`` for 1-D data,
    over the test points otherwise)."""

    posterior: str
    trace: dict = field(default_factory=dict)  # iteration, elbo, ell, entropy, cross (lists)
    f_mean: np.ndarray | None = None
    f_var: np.ndarray | None = None
    f_lower: np.ndarray | None = None  # q(f*)'s 2.5 and 97.5 % quantiles (of the mixture itself)
    f_upper: np.ndarray | None = None
    obs: dict = field(default_factory=dict)  # mean, lower, upper (the 90 % band) of the predictive
    components: list = field(default_factory=list)  # per k: {"pi", "z", "mean", "sd"}
    metrics: dict = field(default_factory=dict)
    error: str | None = None
    model: object = None
    continued: int = 0  # how many times the fit was continued from where it stopped

    @property
    def convergence(self):
        """The fit's verdict (:mod:`gpexplorer.variational.convergence`; {} without a fit)."""
        return self.metrics.get("convergence", {})

    @property
    def unfinished(self):
        """Whether the fit ended without converging (on its budget, or stalled): Continue applies."""
        return self.error is None and self.convergence.get("reason") in ("budget", "stalled")


class LiveTrace:
    """The traces of a running fit, written by the worker and read by the page (lists only grow;
    appends are atomic), one per posterior."""

    def __init__(self):
        self.lock = threading.Lock()
        self.entries = {}

    def add(self, posterior, entry, offset=0):
        with self.lock:
            self.entries.setdefault(posterior, []).append(_trace_row(entry, offset))

    def start_from(self, posterior, trace):
        """A continued fit's live trace starts with what the fit drew before (trace columns)."""
        names = ("iteration", "elbo", "ell", "entropy", "cross")
        with self.lock:
            self.entries[posterior] = list(zip(*(trace[n] for n in names)))

    def snapshot(self):
        with self.lock:
            return {p: list(rows) for p, rows in self.entries.items()}


def _trace_row(entry, offset=0):
    t = entry.terms or {}
    return (int(entry.iteration) + offset, -float(entry.objective), -float(t.get("neg_ell", np.nan)),
            -float(t.get("neg_entropy", np.nan)), -float(t.get("neg_cross", np.nan)))


def trace_columns(rows):
    """Trace rows -> {"iteration", "elbo", "ell", "entropy", "cross"} lists (failed points dropped)."""
    rows = [r for r in rows if np.isfinite(r[1])]
    names = ("iteration", "elbo", "ell", "entropy", "cross")
    return {n: [r[i] for r in rows] for i, n in enumerate(names)}


def build_model(problem, posterior, options, seed=0):
    """The SAVIGP model of one posterior on ``problem`` (``options``: settings.fit_options)."""
    M = int(min(options["M"], problem.X.shape[0]))
    kernel = kernels.SquaredExponential(variance=1.0, lengthscale=problem.lengthscale)
    return SparseVariationalGP(problem.X, problem.Y, kernel=kernel, Z=M, likelihood=options["likelihood"],
                                      likelihood_options=options["likelihood_options"], posterior=posterior,
                                      estimator=options["estimator"], num_samples=options["num_samples"], seed=seed,
                                      control_variate=options["control_variate"])


def expected_iterations(options):
    """A rough count of trace entries of one fit (for the progress bar)."""
    return max(1, options["rounds"] * 3 * options["evals_per_block"] * 0.8)


def job_callback(live, posterior, offset, label, fraction, report, cancelled):
    """A fit's callback for a job: each evaluation grows the live trace (iterations from
    ``offset``), moves the progress bar to ``fraction(evaluations so far)`` with ``label``, and
    stops the fit once the job is cancelled."""
    count = itertools.count(1)

    def callback(entry):
        live.add(posterior, entry, offset)
        k = next(count)
        if report is not None:
            report(fraction(k), f"{label}: iteration {entry.iteration + offset}, ELBO {-entry.objective:.4g}")
        return bool(cancelled())

    return callback


def fit_all(problem, posteriors, options, live=None, report=None, cancelled=lambda: False):
    """Fit every posterior in turn; returns {"results": {posterior: PosteriorResult}, "variance":
    the variance curve at the first fitted posterior's marginals (or None), "note": a typed
    likelihood's normalisation warning (or None)}. ``report(fraction,
    message)`` and ``cancelled()`` are the job's; a cancelled fit stops at its next iteration."""
    live = live or LiveTrace()
    results, n = {}, len(posteriors)
    expected = expected_iterations(options)
    for i, post in enumerate(posteriors):
        callback = job_callback(live, post, 0, f"fitting {post.upper()} ({i + 1} of {n})",
                                lambda k, i=i: (i + min(0.95, k / expected)) / (n + 0.3), report, cancelled)
        results[post] = fit_one(problem, post, options, callback)
        if cancelled():
            return None
    if report is not None:
        report(n / (n + 0.3), "estimator variance against S")
    fitted = [r for r in results.values() if r.error is None]
    note = normalisation_note(fitted[0].model.likelihood) if fitted else None
    curve = None
    if fitted:
        try:
            curve = variance_against_samples(fitted[0].model, options["num_samples"])
            curve["posterior"] = fitted[0].posterior
        except (ValueError, FloatingPointError, np.linalg.LinAlgError) as err:
            curve = {"error": f"{type(err).__name__}: {err}"}
    return {"results": results, "variance": curve, "note": note}


def normalisation_note(likelihood):
    """For a typed likelihood, what its total mass over y says (None if it sums to one, or for
    a registered likelihood): an unnormalised one still fits, but its ELBO bounds no probability."""
    if not hasattr(likelihood, "normalisation"):
        return None
    try:
        _, mass = likelihood.normalisation()
    except ValueError as err:
        return f"the typed likelihood's mass over y could not be summed ({err})"
    if np.max(np.abs(mass - 1.0)) <= 1e-3:
        return None
    return (f"the typed exp(log p(y | f)) sums to {mass.min():.3g}-{mass.max():.3g} over y (f in [-3, 3]), "
            "not to 1: the ELBO is then no bound on a probability, and NLPD compares with nothing")


def fit_one(problem, posterior, options, callback=None):
    """Fit one posterior and read off every view's arrays; a failure is kept as ``error``."""
    out = PosteriorResult(posterior)
    t0 = time.perf_counter()
    try:
        model = build_model(problem, posterior, options)
        res = _fit(model, options, callback)
    except Exception as err:  # noqa: BLE001 - any failure (bad likelihood for the data, ...) is shown, not raised
        out.error = f"{type(err).__name__}: {err}"
        return out
    out.model = model
    out.trace = trace_columns([_trace_row(e) for e in res.trace])
    return _read_off(out, model, problem, res, time.perf_counter() - t0)


def optimiser(model):
    """The lab's optimiser for ``model``: "natgrad" (natural gradients for q(u) with L-BFGS-B over
    the rest) where it applies (a full Gaussian, estimator quadrature or reparameterisation),
    else "block-lbfgs" (the paper's block-cyclic L-BFGS-B)."""
    return "natgrad" if natural_gradients.supports(model) is None else "block-lbfgs"


def _fit(model, options, callback):
    """Fit with :func:`optimiser`'s choice: natural gradients for at most ``rounds`` x
    ``evals_per_block`` L-BFGS-B iterations over the rest, or block-cyclic L-BFGS for at most
    ``rounds`` rounds, stopped once converged (or stalled)."""
    if optimiser(model) == "natgrad":
        return model.fit(max_iter=options["rounds"] * options["evals_per_block"], method="natgrad", callback=callback)
    return model.fit(max_iter=options["rounds"], method="block-lbfgs", evals_per_block=options["evals_per_block"],
                     callback=callback, stop_when_converged=options.get("stop_when_converged", True))


def _read_off(out, model, problem, res, seconds):
    try:
        describe(out, model, problem)
        out.metrics.update(metrics(model, problem, res, seconds))
    except (ValueError, FloatingPointError, np.linalg.LinAlgError) as err:
        out.error = f"prediction failed: {type(err).__name__}: {err}"
    return out


def continue_one(problem, previous, options, callback=None):
    """``previous`` (a fitted PosteriorResult) continued for ``options["rounds"]`` more rounds from
    where its model stopped (q(u), hyperparameters, Z and likelihood parameters as they are).
    The trace goes on from the last iteration drawn; iterations and fit time add up. A stalled
    score-function fit gets a fresh draw of its samples first (the same draw would stall at the
    same point again; the ELBO it follows is quadrature's, so the trace stays one objective)."""
    model = previous.model
    out = PosteriorResult(previous.posterior, model=model, continued=previous.continued + 1)
    offset = previous.trace["iteration"][-1] + 1 if previous.trace.get("iteration") else 0
    t0 = time.perf_counter()
    try:
        if previous.convergence.get("reason") == "stalled" and model.estimator == "score":
            model.redraw_samples(int(model.seed or 0) + 1000 * out.continued)
        res = _fit(model, options, callback)
    except Exception as err:  # noqa: BLE001 - shown as the posterior's failure, as for a fit
        out.error = f"{type(err).__name__}: {err}"
        return out
    new = trace_columns([_trace_row(e, offset) for e in res.trace])
    out.trace = {n: list(previous.trace.get(n, [])) + new[n] for n in new}
    out = _read_off(out, model, problem, res, time.perf_counter() - t0)
    if out.error is None:
        out.metrics["iterations"] += previous.metrics.get("iterations", 0)
        out.metrics["seconds"] += previous.metrics.get("seconds", 0.0)
    return out


def continue_all(problem, previous, options, live=None, report=None, cancelled=lambda: False):
    """Continue every fit of ``previous`` (posterior -> PosteriorResult) in turn, as :func:`fit_all`
    fits them; returns {"results": {posterior: PosteriorResult}, "variance": None, "note": None}."""
    live = live or LiveTrace()
    results, n = {}, len(previous)
    expected = expected_iterations(options)
    for i, (post, before) in enumerate(previous.items()):
        live.start_from(post, before.trace)
        offset = before.trace["iteration"][-1] + 1 if before.trace.get("iteration") else 0
        callback = job_callback(live, post, offset, f"continuing {post.upper()} ({i + 1} of {n})",
                                lambda k, i=i: (i + min(0.95, k / expected)) / n, report, cancelled)
        results[post] = continue_one(problem, before, options, callback)
        if cancelled():
            return None
    return {"results": results, "variance": None, "note": None}


def where(problem):
    """The inputs the latent and predictive views are drawn at."""
    return problem.grid[:, None] if problem.one_d else problem.X_test


def describe(out, model, problem):
    """Latent mean and variance, the predictive with its 90 % band and q(u)'s components."""
    Xs = where(problem)
    pi, means, variances = model.predict_components(Xs)  # once: moments and quantiles both follow
    mean, var = mixture_moments(pi, means[:, :, 0], variances[:, :, 0])
    out.f_mean, out.f_var = mean, np.maximum(var, 0.0)
    # the bands are the mixture's own quantiles (a two-peaked MoG2 q(f*) is not its moments)
    q = mixture_quantiles(pi, means[:, :, 0], variances[:, :, 0], (0.025, 0.975, 0.05, 0.95))
    out.f_lower, out.f_upper = q[:, 0], q[:, 1]
    lik = model.likelihood
    if problem.kind == "count" and getattr(lik, "kind", None) == "counts" and hasattr(lik, "binsize"):
        # intensity in events per year: exp(f + offset) per bin / bin width, monotone in f, so its
        # 90 % band is exp of q(f*)'s 5 and 95 % quantiles; its mean E[exp f] per component, mixed
        scale = lik.binsize * np.exp(lik.offset) / problem.extra.get("bin_years", 1.0)
        expected = np.einsum("k,kn->n", pi, np.exp(means[:, :, 0] + 0.5 * variances[:, :, 0]))
        out.obs = {"mean": scale * expected, "lower": scale * np.exp(q[:, 2]), "upper": scale * np.exp(q[:, 3]),
                   "kind": "intensity"}
    elif problem.kind == "binary" and getattr(lik, "kind", None) == "binary":
        p = model.predict_class_probabilities(Xs)[:, 1]
        out.obs = {"mean": p, "lower": p, "upper": p, "kind": "probability"}
    else:
        ym, yv = model.predict_y(Xs)
        ysd = np.sqrt(np.maximum(yv[:, 0], 0.0))
        out.obs = {"mean": ym[:, 0], "lower": ym[:, 0] - Z_90 * ysd, "upper": ym[:, 0] + Z_90 * ysd,
                   "kind": "predictive"}
    post = model.posterior
    z = np.asarray(model.features[0].Z, float)
    z = z[:, 0] if problem.one_d else np.arange(len(z), dtype=float)
    pi = post.pi
    for k in range(post.K):
        var_k = np.diag(post.covariance(k, 0))
        out.components.append({"pi": float(pi[k]), "z": z, "mean": post.means[0][k],
                               "sd": np.sqrt(np.maximum(var_k, 0.0))})


def metrics(model, problem, res, seconds):
    """ELBO, NLPD, error rate (classification) or SSE (else), the learnt kernel, fit time."""
    verdict = dict(res.details.get("convergence", {}))
    out = {"elbo": -float(res.objective), "seconds": float(seconds), "iterations": len(res.trace) - 1,
           "stopped": bool(res.details.get("stopped")), "convergence": verdict,
           "converged": bool(verdict.get("converged")),
           "last_change_per_iteration": float(verdict.get("last_change_per_iteration", np.nan))}
    params = model.kernels[0].parameters
    if "lengthscale" in params:  # the learnt kernel: a diagonal q(u) may bend it (lesson 7)
        out["lengthscale"] = float(np.exp(np.mean(np.log(np.ravel(params["lengthscale"])))))
    if "variance" in params:
        out["kernel_variance"] = float(np.ravel(params["variance"])[0])
    out["nlpd"] = model.nlpd(problem.X_test, problem.Y_test)
    if problem.kind == "binary" and getattr(model.likelihood, "kind", None) == "binary":
        out["error_rate"] = model.error_rate(problem.X_test, problem.Y_test)
    else:
        out["sse"] = model.sse(problem.X_test, problem.Y_test)
    return out


def variance_against_samples(model, num_samples, seed=0):
    """The variance of the ELL gradient estimators against S at ``model``'s fitted marginals:
    score with and without the control variate, and reparameterisation (when the likelihood
    has df), on at most VARIANCE_ROWS training points."""
    rows = np.linspace(0, model.X.shape[0] - 1, min(VARIANCE_ROWS, model.X.shape[0])).astype(int)
    pi, means, var = model.predict_components(model.X[rows])
    sizes = sorted(set(VARIANCE_SIZES) | {int(num_samples)})
    sizes = [s for s in sizes if s >= 20]  # the control variate holds out 10 %, at least 2 samples
    pairs = [("score", False), ("score", True)]
    if hasattr(model.likelihood, "dlog_density_df"):
        pairs.append(("reparam", False))
    curve = estimators.variance_curve(model.likelihood, means, np.maximum(var, 1e-12), model.Y[rows], sizes,
                                      n_repeats=VARIANCE_REPEATS, seed=seed, estimators=tuple(pairs))
    return curve
