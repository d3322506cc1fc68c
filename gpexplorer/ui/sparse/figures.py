"""Bokeh figures of the sparse-regression lab: posterior with draggable inducing inputs,
g/h split, and predicted-vs-true for inputs with D > 1.

Each figure owns named ColumnDataSources and an ``update`` that rewrites their data in place,
so a drag or a slider move re-sends only arrays (zoom and tool state stay as the user left
them). Source and figure names are the handles the browser tests read.
"""

from __future__ import annotations

import numpy as np
from bokeh.models import ColumnDataSource, PointDrawTool
from bokeh.transform import factor_cmap

from gpexplorer.sparse.comparison import APPROXIMATIONS, LABELS
from gpexplorer.ui.plotting import assign, lab_figure, legend_item, outside_legend, range_placeholder, share_x_frame

#: one colour per approximation from Okabe and Ito's colour-blind-safe palette (2008): black for
#: the exact GP, vermillion, blue, orange and reddish purple; the draggable Z are bluish green
COLORS = {"exact": "#000000", "sor": "#cc79a7", "dtc": "#e69f00", "fitc": "#d55e00", "vfe": "#0072b2"}
Z_COLOR = "#009e73"
#: a band's fill is faint (bands overlap: three of them at 0.12-0.18 blended into one mauve on a
#: projector); its edges, thin lines in the band's colour (dashed for the exact GP), tell them apart
BAND_ALPHA = {"exact": 0.08, "sor": 0.07, "dtc": 0.07, "fitc": 0.08, "vfe": 0.08}
EDGE_WIDTH = 1.2


def inducing_rows(y, n_rows):
    """Baseline y of the inducing-input markers, one row per approximation below the data."""
    lo, hi = float(np.min(y)), float(np.max(y))
    step = 0.07 * max(hi - lo, 1e-9)
    return [lo - (k + 1.5) * step for k in range(n_rows + 1)]


class PosteriorFigure:
    """Data, mean and 2-sigma band of every approximation, inducing inputs (draggable), samples."""

    def __init__(self):
        fig = lab_figure("posterior", "Posterior: mean and ±2σ bands", 420)
        fig.xaxis.axis_label, fig.yaxis.axis_label = "x", "y"
        share_x_frame(fig)  # the feature strip below shares this x frame, to the pixel
        legend = outside_legend(fig)
        self.bands, self.means, self.edges, self.items = {}, {}, {}, {}
        for name in APPROXIMATIONS:
            band = ColumnDataSource({"x": [], "lower": [], "upper": []}, name=f"band-{name}")
            mean = ColumnDataSource({"x": [], "y": []}, name=f"mean-{name}")
            dash = "dashed" if name == "exact" else "solid"
            r_band = fig.varea(x="x", y1="lower", y2="upper", source=band, fill_color=COLORS[name],
                               fill_alpha=BAND_ALPHA[name])
            self.edges[name] = [fig.line(x="x", y=edge, source=band, color=COLORS[name], line_width=EDGE_WIDTH,
                                         line_alpha=0.9, line_dash=dash) for edge in ("lower", "upper")]
            r_mean = fig.line(x="x", y="y", source=mean, color=COLORS[name], line_width=2, line_dash=dash)
            self.items[name] = legend_item(LABELS[name], [r_band, *self.edges[name], r_mean])
            legend.items.append(self.items[name])
            self.bands[name], self.means[name] = band, mean
        self.samples = ColumnDataSource({"xs": [], "ys": [], "color": []}, name="samples")
        fig.multi_line(xs="xs", ys="ys", line_color="color", source=self.samples, line_alpha=0.5)
        self.data = ColumnDataSource({"x": [], "y": []}, name="data")
        r_data = fig.scatter("x", "y", source=self.data, size=4, color="black", alpha=0.45)
        legend.items.append(legend_item("data", [r_data]))
        self.start = ColumnDataSource({"x": [], "y": []}, name="inducing-start")
        r_start = fig.scatter("x", "y", source=self.start, marker="circle", size=7, fill_color=None,
                              line_color="#999999")
        self.items["start"] = legend_item("Z at fit start", [r_start])
        legend.items.append(self.items["start"])
        self.fitted = ColumnDataSource({"x": [], "y": [], "approximation": []}, name="inducing-fitted")
        # colour by a client-side mapper, not a string column: a held update that grows a
        # string-colour column from 0 rows broke BokehJS 3.9's decoder (RangeError)
        r_fitted = fig.scatter("x", "y", source=self.fitted, marker="x", size=10, line_width=2,
                               color=factor_cmap("approximation", [COLORS[a] for a in APPROXIMATIONS],
                                                 list(APPROXIMATIONS)))
        self.items["fitted"] = legend_item("Z of each fit", [r_fitted])
        legend.items.append(self.items["fitted"])
        self.inducing = ColumnDataSource({"x": [], "y": []}, name="inducing")
        r_z = fig.scatter("x", "y", source=self.inducing, marker="triangle", size=13, color=Z_COLOR,
                          line_color="black")
        legend.items.append(legend_item("Z (drag me)", [r_z]))
        drag = PointDrawTool(renderers=[r_z], add=False, description="Drag inducing inputs")
        fig.add_tools(drag)
        fig.toolbar.active_drag = drag
        self.figure = fig

    def update(self, data_x, data_y, comparison, band, Z_shared, fitted_Z=None, start_Z=None, show_samples=False):
        x = comparison.inputs[:, 0]
        rows = inducing_rows(data_y, len(APPROXIMATIONS))
        assign(self.data, {"x": data_x, "y": data_y}, unless_equal=True)
        xs, ys, colors = [], [], []
        for name in APPROXIMATIONS:
            r = comparison.results.get(name)
            self.items[name].visible = r is not None and r.mean is not None  # no empty legend entries
            if r is None or r.mean is None:
                assign(self.bands[name], {"x": [], "lower": [], "upper": []})
                assign(self.means[name], {"x": [], "y": []})
                continue
            sd = 2.0 * np.sqrt(r.var_y if band == "y" else r.var_f)
            assign(self.bands[name], {"x": x, "lower": r.mean - sd, "upper": r.mean + sd})
            assign(self.means[name], {"x": x, "y": r.mean})
            if show_samples and r.samples is not None:
                for s in r.samples:  # each sample on the grid it was drawn on
                    xs.append(r.sample_inputs[:, 0]), ys.append(s), colors.append(COLORS[name])
        assign(self.samples, {"xs": xs, "ys": ys, "color": colors})
        assign(self.inducing, {"x": np.asarray(Z_shared)[:, 0], "y": np.full(len(Z_shared), rows[0])})
        fx, fy, fc = [], [], []
        for k, (name, Z) in enumerate((fitted_Z or {}).items()):
            fx.extend(np.asarray(Z)[:, 0]), fy.extend([rows[k + 1]] * len(Z)), fc.extend([name] * len(Z))
        assign(self.fitted, {"x": fx, "y": fy, "approximation": fc})
        self.items["fitted"].visible = self.items["start"].visible = bool(fx)
        start = np.zeros((0, 1)) if start_Z is None else np.asarray(start_Z)
        assign(self.start, {"x": start[:, 0], "y": np.full(len(start), rows[0])})


