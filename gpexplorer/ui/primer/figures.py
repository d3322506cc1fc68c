"""Bokeh figures of the primer page: the prior's samples, the posterior given the data points
(a tap adds one or removes the one tapped, a drag moves one), the 2-D marginal of (f(x1), f(x2)),
the prior covariance matrix and the evidence as sequential prediction.

Each figure owns named ColumnDataSources made in its constructor (every session's lab has its
own); ``update`` rewrites their data in place. Names (the browser tests' handles):
``prior-samples`` (xs, ys, colour: one line per sample), ``prior-given-x1`` (x, mean, lower, upper:
the prior given f(x1) = a) and ``fixed-x1`` (x, y: the point (x1, a)), ``data-points`` (x, y),
``posterior`` (x, mean, f_lower, f_upper, y_lower, y_upper), ``posterior-samples`` (xs, ys),
``kept-samples`` (xs, ys: the filter's kept functions), ``pair-prior`` and ``pair-posterior`` (x, y:
the 2-sd ellipses), ``pair-dots`` (x, y, colour: the prior samples' values at x1, x2),
``pair-given-x1`` (x, y: the ±2 sd bar of f(x2) given f(x1)) and ``pair-given-mean``,
``covariance`` (image) and ``covariance-pair`` (x, y: the 2 x 2 block at x1, x2), ``evidence-bars``
(position, term, point, x, label). Figures: ``prior-figure``, ``posterior-figure``, ``pair-figure``,
``covariance-figure``, ``evidence-figure``, ``invariance-figure`` and ``invariance-strip`` (sources
``invariance-evidence``: n, convolutional, se; ``invariance-images``: image, x, right, label).
"""

from __future__ import annotations

import numpy as np
from bokeh.core.properties import value
from bokeh.events import DoubleTap, Tap
from bokeh.models import ColorBar, ColumnDataSource, HoverTool, Legend, LinearColorMapper, PointDrawTool, Range1d
from bokeh.plotting import figure

from gpexplorer.primer import ellipse
from gpexplorer.ui.plotting import TOOLS, assign, lab_figure, legend_item, outside_legend, share_x_frame, \
    vertical_marker
from gpexplorer.ui.primer.settings import GRID, MAX_POINTS

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
        self.given = source("prior-given-x1", {"x": [], "mean": [], "lower": [], "upper": []})
        self.fixed = source("fixed-x1", {"x": [], "y": []})
        band = fig.varea("x", "lower", "upper", source=self.given, fill_color=X1_COLOUR, fill_alpha=0.15)
        lines = fig.multi_line("xs", "ys", source=self.src, color="colour", line_width=2, alpha=0.85)
        mean = fig.line("x", "mean", source=self.given, color=X1_COLOUR, line_width=2, line_dash="dashed")
        fixed = fig.scatter("x", "y", source=self.fixed, marker="diamond", size=14, color=X1_COLOUR,
                            line_color="black")
        self.markers = _markers(fig)
        legend = outside_legend(fig)
        self.given_items = [legend_item("given f(x1): mean", [mean, fixed], visible=False),
                            legend_item("given f(x1): ±2 sd", [band], visible=False)]
        legend.items.extend([legend_item("prior samples", [lines]), *self.given_items])
        self.figure = fig

    def update(self, draws, name, x1, x2, given=None):
        """``given``: (value a, :class:`~gpexplorer.primer.Conditioned` of f given f(x1) = a) or None."""
        data = _lines(draws)
        assign(self.src, {**data, "colour": list(SAMPLE_COLOURS[:len(draws)])}, unless_equal=True)
        if given is None:
            assign(self.given, {k: [] for k in self.given.data}, unless_equal=True)
            assign(self.fixed, {"x": [], "y": []}, unless_equal=True)
        else:
            a, c = given
            sd = 2 * np.sqrt(c.var_f)
            assign(self.given, {"x": GRID, "mean": c.mean, "lower": c.mean - sd, "upper": c.mean + sd},
                   unless_equal=True)
            assign(self.fixed, {"x": [float(x1)], "y": [float(a)]}, unless_equal=True)
        for item in self.given_items:
            item.visible = given is not None
        self.markers[0].location, self.markers[1].location = float(x1), float(x2)
        self.figure.title.text = f"Prior: {len(draws)} functions drawn from a GP with k = {name}"


