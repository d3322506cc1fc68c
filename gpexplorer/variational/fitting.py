"""Fitting a :class:`~gpexplorer.variational.savigp.SparseVariationalGP`: maximise the ELBO
(SAVIGP, Dezfouli & Bonilla 2015, eq. 8) with one of three optimisers, under the fit convention
of every model (:func:`gpexplorer.optimize.fit`): ``fit(max_iter, fixed, restarts, seed,
callback, ...)`` returns a :class:`gpexplorer.optimize.FitResult` whose ``trace`` holds
:class:`gpexplorer.optimize.TraceEntry` (iteration, objective = -ELBO, terms, params);
``callback(entry)`` returning True stops the fit (``details["stopped"]``); the model is left at
the best traced point. BLAS runs on one thread during a fit (:mod:`gpexplorer._threads`: on a
shared machine a threaded 20 x 20 inverse took 50 ms against 0.05 ms).

Terms: as for the other models they are the parts of the objective and sum to it:
``{"neg_ell": -sum_k pi_k sum_n ell_kn (eq. 12), "neg_entropy": -L_ent (exact for K = 1, eq. 19
for K > 1), "neg_cross": -L_cross (eq. 20)}``.

Methods (all in the optimiser coordinates of :class:`gpexplorer.optimize.Packer`: the posterior's
free vector as is, log of positive parameters, within ``parameter_specs`` boxes):

* ``"lbfgs"``: scipy's L-BFGS-B jointly over every free parameter, ``max_iter`` iterations;
* ``"block-lbfgs"``: the paper's optimiser (sec. 6, spec savigp.md): ``max_iter`` rounds, each
  running L-BFGS-B over the blocks q (posterior), hyperparameters (kernels and inducing
  features) and likelihood parameters in turn, ``evals_per_block`` (paper: 25) evaluations per
  block. Monte Carlo estimators reuse the model's eps (drawn once), so the objective is
  deterministic; each block ends at the best point evaluated so far, so -ELBO never rises from
  one round to the next (``details["round_objectives"]``; per round ``details["round_history"]``:
  gain, iterations, evaluations, failed line searches). ``stop_when_converged`` ends the rounds
  once the fit has converged by the rule of :mod:`.convergence`, whose verdict every fit records
  in ``details["convergence"]`` (converged, on its budget, stalled);
* ``whiten`` (default True, both L-BFGS methods): an FG q(u)'s entries are optimised in whitened
  coordinates (:mod:`.whitening`; m = Lk m~, L_S = Lk L~ with Kuu = Lk Lk^T at the start of the
  q block, or of the run for "lbfgs"). The objective and its optimum are the same; the paper's
  optimiser has no such change of variables, and without it a full Gaussian's q block moves
  little in 25 evaluations wherever Kuu is ill-conditioned. Not for Adam, whose per-coordinate
  scaling already adapts: on 1000 MNIST images (M = 20 x 10 latents, 100 steps) whitening gave
  71.4 % against 73.2 % accuracy and a lower ELBO (-1813 against -1761);
* ``"natgrad"`` (what ``"auto"``, the default, picks for a full-Gaussian q(u) that is free and an
  estimator other than the score function): L-BFGS-B over every free parameter but q, with q(u)
  brought to its optimum for the other parameters by natural-gradient steps at each evaluation
  (:mod:`.natural_gradients`); otherwise ``"auto"`` is ``"lbfgs"``;
* ``"adam"``: minibatch stochastic optimisation. Each step takes ``batch_size`` rows without
  replacement (all rows if None), scales the expected log likelihood by N / batch_size (an
  unbiased estimate of eq. 8 and its gradient), draws fresh eps for the Monte Carlo estimators
  and takes an Adam step (Kingma & Ba 2015; beta = 0.9, 0.999). Every ``trace_every`` steps (and
  after the last) the trace records the *full-data* ELBO (the model's own estimator, fixed eps:
  deterministic, one O(N M^2) pass), which decides the point the model is left at;
* ``"adam-natgrad"``: the same minibatch Adam over everything but q(u), and at each step a
  natural-gradient step of size ``natgrad_step`` on q(u) from the same minibatch
  (:func:`.natural_gradients.minibatch_step`; GPflow's recipe for large N). A full-Gaussian q only.

The score estimator under L-BFGS: its gradient (eq. 13) is an unbiased estimate, not the
derivative of the Monte Carlo value, so a line search on that value compares inconsistent
numbers. Chosen here: for Q <= 3 the value given to L-BFGS (and traced) is the ELBO with the
expected log likelihood by Gauss-Hermite quadrature at the same marginals, a precise value of
the objective the score gradient estimates (``details["objective"] = "quadrature"``); for Q > 3
it is the fixed-eps Monte Carlo value, as in the paper, with a RuntimeWarning
(``details["objective"] = "monte-carlo (inconsistent with the score gradient)"``). Adam needs no
value; its trace uses the same choice.
"""

