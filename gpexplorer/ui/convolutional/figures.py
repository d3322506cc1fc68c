"""Bokeh figures of the patches lab: the inducing patches as tiles, the predictions on test
images, the patch contributions over an image, the patch weights, and the edge effect.

Each figure owns named ColumnDataSources made in its constructor (every session's lab has its
own); ``update`` rewrites their data in place. The names are the handles the browser tests read:
``tiles`` (one row per inducing patch, in the order of q(u)'s mean), ``tile-selected``,
``predictions`` and ``predictions-fitted``, ``contrib-image`` / ``contrib-heat``, ``weights``,
``edge-counts``, ``edge-bar``. Images are drawn with row 0 at the top (y = -row).
"""

from __future__ import annotations

import numpy as np
from bokeh.models import ColorBar, ColumnDataSource, HoverTool, LinearAxis, LinearColorMapper, Range1d, Span, TapTool
from bokeh.palettes import Greys256, RdBu11, Viridis256, interp_palette
from bokeh.plotting import figure

from gpexplorer.ui.plotting import TOOLS, assign, lab_figure, legend_item, outside_legend, range_placeholder

GREYS = list(reversed(Greys256))  # 0 white, 1 black (ink)
DIVERGING = list(interp_palette(RdBu11, 255))  # blue below zero, red above
CLASS_COLOURS = ("#0072b2", "#d55e00")  # Okabe-Ito: class 0, class 1
TILE_GAP, LABEL_ROOM = 0.25, 0.75  # in tile widths
MAX_TILE_COLUMNS = 16


def patch_palette(low, high, n=256):
    """Colours for patch values from ``low`` to ``high``: greys over [0, 1] (0 white, 1 black),
    blues deepening below 0, reds deepening above 1 (an optimised inducing patch leaves [0, 1])."""
    low = min(float(low), 0.0) if low < -1e-6 else 0.0  # round-off below 0 or above 1 is not shown
    high = max(float(high), 1.0) if high > 1.0 + 1e-6 else 1.0
    span = high - low
    below, above = int(round(n * -low / span)), int(round(n * (high - 1.0) / span))
    inside = max(2, n - below - above)
    blues = [f"#{int(255 - 180 * t):02x}{int(255 - 140 * t):02x}ff" for t in (1 - (i + 0.5) / below for i in range(below))]
    reds = [f"#ff{int(255 - 190 * t):02x}{int(255 - 200 * t):02x}" for t in ((i + 0.5) / above for i in range(above))]
    greys = [GREYS[int(round(k * 255 / (inside - 1)))] for k in range(inside)]
    return blues + greys + reds, low, high


def _short(value):
    """A tile's mean in at most five characters: +0.52, -12.3, +213."""
    return f"{value:+.0f}" if abs(value) >= 99.5 else (f"{value:+.1f}" if abs(value) >= 9.95 else f"{value:+.2f}")


def source(name, data):
    return ColumnDataSource(dict(data), name=name)


def image_figure(name, title, size, ranges=None):
    """A square frame of ``size`` screen pixels for an image (row 0 at the top), no grid."""
    fig = figure(name=name, title=title, frame_width=size, frame_height=size, tools=TOOLS, toolbar_location="above",
                 x_range=ranges[0] if ranges else Range1d(0, 1), y_range=ranges[1] if ranges else Range1d(-1, 0))
    fig.toolbar.logo = None
    fig.toolbar.autohide = True  # a narrow figure's toolbar would sit on its title
    fig.grid.visible = False
    # the outer size Panel lays out by (else Bokeh's default width, 600 px, whatever the frame):
    # the frame plus the axes, title and toolbar
    fig.width, fig.height = size + 80, size + 95
    return fig


def with_colour_bar(fig, mapper, title):
    """A colour bar right of an image figure, which grows by its width."""
    fig.add_layout(ColorBar(color_mapper=mapper, title=title, width=10), "right")
    fig.width += 75