class PosteriorFigure:
    """The posterior given the data points: mean, 2 sd of f and of y, three draws, the filter's kept
    functions. A tap calls ``on_tap`` (the lab adds a point, or removes the one tapped); the points
    can be dragged (a PointDrawTool that adds none: the browser rewrites ``data-points``, which the
    lab follows through ``on_drag``)."""

    #: pixels within which a tap is on a data point (a removal), not beside it (an addition)
    HIT_RADIUS = 9
    HEIGHT = 320

    def __init__(self, x_range, on_tap, on_drag):
        fig = share_x_frame(lab_figure("posterior-figure", "Conditioned on the data (tap to add a point)",
                                       self.HEIGHT), x_range)
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
        drag = PointDrawTool(renderers=[dots], add=False, num_objects=MAX_POINTS, description="Drag a data point")
        fig.add_tools(drag)
        fig.toolbar.active_drag = drag
        fig.on_event(Tap, on_tap)
        fig.on_event(DoubleTap, on_tap)  # a second click soon after the first is a double tap to Bokeh
        self.points.on_change("data", on_drag)
        self.y_range = fig.y_range
        self.figure = fig

    def hit(self, x, y, X, Y):
        """Index of the data point within :data:`HIT_RADIUS` pixels of (x, y), the nearest; or None.
        Pixels from the frame's size and ranges as the browser last reported them (a stand-in
        before it has: the figure's height and a 600-pixel width)."""
        if not len(X):
            return None
        fig = self.figure
        width = _reported(fig, "inner_width", 600.0)
        height = _reported(fig, "inner_height", self.HEIGHT - 60.0)
        ys = self.band.data.get("y_lower", []), self.band.data.get("y_upper", [])
        y_lo = _reported(fig.y_range, "start", float(np.min(ys[0])) if len(ys[0]) else -2.0)
        y_hi = _reported(fig.y_range, "end", float(np.max(ys[1])) if len(ys[1]) else 2.0)
        sx = width / max(fig.x_range.end - fig.x_range.start, 1e-12)
        sy = height / max(abs(y_hi - y_lo), 1e-12)
        d = np.hypot((np.asarray(X) - x) * sx, (np.asarray(Y) - y) * sy)
        k = int(np.argmin(d))
        return k if d[k] <= self.HIT_RADIUS else None

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
        self.given = source("pair-given-x1", {"x": [], "y": []})
        given = fig.line("x", "y", source=self.given, color=X1_COLOUR, line_width=5, alpha=0.8)
        self.given_mean = source("pair-given-mean", {"x": [], "y": []})
        mark = fig.scatter("x", "y", source=self.given_mean, marker="diamond", size=14, color=X1_COLOUR,
                           line_color="black")
        self.given_item = legend_item("f(x2) | f(x1)", [given, mark], visible=False)
        legend = Legend(items=[legend_item("prior", [prior]), legend_item("posterior", [posterior]),
                               legend_item("prior samples", [dots]), self.given_item], orientation="horizontal",
                        nrows=2, click_policy="hide", padding=2, spacing=6, margin=4)
        fig.add_layout(legend, "below")
        fig.height += 50
        self.figure = fig

    def update(self, prior, posterior, dots_x, dots_y, x1, x2, fixed=None):
        """``fixed``: the value a of f(x1) to condition the prior on (its ±2 sd segment of f(x2)), or None."""
        for src, marginal in ((self.prior, prior), (self.posterior, posterior)):
            points = ellipse(marginal.mean, marginal.cov, level=2.0)
            assign(src, {"x": points[:, 0], "y": points[:, 1]}, unless_equal=True)
        if fixed is None:
            assign(self.given, {"x": [], "y": []}, unless_equal=True)
            assign(self.given_mean, {"x": [], "y": []}, unless_equal=True)
        else:
            m, v = prior.given_first(fixed)
            sd = 2 * np.sqrt(v)
            assign(self.given, {"x": [fixed, fixed], "y": [m - sd, m + sd]}, unless_equal=True)
            assign(self.given_mean, {"x": [fixed], "y": [m]}, unless_equal=True)
        self.given_item.visible = fixed is not None
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


def _reported(model, name, default):
    """A property the browser reports (a frame's size, an auto range's ends), or ``default`` while unset."""
    try:
        value = getattr(model, name)
    except Exception:  # noqa: BLE001 - bokeh's UnsetValueError before the browser has sent it
        return default
    return float(value) if value is not None and np.isfinite(value) else default


