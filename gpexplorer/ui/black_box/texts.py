"""Texts of the black-box lab: one short explanation per view and the HTML readouts (metrics
table, data note, badges). Plain HTML, no TeX.

Stable element ids for the tests: ``metrics-table`` (rows ``data-posterior``), ``data-note``,
``badges`` (a fit that did not converge: ``data-kind="not-converged"`` as in the sparse lab, with
``data-reason`` "budget" or "stalled" and ``data-posterior``), ``job-status``, ``upload-error`` /
``upload-ok``.
"""

from __future__ import annotations

import html

import numpy as np

from gpexplorer.formatting import format_number
from gpexplorer.ui.black_box.settings import LABELS, POSTERIORS
from gpexplorer.ui.markup import STYLE, status_html, upload_html

__all__ = ["EXPLAIN", "INTRO", "metrics_html", "note_html", "badges_html", "convergence_badge_html", "status_html",
           "upload_html"]

INTRO = (
    "<b>Black-box inference</b> (SAVIGP, Dezfouli &amp; Bonilla 2015): a sparse GP whose likelihood is only "
    "ever <i>evaluated</i>, fitted by maximising the ELBO with q(u) a full Gaussian (FG) or a mixture of one or "
    "two diagonal Gaussians (MoG1, MoG2). The expected log likelihood is estimated by the score function "
    "(black box: no derivative of the likelihood), the reparameterisation trick, or quadrature. Press "
    "<i>Fit</i> after changing a setting; the fit runs in the background (progress and Cancel in the sidebar).")

EXPLAIN = {
    "latent": (
        "<b>Latent posterior.</b> Each approximation's q(f*): its mean and central 95 % band (the mixture's own "
        "quantiles: a two-peaked MoG2 is not summarised by a mean and sd). For 1-D data over x (dashed: a "
        "toy's true f); for N-D data per test point, ordered by the first shown posterior's mean. FG keeps "
        "correlations between inducing values; MoG's diagonal components do not, which shows as a narrower "
        "or a wigglier band."),
    "observation": (
        "<b>Observation space.</b> Coal mining: the intensity exp(f + offset) per year with its central 90 % "
        "band (exp of q(f*)'s 5 and 95 % quantiles) over counts per year of each bin. Classification: "
        "p(y = 1) = E_q[sigmoid(f*)]. Regression: y* with its 90 % band."),
    "elbo": (
        "<b>ELBO</b> over the L-BFGS iterations, drawn live while fitting: MoG's by the block optimiser (q(u), "
        "then the hyperparameters and inducing inputs, then likelihood parameters, each round); FG's, with "
        "quadrature or reparameterisation, over the hyperparameters and inducing inputs with q(u) brought to its "
        "optimum by natural-gradient steps at each one (the score function: the block optimiser). Below, its three "
        "terms: the expected log likelihood (what the estimator estimates), the entropy of q(u) (exact for "
        "FG and MoG1, the Jensen bound for MoG2) and the cross term. ELBO = ELL + entropy + cross."),
    "variance": (
        "<b>Estimator variance</b> of the gradient of the expected log likelihood against S, measured over "
        "8 seeds at the first posterior's fitted marginals. Log-log: every line falls as 1/S; the control "
        "variate usually moves the score function's line down (fewer samples for the same precision), but its "
        "coefficient is fitted on a tenth of the samples, so at small S it can raise a line instead; "
        "reparameterisation, when the likelihood has a derivative, is lower still. Dotted: the page's S."),
    "components": (
        "<b>q(u)</b> at the inducing inputs: each component's mean with 2 sd bars (FG: the diagonal of its "
        "full covariance). MoG2 has two components (circle, triangle; dot size grows with the weight pi_k): "
        "where they agree, the mixture is effectively unimodal."),
    "metrics": (
        "<b>Metrics</b>: the ELBO at the end of the fit, the mean negative log predictive density (NLPD) and "
        "the error rate (classification) or standardised squared error SSE (counts, regression) on the test "
        "points named above, how the fit ended and its wall time. <i>converged</i>: its last two rounds raised "
        "the ELBO by at most 1e-5 nats per data point and iteration; <i>budget</i>: it was still rising when the "
        "rounds ran out; <i>stalled</i>: the score estimate stopped finding the way uphill short of the maximum."),
}


def _num(v, fmt="{:.4g}"):
    return "n/a" if v is None or not np.isfinite(v) else fmt.format(v)