def set_image_ranges(fig, height, width):
    fig.x_range.start, fig.x_range.end = 0.0, float(width)
    fig.y_range.start, fig.y_range.end = -float(height), 0.0


def top_down(image):
    """An image array as Bokeh's image glyph draws it (its first row at the bottom)."""
    return np.ascontiguousarray(np.flipud(np.asarray(image, dtype=float)))


class TilesFigure:
    """The inducing patches as tiles in the order of q(u)'s mean (low to high), each with its mean
    below in a colour of the diverging scale; a tap selects the patch the editor holds."""

    def __init__(self, on_select):
        fig = lab_figure("tiles-figure", "Inducing patches sorted by q(u) mean", 190, match_aspect=False)
        fig.grid.visible = False
        fig.yaxis.visible = False
        fig.xaxis.ticker, fig.xaxis.major_label_text_font_size = [], "0pt"  # a label, no scale: the tiles are ranked
        fig.xaxis.axis_label = "inducing patches in the order of q(u)'s mean, low to high (row by row)"
        fig.x_range, fig.y_range = Range1d(0, 1), Range1d(-1, 0)
        self.mapper = LinearColorMapper(palette=GREYS, low=0.0, high=1.0)
        self.mean_mapper = LinearColorMapper(palette=DIVERGING, low=-1.0, high=1.0)
        self.src = source("tiles", {"image": [], "x": [], "y": [], "dw": [], "dh": [], "cx": [], "cy": [],
                                    "label_y": [], "index": [], "rank": [], "mean": [], "sd": [], "text": [], "ink": []})
        fig.image("image", x="x", y="y", dw="dw", dh="dh", source=self.src, color_mapper=self.mapper)
        hit = fig.rect("cx", "cy", width="dw", height="dh", source=self.src, fill_alpha=0.0, line_color="#8895a7",
                       line_width=1)
        fig.rect("cx", "label_y", width="dw", height=0.5, source=self.src,
                 fill_color={"field": "mean", "transform": self.mean_mapper}, line_color=None)
        fig.text("cx", "label_y", text="text", source=self.src, text_align="center", text_baseline="middle",
                 text_font_size="8pt", text_color="ink")
        self.selected = source("tile-selected", {"cx": [], "cy": [], "w": [], "h": []})
        fig.rect("cx", "cy", width="w", height="h", source=self.selected, fill_alpha=0.0, line_color="#f0a202",
                 line_width=4)
        fig.add_tools(TapTool(renderers=[hit]),
                      HoverTool(renderers=[hit], tooltips=[("inducing patch", "@index"), ("rank", "@rank"),
                                                           ("q(u) mean", "@mean{0.000}"), ("q(u) sd", "@sd{0.000}")]))
        fig.toolbar.active_tap = fig.select_one(TapTool)
        self.src.selected.on_change("indices", lambda attr, old, new: on_select(self._index_at(new)))
        self.figure = fig

    @staticmethod
    def grid(M):
        """(columns, rows) of M tiles."""
        cols = max(1, min(M, MAX_TILE_COLUMNS))
        return cols, -(-M // cols)

    def reserve(self, M):
        """The height M tiles take, set before they are drawn: a page (a lesson's step) that scrolls
        a view into sight while the first fit runs keeps its place when the tiles arrive."""
        self.figure.height = int(100 + 95 * self.grid(M)[1])

    def _index_at(self, rows):
        if not rows:
            return None
        return int(self.src.data["index"][rows[0]])

    def update(self, tiles, selected=None):
        """``tiles``: convolutional_views.inducing_tiles (or None: empty); ``selected``: a patch number."""
        if tiles is None:
            assign(self.src, {n: [] for n in self.src.data})
            assign(self.selected, {n: [] for n in self.selected.data})
            self.figure.title.text = "Inducing patches sorted by q(u) mean (after a fit)"
            return
        order, patches, mean = tiles["order"], tiles["patches"], tiles["mean"]
        M = len(order)
        cols, rows = self.grid(M)
        step_y = 1.0 + LABEL_ROOM + TILE_GAP
        rank = np.arange(M)
        col, row = rank % cols, rank // cols
        x, y = col * (1.0 + TILE_GAP), -row * step_y - 1.0
        self.src.selected.indices = []
        bound = float(max(np.max(np.abs(mean)), 1e-12))
        self.mean_mapper.low, self.mean_mapper.high = -bound, bound
        self.mapper.palette, self.mapper.low, self.mapper.high = patch_palette(patches.min(), patches.max())
        assign(self.src, {"image": [top_down(patches[i]) for i in order], "x": x, "y": y, "dw": np.ones(M),
                          "dh": np.ones(M), "cx": x + 0.5, "cy": y + 0.5, "label_y": y - LABEL_ROOM / 2,
                          "index": np.asarray(order), "rank": rank, "mean": mean[order], "sd": tiles["sd"][order],
                          "text": [_short(m) for m in mean[order]],
                          "ink": ["white" if abs(m) > 0.6 * bound else "black" for m in mean[order]]})
        width, height = cols * (1.0 + TILE_GAP) - TILE_GAP, rows * step_y - TILE_GAP
        self.figure.x_range.start, self.figure.x_range.end = -0.1, width + 0.1
        self.figure.y_range.start, self.figure.y_range.end = -height - 0.1, 0.1
        self.reserve(M)
        lo, hi = float(mean.min()), float(mean.max())
        outside = "" if patches.min() >= -1e-6 and patches.max() <= 1 + 1e-6 else (
            f"; pixels {patches.min():.2f} to {patches.max():.2f}")
        self.figure.title.text = f"{M} inducing patches by q(u) mean ({lo:+.1f} to {hi:+.1f}){outside}"
        self.select(selected, tiles)

    def select(self, index, tiles=None):
        data = self.src.data
        where = [k for k, i in enumerate(data["index"]) if i == index] if index is not None else []
        if not where:
            assign(self.selected, {"cx": [], "cy": [], "w": [], "h": []})
            return
        k = where[0]
        assign(self.selected, {"cx": [data["cx"][k]], "cy": [data["cy"][k]], "w": [1.08], "h": [1.08]})


class PredictionsFigure:
    """p(class 1) for the first test images: now (coloured by the true class) and as fitted (grey rings)."""

    N_SHOWN = 60

    def __init__(self):
        fig = lab_figure("predictions-figure", "Predictions", 260)
        fig.toolbar.autohide = True
        self.placeholder = range_placeholder(fig)
        fig.y_range = Range1d(-0.03, 1.03)
        fig.xaxis.axis_label, fig.yaxis.axis_label = "test image", "p(class 1 | image)"
        legend = outside_legend(fig)
        self.fitted = source("predictions-fitted", {"x": [], "p": []})
        ring = fig.scatter("x", "p", source=self.fitted, size=9, fill_alpha=0.0, line_color="#9aa3ad", line_width=1.5)
        self.now = source("predictions", {"x": [], "p": [], "colour": [], "label": []})
        dots = fig.scatter("x", "p", source=self.now, size=6, color="colour")
        fig.add_layout(Span(location=0.5, dimension="width", line_dash="dotted", line_color="#555555"))
        fig.add_tools(HoverTool(renderers=[dots], tooltips=[("test image", "@x"), ("p(class 1)", "@p{0.000}"),
                                                            ("true class", "@label")]))
        legend.items.extend([legend_item("as fitted", [ring]), legend_item({"field": "label"}, [dots])])
        self.figure = fig

    def update(self, p_now, p_fitted, y_true, class_names):
        if p_now is None:
            for src in (self.now, self.fitted):
                assign(src, {n: [] for n in src.data})
            self.placeholder.visible = True
            return
        n = min(self.N_SHOWN, len(p_now))
        x = np.arange(n)
        labels = [class_names[int(c)] if int(c) < len(class_names) else str(int(c)) for c in y_true[:n]]
        assign(self.now, {"x": x, "p": np.asarray(p_now[:n]), "label": labels,
                          "colour": [CLASS_COLOURS[int(c) % 2] for c in y_true[:n]]})
        assign(self.fitted, {"x": x, "p": np.asarray(p_fitted[:n])}, unless_equal=True)
        self.placeholder.visible = False
        self.figure.title.text = f"p({class_names[1] if len(class_names) > 1 else 'class 1'}), first {n} test images"


class ContributionsFigure:
    """A test image and, beside it on the same pixel grid, each patch location's contribution to
    E[f] (at the patch's centre pixel), blue negative, red positive; the image's ink in grey over it."""

    SIZE = 170

    def __init__(self):
        self.image_fig = image_figure("contrib-image-figure", "Test image", self.SIZE)
        self.heat_fig = image_figure("contrib-heat-figure", "c_p",
                                     self.SIZE, ranges=(self.image_fig.x_range, self.image_fig.y_range))
        for fig in (self.image_fig, self.heat_fig):
            fig.xaxis.axis_label, fig.yaxis.axis_label = "pixel column", "pixel row (down)"
        self.image = source("contrib-image", {"image": [], "x": [], "y": [], "dw": [], "dh": []})
        self.image_fig.image("image", x="x", y="y", dw="dw", dh="dh", source=self.image,
                             color_mapper=LinearColorMapper(palette=GREYS, low=0.0, high=1.0))
        self.mapper = LinearColorMapper(palette=DIVERGING, low=-1.0, high=1.0)
        self.heat = source("contrib-heat", {"image": [], "x": [], "y": [], "dw": [], "dh": []})
        self.heat_fig.image("image", x="x", y="y", dw="dw", dh="dh", source=self.heat, color_mapper=self.mapper)
        self.ink = source("contrib-ink", {"x": [], "y": [], "v": []})
        self.heat_fig.rect("x", "y", width=1, height=1, source=self.ink, fill_color="#222222", fill_alpha="v",
                           line_color=None)
        with_colour_bar(self.heat_fig, self.mapper, "c_p")

    def update(self, image, heat, patch, title_image, title_heat):
        if image is None:
            for src in (self.image, self.heat, self.ink):
                assign(src, {n: [] for n in src.data})
            return
        H, W = image.shape
        for fig in (self.image_fig,):
            set_image_ranges(fig, H, W)
        assign(self.image, {"image": [top_down(image)], "x": [0.0], "y": [-float(H)], "dw": [float(W)], "dh": [float(H)]})
        Ph, Pw = heat.shape
        off = (patch - 1) / 2.0  # location p's value sits on its patch's centre pixel
        assign(self.heat, {"image": [top_down(heat)], "x": [off], "y": [-off - Ph], "dw": [float(Pw)], "dh": [float(Ph)]})
        rows, cols = np.nonzero(image > 0)
        assign(self.ink, {"x": cols + 0.5, "y": -rows - 0.5, "v": 0.35 * np.clip(image[rows, cols], 0, 1)})
        bound = float(max(np.max(np.abs(heat)), 1e-12))
        self.mapper.low, self.mapper.high = -bound, bound
        self.image_fig.title.text, self.heat_fig.title.text = title_image, title_heat


class WeightsFigure:
    """The patch weights w_p as an image over the patch positions (thesis fig. 5.9)."""

    SIZE = 170

    def __init__(self):
        fig = image_figure("weights-figure", "w_p", self.SIZE)
        fig.xaxis.axis_label, fig.yaxis.axis_label = "patch position (column)", "patch position (row, down)"
        self.mapper = LinearColorMapper(palette=DIVERGING, low=-1.0, high=1.0)
        self.src = source("weights", {"image": [], "x": [], "y": [], "dw": [], "dh": []})
        self.glyph = fig.image("image", x="x", y="y", dw="dw", dh="dh", source=self.src, color_mapper=self.mapper)
        with_colour_bar(fig, self.mapper, "w_p")
        self.figure = fig

    def update(self, weights, weighted):
        if weights is None:
            assign(self.src, {n: [] for n in self.src.data})
            return
        Ph, Pw = weights.shape
        set_image_ranges(self.figure, Ph, Pw)
        assign(self.src, {"image": [top_down(weights)], "x": [0.0], "y": [-float(Ph)], "dw": [float(Pw)],
                          "dh": [float(Ph)]})
        bound = float(max(np.max(np.abs(weights)), 1e-12))
        self.mapper.low, self.mapper.high = -bound, bound
        self.glyph.glyph.global_alpha = 1.0 if weighted else 0.25  # all ones: no pattern to see
        self.figure.title.text = (f"w_p: {weights.min():.2f} to {weights.max():.2f}" if weighted
                                  else "w_p: all 1 (unweighted)")


class EdgeFigures:
    """The edge effect: how many patches each pixel belongs to, and E[f] for a vertical bar
    moved across the image (with the number of patch positions the bar's pixels sit in)."""

    SIZE = 170

    def __init__(self):
        fig = image_figure("edge-counts-figure", "Patches per pixel", self.SIZE)
        fig.xaxis.axis_label, fig.yaxis.axis_label = "pixel column", "pixel row (down)"
        self.mapper = LinearColorMapper(palette=Viridis256, low=0.0, high=9.0)
        self.counts = source("edge-counts", {"image": [], "x": [], "y": [], "dw": [], "dh": []})
        fig.image("image", x="x", y="y", dw="dw", dh="dh", source=self.counts, color_mapper=self.mapper)
        with_colour_bar(fig, self.mapper, "patches")
        self.counts_fig = fig
        bar = lab_figure("edge-bar-figure", "E[f] of a vertical bar at each column", 300)
        bar.xaxis.axis_label, bar.yaxis.axis_label = "column of the bar", "E[f] (2 sd band)"
        self.bar = source("edge-bar", {"column": [], "mean": [], "lower": [], "upper": [], "patches": []})
        band = bar.varea("column", "lower", "upper", source=self.bar, fill_color="#0072b2", fill_alpha=0.15)
        line = bar.line("column", "mean", source=self.bar, color="#0072b2", line_width=2)
        bar.extra_y_ranges = {"patches": Range1d(0, 1)}
        bar.add_layout(LinearAxis(y_range_name="patches", axis_label="patch positions touched"), "right")
        steps = bar.scatter("column", "patches", source=self.bar, y_range_name="patches", color="#d55e00", size=5,
                            marker="square")
        legend = outside_legend(bar)
        legend.items.extend([legend_item("E[f], 2 sd", [band, line]), legend_item("patches touched", [steps])])
        self.placeholder = range_placeholder(bar)
        bar.y_range.renderers = [band, line, self.placeholder]
        self.bar_fig = bar

    def update(self, counts, response):
        H, W = counts.shape
        set_image_ranges(self.counts_fig, H, W)
        assign(self.counts, {"image": [top_down(counts)], "x": [0.0], "y": [-float(H)], "dw": [float(W)],
                             "dh": [float(H)]}, unless_equal=False)
        self.mapper.low, self.mapper.high = 0.0, float(counts.max())
        mid = counts[H // 2, W // 2]
        self.counts_fig.title.text = f"Patches per pixel: {counts[0, 0]} to {mid}"
        if response is None:
            assign(self.bar, {n: [] for n in self.bar.data})
            self.placeholder.visible = True
            return
        m, s = np.asarray(response["mean"]), np.asarray(response["sd"])
        assign(self.bar, {"column": response["column"], "mean": m, "lower": m - 2 * s, "upper": m + 2 * s,
                          "patches": response["patches"]})
        self.bar_fig.extra_y_ranges["patches"].end = 1.1 * float(max(np.max(response["patches"]), 1))
        self.placeholder.visible = False
