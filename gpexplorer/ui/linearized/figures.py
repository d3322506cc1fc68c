"""Bokeh figures of the linearised-inference lab: latent posterior, observation space, the MAP
objective over Gauss-Newton iterations, the close-up of one linearisation.

Like :mod:`gpexplorer.ui.sparse.figures`, each figure owns named ColumnDataSources (one per method,
``latent-egp``, ``obs-ugp``, ``objective-eks``, ``closeup-line-uks``, ...) and an ``update`` that
rewrites their data in place; the names are the handles the browser tests read.
"""

from __future__ import annotations

import numpy as np
from bokeh.layouts import column
from bokeh.models import ColumnDataSource, CustomJS, FixedTicker, HoverTool, LinearAxis, Range1d, TapTool

from gpexplorer.linearized.comparison import METHODS
from gpexplorer.ui.plotting import assign, lab_figure, legend_item, outside_legend, vertical_marker

#: colour-blind-safe (Okabe-Ito): the Taylor methods warm, the unscented ones cool
COLORS = {"egp": "#d55e00", "ugp": "#0072b2", "eks": "#e69f00", "uks": "#009e73"}
DASH = {"gp": "solid", "ks": "dashed"}
#: (width, alpha) of a mean curve: a Taylor method's is a wide pale line drawn under its unscented
#: twin's, so where the two agree (sin: within 0.01) both stay visible, a thin line in a halo
MEAN_LINE = {"taylor": (6, 0.45), "unscented": (2, 1.0)}
BAND_ALPHA = 0.12
#: at most this many points per curve are sent to the browser (the toy grid has 1000): half the
#: websocket payload of a slider move, no visible difference at plot resolution
PLOT_POINTS = 500
_EMPTY_BAND = {"x": [], "mean": [], "lower": [], "upper": []}
#: pixels beside the MAP-objective chart's frame and its step-length strip's, so the two frames line
#: up whatever the tick labels (left) and the legend (right, which the strip has not) take
BORDER_LEFT, BORDER_RIGHT = 70, 120


class _BandFigure:
    """Mean and +- 2 sd band per method over a black reference curve (truth) and the data."""

    def __init__(self, name, title, y_label, source_prefix, truth_label):
        fig = lab_figure(name, title, 330)
        fig.xaxis.axis_label, fig.yaxis.axis_label = "x", y_label
        legend = outside_legend(fig)
        self.truth = _source(f"{source_prefix}-truth", {"x": [], "y": []})
        r_truth = fig.line("x", "y", source=self.truth, color="black", line_width=2, line_dash="dashed")
        self.truth_item = legend_item(truth_label, [r_truth])
        legend.items.append(self.truth_item)
        self.sources, self.items = {}, {}
        for m in METHODS:
            src = _source(f"{source_prefix}-{m}", dict(_EMPTY_BAND))
            r_band = fig.varea("x", "lower", "upper", source=src, fill_color=COLORS[m], fill_alpha=BAND_ALPHA)
            width, alpha = MEAN_LINE[METHODS[m].linearization]
            r_mean = fig.line("x", "mean", source=src, color=COLORS[m], line_width=width, line_alpha=alpha,
                              line_dash=DASH[METHODS[m].family])
            self.items[m] = legend_item(METHODS[m].label, [r_band, r_mean])
            legend.items.append(self.items[m])
            self.sources[m] = src
        self.x0 = vertical_marker(fig)
        self.figure, self.legend = fig, legend

    def _update_bands(self, grid, results, moments):
        keep = thinned(grid)
        for m in METHODS:
            r = results.get(m)
            ok = r is not None and r.error is None
            self.items[m].visible = ok
            if not ok:
                assign(self.sources[m], dict(_EMPTY_BAND))
                continue
            mean, var = (a[keep] for a in moments(r))
            sd = 2.0 * np.sqrt(var)
            assign(self.sources[m], {"x": grid[keep], "mean": mean, "lower": mean - sd, "upper": mean + sd})