from __future__ import annotations

import time
import warnings

import numpy as np

from gpexplorer import _threads
from gpexplorer.linalg import CholeskyError
from gpexplorer.optimize import (ADAM_BETAS, FAILED_OBJECTIVE, FitResult, Packer, TraceEntry, adam, block_cyclic,
                                  best_of_starts, lbfgsb, perturb_log, summaries)
from gpexplorer.variational import convergence, estimators, natural_gradients
from gpexplorer.variational.elbo import MIN_VARIANCE
from gpexplorer.variational.elbo import elbo as elbo_function
from gpexplorer.variational.whitening import whitened_block

METHODS = ("lbfgs", "block-lbfgs", "adam", "natgrad", "adam-natgrad")
MINIBATCH_METHODS = ("adam", "adam-natgrad")
BLOCKS = ("posterior", "hyperparameters", "likelihood")
FAILURES = (CholeskyError, FloatingPointError, np.linalg.LinAlgError, ValueError)


class Stop(Exception):
    """The callback asked to stop."""


def _count(name, value, minimum):
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < minimum:
        raise ValueError(f"{name} must be an integer >= {minimum}; got {value!r}")
    return int(value)


def check_arguments(model, max_iter, method, batch_size, learning_rate, evals_per_block, trace_every, restarts, *,
                    natgrad_step=0.1, fixed=()):
    if method not in METHODS:
        raise ValueError(f"method must be one of {METHODS}; got {method!r}")
    _count("max_iter", max_iter, 1)
    _count("restarts", restarts, 0)
    _count("evals_per_block", evals_per_block, 1)
    _count("trace_every", trace_every, 1)
    N = model.X.shape[0]
    if batch_size is not None:
        if method not in MINIBATCH_METHODS:
            raise ValueError(f"batch_size is for the methods {MINIBATCH_METHODS} (L-BFGS needs the full-data "
                             f"objective); got {method!r}")
        _count("batch_size", batch_size, 1)
        if batch_size > N:
            raise ValueError(f"batch_size must be at most N = {N}; got {batch_size}")
    if not (np.isfinite(learning_rate) and learning_rate > 0):
        raise ValueError(f"learning_rate must be a positive number; got {learning_rate!r}")
    if method == "adam-natgrad":
        natural_gradients.check_minibatch(model, natgrad_step, fixed)


def resolve_method(model, method, fixed, batch_size=None):
    """``method="auto"``: natural gradients where they apply (a full-Gaussian q(u) that is not
    fixed, an estimator other than the score function, no minibatches), else joint L-BFGS. On
    Snelson (Gaussian likelihood, M = 15, from the VFE start) natural gradients reach the
    collapsed optimum where joint L-BFGS ends 2-4 nats short after 2000 iterations
    (tests/test_natural_gradients.py, tests/benchmarks/bench_natgrad.py)."""
    if method != "auto":
        return method
    if batch_size is None and "posterior" not in fixed and natural_gradients.supports(model) is None:
        return "natgrad"
    return "lbfgs"


def objective_kind(model):
    """Which value L-BFGS and the trace use (module docstring)."""
    if model.estimator != "score":
        return model.estimator
    return "quadrature" if model.Q <= 3 else "monte-carlo (inconsistent with the score gradient)"


