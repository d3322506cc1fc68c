"""Fit the exact GP and each chosen sparse approximation from one common start, keeping
every iterate for replay (thesis §3.2: FITC and VFE optimised jointly over hyperparameters,
noise and Z from the same initial inducing inputs).

Plain numpy and the optimiser; the dashboard runs :func:`fit_all` on a worker thread. A fit that
ends on its iteration budget rather than its convergence test says so (``FitOutcome.converged``,
``last_change``, :func:`convergence_badges`), and :func:`continue_fits` runs more iterations from
where such fits stopped, extending their traces.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field, replace

import numpy as np

from gpexplorer.formatting import format_number
from gpexplorer.sparse.comparison import LABELS, TERMS, Badge, ParameterSet, build_model
from gpexplorer.sparse.objectives import APPROXIMATIONS
from gpexplorer.linalg import JitterWarning


@dataclass
class FitOutcome:
    name: str
    final: ParameterSet
    trace: list = field(default_factory=list)  # ParameterSet per recorded iterate (start first)
    log_evidence: list = field(default_factory=list)  # -F per iterate
    terms: list = field(default_factory=list)  # {"complexity", "data_fit", "trace"} of log p(y)
    n_iter: int = 0
    message: str = ""
    seconds: float = 0.0
    jitter_used: float = 0.0
    converged: bool = True  # False: L-BFGS-B stopped on its iteration (or evaluation) budget
    last_change: float = 0.0  # mean |change of log p(y)| per iteration over the last LAST_CHANGES


#: iterations over which ``FitOutcome.last_change`` averages the change of the objective
LAST_CHANGES = 10
#: L-BFGS-B's messages when it stops on a budget instead of its convergence test
BUDGET_MESSAGES = ("ITERATIONS REACHED LIMIT", "EVALUATIONS EXCEEDS LIMIT", "MAXIMUM NUMBER OF ITERATIONS")


def stopped_on_budget(message, n_iter, max_iter):
    """True when a fit ended because its iteration or evaluation budget ran out."""
    text = str(message).upper()
    return any(m in text for m in BUDGET_MESSAGES) or (max_iter > 0 and n_iter >= max_iter
                                                       and "CONVERGENCE" not in text)


def last_change(log_evidence, window=LAST_CHANGES):
    """Mean |change| of the objective per iteration over the last ``window`` iterations (0 for
    fewer than two iterates)."""
    values = np.asarray(log_evidence[-(window + 1):], dtype=float)
    return float(np.mean(np.abs(np.diff(values)))) if values.size > 1 else 0.0


def _parameter_set(template: ParameterSet, params: dict) -> ParameterSet:
    kernel = template.kernel.copy()
    kernel.assign_unchecked({k: params[k] for k in kernel.param_names})
    feature = None
    if template.inducing is not None:
        feature = template.inducing.copy()
        feature.assign_unchecked({n: params[n] for n in feature.param_names})
    return ParameterSet(kernel, float(params["noise_variance"]), feature, template.jitter)


def fit_one(ds, name, start: ParameterSet, fixed=(), restarts=0, max_iter=300, seed=0, on_iterate=None):
    """Optimise one approximation from ``start``; ``on_iterate(iteration)`` may raise to stop.

    The trace holds the iterates of the best start (start point first), as in ``optimize.fit``.
    """
    model = build_model(ds, name, start)
    if name == "exact":  # the exact GP has no inducing feature: freezing one means nothing to it
        fixed = tuple(f for f in fixed if f in model.parameters or f in ("kernel", "hyperparameters"))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", JitterWarning)  # the dashboard shows jitter as a badge
        callback = None if on_iterate is None else (lambda entry: on_iterate(entry.iteration))
        result = model.fit(max_iter=max_iter, fixed=fixed, restarts=restarts, seed=seed, callback=callback)
    log_evidence = [-float(e.objective) for e in result.trace]
    return FitOutcome(
        name=name, final=ParameterSet.from_model(model),
        trace=[_parameter_set(start, e.params) for e in result.trace],  # the best start's iterates
        log_evidence=log_evidence,
        terms=[{t: -float(e.terms.get(t, 0.0)) for t in TERMS} for e in result.trace],
        n_iter=result.n_iter, message=result.message, seconds=result.elapsed, jitter_used=model.jitter_used,
        converged=not stopped_on_budget(result.message, result.n_iter, max_iter),
        last_change=last_change(log_evidence))


def fit_all(ds, start: ParameterSet, names, *, fixed=(), restarts=0, max_iter=300, seed=0,
            vfe_from_fitc=False, report=None, warm=None):
    """Fit "exact" and every name in ``names`` from ``start``; returns name -> FitOutcome.

    ``warm`` (name -> ParameterSet) overrides the start of some fits, e.g. each one's previous
    optimum. With ``vfe_from_fitc`` VFE starts at FITC's optimum (thesis §3.2.5).
    ``report(fraction, message)`` is called as iterations complete; an exception it raises
    aborts the fit.
    """
    warm = warm or {}
    order = ["exact"] + [n for n in APPROXIMATIONS if n in names]
    if vfe_from_fitc and "vfe" in order and "fitc" not in order:
        order.insert(order.index("vfe"), "fitc")
    outcomes = {}
    for k, name in enumerate(order):
        begin = start
        if name in warm:
            begin = warm[name]
        elif name == "vfe" and vfe_from_fitc:
            begin = outcomes["fitc"].final
        elif name == "exact":
            begin = ParameterSet(start.kernel, start.noise_variance, None)

        def on_iterate(it, k=k, name=name):
            if report is not None:
                report((k + min(it, max_iter) / max(max_iter, 1)) / len(order), f"{name}: iteration {it}")

        outcomes[name] = fit_one(ds, name, begin, fixed, restarts, max_iter, seed, on_iterate)
    if report is not None:
        report(1.0, "done")
    return outcomes


def extended(before: FitOutcome, more: FitOutcome) -> FitOutcome:
    """``before`` continued by ``more`` (a fit started at ``before.final``): one trace, the iterate
    they share once, iterations and seconds added, convergence and last change from the whole."""
    log_evidence = before.log_evidence + more.log_evidence[1:]
    return replace(more, trace=before.trace + more.trace[1:], log_evidence=log_evidence,
                   terms=before.terms + more.terms[1:], n_iter=before.n_iter + more.n_iter,
                   seconds=before.seconds + more.seconds, last_change=last_change(log_evidence))


def continue_fits(ds, outcomes: dict, fixed=(), max_iter=300, report=None):
    """Run up to ``max_iter`` more iterations of every fit in ``outcomes`` (name -> FitOutcome)
    that stopped on its budget, each from where it stopped; returns name -> FitOutcome with the
    continued fits' traces extended and the converged ones as they were."""
    todo = [n for n, o in outcomes.items() if not o.converged]
    out = dict(outcomes)
    for k, name in enumerate(todo):

        def on_iterate(it, k=k, name=name):
            if report is not None:
                report((k + min(it, max_iter) / max(max_iter, 1)) / len(todo), f"{name}: iteration {it}")

        more = fit_one(ds, name, outcomes[name].final, fixed, 0, max_iter, 0, on_iterate)
        out[name] = extended(outcomes[name], more)
    if report is not None:
        report(1.0, "done")
    return out


def convergence_badges(outcomes: dict) -> list:
    """A ``not-converged`` badge per fit that stopped on its iteration budget, with the last
    change of its objective per iteration."""
    out = []
    for name, o in (outcomes or {}).items():
        if o.converged:
            continue
        out.append(Badge("not-converged", name,
                         f"{LABELS.get(name, name)} stopped on its iteration budget after {o.n_iter} iterations, "
                         f"not on its convergence test: its objective still changed by "
                         f"{format_number(o.last_change)} per iteration over the last {LAST_CHANGES}. "
                         "Continue runs more iterations from where it stopped."))
    return out
