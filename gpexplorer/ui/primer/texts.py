"""Texts of the primer page: one short "what am I seeing" note per view and the HTML readouts.
HTML; ``$...$`` is TeX, rendered as MathML (:func:`gpexplorer.ui.math_text.with_math`).

Stable element ids for the tests: ``kernel-message`` (``data-state``: ok, refused), ``points-readout``
(``data-points``), ``evidence-readout`` (``data-total``, ``data-points``, ``data-order``),
``filter-readout`` (``data-state``: none, stale, done, message; rows ``data-lengthscale`` with
``data-share``, ``data-kept`` and ``data-log-evidence``), ``badges``.
"""

from __future__ import annotations

import html

from gpexplorer.formatting import format_number
from gpexplorer.ui.markup import STYLE
from gpexplorer.ui.math_text import with_math

__all__ = ["INTRO", "EXPLAIN", "kernel_message_html", "points_html", "evidence_html", "filter_html", "badges_html"]

INTRO = (
    "<b>A Gaussian process in five views.</b> A GP is a distribution over functions: any finite set of values "
    "$f(x_1), \\dots, f(x_n)$ is jointly Gaussian with covariance $k(x_i, x_j)$. "
    "Type a kernel (names joined by + and *), move its lengthscale and variance and watch the prior's functions "
    "change; tap the second plot to add data and watch the posterior follow. Below, the same Gaussian seen as two "
    "numbers, the evidence $\\log p(\\mathbf{y})$ as a sum of predictions, and Occam's razor by filtering "
    "prior samples.")

EXPLAIN = {
    "prior": (
        "<b>The prior.</b> Five functions drawn from $\\mathcal{N}(0, K)$ on 201 points of [-1, 4] "
        "($K + \\epsilon I = L L^\\top$, $f = L e$). The lengthscale sets how far apart two inputs must be "
        "before their values are nearly independent; the variance sets the functions' height. <i>Resample</i> draws five new ones; <i>Animate</i> "
        "moves them smoothly ($\\cos(t) f_a + \\sin(t) f_b$ is again a prior draw). Dotted: x1 and x2 "
        "of the 2-D view below; with <i>Fix f(x1)</i>, the band is the prior given f(x1) = the value set."),
    "covariance": (
        "<b>The covariance matrix.</b> $k(x, x')$ for every pair of plotted inputs (x across, x' down): the "
        "diagonal is the variance, and the colour fades with distance at the rate the lengthscale sets. The "
        "prior's functions above are N(0, K) draws with this K; the four circles are the 2 x 2 block at x1 and "
        "x2, the covariance of the 2-D view beside it."),
    "posterior": (
        "<b>Conditioning.</b> Given the data $y = f(x) + \\varepsilon$, the posterior of f is again a GP: its "
        "mean (black), "
        "±2 sd of f (dark band: where the function is) and ±2 sd of y (light band: where a new noisy observation "
        "falls; it adds the noise variance), and three posterior draws (dashed). Tap the plot to add a point, "
        "tap a point to remove it, drag a point to move it; grey lines: the prior draws the filter below kept."),
    "pair": (
        "<b>Two views of one Gaussian.</b> The values f(x1) and f(x2) of every function above are one draw from a "
        "2-D Gaussian: its 2-sd ellipse under the prior (dashed) and the posterior (blue), and the five prior "
        "samples' values as dots (the same colours as their lines). Close inputs: a thin, tilted ellipse (the "
        "values move together); far apart: a circle (independent). With <i>Fix f(x1)</i>: the vertical bar is "
        "f(x2) given f(x1), ±2 sd; it matches the band at x2 in the prior plot above."),
    "evidence": (
        "<b>The evidence as sequential prediction.</b> $\\log p(\\mathbf{y}) = \\sum_n \\log p(y_n \\mid "
        "y_1, \\dots, y_{n-1})$: predict each point from the ones before it. Each bar is one "
        "prediction's log density (green above zero, orange below). <i>Reverse order</i> predicts the points "
        "last to first: every bar changes, the sum does not."),
    "filter": (
        "<b>Occam's razor by filtering.</b> Draw 100,000 data sets from the prior (function plus noise) and keep "
        "those within the tolerance of every data point: the share kept estimates how probable the data are "
        "under the model. Too short a lengthscale spreads its probability over many wiggly data sets, too long "
        "a one cannot bend to the data; both keep fewer than a lengthscale that fits. log p(y) is exact."),
    "invariance": (
        "<b>Invariance and the evidence.</b> Each 6 x 6 image is blank but for one 2 x 2 stamp of one of three "
        "kinds at a random place; y depends on the kind only. The convolutional kernel sums a patch kernel over "
        "every 2 x 2 patch, so it does not see where a stamp is; SE on the 36 pixels sees the same stamp at two "
        "places as two distant inputs. Read as sequential prediction, each image's $\\log p(y_n \\mid "
        "y_{<n})$ adds to a running sum: the invariant model predicts later images well and its "
        "evidence climbs, SE's does not (thesis fig. 5.5)."),
}


