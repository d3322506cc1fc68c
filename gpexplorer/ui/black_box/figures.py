"""Bokeh figures of the black-box lab: the latent posterior, the observation-space predictive and
q(u)'s mixture components, one colour per posterior (FG, MoG1, MoG2).

Each figure owns named ColumnDataSources (``latent-fg``, ``obs-mog2``, ``components-mog2-1``,
...) made in its constructor, so every session's lab has its own; ``update`` rewrites their data
in place (:func:`gpexplorer.ui.plotting.assign`). The names are the handles the browser tests
read. 1-D data are drawn over a grid (mean line and band); N-D data as the test points ordered
by the first shown posterior's latent mean (dots with 90 % / 2 sd bars).
"""

from __future__ import annotations

import numpy as np
from bokeh.models import ColumnDataSource

from gpexplorer.ui.black_box.settings import LABELS, POSTERIORS
from gpexplorer.ui.plotting import assign, lab_figure, legend_item, outside_legend, range_placeholder

#: colour-blind-safe (Okabe-Ito)
COLORS = {"fg": "#d55e00", "mog1": "#0072b2", "mog2": "#009e73"}
BAND_ALPHA = 0.1
#: (width, alpha) of a mean curve: MoG1's is a wide pale line under MoG2's, which often collapses
#: onto it (one weight near zero), so both stay visible where they agree
MEAN_LINE = {"fg": (2, 1.0), "mog1": (6, 0.45), "mog2": (2, 1.0)}
EMPTY_BAND = {"x": [], "mean": [], "lower": [], "upper": []}
#: (posterior, component) pairs the components view has a source for
COMPONENTS = (("fg", 0), ("mog1", 0), ("mog2", 0), ("mog2", 1))
OFFSET = {"fg": -0.25, "mog1": 0.0, "mog2": 0.25}  # of the components' dots, in units of the spacing


def source(name, data):
    return ColumnDataSource(dict(data), name=name)


def order_of(problem, results, shown):
    """N-D views: the test points' order (by the first shown posterior's latent mean)."""
    for p in shown:
        r = results.get(p)
        if r is not None and r.error is None and r.f_mean is not None:
            return np.argsort(r.f_mean, kind="stable")
    return np.arange(problem.X_test.shape[0])


class BandFigure:
    """Per posterior a mean with a band; a black reference (truth) and data points under them."""

    def __init__(self, name, title, prefix, height=300):
        fig = lab_figure(name, title, height)
        self.placeholder = range_placeholder(fig)
        legend = outside_legend(fig)
        self.truth = source(f"{prefix}-truth", {"x": [], "y": []})
        r_truth = fig.line("x", "y", source=self.truth, color="black", line_width=2, line_dash="dashed")
        self.truth_item = legend_item("truth", [r_truth])
        self.data = source(f"{prefix}-data", {"x": [], "y": []})
        r_data = fig.scatter("x", "y", source=self.data, size=4, color="black", alpha=0.45)
        self.data_item = legend_item("data", [r_data])
        legend.items.extend([self.truth_item, self.data_item])
        self.sources, self.items, self.curves, self.dots = {}, {}, {}, {}
        for p in POSTERIORS.values():
            src = source(f"{prefix}-{p}", EMPTY_BAND)
            band = fig.varea("x", "lower", "upper", source=src, fill_color=COLORS[p], fill_alpha=BAND_ALPHA)
            width, alpha = MEAN_LINE[p]
            line = fig.line("x", "mean", source=src, color=COLORS[p], line_width=width, line_alpha=alpha)
            # the band's edges: bands told apart where their fills overlap (a projector mixes them)
            edges = [fig.line("x", edge, source=src, color=COLORS[p], line_width=1, line_alpha=0.8)
                     for edge in ("lower", "upper")]
            bars = fig.segment("x", "lower", "x", "upper", source=src, color=COLORS[p], alpha=0.35)
            dots = fig.scatter("x", "mean", source=src, color=COLORS[p], size=4)
            self.curves[p], self.dots[p] = (band, line, *edges), (bars, dots)
            # one legend entry per drawing style: an entry with a hidden renderer is drawn faded
            self.items[p] = (legend_item(LABELS[p], [band, line, *edges]), legend_item(LABELS[p], [bars, dots]))
            legend.items.extend(self.items[p])
            self.sources[p] = src
        self.figure, self.legend = fig, legend

    def _draw(self, problem, results, shown, moments, order):
        """Write each shown posterior's (mean, lower, upper) = ``moments(result)``."""
        x = problem.grid if problem.one_d else np.arange(len(order), dtype=float)
        drawn = False
        for p in POSTERIORS.values():
            r = results.get(p)
            ok = p in shown and r is not None and r.error is None and r.f_mean is not None
            self.items[p][0].visible, self.items[p][1].visible = ok and problem.one_d, ok and not problem.one_d
            for renderer in self.curves[p]:
                renderer.visible = ok and problem.one_d
            for renderer in self.dots[p]:
                renderer.visible = ok and not problem.one_d
            if not ok:
                assign(self.sources[p], EMPTY_BAND)
                continue
            mean, lower, upper = (np.asarray(a)[order] for a in moments(r))
            assign(self.sources[p], {"x": x, "mean": mean, "lower": lower, "upper": upper})
            drawn = True
        return drawn

    def _finish(self, drawn, title):
        self.placeholder.visible = not (drawn or len(self.data.data["x"]))
        self.figure.title.text = title


