"""Bokeh figures of the random-features lab's kernel views: the slice k(x0, x) with its estimate,
the kernel matrix, its estimate and their difference as maps, and the error against D.

Each figure owns named ColumnDataSources made in its constructor (every session's lab has its
own); ``update`` rewrites their data in place. Names (the browser tests' handles): ``kernel-slice``
(x, exact, estimate), ``kernel-exact``, ``kernel-estimate``, ``kernel-difference`` (images),
``curve-0`` ... ``curve-3`` (one per basis estimating the kernel: D, error, lower, upper),
``curve-at`` (the page's D on each curve), ``curve-reference`` (the 1/sqrt(D) slope).
"""

from __future__ import annotations

import numpy as np
from bokeh.models import ColorBar, ColumnDataSource, HoverTool, LinearColorMapper, Range1d
from bokeh.palettes import RdBu11, Viridis256, interp_palette
from bokeh.plotting import figure

from gpexplorer.random_features.lab_backend import GRID
from gpexplorer.ui.plotting import TOOLS, assign, lab_figure, legend_item, outside_legend, vertical_marker

DIVERGING = list(interp_palette(RdBu11, 255))  # blue below zero, red above
#: Okabe-Ito colours of the curves, the chosen basis first
CURVE_COLOURS = ("#0072b2", "#d55e00", "#009e73", "#cc79a7")
EXACT, ESTIMATE = "#222222", "#0072b2"


def source(name, data):
    return ColumnDataSource(dict(data), name=name)


class SliceFigure:
    """k(x0, x) exact and estimated, with x0 marked."""

    def __init__(self):
        fig = lab_figure("kernel-slice-figure", "k(x0, x) and its random-feature estimate", 280)
        fig.xaxis.axis_label, fig.yaxis.axis_label = "x", "k(x0, x)"
        fig.x_range = Range1d(*GRID)
        fig.toolbar.autohide = True  # the title is long on a narrow screen
        self.src = source("kernel-slice", {"x": [], "exact": [], "estimate": []})
        exact = fig.line("x", "exact", source=self.src, color=EXACT, line_width=2.5)
        estimate = fig.line("x", "estimate", source=self.src, color=ESTIMATE, line_width=2)
        self.marker = vertical_marker(fig)
        legend = outside_legend(fig)
        self.items = [legend_item("exact k", [exact]), legend_item("estimate", [estimate])]
        legend.items.extend(self.items)
        fig.add_tools(HoverTool(renderers=[estimate], tooltips=[("x", "@x{0.00}"), ("exact", "@exact{0.000}"),
                                                                ("estimate", "@estimate{0.000}")], mode="vline"))
        self.figure = fig

    def update(self, view):
        assign(self.src, {"x": view.x, "exact": view.exact, "estimate": view.estimate})
        self.marker.location = view.x0
        self.items[1].label = {"value": f"estimate, D = {view.n_features}"}
        self.figure.title.text = (f"k(x0, x) of {view.name} and its estimate, D = {view.n_features} "
                                  f"(largest error {view.slice_error:.3f})")


def image_figure(name, title, size):
    """A square frame of ``size`` screen pixels over the kernel grid, no grid lines."""
    fig = figure(name=name, title=title, frame_width=size, frame_height=size, tools=TOOLS, toolbar_location="above",
                 x_range=Range1d(*GRID), y_range=Range1d(*GRID))
    fig.toolbar.logo, fig.toolbar.autohide = None, True
    fig.grid.visible = False
    fig.xaxis.axis_label, fig.yaxis.axis_label = "x", "x'"
    fig.width, fig.height = size + 80, size + 95  # what Panel lays out by: the frame, axes, title, toolbar
    return fig


def with_colour_bar(fig, mapper, title):
    fig.add_layout(ColorBar(color_mapper=mapper, title=title, width=10), "right")
    fig.width += 75


