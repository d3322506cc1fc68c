"""Texts of the patches lab: one short "what am I seeing" note per view and the HTML readouts.
Plain HTML, no TeX.

Stable element ids for the tests: ``fit-table`` (the lab's model: ``data-elbo``,
``data-error-rate``), ``edit-readout`` (``data-elbo``, ``data-fitted-elbo``, ``data-edits``),
``race-table`` (rows ``data-kind``), ``data-note``, ``badges``, ``digit-readout``
(``data-state``: waiting, fitting, ready, failed; ``data-digit``), ``job-status``,
``digit-status``.
"""

from __future__ import annotations

import html

import numpy as np

from gpexplorer.convolutional_fits import LABELS
from gpexplorer.formatting import format_number
from gpexplorer.ui.convolutional.settings import RACE
from gpexplorer.ui.markup import STYLE, status_html

__all__ = ["INTRO", "EXPLAIN", "fit_html", "edit_html", "race_html", "note_html", "badges_html", "digit_html",
           "status_html"]

INTRO = (
    "<b>Convolutional GPs</b> (van der Wilk's thesis, ch. 5): f(x) = (1/P) &Sigma;<sub>p</sub> w<sub>p</sub> "
    "g(x<sup>[p]</sup>), one patch-response function g applied to every h x h patch of the image. Its inducing "
    "variables are values of g at <i>inducing patches</i>, small images you can edit below. The lab fits the "
    "model in the background (progress and Cancel in the sidebar); then tap a tile, flip its pixels and watch "
    "the ELBO and the predictions move. Race the four kernels, or draw a digit at the bottom.")

EXPLAIN = {
    "tiles": (
        "<b>Inducing patches</b> z<sub>m</sub>, each an h x h image (dark = ink), sorted by the mean of "
        "q(u<sub>m</sub>) = q(g(z<sub>m</sub>)) written under it (blue below zero, red above). On the rectangles a "
        "patch with a vertical stroke pushes f towards <i>tall</i>, a horizontal one towards <i>wide</i> "
        "(thesis figs 5.6-5.8). Blue or red pixels: the optimiser moved a value below 0 or above 1. Tap a tile "
        "to put it in the editor."),
    "editor": (
        "<b>Edit an inducing patch.</b> Click a pixel to flip it (0 &harr; 1), drag to paint. The model's q(u) is "
        "carried over (whitened) and takes a natural-gradient step towards its optimum for the new patch; the ELBO and the "
        "predictions follow at once. <i>Undo edits</i> restores the fitted patches; <i>Fit</i> refits from scratch."),
    "predictions": (
        "<b>Predictions</b> p(class 1 | x) for the first test images, coloured by their true class; grey rings: "
        "as fitted, before your edits. A point on the wrong side of the dotted 0.5 line is an error."),
    "contributions": (
        "<b>Where f comes from.</b> Left: a test image. Right: each patch location's contribution "
        "c<sub>p</sub> = w<sub>p</sub> E<sub>q</sub>[g(x<sup>[p]</sup>)] / P, drawn at the patch's centre pixel "
        "(the image's ink in grey over it); they sum to E<sub>q</sub>[f(x)]. Blank patches contribute the same "
        "everywhere; the rectangle's edges decide."),
    "weights": (
        "<b>Left: patch weights</b> w<sub>p</sub> over the patch positions (thesis fig. 5.9): where the weighted "
        "kernel listens. Without weights every position counts the same, which makes f invariant to where "
        "a feature is. <b>Right</b>: how many patches each pixel belongs to (the edge effect, below)."),
    "edge": (
        "<b>The edge effect.</b> A pixel belongs to h x h patches in the middle of the image, fewer towards the "
        "border, one in a corner (above, right). Here: E[f] (2 sd band) for a vertical bar over the middle rows "
        "put at each column: at the border it sits in fewer patches (orange squares, right axis), so the same "
        "stroke counts less there."),
    "race": (
        "<b>ELBO race</b>: one fit each of the SE kernel (inducing points at training images), the convolutional "
        "kernel, the weighted one and weighted + SE (a joint q over both sets of inducing variables), with the "
        "same iterations on the same images; the table has each one's test error and NLPD. The first points of "
        "each trace sit far below and are cut off (zoom out to see them)."),
    "digits": (
        "<b>Draw a digit</b> (drag on the 28 x 28 canvas). It is centred by its centre of mass and pooled to "
        "14 x 14 like the model's training images (right: what the model sees), then classified by a weighted "
        "convolutional GP on ten classes (robust-max likelihood, 5 x 5 patches), fitted once per server in the "
        "background. Scaled down: a few hundred MNIST digits, so expect about 85 % accuracy, not 99 %."),
    "metrics": (
        "<b>The lab's model</b>: its ELBO, test error and NLPD (mean negative log predictive density) on the "
        "test images, the number of unique h x h patches in the training images (Theorem 1: Z = those U patches "
        "is optimal) and how the fit ended."),
}


def _num(v, fmt="{:.4g}"):
    return "n/a" if v is None or not np.isfinite(v) else fmt.format(v)


