"""Texts of the random-features lab: one short "what am I seeing" note per view and the HTML
readouts. Plain HTML, no TeX.

Stable element ids for the tests: ``kernel-readout`` (``data-error``, ``data-features``,
``data-seconds``), ``fit-table`` (``data-state``: none, fitted; ``data-stale``; rows ``data-model`` with
``data-objective`` and ``data-gap``), ``weights-readout`` (``data-i``, ``data-j``), ``ard-readout``
(``data-state``: none, fitted, failed; ``data-pruned``), ``badges``, ``job-status``.
"""

from __future__ import annotations

import html

from gpexplorer import kernels
from gpexplorer.formatting import format_number
from gpexplorer.random_features.lab_backend import MODELS, OBJECTIVES
from gpexplorer.ui.markup import STYLE, status_html
from gpexplorer.ui.math_text import with_math

__all__ = ["INTRO", "EXPLAIN", "kernel_html", "fit_html", "weights_html", "ard_html", "badges_html", "status_html"]

INTRO = (
    "<b>Random features</b> (Rahimi &amp; Recht 2007; revrand): by Bochner's theorem a stationary kernel is "
    "k(x - x') = E<sub>w</sub>[cos(w (x - x'))] for frequencies w drawn from its spectral density, so D/2 drawn "
    "frequencies give features phi(x) = [cos(w x), sin(w x)] / sqrt(D/2) with phi(x)<sup>T</sup>phi(x') "
    "&asymp; k(x, x'). Move D, the lengthscale or the seed and the estimate is redrawn at once. Below, a "
    "Bayesian linear model on such features (SLM) and a GLM with a mixture posterior are fitted beside the exact "
    "GP and VFE in the background (progress and Cancel in the sidebar); the last view fits ARD lengthscales.")

EXPLAIN = {
    "slice": (
        "<b>One row of the kernel.</b> k(x0, x) by its closed form (black) and its estimate "
        "$\\phi(x_0)^\\top \\phi(x)$ with D features (blue). The estimate is exact at x = x0 ($\\cos^2 + "
        "\\sin^2 = 1$) and wiggles around k elsewhere; its error shrinks as $1/\\sqrt{D}$. More features "
        "keep the frequencies already drawn, so the line settles instead of jumping."),
    "maps": (
        "<b>The whole kernel matrix</b> on 61 points of [-3, 3]: exact k(x, x') (left), the estimate "
        "$\\Phi\\Phi^\\top$ (middle, same colours) and their difference (right, blue below, red above). The "
        "number in the readout is the relative error $\\|\\Phi\\Phi^\\top - K\\|_F / \\|K\\|_F$."),
    "curve": (
        "<b>Error against D</b> (both axes logarithmic), on 40 Gaussian points in d dimensions, averaged over "
        "three seeds (band: 1 sd): the chosen basis and every basis that estimates the same kernel, e.g. plain, "
        "orthogonal and Fastfood features of the squared exponential. Dashed: a 1/sqrt(D) slope. Dots: the "
        "page's D. Orthogonal blocks of d frequencies help when d &gt; 1; with d = 1 they are plain features."),
    "fits": (
        "<b>Four models on Snelson's data</b> (dots), each fitted by maximising its own objective: the exact GP, "
        "VFE (M inducing points, ticks at the bottom), the SLM (Bayesian linear regression on D features: "
        "exact posterior over the weights, evidence maximised) and the GLM (the same features, q(w) a mixture "
        "of K diagonal Gaussians, bound maximised by Adam). Lines: predictive means; bands: 2 sd of y. "
        "Click a legend entry to hide a model."),
    "metrics": (
        "<b>Objectives and fit times.</b> Each model's own objective: log p(y) for the exact GP, the VFE bound, "
        "the SLM's log evidence, the GLM's ELBO; the mean and sd gaps, the RMS distances of its predictive mean "
        "and sd from the exact GP's over the data's range; its fitted lengthscale, fit time and iterations."),
    "weights": (
        "<b>The GLM's mixture in weight space</b>: two of its D weights (the two whose component means differ "
        "most, or two you choose): each component's mean (dot) and 2-sd ellipse, axis-aligned as the "
        "components are diagonal. Grey: the SLM's exact Gaussian posterior over the same two weights (same "
        "features, its own hyperparameters). Diagonal components are much narrower than the posterior they stand "
        "for: the mixture spreads its components instead."),
    "ard": (
        "<b>ARD lengthscales</b> of an SLM on Boston housing (13 standardised inputs, 506 houses; log scale): "
        "a short lengthscale means the price changes fast with that input; a lengthscale at the top of its box "
        "(dashed line, orange bar) means the evidence prefers to ignore the input: it is pruned. The data set's "
        "<i>black</i> column encodes a race-based variable; it is used here, as in the revrand report, only as "
        "one of the inputs."),
}
EXPLAIN = {key: with_math(text) for key, text in EXPLAIN.items()}  # $...$ is TeX, shown as MathML


def _num(value, digits=3):
    return format_number(value, digits)