INTRO = with_math(INTRO)
EXPLAIN = {key: with_math(text) for key, text in EXPLAIN.items()}


def _num(value, digits=3):
    return format_number(value, digits)


def kernel_message_html(name, error=None, previous=None):
    """The kernel expression's status line: the kernel used, or the parser's refusal."""
    if error is not None:
        keep = f" The page keeps k = {html.escape(previous)}." if previous else ""
        return (f'{STYLE}<div id="kernel-message" data-state="refused" class="gpx-error">Expression refused: '
                f"{html.escape(str(error))}.{keep}</div>")
    return f'<div id="kernel-message" data-state="ok" style="font-size:0.9em">Kernel: k = {html.escape(name)}</div>'


def points_html(n, limit, refused=False):
    full = f' <span style="color:#8a6d00">At most {limit} points: the tap was ignored.</span>' if refused else ""
    return (f'<div id="points-readout" data-points="{n}" style="font-size:0.9em">{n} data point'
            f'{"s" if n != 1 else ""}; tap the posterior plot to add one, tap a point to remove it, drag to move it.'
            f'{full}</div>')


def evidence_html(evidence, lml_check=None):
    """The bars' sum, which is log p(y)."""
    if evidence is None:
        return '<div id="evidence-readout" data-points="0">No data points: no evidence to show.</div>'
    n = len(evidence.terms)
    order = ",".join(str(int(i)) for i in evidence.order)
    return (f'<div id="evidence-readout" data-total="{evidence.total:.12g}" data-points="{n}" data-order="{order}" '
            f'style="font-size:0.95em">Sum of the {n} bars: log p(y) = <b>{evidence.total:.4f}</b> '
            f"(mean {evidence.total / n:.3f} per point).</div>")


def filter_html(results=None, tolerance=None, message=None, stale=False):
    """The filter's table: per lengthscale the share kept, the draws kept and log p(y)."""
    if message:
        return f'{STYLE}<div id="filter-readout" data-state="message" class="gpx-badge">{html.escape(message)}</div>'
    if not results:
        state = "stale" if stale else "none"
        why = "The kernel, data or tolerance changed since the last filter: press" if stale else "Press"
        return (f'<div id="filter-readout" data-state="{state}" style="font-size:0.95em">{why} '
                "<i>Filter prior samples</i> to draw 100,000 data sets from the prior for three lengthscales.</div>")
    head = ("<tr><th>lengthscale</th><th></th><th>kept</th><th>share</th><th>share / (2t)<sup>N</sup></th>"
            "<th>log p(y)</th></tr>")
    rows = []
    for role, lengthscale, r in results:
        rows.append(f'<tr data-lengthscale="{lengthscale:.6g}" data-role="{role}" data-share="{r.share:.12g}" '
                    f'data-kept="{r.n_kept}" data-log-evidence="{r.log_evidence:.12g}"><td>{lengthscale:.3g}</td>'
                    f"<td style='text-align:left'>{role}</td><td>{r.n_kept} / {r.num_samples:,}</td>"
                    f"<td>{r.share:.2e}</td><td>{_num(r.density_estimate)}</td><td>{r.log_evidence:.2f}</td></tr>")
    return (f'{STYLE}<table id="filter-readout" class="gpx-table" data-state="done">{head}{"".join(rows)}</table>'
            f'<div style="font-size:0.85em">Tolerance t = {tolerance:g}; grey lines in the posterior plot: up to 50 '
            "kept functions of the page's lengthscale.</div>")


def badges_html(problems):
    items = "".join(f'<div class="gpx-badge failure" data-kind="error">{html.escape(p)}</div>' for p in problems if p)
    return f'{STYLE}<div id="badges">{items}</div>'
