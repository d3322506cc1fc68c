"""Texts of the linearised-inference lab: one short explanation per view (what to look at) and
the HTML readouts (metrics table, hyperparameter table, badges, messages). Plain HTML, no TeX.

Stable element ids for the tests: ``metrics-table``, ``hyper-table``, ``badges`` (a search that
ended on its budget: ``data-kind="not-converged"``, ``data-method``), ``job-status``,
``expression-error`` / ``expression-ok``, ``upload-error`` / ``upload-ok``.
"""

from __future__ import annotations

import html

import numpy as np

from gpexplorer.formatting import format_number
from gpexplorer.linearized.comparison import METHODS
from gpexplorer.ui.markup import STYLE, status_html, upload_html
from gpexplorer.ui.math_text import with_math

__all__ = ["EXPLAIN", "metrics_html", "hyper_html", "badges_html", "learning_badges_html", "expression_html",
           "status_html", "upload_html"]

EXPLAIN = {
    "latent": (
        "<b>Latent posterior.</b> Each method's mean and 2 sd band of f (eq. 38) over the true latent f "
        "(black, dashed); ticks at the bottom are the training inputs. Solid: full GP (EGP, UGP); dashed: "
        "random features (EKS, UKS); the Taylor methods (EGP, EKS) are wide pale lines under the unscented ones, so where "
        "a pair agrees both stay visible. <b>Tap</b> the plot to move the close-up's x0 (dotted line)."),
    "observation": (
        "<b>Observation space.</b> Data and the true g(f) with each method's predicted y* and 2 sd "
        "(quadrature, eq. 39, or the unscented transform, eq. 40). A method can fit y well while its f "
        "is off where g is flat or not one-to-one (sin, tanh): compare with the latent plot."),
    "objective": (
        "<b>Gauss-Newton.</b> The MAP objective (eq. 31) after each iteration. Bigger dots: the step was "
        "cut (alpha multiplied by 0.75 for EGP/UGP, as in the original code, and by 0.5 for EKS/UKS, until "
        "(31) no longer decreased, section 2.5); the strip below gives each cut step's length alpha. A red "
        "x: every cut made (31) worse, the 'diverge' stop, which keeps the last good mean; it happens "
        "mostly with statistical linearisation (UGP/UKS). With UGP inner loop 'fixed point' the UGP line "
        "shows the iterates of the fixed-point solve instead, where (31) need not rise."),
    "closeup": (
        "<b>Linearisation at x0.</b> g(f) near each method's posterior f(x0) (shaded densities, right "
        "axis). EGP/EKS use the tangent at the mean (eq. 36); UGP/UKS the least-squares line through "
        "the sigma points m, m +- sqrt((1 + kappa) C) (eq. 37; dot size = weight). Where g curves or "
        "jumps within the posterior spread the two lines differ most; kappa widens the sigma points."),
    "metrics": (
        "<b>Metrics</b> on the toy problem's test points (EGP paper Table 1; lower is better): NLPD and "
        "SMSE of f*, SMSE of y*. Free energy: eq. 41 (EKS eq. 20), the objective of <i>Learn "
        "hyperparameters</i>; it is approximate, not a bound."),
    "hyper": (
        "<b>Hyperparameters</b> each method uses. After learning (maximisation of the free energy, "
        "section 3.2: EGP/UGP by the 'EGP/UGP search' chosen under Close-up and learning, EKS/UKS "
        "derivative-free) every method is shown at the values its search stopped at; move any kernel or "
        "noise slider to return to the shared values. The free energy is approximate: a higher F need "
        "not predict better (lesson 6: on tanh2 EKS's F rises with learning while its test NLPD worsens)."),
    "profile": (
        "<b>Free-energy profile.</b> <i>Profile free energy</i> varies one hyperparameter (chosen under "
        "Close-up and learning) from a tenth to ten times each method's shown value, the others held, "
        "and runs the inner loop from the prior at each of 21 points, as every step of learning does. "
        "Solid/dashed: F (eq. 41, EKS eq. 20, left axis), the objective of learning; dotted: NLPD of f* "
        "on the test points (right axis), what the metrics table scores. On tanh2 the EGP's F peaks at a "
        "smaller kernel variance than its NLPD's minimum, so a search closer to the maximum predicts "
        "worse; red x: the UGP's loop stopped on 'diverge', where F jumps."),
}