def thinned(grid):
    """Index of the plotted subset of a grid: every k-th point so that at most PLOT_POINTS remain
    (the last point always kept)."""
    step = max(1, -(-len(grid) // PLOT_POINTS))
    index = np.arange(0, len(grid), step)
    return index if index[-1] == len(grid) - 1 else np.append(index[:-1], len(grid) - 1)


def _source(name, data):
    return ColumnDataSource(data, name=name)


class LatentFigure(_BandFigure):
    """q(f*) of every method (EGP eq. 38) over the true latent f; training inputs as a rug.
    Tapping the plot sets x0 (through the ``latent-tap`` source, read by the server)."""

    def __init__(self):
        super().__init__("latent", "Latent posterior: mean and 2 sd of f", "f", "latent", "true f")
        fig = self.figure
        self.rug = _source("latent-rug", {"x": [], "y": []})
        r_rug = fig.scatter("x", "y", source=self.rug, marker="dash", angle=np.pi / 2, size=9,
                            color="#444444", alpha=0.6)
        self.legend.items.append(legend_item("training inputs", [r_rug]))
        self.tap = _source("latent-tap", {"x": []})
        fig.add_tools(TapTool(behavior="inspect"))
        fig.js_on_event("tap", CustomJS(args={"source": self.tap}, code="source.data = {x: [cb_obj.x]};"))

    def update(self, data, results):
        truth = data.f_true if data.f_true is not None else []
        keep = thinned(data.grid)
        assign(self.truth, {"x": data.grid[keep] if len(truth) else [], "y": truth[keep] if len(truth) else []},
               unless_equal=True)
        self.truth_item.visible = len(truth) > 0
        self._update_bands(data.grid, results, lambda r: (r.mean_f, r.var_f))
        lows = [np.min(r.mean_f - 2 * np.sqrt(r.var_f)) for r in results.values() if r.error is None]
        lows += [float(np.min(truth))] if len(truth) else []
        lo = min(lows) if lows else 0.0
        x = data.X[:, 0]
        assign(self.rug, {"x": x, "y": np.full(len(x), lo - 0.15)}, unless_equal=True)


class ObservationFigure(_BandFigure):
    """Data, the true g(f) and each method's predicted y* (eq. 39 or 40) with 2 sd of y*."""

    def __init__(self):
        super().__init__("observation", "Observation space: predicted y and 2 sd", "y", "obs", "true g(f)")
        self.data = _source("obs-data", {"x": [], "y": []})
        r_data = self.figure.scatter("x", "y", source=self.data, size=4, color="black", alpha=0.5)
        self.legend.items.append(legend_item("training data", [r_data]))

    def update(self, data, results, forward):
        assign(self.data, {"x": data.X[:, 0], "y": data.y}, unless_equal=True)
        if data.f_true is not None:
            keep = thinned(data.grid)
            with np.errstate(all="ignore"):
                g = np.ravel(forward.value(data.f_true[keep, None]))
            assign(self.truth, {"x": data.grid[keep], "y": g}, unless_equal=True)
        else:
            assign(self.truth, {"x": [], "y": []})
        self.truth_item.visible = data.f_true is not None
        self._update_bands(data.grid, results, lambda r: (r.mean_y, r.var_y))


class ObjectiveFigure:
    """MAP objective (EGP eq. 31) after each Gauss-Newton iteration of each method, above a strip
    of the step lengths where a step was cut (:class:`StepLengthStrip`).

    Dots grow a little with the number of step-length cuts (alpha = 2^-cuts, section 2.5); a red
    x marks the iteration that ended in 'diverge'. ``figure`` is what the page shows (the chart
    and the strip in one column), ``chart`` the objective's own figure."""

    def __init__(self):
        fig = lab_figure("objective", "MAP objective (eq. 31) against Gauss-Newton iteration", 250,
                         min_border_left=BORDER_LEFT, min_border_right=BORDER_RIGHT)
        fig.yaxis.axis_label = "MAP objective"
        self.legend = outside_legend(fig)
        self.sources, self.items, renderers = {}, {}, []
        for m in METHODS:
            src = _source(f"objective-{m}", {"iteration": [], "value": [], "alpha": [], "cuts": [],
                                              "status": [], "size": [], "method": []})
            r_line = fig.line("iteration", "value", source=src, color=COLORS[m], line_width=2,
                              line_dash=DASH[METHODS[m].family])
            r_dots = fig.scatter("iteration", "value", source=src, size="size", color=COLORS[m], alpha=0.7)
            self.items[m] = legend_item(METHODS[m].label, [r_line, r_dots])
            self.legend.items.append(self.items[m])
            self.sources[m] = src
            renderers.append(r_dots)
        # the y range follows iterations >= 1: the prior mean's objective (iteration 0) is usually far
        # below and would flatten everything that happens afterwards into one line
        self.tail = _source("objective-range", {"iteration": [], "value": []})
        fig.y_range.renderers = [fig.scatter("iteration", "value", source=self.tail, alpha=0.0)]
        self.diverged = _source("objective-diverged", {"iteration": [], "value": [], "method": []})
        r_div = fig.scatter("iteration", "value", source=self.diverged, marker="x", size=16, line_width=3,
                            color="red")
        self.diverged_item = legend_item("diverged", [r_div])
        self.legend.items.append(self.diverged_item)
        fig.add_tools(HoverTool(renderers=renderers, tooltips=[
            ("method", "@method"), ("iteration", "@iteration"), ("objective", "@value{0.000}"),
            ("step length", "@alpha"), ("cuts", "@cuts"), ("status", "@status")]))
        self.chart, self.steps = fig, StepLengthStrip(fig.x_range)
        self.figure = column(fig, self.steps.figure, sizing_mode="stretch_width")

    def update(self, results):
        div = {"iteration": [], "value": [], "method": []}
        tail = {"iteration": [], "value": []}
        for m in METHODS:
            r = results.get(m)
            ok = r is not None and r.error is None
            self.items[m].visible = ok
            if not ok:
                assign(self.sources[m], {k: [] for k in self.sources[m].data})
                continue
            trace = r.trace
            cuts = [t.step_cuts for t in trace]
            assign(self.sources[m], {
                "iteration": [t.iteration for t in trace], "value": [t.map_objective for t in trace],
                "alpha": [t.alpha for t in trace], "cuts": cuts, "status": [t.status for t in trace],
                "size": [6 + 2 * min(c, 5) for c in cuts], "method": [METHODS[m].label] * len(trace)})
            shown = trace[1:] if len(trace) > 1 else trace
            tail["iteration"] += [t.iteration for t in shown]
            tail["value"] += [t.map_objective for t in shown]
            for t in trace:
                if t.status == "diverged":
                    div["iteration"].append(t.iteration), div["value"].append(t.map_objective)
                    div["method"].append(METHODS[m].label)
        assign(self.diverged, div)
        # with no method shown, an invisible placeholder keeps the ranges settable (no BokehJS warning)
        assign(self.tail, tail if tail["iteration"] else {"iteration": [0, 1], "value": [0.0, 1.0]})
        self.diverged_item.visible = bool(div["iteration"])
        self.legend.visible = any(item.visible for item in self.legend.items)
        self.steps.update(results)


class StepLengthStrip:
    """The step length alpha of every accepted Gauss-Newton step that was cut, per method, on a
    log axis under the objective chart (sharing its iteration axis). Text labels beside the
    objective's dots overlapped one another and were clipped at the frame's edge; here every
    alpha has its own place: dots of one iteration are set apart by method."""

    OFFSETS = dict(zip(METHODS, (-0.15, -0.05, 0.05, 0.15)))  # iterations; keeps same-iteration dots apart

    def __init__(self, x_range):
        fig = lab_figure("objective-steps", "Step length α where a step was cut", 170, x_range=x_range,
                         y_range=Range1d(0.1, 1.4), y_axis_type="log",
                         min_border_left=BORDER_LEFT, min_border_right=BORDER_RIGHT)
        fig.toolbar_location = None  # pan and zoom the chart above: the iteration axis is shared
        fig.title.text_font_size = "9pt"
        fig.yaxis.ticker = FixedTicker(ticks=[10.0 ** -k for k in range(1, 16)] + [0.25, 0.5, 1.0],
                                       minor_ticks=[])
        fig.xaxis.axis_label, fig.yaxis.axis_label = "Gauss-Newton iteration", "α"
        self.sources, hover = {}, []
        for m in METHODS:
            self.sources[m] = _source(f"objective-steps-{m}", {"x": [], "iteration": [], "alpha": [], "cuts": [],
                                                                "method": []})
            hover.append(fig.scatter("x", "alpha", source=self.sources[m], size=8, color=COLORS[m],
                                     marker="circle" if METHODS[m].family == "gp" else "diamond"))
        fig.add_tools(HoverTool(renderers=hover, tooltips=[
            ("method", "@method"), ("iteration", "@iteration"), ("step length", "@alpha"), ("cuts", "@cuts")]))
        self.figure = fig

    def update(self, results):
        low = 1.0
        for m in METHODS:
            r = results.get(m)
            cut = [t for t in r.trace if t.step_cuts and t.status == "accepted"] if r and r.error is None else []
            assign(self.sources[m], {"x": [t.iteration + self.OFFSETS[m] for t in cut],
                                     "iteration": [t.iteration for t in cut], "alpha": [t.alpha for t in cut],
                                     "cuts": [t.step_cuts for t in cut], "method": [METHODS[m].label] * len(cut)})
            low = min([low] + [t.alpha for t in cut])
        self.figure.y_range.start = min(0.1, low / 2.0)  # alpha = 0.75^k or 0.5^k
        any_cut = any(len(src.data["alpha"]) for src in self.sources.values())
        self.figure.title.text = ("Step length α where a step was cut" if any_cut
                                  else "Step length α: no step was cut")


class CloseupFigure:
    """At x0: g over f around the posterior marginals, each Taylor method's tangent at m0 (EGP
    eq. 36) and each unscented method's regression line through its sigma points (eq. 37; dot
    area proportional to |weight|, hollow when the weight is negative), and the marginal
    densities N(f | m0, v0) shaded (right axis)."""

    def __init__(self):
        fig = lab_figure("closeup", "Linearisation at x0", 330)
        fig.xaxis.axis_label, fig.yaxis.axis_label = "f", "g(f)"
        self.density_range = Range1d(0.0, 1.0)
        fig.extra_y_ranges = {"density": self.density_range}
        # the density axis first: the side panel added first sits next to the plot, the legend outside
        fig.add_layout(LinearAxis(y_range_name="density", axis_label="density of f(x0)"), "right")
        legend = outside_legend(fig)
        self.g = _source("closeup-g", {"f": [], "g": []})
        main = [fig.line("f", "g", source=self.g, color="black", line_width=2)]
        legend.items.append(legend_item("g(f)", main[:1]))
        self.lines, self.points, self.densities, self.items = {}, {}, {}, {}
        for m in METHODS:
            taylor = METHODS[m].linearization == "taylor"
            self.densities[m] = _source(f"closeup-density-{m}", {"f": [], "density": []})
            r_density = fig.varea("f", y1=0.0, y2="density", source=self.densities[m], fill_color=COLORS[m],
                                  fill_alpha=0.15, y_range_name="density")
            self.lines[m] = _source(f"closeup-line-{m}", {"f": [], "y": []})
            r_line = fig.line("f", "y", source=self.lines[m], color=COLORS[m], line_width=2,
                              line_dash=DASH[METHODS[m].family])
            self.points[m] = _source(f"closeup-points-{m}", {"f": [], "g": [], "size": [], "fill": []})
            r_points = fig.scatter("f", "g", source=self.points[m], size="size", line_color=COLORS[m],
                                   fill_color=COLORS[m], fill_alpha="fill", line_width=2,
                                   marker="circle" if taylor else "diamond")
            main += [r_line, r_points]
            what = "tangent at m0" if taylor else "fit through sigma points"
            self.items[m] = legend_item(f"{METHODS[m].label} {what}", [r_line, r_points, r_density])
            legend.items.append(self.items[m])
        fig.y_range.renderers = main  # the densities live on their own axis
        self.truth = vertical_marker(fig, color="black")
        self.figure, self.legend = fig, legend

    def update(self, forward, closeups, x0, f_true_x0=None):
        """``closeups``: method -> Closeup (:func:`gpexplorer.linearized.comparison.closeup`)."""
        self.legend.visible = bool(closeups)
        if not closeups:  # g alone, around the true f(x0) or 0: an empty plot's ranges cannot be set
            for sources in (self.lines, self.points, self.densities):
                for src in sources.values():
                    assign(src, {k: [] for k in src.data})
            centre = f_true_x0 if f_true_x0 is not None else 0.0
            f = np.linspace(centre - 2.0, centre + 2.0, 241)
            with np.errstate(all="ignore"):
                assign(self.g, {"f": f, "g": np.ravel(forward.value(f[:, None]))})
            self.truth.location = f_true_x0 if f_true_x0 is not None else np.nan
            self.figure.title.text = f"Linearisation at x0 = {x0:.3g}: no method shown, g(f) only"
            return
        lo = min(c.m0 - 4.0 * np.sqrt(c.v0) for c in closeups.values())
        hi = max(c.m0 + 4.0 * np.sqrt(c.v0) for c in closeups.values())
        if f_true_x0 is not None:
            lo, hi = min(lo, f_true_x0), max(hi, f_true_x0)
        centre, half = 0.5 * (lo + hi), max(0.5 * (hi - lo), 0.5)
        f = np.linspace(centre - 1.1 * half, centre + 1.1 * half, 241)
        with np.errstate(all="ignore"):
            assign(self.g, {"f": f, "g": np.ravel(forward.value(f[:, None]))})
        ends = np.array([f[0], f[-1]])
        peak = 0.0
        for m in METHODS:
            c = closeups.get(m)
            self.items[m].visible = c is not None
            if c is None:
                for src in (self.lines[m], self.points[m], self.densities[m]):
                    assign(src, {k: [] for k in src.data})
                continue
            assign(self.lines[m], {"f": ends, "y": c.slope * ends + c.intercept})
            if c.weights is None:
                size, fill = [9.0], [1.0]
            else:
                w = np.abs(c.weights)
                size = list(8.0 + 14.0 * np.sqrt(w / w.max()))
                fill = [0.8 if v >= 0 else 0.0 for v in c.weights]
            assign(self.points[m], {"f": c.points, "g": c.values, "size": size, "fill": fill})
            sd = max(np.sqrt(c.v0), 1e-9 * max(1.0, abs(c.m0)))
            density = np.exp(-0.5 * ((f - c.m0) / sd) ** 2) / (sd * np.sqrt(2 * np.pi))
            peak = max(peak, float(density.max()))
            assign(self.densities[m], {"f": f, "density": density})
        self.density_range.end = 3.0 * peak if peak > 0 else 1.0  # densities fill the lower third
        self.truth.location = f_true_x0 if f_true_x0 is not None else np.nan
        self.figure.title.text = f"Linearisation at x0 = {x0:.3g} (dotted: true f(x0))" \
            if f_true_x0 is not None else f"Linearisation at x0 = {x0:.3g}"
