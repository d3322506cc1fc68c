"""Bokeh figures of the primer page: the prior's samples, the posterior given the data points
(a tap adds one), the 2-D marginal of (f(x1), f(x2)) and the evidence as sequential prediction.

Each figure owns named ColumnDataSources made in its constructor (every session's lab has its
own); ``update`` rewrites their data in place. Names (the browser tests' handles):
``prior-samples`` (xs, ys, colour: one line per sample), ``data-points`` (x, y), ``posterior``
(x, mean, f_lower, f_upper, y_lower, y_upper), ``posterior-samples`` (xs, ys), ``kept-samples``
(xs, ys: the filter's kept functions), ``pair-prior`` and ``pair-posterior`` (x, y: the 2-sd
ellipses), ``pair-dots`` (x, y, colour: the prior samples' values at x1, x2), ``evidence-bars``
(position, term, point, x, label). Figures: ``prior-figure``, ``posterior-figure``,
``pair-figure``, ``evidence-figure``.
"""

from __future__ import annotations

import numpy as np
from bokeh.events import Tap
from bokeh.models import ColumnDataSource, HoverTool, Legend, Range1d
from bokeh.plotting import figure

from gpexplorer.primer import ellipse
from gpexplorer.ui.plotting import TOOLS, assign, lab_figure, legend_item, outside_legend, share_x_frame, \
    vertical_marker
from gpexplorer.ui.primer.settings import GRID

#: Okabe-Ito colours, one per prior sample
SAMPLE_COLOURS = ("#0072b2", "#d55e00", "#009e73", "#cc79a7", "#e69f00")
MEAN, DATA, KEPT = "#222222", "#000000", "#8c8c8c"
X1_COLOUR, X2_COLOUR = "#b8860b", "#6a3d9a"


def source(name, data):
    return ColumnDataSource(dict(data), name=name)


def _lines(draws):
    return {"xs": [GRID] * len(draws), "ys": [np.asarray(s) for s in draws]}


def _markers(fig):
    return vertical_marker(fig, X1_COLOUR), vertical_marker(fig, X2_COLOUR)


class PriorFigure:
    """Five draws of f from the prior on x in [-1, 4], with x1 and x2 marked."""

    def __init__(self, x_range):
        fig = share_x_frame(lab_figure("prior-figure", "Prior: 5 functions drawn from the GP", 250), x_range)
        fig.xaxis.axis_label, fig.yaxis.axis_label = "x", "f(x)"
        fig.toolbar.autohide = True  # the title is long on a narrow screen
        self.src = source("prior-samples", {"xs": [], "ys": [], "colour": []})
        lines = fig.multi_line("xs", "ys", source=self.src, color="colour", line_width=2, alpha=0.85)
        self.markers = _markers(fig)
        legend = outside_legend(fig)
        legend.items.append(legend_item("prior samples", [lines]))
        self.figure = fig

    def update(self, draws, name, x1, x2):
        data = _lines(draws)
        assign(self.src, {**data, "colour": list(SAMPLE_COLOURS[:len(draws)])}, unless_equal=True)
        self.markers[0].location, self.markers[1].location = float(x1), float(x2)
        self.figure.title.text = f"Prior: {len(draws)} functions drawn from a GP with k = {name}"


class PosteriorFigure:
    """The posterior given the data points: mean, 2 sd of f and of y, three draws, the filter's kept
    functions; a tap anywhere on the plot adds a data point (``on_tap``)."""

    def __init__(self, x_range, on_tap):
        fig = share_x_frame(lab_figure("posterior-figure", "Conditioned on the data (tap to add a point)", 320),
                            x_range)
        fig.xaxis.axis_label, fig.yaxis.axis_label = "x", "f(x), y"
        fig.toolbar.autohide = True
        self.band = source("posterior", {k: [] for k in ("x", "mean", "f_lower", "f_upper", "y_lower", "y_upper")})
        self.samples = source("posterior-samples", {"xs": [], "ys": []})
        self.kept = source("kept-samples", {"xs": [], "ys": []})
        self.points = source("data-points", {"x": [], "y": []})
        y_band = fig.varea("x", "y_lower", "y_upper", source=self.band, fill_color="#56b4e9", fill_alpha=0.18)
        f_band = fig.varea("x", "f_lower", "f_upper", source=self.band, fill_color="#0072b2", fill_alpha=0.25)
        kept = fig.multi_line("xs", "ys", source=self.kept, color=KEPT, line_width=1, alpha=0.35)
        draws = fig.multi_line("xs", "ys", source=self.samples, color="#d55e00", line_width=1.5, line_dash="dashed")
        mean = fig.line("x", "mean", source=self.band, color=MEAN, line_width=2.5)
        dots = fig.scatter("x", "y", source=self.points, size=9, color=DATA, line_color="white")
        self.markers = _markers(fig)
        legend = outside_legend(fig)
        self.kept_item = legend_item("kept by the filter", [kept], visible=False)
        legend.items.extend([legend_item("data", [dots]), legend_item("posterior mean", [mean]),
                             legend_item("±2 sd of f", [f_band]), legend_item("±2 sd of y", [y_band]),
                             legend_item("posterior samples", [draws]), self.kept_item])
        fig.add_tools(HoverTool(renderers=[dots], tooltips=[("x", "@x{0.00}"), ("y", "@y{0.00}")]))
        fig.on_event(Tap, on_tap)
        self.y_range = fig.y_range
        self.figure = fig

    def update(self, X, y, conditioned, x1, x2):
        sd_f, sd_y = 2 * np.sqrt(conditioned.var_f), 2 * np.sqrt(conditioned.var_y)
        m = conditioned.mean
        assign(self.band, {"x": GRID, "mean": m, "f_lower": m - sd_f, "f_upper": m + sd_f, "y_lower": m - sd_y,
                           "y_upper": m + sd_y}, unless_equal=True)
        assign(self.samples, _lines(conditioned.samples), unless_equal=True)
        assign(self.points, {"x": np.asarray(X, dtype=float), "y": np.asarray(y, dtype=float)}, unless_equal=True)
        self.markers[0].location, self.markers[1].location = float(x1), float(x2)
        n = len(X)
        self.figure.title.text = (f"Posterior given {n} point{'s' if n != 1 else ''} (tap the plot to add one)"
                                  if n else "No data: the posterior is the prior (tap the plot to add a point)")

    def show_kept(self, x, kept):
        assign(self.kept, {"xs": [np.asarray(x)] * len(kept), "ys": [np.asarray(k) for k in kept]})
        self.kept_item.visible = len(kept) > 0