def terms_of(model, r):
    """The objective's terms (module docstring) from an ElboResult; for the score estimator with
    Q <= 3 the expected log likelihood is recomputed by quadrature at the same marginals."""
    ell = r.terms["ell"]
    if model.estimator == "score" and model.Q <= 3:
        b = np.stack([lat.mean for lat in r.latents], axis=-1)
        var = np.maximum(np.stack([lat.var for lat in r.latents], axis=-1), MIN_VARIANCE)
        est = estimators.estimate(model.likelihood, b, var, model.Y, "quadrature", n_points=model.n_points)
        ell = float(model.posterior.pi @ est.value.sum(axis=1))
    return {"neg_ell": -ell, "neg_entropy": -r.terms["entropy"], "neg_cross": -r.terms["cross"]}


def batch_elbo(model, rows, eps):
    """(value, {name: gradient}) of the minibatch ELBO: N/B sum_{n in rows} ell_n + L_ent + L_cross,
    by one ELBO evaluation on the rows with ell weighted by N/B (the KL terms are formed once)."""
    X, Y = model.X[rows], model.Y[rows]
    s = model.X.shape[0] / X.shape[0]
    r = elbo_function(X, Y, model.kernels, model.features, model.likelihood, model.posterior,
                      estimator=model.estimator, eps=eps, n_points=model.n_points,
                      control_variate=model.control_variate, jitter=model.jitter, eval_gradient=True,
                      workspace=model.workspace, ell_weight=s)
    return r.value, model.gradients_by_name(r)


class Evaluator:
    """-ELBO, its flat gradient and terms at a packed vector x, cached by x; keeps the best."""

    def __init__(self, model, packer):
        self.model, self.packer = model, packer
        self.bounds = packer.bounds
        self.cache = {}
        self.n_eval = 0
        self.best = (np.inf, None, None)  # (F, x, terms)

    def assign(self, x):
        values = self.packer.unpack(x)
        self.model.set_parameters(**values)
        return values

    def at(self, x, gradient=True):
        key = (x.tobytes(), gradient)
        if key in self.cache:
            return self.cache[key]
        self.n_eval += 1
        try:
            values = self.assign(x)
            r = self.model.evaluate(eval_gradient=gradient)
            terms = terms_of(self.model, r)
            F = float(sum(terms.values()))
            g = self.packer.chain(values, self.model.gradients_by_name(r)) if gradient else None
            if not (np.isfinite(F) and (g is None or np.all(np.isfinite(g)))):
                raise FloatingPointError
            g = -g if gradient else None
        except FAILURES:
            F, g, terms = FAILED_OBJECTIVE, np.zeros_like(x), {}
        if F < self.best[0]:
            self.best = (F, x.copy(), terms)
        if len(self.cache) > 8:
            self.cache.pop(next(iter(self.cache)))
        self.cache[key] = (F, g, terms)
        return F, g, terms


class Recorder:
    """Builds the trace and calls the callback with each entry (Stop when it returns True)."""

    def __init__(self, model, packer, fixed_values, callback):
        self.model, self.packer, self.fixed, self.callback = model, packer, fixed_values, callback
        self.trace = []

    def record(self, x, F, terms, notify=True):
        values = self.packer.unpack(x)
        params = {n: (values[n] if n in values else self.fixed[n]) for n in self.model.parameters}
        entry = TraceEntry(len(self.trace), float(F), dict(terms), params)
        self.trace.append(entry)
        if notify and self.callback is not None and self.callback(entry):
            raise Stop


def _iterate_hook(ev, rec, gradient=True):
    """The core strategies' ``on_iterate(x, F)``: records the iterate; True when the callback asks
    to stop (the run then raises Stop, as the recorder does)."""
    def on_iterate(x, _F):
        F, _, terms = ev.at(x, gradient=gradient)
        try:
            rec.record(x, F, terms)
        except Stop:
            return True
        return False
    return on_iterate


def _value_and_gradient(ev):
    def fun(x):
        F, g, _ = ev.at(x)
        return F, g
    return fun


