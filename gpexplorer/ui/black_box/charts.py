"""The black-box lab's optimisation charts: the ELBO and its three terms over iterations (live
while the fit runs), and the estimator variance against the number of samples S (log-log).

Sources: ``elbo-fg`` / ``elbo-mog1`` / ``elbo-mog2`` (iteration, elbo, ell, entropy, cross: the
four panels read the same source) and ``variance-score``, ``variance-score-cv``,
``variance-reparam`` (S, dmean, dvar). Made per instance: every session owns its models.
"""

from __future__ import annotations

import numpy as np
from bokeh.layouts import column, row
from bokeh.models import HoverTool, Span

from gpexplorer.ui.black_box.figures import COLORS, source
from gpexplorer.ui.black_box.settings import LABELS, POSTERIORS
from gpexplorer.ui.plotting import assign, lab_figure, legend_item, outside_legend, range_placeholder

TERMS = (("ell", "Expected log likelihood (ELL)"), ("entropy", "Entropy term"), ("cross", "Cross term E_q[log p(u)]"))
EMPTY_TRACE = {"iteration": [], "elbo": [], "ell": [], "entropy": [], "cross": []}
ESTIMATOR_CURVES = {"score": ("score", "#9467bd", "solid"), "score+cv": ("score-cv", "#8c564b", "solid"),
                    "reparam": ("reparam", "#7f7f7f", "solid")}
MIN_SPAN = 20.0  # nats: the least the ELBO chart's y range spans below the best final ELBO
CURVE_LABELS = {"score": "score function", "score+cv": "score + control variate", "reparam": "reparameterisation"}