def fit_html(outcome, extra, stale=False):
    """The lab's model: ELBO, test error, NLPD, unique patches, iterations, how it ended, time."""
    head = ("<tr><th>kernel</th><th>ELBO</th><th>test error</th><th>NLPD</th><th>unique patches U</th><th>M</th>"
            "<th>iterations</th><th>ended</th><th>fit time (s)</th></tr>")
    if outcome is None or outcome.error is not None:  # the same two rows as a fit's: the page does not jump
        state, what = ("none", "not fitted yet") if outcome is None else ("failed", f"the fit failed: {outcome.error}")
        return (f'{STYLE}<table id="fit-table" class="gpx-table" data-state="{state}">{head}<tr><td colspan=9 '
                f'style="text-align:left">{html.escape(what)}</td></tr></table>')
    m = outcome.metrics
    row = (f"<tr><td>{html.escape(LABELS.get(outcome.kind, outcome.kind))}</td><td>{_num(m['elbo'], '{:.2f}')}</td>"
           f"<td>{_num(m['error_rate'], '{:.1%}')}</td><td>{_num(m['nlpd'])}</td><td>{extra.get('unique', 'n/a')}</td>"
           f"<td>{extra.get('M', 'n/a')}</td><td>{m.get('iterations', 'n/a')}</td>"
           f"<td>{html.escape(str(m.get('ended', 'n/a')))}</td><td>{_num(m.get('seconds'), '{:.1f}')}</td></tr>")
    note = ('<div style="color:#8a6d00">The settings changed since this fit: press <i>Fit</i>.</div>' if stale else "")
    return (f'{STYLE}<table id="fit-table" class="gpx-table" data-state="fitted" data-elbo="{m["elbo"]:.6f}" '
            f'data-error-rate="{m["error_rate"]:.6f}">{head}{row}</table>{note}')


def edit_html(elbo, fitted_elbo, error_rate, fitted_error, edits, index, message=None):
    """The editor's readout: the ELBO now against as fitted, the test error, the patch edited."""
    if elbo is None:
        return '<div id="edit-readout" data-edits="0">Fit the model, then tap a tile to edit it.</div>'
    delta = elbo - fitted_elbo
    colour = "#1a7f37" if delta >= 0 else "#b42318"
    warn = f'<div class="gpx-badge">{html.escape(message)}</div>' if message else ""
    return (f'{STYLE}<div id="edit-readout" data-elbo="{elbo:.6f}" data-fitted-elbo="{fitted_elbo:.6f}" '
            f'data-edits="{edits}" style="font-size:1.05em">Inducing patch <b>{index}</b>: ELBO <b>{elbo:.2f}</b> '
            f'(as fitted {fitted_elbo:.2f}, <span style="color:{colour}">{delta:+.2f}</span>); test error '
            f"<b>{error_rate:.1%}</b> (as fitted {fitted_error:.1%}); {edits} edit{'' if edits == 1 else 's'}.</div>{warn}")


def race_html(outcomes, stale=False, running=False):
    """The race's table: per kernel its final ELBO, test error, NLPD, iterations and time."""
    head = ("<tr><th>kernel</th><th>ELBO</th><th>test error</th><th>NLPD</th><th>iterations</th>"
            "<th>fit time (s)</th></tr>")
    rows = []
    for kind in RACE:
        o = (outcomes or {}).get(kind)
        if o is None:
            what = "running or queued" if running else "not raced yet"
            rows.append(f'<tr data-kind="{kind}"><td>{LABELS[kind]}</td><td colspan=5>{what}</td></tr>')
        elif o.error is not None:
            rows.append(f'<tr data-kind="{kind}"><td>{LABELS[kind]}</td><td colspan=5>failed: '
                        f"{html.escape(o.error)}</td></tr>")
        else:
            m = o.metrics
            rows.append(f'<tr data-kind="{kind}" data-error-rate="{m["error_rate"]:.6f}"><td>{LABELS[kind]}</td>'
                        f"<td>{_num(m['elbo'], '{:.2f}')}</td><td>{_num(m['error_rate'], '{:.1%}')}</td>"
                        f"<td>{_num(m['nlpd'])}</td><td>{m.get('iterations', 'n/a')}</td>"
                        f"<td>{_num(m.get('seconds'), '{:.1f}')}</td></tr>")
    note = ('<div style="color:#8a6d00">The data or model settings changed since this race.</div>' if stale else "")
    return f'{STYLE}<table id="race-table" class="gpx-table">{head}{"".join(rows)}</table>{note}'


def note_html(problem):
    if problem is None:
        return '<div id="data-note">No data set loaded.</div>'
    return f'<div id="data-note" style="font-size:0.9em">{html.escape(problem.note)}</div>'


def badges_html(problems):
    items = "".join(f'<div class="gpx-badge failure" data-kind="error">{html.escape(p)}</div>' for p in problems if p)
    return f'{STYLE}<div id="badges">{items}</div>'


def digit_html(state, detail="", digit=None):
    """The canvas' readout (``#digit-readout``): the model's state and, once drawn, its answer."""
    shown = "" if digit is None else f' data-digit="{int(digit)}"'
    return (f'<div id="digit-readout" data-state="{state}"{shown} style="font-size:0.95em">'
            f"{html.escape(detail)}</div>")


def metric_text(value):
    return format_number(value)