def block_indices(packer):
    """{block: index array into the packed vector} for the non-empty blocks of BLOCKS."""
    out, i = {b: [] for b in BLOCKS}, 0
    for n in packer.names:
        block = "posterior" if n == "posterior" else "likelihood" if n.startswith("likelihood.") else "hyperparameters"
        out[block].extend(range(i, i + packer.sizes[n]))
        i += packer.sizes[n]
    return {b: np.array(v, dtype=int) for b, v in out.items() if v}


def _run_lbfgs(model, ev, rec, x0, max_iter, method, *, evals_per_block, tol, details, whiten=True,
               stop_when_converged=False, tau=0.0):
    F0, _, terms0 = ev.at(x0)
    rec.record(x0, F0, terms0, notify=False)
    x, nit, message = x0, 0, "nothing to optimise"
    if x0.size == 0:
        return x, nit, message
    lo, hi = ev.packer.box()
    fun, on_iterate = _value_and_gradient(ev), _iterate_hook(ev, rec)
    if method == "lbfgs":
        coords = whitened_block(model, ev.packer, x) if whiten else None
        run = lbfgsb(fun, x, lo, hi, max_iter=max_iter, ftol=tol, gtol=tol, on_iterate=on_iterate, coords=coords)
        if run.stopped:
            raise Stop
        details["lbfgs_message"] = run.message
        return ev.best[1].copy(), run.n_iter, run.message
    blocks = block_indices(ev.packer)
    details["blocks"] = {b: int(len(v)) for b, v in blocks.items()}
    rounds = details.setdefault("round_objectives", [])
    history = details.setdefault("round_history", [])  # per round: gain, iterations, failed line searches
    evaluations = [ev.n_eval]

    def coords_for(block, x):
        return whitened_block(model, ev.packer, x) if whiten and block == "posterior" else None

    def after_round(gain, iterations, messages):
        rounds.append(float(ev.best[0]))
        history.append(convergence.round_record(gain, iterations, ev.n_eval - evaluations[0], messages))
        evaluations[0] = ev.n_eval
        return stop_when_converged and convergence.at_rest(history, tau)  # converged, or stalled

    run = block_cyclic(fun, x0, lo, hi, blocks, rounds=max_iter, evals_per_block=evals_per_block, ftol=tol, gtol=tol,
                       on_iterate=on_iterate, coords_for=coords_for, after_round=after_round)
    if run.stopped:
        raise Stop
    return run.x, run.n_iter, run.message


def _run_adam(model, ev, rec, x0, max_iter, *, batch_size, learning_rate, trace_every, rng, natgrad_step=None):
    """Minibatch Adam; with ``natgrad_step``, q(u) moves by natural-gradient steps instead (module docstring)."""
    N, Q = model.X.shape[0], model.Q
    B = N if batch_size is None else int(batch_size)
    lo, hi = ev.packer.box()
    F0, _, terms0 = ev.at(x0, gradient=False)
    rec.record(x0, F0, terms0, notify=False)
    on_iterate = _iterate_hook(ev, rec, gradient=False)
    q = natural_gradients.posterior_positions(ev.packer) if natgrad_step is not None else None
    stepped = {}  # q's free vector after this step's natural-gradient step

    def gradient(x, t):
        rows = np.sort(rng.choice(N, B, replace=False)) if B < N else np.arange(N)
        eps = None if model.estimator == "quadrature" else rng.standard_normal((model.num_samples, B, Q))
        try:
            values = ev.assign(x)
            _, grads = batch_elbo(model, rows, eps)
            g = -ev.packer.chain(values, grads)
        except FAILURES:
            return None
        if q is not None:
            g[q] = 0.0  # Adam leaves q; the natural step moves it
            stepped["q"] = natural_gradients.minibatch_step(model, rows, eps, natgrad_step)
        return g

    def after_step(t, x):
        if q is not None and stepped.get("q") is not None:
            x = x.copy()
            x[q] = stepped.pop("q")
        return x

    def on_step(t, x):  # the full-data ELBO every trace_every steps and after the last
        if t % trace_every == 0 or t == max_iter:
            return on_iterate(x, None)
        return False

    run = adam(gradient, x0, lo, hi, steps=max_iter, learning_rate=learning_rate, betas=ADAM_BETAS, on_step=on_step,
               after_step=after_step)
    if run.stopped:
        raise Stop
    x = run.x
    if not run.success:
        return x, run.n_iter, "stopped: 10 minibatch evaluations in a row failed"
    natural = "" if natgrad_step is None else f", q(u) by natural-gradient steps of {natgrad_step:g}"
    return x, int(max_iter), f"{int(max_iter)} Adam steps (batch size {B}){natural}"


