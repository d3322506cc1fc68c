"""Bokeh charts of the random-features lab's models: the four fits on Snelson's data, the GLM's
mixture components in weight space, and the ARD lengthscales on Boston housing.

Sources (the browser tests' handles): ``fit-data`` (x, y), ``fit-exact``, ``fit-vfe``, ``fit-slm``,
``fit-glm`` (x, mean, lower, upper: 2 sd of y), ``fit-inducing`` (VFE's inducing inputs),
``weights-components`` (xs, ys: each component's 2-sd ellipse; x, y its mean), ``weights-exact``
(the SLM's posterior ellipse), ``ard`` (input, lengthscale, colour).
"""

from __future__ import annotations

import numpy as np
from bokeh.models import FactorRange, HoverTool, Label, Range1d, Span

from gpexplorer.random_features.lab_backend import ARD_BOX, MODELS
from gpexplorer.ui.plotting import assign, lab_figure, legend_item, outside_legend, range_placeholder
from gpexplorer.ui.random_features.figures import source

#: Okabe-Ito, one per model
MODEL_COLOURS = {"exact": "#222222", "vfe": "#009e73", "slm": "#0072b2", "glm": "#d55e00"}
COMPONENT_COLOURS = ("#d55e00", "#0072b2", "#009e73", "#cc79a7", "#e69f00", "#56b4e9", "#f0e442", "#999999")
EMPTY_BAND = {"x": [], "mean": [], "lower": [], "upper": []}


def ellipse_points(mean, cov, n_sd=2.0, n=64):
    """(xs, ys): the n_sd contour of N(mean, cov) in 2-D as a polygon (exact at any axis scales)."""
    values, vectors = np.linalg.eigh(np.asarray(cov, dtype=float))
    t = np.linspace(0.0, 2.0 * np.pi, n)
    circle = np.vstack([np.cos(t), np.sin(t)]) * (n_sd * np.sqrt(np.maximum(values, 0.0)))[:, None]
    xy = vectors @ circle + np.asarray(mean, dtype=float)[:, None]
    return xy[0], xy[1]


class FitFigure:
    """Snelson's data with each model's predictive mean and 2-sd band."""

    def __init__(self):
        fig = lab_figure("fits-figure", "Four models on Snelson's data (fitting ...)", 340)
        fig.toolbar.autohide = True  # the title is long on a narrow screen
        fig.xaxis.axis_label, fig.yaxis.axis_label = "x", "y"
        self.placeholder = range_placeholder(fig)
        legend = outside_legend(fig)
        self.data = source("fit-data", {"x": [], "y": []})
        dots = fig.scatter("x", "y", source=self.data, color="#9aa3ad", size=4, alpha=0.8)
        self.sources, self.items = {}, {}
        for key, colour in MODEL_COLOURS.items():
            src = source(f"fit-{key}", EMPTY_BAND)
            band = fig.varea("x", "lower", "upper", source=src, fill_color=colour, fill_alpha=0.08)
            edges = [fig.line("x", side, source=src, color=colour, line_width=1, line_dash="dotted")
                     for side in ("lower", "upper")]
            mean = fig.line("x", "mean", source=src, color=colour, line_width=2.5 if key == "exact" else 2)
            self.items[key] = legend_item(MODELS[key], [mean, band, *edges])
            self.sources[key] = src
        self.inducing = source("fit-inducing", {"x": [], "y": []})
        ticks = fig.scatter("x", "y", source=self.inducing, marker="triangle", color=MODEL_COLOURS["vfe"], size=9)
        legend.items.extend([legend_item("data", [dots]), *self.items.values(), legend_item("VFE's Z", [ticks])])
        fig.add_tools(HoverTool(renderers=[r for r in fig.renderers if getattr(r.glyph, "y", None) == "mean"],
                                tooltips=[("x", "@x{0.00}"), ("mean", "@mean{0.000}")], mode="vline"))
        self.figure = fig

    def update(self, comparison, stale=False):
        if comparison is None:
            for src in (self.data, self.inducing, *self.sources.values()):
                assign(src, {n: [] for n in src.data})
            self.placeholder.visible = True
            self.figure.title.text = "Four models on Snelson's data (fitting ...)"
            return
        assign(self.data, {"x": comparison.X[:, 0], "y": comparison.y}, unless_equal=True)
        bottom = float(np.min(comparison.y)) - 0.3
        for key, src in self.sources.items():
            f = comparison.fits.get(key)
            ok = f is not None and f.error is None
            assign(src, {"x": comparison.grid, "mean": f.mean, "lower": f.mean - 2 * f.sd, "upper": f.mean + 2 * f.sd}
                   if ok else EMPTY_BAND)
        vfe = comparison.fits.get("vfe")
        Z = np.ravel(vfe.model.Z) if vfe is not None and vfe.error is None else np.array([])
        assign(self.inducing, {"x": Z, "y": np.full(len(Z), bottom)})
        self.placeholder.visible = False
        self.figure.title.text = (f"Four models on Snelson's data: {comparison.basis}, D = "
                                  f"{comparison.options['n_features']}, M = {comparison.options['M']}, "
                                  f"K = {comparison.options['components']}" + (" (stale: refitting)" if stale else ""))