class PairFigure:
    """The 2-D marginal of (f(x1), f(x2)): the prior's and the posterior's 2-sd ellipses and the
    prior samples' values at x1 and x2 (the same colours as their lines)."""

    SIZE = 250

    def __init__(self):
        fig = figure(name="pair-figure", title="2-sd ellipses of (f(x1), f(x2))", frame_width=self.SIZE,
                     frame_height=self.SIZE, tools=TOOLS, toolbar_location="above", match_aspect=True)
        fig.toolbar.logo, fig.toolbar.autohide = None, True
        fig.xaxis.axis_label, fig.yaxis.axis_label = "f(x1)", "f(x2)"
        fig.width, fig.height = self.SIZE + 80, self.SIZE + 95
        self.prior = source("pair-prior", {"x": [], "y": []})
        self.posterior = source("pair-posterior", {"x": [], "y": []})
        self.dots = source("pair-dots", {"x": [], "y": [], "colour": []})
        prior = fig.line("x", "y", source=self.prior, color="#777777", line_dash="dashed", line_width=2)
        posterior = fig.line("x", "y", source=self.posterior, color="#0072b2", line_width=2.5)
        dots = fig.scatter("x", "y", source=self.dots, color="colour", size=10, line_color="white")
        legend = Legend(items=[legend_item("prior", [prior]), legend_item("posterior", [posterior]),
                               legend_item("prior samples", [dots])], orientation="horizontal",
                        click_policy="hide", padding=2, spacing=6, margin=4)
        fig.add_layout(legend, "below")
        fig.height += 30
        self.figure = fig

    def update(self, prior, posterior, dots_x, dots_y, x1, x2):
        for src, marginal in ((self.prior, prior), (self.posterior, posterior)):
            points = ellipse(marginal.mean, marginal.cov, level=2.0)
            assign(src, {"x": points[:, 0], "y": points[:, 1]}, unless_equal=True)
        assign(self.dots, {"x": np.asarray(dots_x), "y": np.asarray(dots_y),
                           "colour": list(SAMPLE_COLOURS[:len(dots_x)])}, unless_equal=True)
        self.figure.title.text = "2-sd ellipses of (f(x1), f(x2))"
        self.figure.xaxis.axis_label = f"f(x1 = {x1:.2f})"
        self.figure.yaxis.axis_label = f"f(x2 = {x2:.2f})"


class EvidenceFigure:
    """One bar per data point: log p(y_n | y_<n) in prediction order."""

    WIDTH, HEIGHT = 330, 250

    def __init__(self):
        fig = figure(name="evidence-figure", title="log p(y_n | y_<n)", frame_width=self.WIDTH,
                     frame_height=self.HEIGHT, tools=TOOLS, toolbar_location="above", x_range=Range1d(0.4, 4.6))
        fig.toolbar.logo, fig.toolbar.autohide = None, True
        fig.xaxis.axis_label, fig.yaxis.axis_label = "prediction step n", "log p(y_n | y_<n)"
        fig.width, fig.height = self.WIDTH + 80, self.HEIGHT + 95
        self.src = source("evidence-bars", {"position": [], "term": [], "point": [], "x": [], "label": [],
                                            "colour": []})
        bars = fig.vbar(x="position", top="term", bottom=0.0, width=0.7, source=self.src, color="colour")
        fig.add_tools(HoverTool(renderers=[bars], tooltips=[("step", "@position"), ("point", "@label"),
                                                            ("log p", "@term{0.000}")]))
        self.figure = fig

    def update(self, X, evidence, reverse):
        if evidence is None:
            assign(self.src, {k: [] for k in self.src.data})
            self.figure.title.text = "log p(y_n | y_<n): no data points"
            return
        order, terms = evidence.order, evidence.terms
        n = len(terms)
        x = np.asarray(X, dtype=float)[order]
        assign(self.src, {"position": np.arange(1, n + 1), "term": terms, "point": order,
                          "x": x, "label": [f"#{i + 1} at x = {v:.2f}" for i, v in zip(order, x)],
                          "colour": ["#009e73" if t >= 0 else "#d55e00" for t in terms]})
        self.figure.x_range.start, self.figure.x_range.end = 0.4, n + 0.6
        way = "last to first" if reverse else "first to last"
        self.figure.title.text = f"log p(y_n | y_<n), {way}: sum {evidence.total:.3f}"


def x_range():
    """The x range the two function plots share."""
    return Range1d(float(GRID[0]), float(GRID[-1]))