def fit(model, max_iter=200, fixed=frozenset(), restarts=0, seed=None, callback=None, *, method="auto",
        batch_size=None, learning_rate=0.01, evals_per_block=25, trace_every=10, tol=None, whiten=True,
        stop_when_converged=False, convergence_tol=convergence.CONVERGENCE_TOL, natgrad_step=0.1):
    """Maximise the ELBO of ``model`` (module docstring); ``fixed`` is a set of parameter names.
    ``restarts`` extra runs start from the log-parameters moved by N(0, 0.5^2) and q(u) reset to
    the prior there; ``seed`` drives them and Adam's minibatches and eps. Returns a FitResult
    whose ``details["convergence"]`` says whether the fit converged or ended on its budget
    (:mod:`.convergence`: ``convergence_tol`` nats per data point and round); with
    ``stop_when_converged`` block-cyclic L-BFGS stops after the first round that gains at most that."""
    method = resolve_method(model, method, fixed, batch_size)
    check_arguments(model, max_iter, method, batch_size, learning_rate, evals_per_block, trace_every, restarts,
                    natgrad_step=natgrad_step, fixed=fixed)
    kind = objective_kind(model)
    if model.estimator == "score" and model.Q > 3 and method not in MINIBATCH_METHODS:
        warnings.warn("L-BFGS with the score estimator and Q > 3: the line search uses the fixed-eps Monte Carlo "
                      "ELBO, whose derivative the score gradient is not", RuntimeWarning, stacklevel=3)
    tau = convergence.tolerance(model.X.shape[0], convergence_tol)
    initial = model.parameters
    packer = Packer(model.parameter_specs, initial, fixed)
    fixed_values = {n: v for n, v in initial.items() if n not in packer.names}
    rng = np.random.default_rng(seed)
    t0 = time.perf_counter()

    def starts():  # drawn lazily: the restarts' draws follow the previous run's (Adam's) from the same rng
        for start in range(int(restarts) + 1):
            model.set_parameters(**initial)
            if start > 0:
                _restart(model, packer, rng)
            yield start

    def search(_):
        return _one_run(model, packer, fixed_values, callback, method=method, max_iter=max_iter,
                        batch_size=batch_size, learning_rate=learning_rate, evals_per_block=evals_per_block,
                        trace_every=trace_every, tol=tol, rng=rng, whiten=whiten,
                        stopping=(stop_when_converged, tau), natgrad_step=natgrad_step)

    with _threads.single_threaded():  # small BLAS calls: threads cost milliseconds each on a shared machine
        chosen, runs = best_of_starts(search, starts())
    stopped = runs[-1]["stopped"]
    model.set_parameters(**chosen["best"].params)
    details = {**chosen["details"], "method": method, "objective": kind, "stopped": stopped,
               "whitened_q": bool(whiten and method in ("lbfgs", "block-lbfgs") and "posterior" in packer.names
                                  and not model.posterior.diagonal and model.posterior.K == 1),
               "entropy": model.posterior.entropy_kind, "terms": "neg_ell + neg_entropy + neg_cross = -ELBO"}
    probe = None
    if convergence.needs_exact_check(model, method, chosen, stopped, tau):
        with _threads.single_threaded():
            probe = exact_round_gain(model, packer, fixed_values, evals_per_block, whiten)
    details["convergence"] = convergence.assess(method, chosen["details"], chosen["trace"], max_iter,
                                                tau, exact_gradient=model.estimator != "score", stopped=stopped,
                                                exact_round=probe)
    if method in MINIBATCH_METHODS:
        details.update(batch_size=batch_size or model.X.shape[0], trace_every=trace_every,
                       trace_objective="full-data ELBO")
    if method == "adam-natgrad":
        details["natgrad_step"] = float(natgrad_step)
    return FitResult(success=chosen["success"], message=chosen["message"], objective=chosen["objective"],
                     n_iter=chosen["n_iter"], n_eval=chosen["n_eval"], trace=chosen["trace"],
                     restarts=summaries(runs),
                     elapsed=time.perf_counter() - t0, details=details)