class SplitFigure:
    """Thesis fig. 2.4-2.5: f = g + h, g carrying the inducing outputs, h the rest (eq. 2.22-2.24)."""

    def __init__(self):
        fig = lab_figure("gh-split", "g/h split of the approximate posterior", 300)
        self.source = ColumnDataSource({"x": [], "g": [], "g_lo": [], "g_hi": [], "f_lo": [], "f_hi": [],
                                        "h_sd": []}, name="gh")
        legend = outside_legend(fig)
        r1 = fig.varea("x", "f_lo", "f_hi", source=self.source, fill_color="#ff7f0e", fill_alpha=0.15)
        r2 = fig.varea("x", "g_lo", "g_hi", source=self.source, fill_color="#1f77b4", fill_alpha=0.3)
        r3 = fig.line("x", "g", source=self.source, color="#1f77b4", line_width=2)
        r4 = fig.line("x", "h_sd", source=self.source, color="#ff7f0e", line_dash="dashed", line_width=2)
        self.data = ColumnDataSource({"x": [], "y": []}, name="gh-data")
        r5 = fig.scatter("x", "y", source=self.data, size=3, color="black", alpha=0.3)
        legend.items.extend([legend_item("g +- 2 sd(g)", [r2, r3]), legend_item("+- 2 sd(g + h)", [r1]),
                             legend_item("sd(h)", [r4]), legend_item("data", [r5])])
        self.figure, self.placeholder = fig, range_placeholder(fig)

    def update(self, x, data_x, data_y, g_mean, g_var, h_var, label):
        g_sd, f_sd = 2 * np.sqrt(g_var), 2 * np.sqrt(g_var + h_var)
        self.source.data = {"x": x, "g": g_mean, "g_lo": g_mean - g_sd, "g_hi": g_mean + g_sd,
                            "f_lo": g_mean - f_sd, "f_hi": g_mean + f_sd, "h_sd": np.sqrt(h_var)}
        self.data.data = {"x": data_x, "y": data_y}
        self.placeholder.visible = False
        self.figure.title.text = f"g/h split of {label}'s approximate posterior"

    def clear(self, message):
        self.source.data = {k: [] for k in self.source.data}
        self.data.data = {"x": [], "y": []}
        self.placeholder.visible = True
        self.figure.title.text = message


class PredictedVsTrueFigure:
    """For D > 1: predictive mean against held-out targets, one colour per approximation."""

    def __init__(self):
        fig = lab_figure("predicted-vs-true", "Predicted mean vs true y (test points)", 420)
        fig.xaxis.axis_label, fig.yaxis.axis_label = "true y", "predicted mean"
        legend = outside_legend(fig)
        self.sources = {}
        for name in APPROXIMATIONS:
            src = ColumnDataSource({"x": [], "y": []}, name=f"pvt-{name}")
            r = fig.scatter("x", "y", source=src, size=4, color=COLORS[name], alpha=0.5)
            legend.items.append(legend_item(LABELS[name], [r]))
            self.sources[name] = src
        self.diagonal = ColumnDataSource({"x": [], "y": []})
        fig.line("x", "y", source=self.diagonal, color="black", line_dash="dotted")
        self.figure = fig

    def update(self, y_true, comparison, where="test points"):
        self.figure.title.text = f"Predicted mean vs true y ({where})"
        for name, src in self.sources.items():
            r = comparison.results.get(name)
            src.data = {"x": [], "y": []} if r is None or r.mean is None else {"x": y_true, "y": r.mean}
        lo, hi = float(np.min(y_true)), float(np.max(y_true))
        self.diagonal.data = {"x": [lo, hi], "y": [lo, hi]}