class LatentFigure(BandFigure):
    """q(f*) per posterior: mean and 2 sd (1-D: over x with the true f of a toy; N-D: per test point)."""

    def __init__(self):
        super().__init__("latent", "Latent posterior q(f*): mean, central 95 %", "latent")
        self.figure.yaxis.axis_label = "f"

    def update(self, problem, results, shown):
        order = np.arange(len(problem.grid)) if problem.one_d else order_of(problem, results, shown)
        truth = problem.extra.get("f_true")
        assign(self.truth, {"x": problem.grid, "y": truth} if truth is not None else {"x": [], "y": []})
        self.truth_item.visible = truth is not None
        assign(self.data, {"x": [], "y": []})
        self.data_item.visible = False
        self.figure.xaxis.axis_label = problem.x_label
        drawn = self._draw(problem, results, shown, lambda r: (r.f_mean, r.f_lower, r.f_upper), order)
        what = "mean, central 95 %" + (" over x" if problem.one_d else " per test point (by the mean)")
        self._finish(drawn, f"Latent posterior q(f*): {what}")


class ObservationFigure(BandFigure):
    """The predictive in observation space: the intensity with its 90 % band (counts), p(y = 1)
    (binary), or y* with its 90 % band (real targets)."""

    def __init__(self):
        super().__init__("observation", "Observation space", "obs")

    def update(self, problem, results, shown):
        one_d = problem.one_d
        order = np.arange(len(problem.grid)) if one_d else order_of(problem, results, shown)
        self.figure.xaxis.axis_label = problem.x_label
        kinds = {r.obs.get("kind") for p, r in results.items() if p in shown and r.error is None and r.obs}
        if problem.kind == "count" and kinds - {"intensity"}:
            # a likelihood other than the built-in Poisson (a typed one): its predictive of the
            # counts themselves, per bin, not an intensity per year
            data = {"x": problem.X[:, 0], "y": problem.Y[:, 0]}
            label, title = "count per bin", "Predictive count per bin y*, 90 % band (mean +- 1.645 sd); dots: counts"
        elif problem.kind == "count":
            width = problem.extra.get("bin_years", 1.0)
            data = {"x": problem.X[:, 0], "y": problem.Y[:, 0] / width}
            label, title = "events per year", "Intensity per year, 90 % band; dots: counts / bin width"
        elif problem.kind == "binary":
            xs = problem.X[:, 0] if one_d else np.arange(len(order), dtype=float)
            ys = problem.Y[:, 0] if one_d else problem.Y_test[order, 0]
            data, label = {"x": xs, "y": ys}, "p(y = 1)"
            title = ("p(y = 1 | x); dots: training labels" if one_d else
                     "p(y = 1) per test point; dots: true labels")
        else:
            xs = problem.X[:, 0] if one_d else np.arange(len(order), dtype=float)
            ys = problem.Y[:, 0] if one_d else problem.Y_test[order, 0]
            data, label, title = {"x": xs, "y": ys}, "y", "Predictive y* with its 90 % band"
        assign(self.data, data)
        self.data_item.visible = True
        self.truth_item.visible = False
        assign(self.truth, {"x": [], "y": []})
        self.figure.yaxis.axis_label = label
        drawn = self._draw(problem, results, shown, lambda r: (r.obs["mean"], r.obs["lower"], r.obs["upper"]), order)
        self._finish(drawn, title)


class ComponentsFigure:
    """q(u): each mixture component's means at the inducing inputs with 2 sd bars (FG: its
    mean and the band of its full covariance's diagonal); dot size grows with the weight pi_k."""

    def __init__(self):
        fig = lab_figure("components", "q(u) at the inducing inputs: means, 2 sd", 280)
        fig.yaxis.axis_label = "u"
        self.placeholder = range_placeholder(fig)
        legend = outside_legend(fig)
        self.sources, self.items = {}, {}
        for p, k in COMPONENTS:
            src = source(f"components-{p}-{k}", {"z": [], "mean": [], "lower": [], "upper": [], "size": []})
            bars = fig.segment("z", "lower", "z", "upper", source=src, color=COLORS[p], line_width=2, alpha=0.5)
            dots = fig.scatter("z", "mean", source=src, color=COLORS[p], size="size",
                               marker="circle" if k == 0 else "triangle")
            self.items[(p, k)] = legend_item(f"{LABELS[p]} component {k + 1}", [bars, dots])
            legend.items.append(self.items[(p, k)])
            self.sources[(p, k)] = src
        self.figure, self.legend = fig, legend

    def update(self, problem, results, shown):
        self.figure.xaxis.axis_label = "inducing input z" if problem.one_d else "inducing point (index)"
        weights, drawn = [], False
        for (p, k), src in self.sources.items():
            r = results.get(p)
            ok = p in shown and r is not None and r.error is None and k < len(r.components)
            self.items[(p, k)].visible = ok
            if not ok:
                assign(src, {n: [] for n in src.data})
                continue
            c = r.components[k]
            z = np.asarray(c["z"], float)
            spacing = float(np.median(np.diff(np.sort(z)))) if len(z) > 1 else 1.0
            z = z + OFFSET[p] * spacing * (0.5 if problem.one_d else 1.0)
            assign(src, {"z": z, "mean": c["mean"], "lower": c["mean"] - 2 * c["sd"], "upper": c["mean"] + 2 * c["sd"],
                         "size": np.full(len(z), 5.0 + 7.0 * c["pi"])})
            weights.append(f"{c['pi']:.2f}" if p == "mog2" else None)
            drawn = True
        self.placeholder.visible = not drawn
        shown_weights = ("MoG2 pi = " + " / ".join(w for w in weights if w)) if any(weights) else ""
        self.figure.title.text = "q(u) at the inducing inputs: means, 2 sd" + (
            f" ({shown_weights})" if shown_weights else "")