class KernelMaps:
    """The exact kernel matrix, its estimate (one colour scale) and their difference (diverging)."""

    SIZE = 170

    def __init__(self):
        self.mapper = LinearColorMapper(palette=Viridis256, low=0.0, high=1.0)
        self.diff_mapper = LinearColorMapper(palette=DIVERGING, low=-0.1, high=0.1)
        self.figures, self.sources = [], {}
        for name, title, mapper in (("kernel-exact", "k(x, x'), exact", self.mapper),
                                    ("kernel-estimate", "ΦΦᵀ, the estimate", self.mapper),
                                    ("kernel-difference", "estimate - exact", self.diff_mapper)):
            fig = image_figure(f"{name}-figure", title, self.SIZE)
            src = source(name, {"image": [], "x": [], "y": [], "dw": [], "dh": []})
            glyph = fig.image("image", x="x", y="y", dw="dw", dh="dh", source=src, color_mapper=mapper)
            fig.add_tools(HoverTool(renderers=[glyph], tooltips=[("x", "$x{0.00}"), ("x'", "$y{0.00}"),
                                                                 ("value", "@image{0.000}")]))
            self.figures.append(fig)
            self.sources[name] = src
        with_colour_bar(self.figures[1], self.mapper, "k")
        with_colour_bar(self.figures[2], self.diff_mapper, "difference")

    def update(self, view):
        lo, width = GRID[0], GRID[1] - GRID[0]
        place = {"x": [lo], "y": [lo], "dw": [width], "dh": [width]}
        diff = view.K_hat - view.K
        for name, image in (("kernel-exact", view.K), ("kernel-estimate", view.K_hat), ("kernel-difference", diff)):
            assign(self.sources[name], {"image": [np.ascontiguousarray(image)], **place})
        self.mapper.low = float(min(0.0, view.K.min(), view.K_hat.min()))
        self.mapper.high = float(max(1.0, view.K_hat.max()))
        bound = float(max(np.max(np.abs(diff)), 1e-6))
        self.diff_mapper.low, self.diff_mapper.high = -bound, bound
        self.figures[1].title.text = f"ΦΦᵀ, D = {view.n_features}"
        self.figures[2].title.text = f"difference, rel. error {view.error:.3f}"


class ErrorCurveFigure:
    """The relative error against D (log-log) of each basis estimating the kernel, mean and 1-sd band."""

    SLOTS = len(CURVE_COLOURS)

    def __init__(self):
        fig = lab_figure("error-curve-figure", "Relative error of the estimate against D", 300,
                         x_axis_type="log", y_axis_type="log")
        fig.toolbar.autohide = True
        fig.xaxis.axis_label = "D (features)"
        fig.yaxis.axis_label = "‖ΦΦᵀ − K‖_F / ‖K‖_F"
        legend = outside_legend(fig)
        self.sources, self.items, lines = [], [], []
        for k, colour in enumerate(CURVE_COLOURS):
            src = source(f"curve-{k}", {"D": [], "error": [], "lower": [], "upper": []})
            band = fig.varea("D", "lower", "upper", source=src, fill_color=colour, fill_alpha=0.12)
            lines.append(fig.line("D", "error", source=src, color=colour, line_width=2.5))
            self.items.append(legend_item(f"basis {k}", [lines[-1], band], visible=False))
            self.sources.append(src)
        self.reference = source("curve-reference", {"D": [], "error": []})
        ref = fig.line("D", "error", source=self.reference, color="#555555", line_dash="dashed", line_width=1.5)
        self.at = source("curve-at", {"D": [], "error": [], "colour": [], "basis": []})
        dots = fig.scatter("D", "error", source=self.at, color="colour", size=10, line_color="white")
        legend.items.extend(self.items + [legend_item("1/sqrt(D)", [ref])])
        fig.add_tools(HoverTool(renderers=lines, tooltips=[("D", "@D"), ("error", "@error{0.0000}")]),
                      HoverTool(renderers=[dots], tooltips=[("basis", "@basis"), ("D", "@D"), ("error", "@error{0.0000}")]))
        self.figure = fig

    def update(self, curves):
        names = list(curves.mean)[:self.SLOTS]
        D = curves.counts.astype(float)
        for k, src in enumerate(self.sources):
            if k >= len(names):
                assign(src, {"D": [], "error": [], "lower": [], "upper": []})
                self.items[k].visible = False
                continue
            m, s = curves.mean[names[k]], curves.sd[names[k]]
            assign(src, {"D": D, "error": m, "lower": np.maximum(m - s, 1e-6), "upper": m + s}, unless_equal=True)
            self.items[k].label = {"value": names[k]}
            self.items[k].visible = True
        first = curves.mean[names[0]]
        scale = float(first[0] * np.sqrt(D[0])) if np.isfinite(first[0]) else 1.0
        assign(self.reference, {"D": D, "error": scale / np.sqrt(D)}, unless_equal=True)
        assign(self.at, {"D": [float(curves.n_features)] * len(names), "error": [curves.at[b] for b in names],
                         "colour": list(CURVE_COLOURS[:len(names)]), "basis": names})
        self.figure.title.text = (f"Relative error against D in d = {curves.dim} input dimension"
                                  f"{'s' if curves.dim > 1 else ''} (mean of 3 draws)")