_NUM = "{:.4g}"
_TABLE_STYLE = "<style>.gpx-table td.note{text-align:left;color:#666}</style>"


def _num(v, fmt=_NUM):
    return "n/a" if v is None or not np.isfinite(v) else fmt.format(v)


def metrics_html(results, refused=(), timing_ms=None):
    """Per method: NLPD f*, SMSE f*, SMSE y*, free energy, MAP objective, iterations, stop, time."""
    head = ("<tr><th></th><th>NLPD f*</th><th>SMSE f*</th><th>SMSE y*</th><th>free energy</th>"
            "<th>MAP obj.</th><th>GN iter.</th><th>stop</th><th>time (ms)</th></tr>")
    rows = []
    for m in METHODS:
        if m in refused:
            rows.append(f'<tr data-method="{m}"><th>{METHODS[m].label}</th><td class="note" colspan=8>disabled: '
                        "g is not differentiable, so there is no Taylor linearisation</td></tr>")
            continue
        r = results.get(m)
        if r is None:
            continue
        if r.error:
            rows.append(f'<tr data-method="{m}"><th>{METHODS[m].label}</th><td class="note" colspan=8>'
                        f"{html.escape(r.error)}</td></tr>")
            continue
        mt = r.metrics or {}
        stop = f'<span style="color:#c00">{r.status}</span>' if r.status == "diverged" else r.status
        rows.append(f'<tr data-method="{m}"><th>{METHODS[m].label}</th><td>{_num(mt.get("nlpd_f"))}</td>'
                    f'<td>{_num(mt.get("smse_f"))}</td><td>{_num(mt.get("smse_y"))}</td>'
                    f"<td>{_num(r.free_energy, '{:.2f}')}</td><td>{_num(r.map_objective, '{:.2f}')}</td>"
                    f"<td>{len(r.trace) - 1}</td><td>{stop}</td><td>{1e3 * r.seconds:.0f}</td></tr>")
    shown = [r for r in results.values() if r.error is None]  # no method shown or all failed: nothing to blame
    note = "" if not shown or any((r.metrics or {}) for r in shown) else \
        "<small>No test points (uploaded data): f* metrics need the true f of the toy problem.</small><br>"
    timing = f"<small>Server time of the last update: {timing_ms:.0f} ms.</small>" if timing_ms else ""
    return (STYLE + _TABLE_STYLE + '<div id="metrics-table"><table class="gpx-table">' + head + "".join(rows)
            + "</table>" + note + timing + "</div>")


def hyper_html(results, fitted=None, mode="manual"):
    """The hyperparameters each method is shown at, and the learnt ones with their free energy."""
    head = "<tr><th></th><th>variance</th><th>lengthscale</th><th>noise variance</th><th>source</th></tr>"
    rows = []
    for m in METHODS:
        r = results.get(m)
        learnt = (fitted or {}).get(m)
        if r is None and learnt is None:
            continue
        p = learnt if (learnt and mode == "fitted") else (r.params if r else learnt)
        source = "learnt" if learnt and mode == "fitted" else "sliders"
        if learnt and mode == "fitted":
            search = f" by {learnt['search']}" if learnt.get("search") else ""
            source += f"{search} ({learnt.get('evaluations', 0)} evaluations, {learnt.get('seconds', 0.0):.1f} s)"
        rows.append(f'<tr data-method="{m}"><th>{METHODS[m].label}</th><td>{_num(p["variance"])}</td>'
                    f'<td>{_num(p["lengthscale"])}</td><td>{_num(p["noise_variance"])}</td>'
                    f'<td class="note">{source}</td></tr>')
    if fitted and mode != "fitted":
        note = "Learnt values are kept: press <i>Show learnt</i> to see them again."
    elif fitted:
        note = with_math("Each method at its own learnt hyperparameters (EKS/UKS: the variance is $\\omega^2$, eq. 7).")
    else:
        note = "Not learnt yet: every method uses the sliders. Press <i>Learn hyperparameters</i>."
    return (STYLE + _TABLE_STYLE + f'<div id="hyper-table" data-mode="{mode}"><table class="gpx-table">'
            + head + "".join(rows) + f"</table><small>{note}</small></div>")