def metrics_html(results, shown, test_label, stale=False, previous=None):
    """Per shown posterior: ELBO, NLPD, error rate or SSE, the learnt kernel (lengthscale, for
    several inputs their geometric mean, and variance), iterations, how the fit ended, fit time.
    ``previous``: the likelihood of the fit shown while the one set is refused (it says so)."""
    head = (f"<tr><th></th><th>ELBO</th><th>NLPD ({html.escape(test_label)})</th><th>error rate / SSE</th>"
            "<th>lengthscale</th><th>kernel var.</th><th>iterations</th><th>ended</th><th>fit time (s)</th></tr>")
    rows = []
    for p in POSTERIORS.values():
        if p not in shown:
            continue
        r = results.get(p)
        if r is None:
            rows.append(f'<tr data-posterior="{p}"><th>{LABELS[p]}</th><td colspan=8 style="text-align:left">'
                        "not fitted yet</td></tr>")
            continue
        if r.error is not None:
            rows.append(f'<tr data-posterior="{p}"><th>{LABELS[p]}</th><td colspan=8 style="text-align:left">'
                        f"failed: {html.escape(r.error)}</td></tr>")
            continue
        m = r.metrics
        err = (f"{_num(m['error_rate'], '{:.1%}')} error" if "error_rate" in m else f"{_num(m.get('sse'))} SSE")
        rows.append(f'<tr data-posterior="{p}"><th>{LABELS[p]}</th><td>{_num(m.get("elbo"), "{:.2f}")}</td>'
                    f"<td>{_num(m.get('nlpd'))}</td><td>{err}</td><td>{format_number(m.get('lengthscale'))}</td>"
                    f"<td>{format_number(m.get('kernel_variance'))}</td><td>{m.get('iterations', 'n/a')}</td>"
                    f"<td>{html.escape(str(r.convergence.get('reason', 'n/a')))}</td>"
                    f"<td>{_num(m.get('seconds'), '{:.2f}')}</td></tr>")
    stale_note = ('<div style="color:#8a6d00">The settings changed since this fit: press <i>Fit</i>.</div>'
                  if stale else "")
    if previous:
        stale_note = ('<div style="color:#8a6d00">The likelihood set was refused (see the badge): this table shows '
                      f'the previous fit, {html.escape(previous)}.</div>')
    return (f'{STYLE}<table id="metrics-table" class="gpx-table" data-stale="{str(bool(stale)).lower()}" '
            f'data-previous="{str(bool(previous)).lower()}">{head}{"".join(rows)}</table>{stale_note}')


def note_html(problem, likelihood=None):
    """What data set is shown and what was done to it."""
    if problem is None:
        return '<div id="data-note">No data set loaded.</div>'
    lik = f" Likelihood: <b>{html.escape(likelihood)}</b>." if likelihood else ""
    return f'<div id="data-note" style="font-size:0.9em">{html.escape(problem.note)}{lik}</div>'


def convergence_badge_html(result):
    """The badge of a fit that did not converge (``result.unfinished``): how it ended, the ELBO's
    last change per iteration, and the offer to continue; "" for a converged one."""
    if not result.unfinished:
        return ""
    c, p = result.convergence, result.posterior
    rate, tol = format_number(c.get("last_change_per_iteration")), format_number(c.get("tolerance"))
    if c["reason"] == "budget":
        unit = c.get("budget_unit", "round")
        rounds = f"{c.get('budget')} {unit}{'' if c.get('budget') == 1 else 's'}"
        text = (f"<b>{LABELS[p]} did not converge</b>: the fit ended on its budget of {rounds} with "
                f"the ELBO still rising by {rate} per iteration (converged: at most {tol}). Its ELBO, bands and "
                "metrics are those of an unfinished fit; <i>Continue</i> runs the fit on from where it stopped.")
    else:
        samples = getattr(result.model, "num_samples", None)
        text = (f"<b>{LABELS[p]} did not converge</b>: it stalled (score-function gradients, S = {samples}: last "
                f"change {rate} per iteration), yet one round with exact (quadrature) gradients would still raise the "
                f"ELBO by {format_number(c.get('exact_round_gain'))}. Raise S, or <i>Continue</i> with fresh samples.")
    return (f'<div class="gpx-badge" data-kind="not-converged" data-reason="{c["reason"]}" data-posterior="{p}">'
            f"{text}</div>")


def badges_html(problems, results=None, shown=(), notes=()):
    """Warnings and errors above the views (``#badges``; empty when all is well), then a badge per
    shown posterior whose fit in ``results`` did not converge (:func:`convergence_badge_html`)."""
    items = "".join(f'<div class="gpx-badge failure" data-kind="error">{html.escape(p)}</div>' for p in problems if p)
    items += "".join(f'<div class="gpx-badge" data-kind="unnormalised"><b>Not a probability</b>: {html.escape(n)}</div>'
                     for n in notes if n)
    results = results or {}
    items += "".join(convergence_badge_html(results[p]) for p in POSTERIORS.values() if p in shown and p in results)
    return f'{STYLE}<div id="badges">{items}</div>'