class CovarianceFigure:
    """The prior covariance K(x, x') on the plotted inputs as an image (every second grid point; x'
    grows downwards, like a matrix's rows), with the four entries of the pair (x1, x2) marked: the
    2 x 2 block that is the 2-D view's prior covariance."""

    SIZE = 230

    def __init__(self):
        fig = figure(name="covariance-figure", title="Covariance k(x, x')", frame_width=self.SIZE,
                     frame_height=self.SIZE, tools="save", toolbar_location="above",
                     x_range=Range1d(float(GRID[0]), float(GRID[-1])), y_range=Range1d(float(GRID[-1]), float(GRID[0])))
        fig.toolbar.logo, fig.toolbar.autohide = None, True
        fig.xaxis.axis_label, fig.yaxis.axis_label = "x", "x'"
        self.mapper = LinearColorMapper(palette="Viridis256", low=0.0, high=1.0)
        self.src = source("covariance", {"image": [np.zeros((2, 2), dtype=np.float32)]})
        span = float(GRID[-1] - GRID[0])
        # the image's first row lies at y = GRID[0], the top of the reversed y range
        fig.image("image", x=float(GRID[0]), y=float(GRID[0]), dw=span, dh=span, source=self.src,
                  color_mapper=self.mapper)
        self.block = source("covariance-pair", {"x": [], "y": []})
        fig.scatter("x", "y", source=self.block, size=9, fill_color=None, line_color="white", line_width=2)
        fig.add_layout(ColorBar(color_mapper=self.mapper, width=10, padding=2), "right")
        fig.width, fig.height = self.SIZE + 120, self.SIZE + 80
        self.figure = fig

    def update(self, K, name):
        """``K`` [P, P] on GRID[::2]."""
        K = np.asarray(K, dtype=np.float32)
        lo, hi = float(min(K.min(), 0.0)), float(K.max())
        self.mapper.low, self.mapper.high = lo, hi if hi > lo else lo + 1.0
        assign(self.src, {"image": [K]})
        self.figure.title.text = f"Covariance k(x, x'), k = {name}" if len(name) <= 18 else "Covariance k(x, x')"

    def mark(self, x1, x2):
        """Mark k(x1, x1), k(x1, x2), k(x2, x1) and k(x2, x2)."""
        assign(self.block, {"x": [x1, x2, x1, x2], "y": [x1, x1, x2, x2]}, unless_equal=True)


class InvarianceFigure:
    """Images arriving one at a time: the first few stamped images (their y above them) and each
    kernel's cumulative log evidence sum_{m <= n} log p(y_m | y_<m) against n."""

    WIDTH, HEIGHT, STRIP = 560, 230, 8
    COLOURS = {"convolutional": "#009e73", "se": "#d55e00"}
    LABELS = {"convolutional": "convolutional (invariant)", "se": "SE on the pixels"}

    def __init__(self):
        strip = figure(name="invariance-strip", title="The first images (y above each)", frame_width=self.WIDTH,
                       frame_height=80, tools="", toolbar_location=None, x_range=Range1d(-0.2, 7.0 * self.STRIP / 6 + 1.2),
                       y_range=Range1d(-0.1, 1.45))
        strip.axis.visible, strip.grid.visible = False, False
        strip.width, strip.min_border_left, strip.min_border_right = self.WIDTH + 20, 10, 10
        strip.outline_line_color = None
        self.images = source("invariance-images", {"image": [], "x": [], "right": [], "label": []})
        strip.image("image", x="x", y=0.0, dw=1.0, dh=1.0, source=self.images,
                    color_mapper=LinearColorMapper(palette="Greys256", low=1.0, high=0.0))
        strip.quad(left="x", right="right", bottom=0.0, top=1.0, source=self.images, fill_color=None,
                   line_color="#888888")  # the image's edge: most of it is blank
        strip.text("x", 1.05, text="label", source=self.images, text_font_size="11px")
        fig = figure(name="invariance-figure", title="Cumulative log evidence as images arrive",
                     frame_width=self.WIDTH, frame_height=self.HEIGHT, tools=TOOLS, toolbar_location="above")
        fig.toolbar.logo, fig.toolbar.autohide = None, True
        fig.xaxis.axis_label, fig.yaxis.axis_label = "images seen n", "sum of log p(y_m | y_<m), m <= n"
        self.curves = source("invariance-evidence", {"n": [], "convolutional": [], "se": []})
        self.items = {}
        for name, colour in self.COLOURS.items():
            r = fig.line("n", name, source=self.curves, color=colour, line_width=2.5)
            self.items[name] = legend_item(self.LABELS[name], [r])
        fig.add_layout(Legend(items=list(self.items.values()), location="top_left", click_policy="hide"))
        self.strip, self.figure = strip, fig

    def update(self, X, y, result):
        """``X`` [n, 36] images, ``y`` [n], ``result`` from :func:`gpexplorer.primer.evidence_as_data_arrive`."""
        k = min(self.STRIP, len(y))
        side = int(round(np.sqrt(X.shape[1])))
        assign(self.images, {"image": [np.asarray(X[i].reshape(side, side)[::-1], dtype=np.float32) for i in range(k)],
                             "x": [i * 7.0 / 6 for i in range(k)], "right": [i * 7.0 / 6 + 1.0 for i in range(k)],
                             "label": [f"y = {v:.2f}" for v in y[:k]]})
        n = np.arange(1, len(y) + 1)
        assign(self.curves, {"n": n, "convolutional": result["convolutional"][1], "se": result["se"][1]})
        self.figure.title.text = f"Cumulative log evidence as {len(y)} images arrive"
        for name, item in self.items.items():  # the totals in the legend: the title stays short in presenter mode
            item.label = value(f"{self.LABELS[name]}: {result[name][1][-1]:.1f}")  # a text, not a column name


def x_range():
    """The x range the two function plots share."""
    return Range1d(float(GRID[0]), float(GRID[-1]))