class WeightFigure:
    """Two weights: the GLM's components (2-sd ellipses, means) and the SLM's exact posterior."""

    def __init__(self):
        fig = lab_figure("weights-figure", "The GLM's mixture over two weights", 360, match_aspect=True)
        fig.toolbar.autohide = True
        fig.xaxis.axis_label, fig.yaxis.axis_label = "weight i", "weight j"
        self.placeholder = range_placeholder(fig)
        legend = outside_legend(fig)
        self.exact = source("weights-exact", {"xs": [], "ys": []})
        exact = fig.patches("xs", "ys", source=self.exact, fill_color="#9aa3ad", fill_alpha=0.2, line_color="#555555",
                            line_dash="dashed", line_width=1.5)
        self.components = source("weights-components", {"xs": [], "ys": [], "x": [], "y": [], "colour": [],
                                                        "component": [], "sd_i": [], "sd_j": []})
        shapes = fig.patches("xs", "ys", source=self.components, fill_color="colour", fill_alpha=0.15,
                             line_color="colour", line_width=2)
        dots = fig.scatter("x", "y", source=self.components, color="colour", size=8)
        legend.items.extend([legend_item("GLM components (2 sd)", [shapes, dots]),
                             legend_item("SLM posterior (2 sd)", [exact])])
        fig.add_tools(HoverTool(renderers=[dots], tooltips=[("component", "@component"), ("mean", "(@x{0.000}, @y{0.000})"),
                                                            ("sd", "(@sd_i{0.000}, @sd_j{0.000})")]))
        self.figure = fig

    def update(self, view):
        if view is None:
            for src in (self.exact, self.components):
                assign(src, {n: [] for n in src.data})
            self.placeholder.visible = True
            return
        shapes = [ellipse_points(m, np.diag(s ** 2)) for m, s in zip(view.means, view.sds)]
        K = len(shapes)
        assign(self.components, {"xs": [p[0] for p in shapes], "ys": [p[1] for p in shapes],
                                 "x": view.means[:, 0], "y": view.means[:, 1], "component": list(range(1, K + 1)),
                                 "colour": [COMPONENT_COLOURS[k % len(COMPONENT_COLOURS)] for k in range(K)],
                                 "sd_i": view.sds[:, 0], "sd_j": view.sds[:, 1]})
        if view.exact_mean is None:
            assign(self.exact, {"xs": [], "ys": []})
        else:
            xs, ys = ellipse_points(view.exact_mean, view.exact_cov)
            assign(self.exact, {"xs": [xs], "ys": [ys]})
        self.placeholder.visible = False
        self.figure.xaxis.axis_label, self.figure.yaxis.axis_label = f"weight {view.i}", f"weight {view.j}"
        self.figure.title.text = f"The GLM's {K} components over weights {view.i} and {view.j}"


class ArdFigure:
    """One bar per input: its ARD lengthscale (log scale), pruned inputs in orange, the box's top dashed."""

    def __init__(self, names):
        fig = lab_figure("ard-figure", "ARD lengthscales on Boston housing (press Fit ARD)", 300,
                         x_range=FactorRange(factors=list(names)), y_axis_type="log",
                         y_range=Range1d(ARD_BOX[0], 3 * ARD_BOX[1]))
        fig.xaxis.axis_label, fig.yaxis.axis_label = "input (standardised column)", "lengthscale (log scale)"
        fig.xaxis.major_label_orientation = 0.8
        fig.toolbar.autohide = True
        self.src = source("ard", {"input": [], "lengthscale": [], "colour": [], "state": []})
        bars = fig.vbar("input", top="lengthscale", bottom=ARD_BOX[0], width=0.7, source=self.src, color="colour")
        fig.add_layout(Span(location=ARD_BOX[1], dimension="width", line_dash="dashed", line_color="#d55e00"))
        fig.add_layout(Label(x=6, x_units="screen", y=ARD_BOX[1], y_offset=4, text="top of the box: pruned",
                             text_color="#d55e00", text_font_size="0.9em"))
        fig.add_tools(HoverTool(renderers=[bars], tooltips=[("input", "@input"), ("lengthscale", "@lengthscale{0.00}"),
                                                            ("", "@state")]))
        self.figure = fig

    def update(self, result, stale=False):
        if result is None or result.error is not None:
            assign(self.src, {n: [] for n in self.src.data})
            self.figure.title.text = "ARD lengthscales on Boston housing (press Fit ARD)"
            return
        names = list(result.names)
        assign(self.src, {"input": names, "lengthscale": result.lengthscale,
                          "colour": ["#d55e00" if p else "#0072b2" for p in result.pruned],
                          "state": ["pruned" if p else "used" for p in result.pruned]})
        n = int(np.sum(result.pruned))
        self.figure.title.text = (f"ARD lengthscales on Boston housing: {n} input{'' if n == 1 else 's'} pruned"
                                  + (" (stale)" if stale else ""))