def learning_badges_html(fitted):
    """A badge per method whose hyperparameter search ended on its budget rather than its own
    convergence test (:func:`gpexplorer.linearized.convergence.search_verdict`), with the free
    energy's last rise per evaluation and the offer to continue."""
    items = []
    for m in METHODS:
        learnt = (fitted or {}).get(m)
        if not learnt or learnt.get("reason") != "budget":
            continue
        items.append(
            f'<div class="gpx-badge" data-kind="not-converged" data-reason="budget" data-method="{m}">'
            f"<b>{METHODS[m].label}: learning did not converge</b>. Its search ({html.escape(learnt['search'])}) "
            f"ended on its budget of {learnt['budget']} evaluations, not on its own convergence test; over its "
            f"last {learnt['window']} evaluations the best free energy rose by "
            f"{format_number(learnt['last_change_per_evaluation'])} per evaluation. The learnt values are where "
            f"it was cut short; <i>Continue learning</i> runs another {learnt['budget']} from them.</div>")
    return "".join(items)


def badges_html(results, forward, refused=(), problems=(), fitted=None):
    """Badges: diverged inner loops, a non-differentiable g, failures and other problems, and
    learning cut short by its budget (:func:`learning_badges_html` of the learnt ``fitted``)."""
    items = [f'<div class="gpx-badge failure"><b>Problem:</b> {html.escape(p)}</div>' for p in problems if p]
    if forward is not None and not forward.differentiable:
        off = ", ".join(METHODS[m].label for m in refused) or "EGP/EKS"
        items.append('<div class="gpx-badge" data-kind="non-differentiable"><b>Not differentiable</b>: '
                     f"g = {html.escape(forward.name)} has no derivative everywhere, so {off} "
                     "(Taylor, eq. 36) cannot be used; UGP/UKS need no derivatives.</div>")
    for m, r in results.items():
        if r.error:
            items.append(f'<div class="gpx-badge failure" data-kind="failure">{html.escape(r.error)}</div>')
        elif r.status == "diverged":
            items.append(f'<div class="gpx-badge" data-kind="diverged" data-method="{m}"><b>Diverged</b>: '
                         f"{METHODS[m].label}'s step search hit the 'diverge' condition at iteration "
                         f"{r.trace[-1].iteration}; the last good mean is kept (section 2.5).</div>")
    items.append(learning_badges_html(fitted))
    idle = "All shown methods converged." if results or refused else "No method selected: choose EGP, UGP, EKS or UKS."
    body = "".join(items) or f"<small>{idle}</small>"
    return STYLE + f'<div id="badges">{body}</div>'


def expression_html(error=None, forward=None):
    """Verdict on the custom expression: ``#expression-error`` (previous model kept) or ``-ok``."""
    if error:
        return (STYLE + '<div id="expression-error" class="gpx-error">Expression rejected: '
                f"{html.escape(str(error))}. The previous forward model is kept.</div>")
    if forward is None:
        return ""
    kind = "differentiable" if forward.differentiable else "not differentiable (UGP/UKS only)"
    return f'<div id="expression-ok"><small>g(f) = {html.escape(forward.name)}: {kind}</small></div>'