def _one_run(model, packer, fixed_values, callback, *, method, max_iter, batch_size, learning_rate, evals_per_block,
             trace_every, tol, rng, whiten=True, stopping=(False, 0.0), natgrad_step=0.1):
    """One optimisation from where the model is; returns its summary, best entry and trace."""
    x0 = packer.pack(model.parameters)
    ev = Evaluator(model, packer)
    rec = Recorder(model, packer, fixed_values, callback)
    details, stopped = {}, False
    try:
        if method == "natgrad":
            _, nit, message = natural_gradients.run(model, ev, rec, x0, max_iter, tol, details)
        elif method in MINIBATCH_METHODS:
            _, nit, message = _run_adam(model, ev, rec, x0, max_iter, batch_size=batch_size,
                                        learning_rate=learning_rate, trace_every=trace_every, rng=rng,
                                        natgrad_step=natgrad_step if method == "adam-natgrad" else None)
        else:
            _, nit, message = _run_lbfgs(model, ev, rec, x0, max_iter, method, evals_per_block=evals_per_block,
                                         tol=tol, details=details, whiten=whiten, stop_when_converged=stopping[0],
                                         tau=stopping[1])
        success = True
    except Stop:
        nit, message, success, stopped = len(rec.trace) - 1, "stopped by the callback", False, True
    best = min(rec.trace, key=lambda e: e.objective)
    if method not in MINIBATCH_METHODS and ev.best[0] < best.objective:  # a line-search point beat every iterate
        rec.record(ev.best[1], ev.best[0], ev.best[2], notify=False)
        best = rec.trace[-1]
    return {"objective": best.objective, "n_iter": int(nit), "message": message, "success": success,
            "stopped": stopped, "trace": rec.trace, "best": best, "n_eval": ev.n_eval, "details": details}


def exact_round_gain(model, packer, fixed_values, evals_per_block, whiten=True):
    """(The ELBO's rise, accepted iterations) in one round of block-cyclic L-BFGS with the
    quadrature estimator's exact gradient from where ``model`` is (:mod:`.convergence`: the check
    of a score-function fit's standstill), or None where quadrature fails at that point; the
    model is left as it was (parameters, estimator, control variate)."""
    saved, estimator, cv = model.parameters, model.estimator, model.control_variate
    model.estimator, model.control_variate = "quadrature", False
    try:
        ev = Evaluator(model, packer)
        x0 = packer.pack(saved)
        start = ev.at(x0)[0]
        if not start < FAILED_OBJECTIVE:
            return None
        _, nit, _ = _run_lbfgs(model, ev, Recorder(model, packer, fixed_values, None), x0, 1, "block-lbfgs",
                               evals_per_block=evals_per_block, tol=None, details={}, whiten=whiten)
        return float(start - ev.best[0]), int(nit)
    finally:
        model.estimator, model.control_variate = estimator, cv
        model.set_parameters(**saved)


def _restart(model, packer, rng):
    """Log-parameters moved by N(0, 0.5^2) within their boxes, q(u) reset to the prior there."""
    lo, hi = packer.box()
    x = perturb_log(packer.pack(model.parameters), lo, hi, rng, packer.is_log)
    model.set_parameters(**packer.unpack(x))
    if "posterior" in packer.names:
        model.reset_posterior(int(rng.integers(2 ** 31)))


__all__ = ["BLOCKS", "METHODS", "MINIBATCH_METHODS", "resolve_method", "batch_elbo", "block_indices", "exact_round_gain", "fit",
           "objective_kind", "terms_of"]