def kernel_html(view, curves, seconds=None):
    """The kernel views' readout: D used, the relative error, the slice's largest error, the variants' errors."""
    if view is None:
        return '<div id="kernel-readout">No kernel estimate.</div>'
    at = "; ".join(f"{html.escape(b)} {_num(e)}" for b, e in (curves.at.items() if curves is not None else ()))
    where = f" In d = {curves.dim}: {at}." if at else ""
    took = f' data-seconds="{seconds:.4f}"' if seconds is not None else ""
    return (f'<div id="kernel-readout" data-error="{view.error:.6f}" data-features="{view.n_features}"{took} '
            f'style="font-size:0.95em">{html.escape(view.name)} with D = <b>{view.n_features}</b> features: '
            f"relative error <b>{_num(view.error)}</b> on the grid, largest slice error {_num(view.slice_error)}."
            f"{where}</div>")


def fit_html(comparison, stale=False, running=False):
    """The four models' objectives, distances from the exact GP, fit times and iterations."""
    head = ("<tr><th>model</th><th>objective</th><th>value</th><th>mean gap</th><th>sd gap</th>"
            "<th>lengthscale</th><th>time (s)</th><th>iterations</th></tr>")
    if comparison is None:  # a row per model and the note's line, as after a fit: the page does not jump
        rows = "".join(f'<tr data-model="{k}"><td style="white-space:nowrap">{m}</td><td style="white-space:nowrap">'
                       f'{OBJECTIVES[k]}</td><td colspan=6 style="text-align:left">not fitted yet</td></tr>'
                       for k, m in MODELS.items())
        return (f'{STYLE}<table id="fit-table" class="gpx-table" data-state="none">{head}{rows}</table>'
                '<div style="font-size:0.85em">The kernel of the exact GP and VFE is named after the fit.</div>')
    rows = []
    for key, f in comparison.fits.items():
        if f.error is not None:
            rows.append(f'<tr data-model="{key}"><td>{MODELS[key]}</td><td colspan=7>failed: '
                        f"{html.escape(f.error)}</td></tr>")
            continue
        gap = comparison.gaps.get(key, (float("nan"), float("nan")))
        rows.append(f'<tr data-model="{key}" data-objective="{f.objective:.6f}" data-gap="{gap[0]:.6f}">'
                    f"<td style='white-space:nowrap'>{MODELS[key]}</td><td style='white-space:nowrap'>"
                    f"{OBJECTIVES[key]}</td><td>{f.objective:.2f}</td>"
                    f"<td>{_num(gap[0])}</td><td>{_num(gap[1])}</td><td>{_num(f.parameters.get('lengthscale'))}</td>"
                    f"<td>{f.seconds:.2f}</td><td>{f.iterations}</td></tr>")
    label = html.escape(kernels.KERNELS[comparison.gp_kernel].label) if comparison.gp_kernel in kernels.KERNELS else "?"
    kernel = (f"The exact GP and VFE use the {label} kernel, the basis' own." if comparison.matched else
              f"No registered kernel has this basis' closed form: the exact GP and VFE use the {label} kernel.")
    again = "a new fit is running." if running else "press <i>Fit the four models</i>."
    note = f'<div style="color:#8a6d00">The settings changed since this fit: {again}</div>' if stale else ""
    return (f'{STYLE}<table id="fit-table" class="gpx-table" data-state="fitted" data-stale="{str(stale).lower()}">'
            f'{head}{"".join(rows)}</table>'
            f'<div style="font-size:0.85em">{kernel} D = {comparison.options["n_features"]} features.</div>{note}')


def weights_html(view, message=None):
    if view is None:
        return '<div id="weights-readout">The GLM\'s components appear after the fit.</div>'
    how = "the two whose component means differ most" if view.auto else "chosen"
    warn = f'<div class="gpx-badge">{html.escape(message)}</div>' if message else ""
    return (f'{STYLE}<div id="weights-readout" data-i="{view.i}" data-j="{view.j}" style="font-size:0.9em">'
            f"Weights {view.i} and {view.j} ({how}) of {view.means.shape[0]} components.</div>{warn}")


def ard_html(result, stale=False, running=False):
    if result is None or result.error is not None:
        state = "failed" if result is not None else "none"
        what = (f"the ARD fit failed: {result.error}" if result is not None else
                "running" if running else "Press 'Fit ARD (Boston)' to learn one lengthscale per input.")
        return f'<div id="ard-readout" data-state="{state}">{html.escape(what)}</div>'
    pruned = [n for n, p in zip(result.names, result.pruned) if p]
    said = ", ".join(pruned) if pruned else "none"
    note = ('<div style="color:#8a6d00">The basis, seed or ARD settings changed since this fit.</div>' if stale else "")
    return (f'<div id="ard-readout" data-state="fitted" data-pruned="{len(pruned)}" style="font-size:0.95em">'
            f"{html.escape(result.options['basis'])}, D = {result.options['n_features']}: log evidence "
            f"{result.log_evidence:.2f}, training R<sup>2</sup> {result.r2:.3f}, {result.iterations} iterations in "
            f"{result.seconds:.1f} s. Pruned (lengthscale at the top of the box): <b>{html.escape(said)}</b>.</div>"
            f"{note}")


def badges_html(problems):
    items = "".join(f'<div class="gpx-badge failure" data-kind="error">{html.escape(p)}</div>' for p in problems if p)
    return f'{STYLE}<div id="badges">{items}</div>'