def y_range_points(traces):
    """The (iteration, elbo) points the ELBO chart's y range follows: those within R of the best
    final ELBO, R = max(MIN_SPAN, 4 x the drop from it to the lowest point of any trace's second
    half). A prior start 1e5 nats below (MoG's diagonal start on an ill-conditioned Kuu) would
    otherwise flatten the whole optimisation into one line; the zoom tool still reaches it."""
    kept = [t for t in traces if len(t["iteration"])]
    if not kept:
        return {"iteration": [], "elbo": []}
    top = max(float(t["elbo"][-1]) for t in kept)
    low = min(float(np.min(t["elbo"][len(t["elbo"]) // 2:])) for t in kept)
    cut = top - max(MIN_SPAN, 4.0 * (top - low))
    out = {"iteration": [], "elbo": []}
    for t in kept:
        elbo = np.asarray(t["elbo"], dtype=float)
        keep = elbo >= cut
        out["iteration"] += list(np.asarray(t["iteration"])[keep])
        out["elbo"] += list(elbo[keep])
    return out


class ElboFigure:
    """The ELBO (large) and its three terms (small panels) against L-BFGS iteration, per posterior."""

    def __init__(self):
        fig = lab_figure("elbo", "ELBO over iterations", 260)
        fig.xaxis.axis_label, fig.yaxis.axis_label = "iteration (all blocks)", "ELBO"
        self.placeholder = range_placeholder(fig)
        legend = outside_legend(fig)
        self.sources, self.items = {}, {}
        # the y range follows the trace after its first iterations: the prior's ELBO is usually
        # far below and would flatten everything that happens afterwards into one line
        self.tail = source("elbo-range", {"iteration": [], "elbo": []})
        fig.y_range.renderers = [fig.scatter("iteration", "elbo", source=self.tail, alpha=0.0), self.placeholder]
        panels = []
        for name, title in TERMS:
            panel = lab_figure(f"elbo-{name}", title, 190, x_range=fig.x_range)
            panel.toolbar_location = None
            panel.title.text_font_size = "9pt"
            panel.xaxis.axis_label = "iteration"
            panels.append((name, panel, range_placeholder(panel)))
        hover = []
        for p in POSTERIORS.values():
            src = source(f"elbo-{p}", EMPTY_TRACE)
            line = fig.line("iteration", "elbo", source=src, color=COLORS[p], line_width=2)
            hover.append(fig.scatter("iteration", "elbo", source=src, color=COLORS[p], size=3))
            renderers = [line, hover[-1]]
            for name, panel, _ in panels:
                renderers.append(panel.line("iteration", name, source=src, color=COLORS[p], line_width=2))
            self.items[p] = legend_item(LABELS[p], renderers)
            legend.items.append(self.items[p])
            self.sources[p] = src
        fig.add_tools(HoverTool(renderers=hover, tooltips=[("iteration", "@iteration"), ("ELBO", "@elbo{0.000}"),
                                                           ("ELL", "@ell{0.000}"), ("entropy", "@entropy{0.000}"),
                                                           ("cross", "@cross{0.000}")]))
        self.panels = panels
        self.chart, self.legend = fig, legend
        self.figure = column(fig, row([panel for _, panel, _ in panels], sizing_mode="stretch_width"),
                             sizing_mode="stretch_width")

    def update(self, traces, shown, running=False):
        """``traces``: posterior -> {"iteration", "elbo", "ell", "entropy", "cross"} lists."""
        drawn = False
        for p in POSTERIORS.values():
            trace = traces.get(p) if p in shown else None
            ok = bool(trace and trace["iteration"])
            self.items[p].visible = ok
            assign(self.sources[p], trace if ok else EMPTY_TRACE)
            drawn = drawn or ok
        assign(self.tail, y_range_points([self.sources[p].data for p in POSTERIORS.values()]))
        self.placeholder.visible = not drawn
        for _, _, holder in self.panels:
            holder.visible = not drawn
        points = sum(len(self.sources[p].data["iteration"]) for p in POSTERIORS.values())
        state = "fitting" if running else "fitted"
        self.chart.title.text = (f"ELBO over iterations ({state}, {points} points)" if drawn
                                 else "ELBO over iterations (no fit yet)")

    def lengths(self):
        return {p: len(src.data["iteration"]) for p, src in self.sources.items()}


class VarianceFigure:
    """The variance of the ELL's gradient estimates (with respect to the marginal means, solid;
    variances, dashed) against S on log-log axes: score function with and without the control
    variate, and reparameterisation; the dotted line is the page's S."""

    def __init__(self):
        fig = lab_figure("variance", "Estimator variance against the number of samples S", 280,
                         x_axis_type="log", y_axis_type="log")
        fig.xaxis.axis_label, fig.yaxis.axis_label = "S (samples per point)", "variance of the gradient estimate"
        self.placeholder = range_placeholder(fig)
        self.placeholder.data_source.data = {"x": [10.0, 1000.0], "y": [1e-4, 1.0]}
        legend = outside_legend(fig)
        self.sources, self.items = {}, {}
        for key, (name, color, _) in ESTIMATOR_CURVES.items():
            src = source(f"variance-{name}", {"S": [], "dmean": [], "dvar": []})
            mean_line = fig.line("S", "dmean", source=src, color=color, line_width=2)
            dots = fig.scatter("S", "dmean", source=src, color=color, size=6)
            var_line = fig.line("S", "dvar", source=src, color=color, line_width=2, line_dash="dashed")
            self.items[key] = legend_item(CURVE_LABELS[key], [mean_line, dots, var_line])
            legend.items.append(self.items[key])
            self.sources[key] = src
        self.current = Span(location=100.0, dimension="height", line_color="#555555", line_dash="dotted", line_width=2)
        fig.add_layout(self.current)
        self.figure, self.legend = fig, legend

    def update(self, curve, num_samples):
        self.current.location = float(num_samples)
        drawn = False
        for key, src in self.sources.items():
            c = curve.get(key) if curve and "error" not in curve else None
            self.items[key].visible = c is not None
            if c is None:
                assign(src, {"S": [], "dmean": [], "dvar": []})
                continue
            keep = [i for i, (a, b) in enumerate(zip(c["dmean"], c["dvar"])) if a > 0 and b > 0]
            assign(src, {"S": np.asarray(curve["S"], float)[keep], "dmean": np.asarray(c["dmean"])[keep],
                         "dvar": np.asarray(c["dvar"])[keep]})
            drawn = True
        self.placeholder.visible = not drawn
        if curve and "error" in curve:
            self.figure.title.text = f"Estimator variance: not measured ({curve['error']})"
        elif drawn:
            self.figure.title.text = ("Estimator variance against S at the fitted "
                                      f"{LABELS.get(curve.get('posterior'), '')} marginals (solid: d/dmean, "
                                      "dashed: d/dvariance)")
        else:
            self.figure.title.text = "Estimator variance against S (after a fit)"
