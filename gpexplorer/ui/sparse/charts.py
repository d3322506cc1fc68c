"""Bokeh charts of objectives: the bound sandwich, the term decomposition (eq. 3.1), the
optimisation trace, the add-one-inducing-input curves (thesis fig. 3.2) and the M sweep
(fig. 3.5-3.7). Like ``figures``, each chart rewrites named ColumnDataSources in place.
"""

from __future__ import annotations

import numpy as np
from bokeh.models import ColumnDataSource, FactorRange, Span

from gpexplorer.sparse import objectives
from gpexplorer.sparse.comparison import APPROXIMATIONS, LABELS, TERMS
from gpexplorer.ui.plotting import assign, lab_figure, legend_item, outside_legend, range_placeholder, vertical_marker
from gpexplorer.ui.sparse.figures import COLORS

SPARSE = objectives.APPROXIMATIONS
TERM_LABELS = {"complexity": "complexity", "data_fit": "data fit", "trace": "trace", "total": "total"}
TERM_COLORS = {"complexity": "#9467bd", "data_fit": "#2ca02c", "trace": "#ff7f0e", "total": "#000000"}
DASHES = {"exact": "solid", "vfe": "solid", "fitc": "dashed", "dtc": "dotted", "sor": "dotdash"}
#: the outline of an evidence dot that overestimates log p(y) (the badges' "above-exact" and
#: "above-upper-bound"): black like the exact tick it is right of; a cross inside when the upper
#: bound alone proves it. Black and a marker shape, so no colour vision is needed to see either.
OVERESTIMATE_OUTLINE = "#000000"
OVERESTIMATE_MARKERS = {"above-exact": "circle", "above-upper-bound": "circle_x"}


class SandwichChart:
    """One row per approximation at its parameters: its evidence (dot), the exact log p(y) (black
    tick) and Titsias' upper bound at the same parameters (the bar between them). VFE's dot must
    sit left of the tick (eq. 2.37 <= log p(y) <= eq. 2.38). A dot right of the tick overestimates
    log p(y): black outline (badge "above-exact"); right of the bar's end too, the upper bound
    alone proves it: black outline with a cross (badge "above-upper-bound")."""

    def __init__(self):
        self.rows = FactorRange(factors=[LABELS[n] for n in reversed(SPARSE)])
        fig = lab_figure("sandwich", "Bound sandwich: evidence vs exact log p(y) and upper bound", 250,
                      y_range=self.rows)
        fig.xaxis.axis_label = "log marginal likelihood (or bound)"
        legend = outside_legend(fig)
        self.bar = ColumnDataSource({"row": [], "exact": [], "upper": []}, name="sandwich-bar")
        r_bar = fig.hbar(y="row", left="exact", right="upper", height=0.35, source=self.bar,
                         fill_color="#cccccc", line_color="#888888")
        self.exact = ColumnDataSource({"row": [], "x": []}, name="sandwich-exact")
        r_exact = fig.scatter("x", "row", source=self.exact, marker="dash", size=22, angle=np.pi / 2,
                              line_width=3, color="black")
        self.evidence = ColumnDataSource({"row": [], "x": [], "color": [], "line": [], "marker": []},
                                         name="sandwich-evidence")
        r_ev = fig.scatter("x", "row", source=self.evidence, size=14, fill_color="color", line_color="line",
                           line_width=3, marker="marker")
        self.tight = ColumnDataSource({"row": [], "x": []}, name="sandwich-tight")
        r_tight = fig.scatter("x", "row", source=self.tight, marker="inverted_triangle", size=12, color="#555555")
        legend.items.extend([legend_item("exact .. upper bound", [r_bar]), legend_item("exact log p(y)", [r_exact]),
                             legend_item("approximation", [r_ev])])
        self.tight_item = legend_item("upper bound, Z optimised", [r_tight], visible=False)
        legend.items.append(self.tight_item)
        self.figure = fig

    def update(self, comparison):
        rows, bar, exact, tight = [], {"row": [], "exact": [], "upper": []}, {"row": [], "x": []}, {"row": [], "x": []}
        ev = {"row": [], "x": [], "color": [], "line": [], "marker": []}
        # the dots say what the badges say: one claim, one computation (comparison.badges)
        flags = {b.approximation: b.kind for b in comparison.badges if b.kind in OVERESTIMATE_MARKERS}
        for name in APPROXIMATIONS:
            r = comparison.results.get(name)
            if r is None or r.error:
                continue
            row = LABELS[name]
            rows.append(row)
            exact["row"].append(row), exact["x"].append(r.exact_at_params)
            if name != "exact":
                flag = flags.get(name)
                if np.isfinite(r.tightened_upper_bound):
                    tight["row"].append(row), tight["x"].append(r.tightened_upper_bound)
                bar["row"].append(row), bar["exact"].append(r.exact_at_params), bar["upper"].append(r.upper_bound)
                ev["row"].append(row), ev["x"].append(r.log_evidence), ev["color"].append(COLORS[name])
                ev["line"].append(OVERESTIMATE_OUTLINE if flag else COLORS[name])
                ev["marker"].append(OVERESTIMATE_MARKERS.get(flag, "circle"))
        self.rows.factors = list(reversed(rows)) or ["-"]
        for source, data in ((self.bar, bar), (self.exact, exact), (self.evidence, ev), (self.tight, tight)):
            assign(source, data)
        self.tight_item.visible = bool(tight["x"])


class TermsChart:
    """Eq. 3.1's terms of log p(y) (or the bound) for every approximation, side by side."""

    def __init__(self):
        self.x_range = FactorRange(factors=[("VFE", "complexity")])
        fig = lab_figure("terms", "Terms of the objective (eq. 3.1, constant omitted)", 260, x_range=self.x_range)
        fig.xaxis.major_label_orientation = 0.9
        fig.xaxis.axis_label, fig.yaxis.axis_label = "approximation: term", "contribution to log p(y)"
        self.source = ColumnDataSource({"x": [], "value": [], "color": []}, name="terms-bars")
        fig.vbar(x="x", top="value", width=0.8, source=self.source, fill_color="color", line_color="color")
        self.figure = fig

    def update(self, comparison):
        xs, values, colors = [], [], []
        for name, r in comparison.results.items():
            if r.error:
                continue
            for t in TERMS:
                if t == "trace" and name != "vfe":
                    continue
                xs.append((LABELS[name], TERM_LABELS[t])), values.append(r.terms[t]), colors.append(TERM_COLORS[t])
        self.x_range.factors = xs or [("-", "-")]
        self.source.data = {"x": xs, "value": values, "color": colors}


class _Series:
    """Many labelled lines in one multi_line renderer (one Bokeh glyph, legend by label).

    One renderer instead of one per series keeps page construction fast: Bokeh model creation
    dominated the lab's start-up with 80 renderers."""

    def __init__(self, fig, name):
        self.source = ColumnDataSource({"xs": [], "ys": [], "color": [], "dash": [], "label": []}, name=name)
        fig.multi_line(xs="xs", ys="ys", line_color="color", line_dash="dash", line_width=2,
                       legend_field="label", source=self.source)
        legend = fig.legend[0]
        legend.click_policy, legend.location = "hide", "top_left"  # type size: the document's theme
        fig.center.remove(legend)
        fig.add_layout(legend, "right")  # beside the plot, never over the lines
        legend.visible = False  # an empty legend is an empty box: shown with the first series
        self._legend, self._pending = legend, None

    def __enter__(self):
        self._pending = {k: [] for k in self.source.data}
        return self

    def add(self, x, y, color, dash, label):
        for k, v in zip(("xs", "ys", "color", "dash", "label"), (np.asarray(x), np.asarray(y), color, dash, label)):
            self._pending[k].append(v)

    def __exit__(self, *exc):
        assign(self.source, self._pending)
        self._legend.visible = bool(self._pending["label"])
        self._pending = None

    def get(self, label):
        """(x, y) of the series called ``label`` (for tests and exports)."""
        i = list(self.source.data["label"]).index(label)
        return self.source.data["xs"][i], self.source.data["ys"][i]

    @property
    def labels(self):
        return list(self.source.data["label"])


class TraceCharts:
    """Log evidence and its terms against L-BFGS-B iteration; a marker follows the replay slider."""

    def __init__(self):
        fig = lab_figure("trace", "Optimisation trace: objective against iteration", 260)
        fig.xaxis.axis_label, fig.yaxis.axis_label = "iteration", "log p(y) (or bound)"
        self.objective = _Series(fig, "trace-objective")
        terms = lab_figure("trace-terms", "Terms against iteration", 280)
        terms.xaxis.axis_label, terms.yaxis.axis_label = "iteration", "term of log p(y)"
        self.terms = _Series(terms, "trace-terms-curves")
        self.figure, self.terms_figure = fig, terms
        self.markers = [vertical_marker(fig), vertical_marker(terms)]
        self.placeholders = [range_placeholder(fig), range_placeholder(terms)]

    def update(self, outcomes):
        outcomes = outcomes or {}
        for p in self.placeholders:
            p.visible = not outcomes
        with self.objective as series:
            for a, o in outcomes.items():
                series.add(np.arange(len(o.log_evidence)), o.log_evidence, COLORS[a], "solid", LABELS[a])
        with self.terms as series:
            for a, o in outcomes.items():
                for t in TERMS:
                    if t != "trace" or a == "vfe":
                        series.add(np.arange(len(o.terms)), [d[t] for d in o.terms], TERM_COLORS[t], DASHES[a],
                                   f"{LABELS[a]} {TERM_LABELS[t]}")

    def mark(self, iteration):
        for m in self.markers:
            m.location = iteration


class AddOneChart:
    """Thesis fig. 3.2: change of each term when one inducing input is added at z*."""

    def __init__(self):
        fig = lab_figure("add-one", "Adding one inducing input at z*: change of each term", 300)
        fig.xaxis.axis_label, fig.yaxis.axis_label = "z*", "change in log p(y) term"
        fig.add_layout(Span(location=0, dimension="width", line_color="#888888", line_width=1))
        self.series = _Series(fig, "add-one-curves")
        self.figure, self.placeholder = fig, range_placeholder(fig)

    def update(self, curves):
        self.placeholder.visible = not curves
        with self.series as series:
            for a, c in curves.items():
                z = np.asarray(c["candidates"])[:, 0]
                for t in TERMS + ("total",):
                    if t != "trace" or a == "vfe":
                        series.add(z, c["delta"][t], TERM_COLORS[t], DASHES[a], f"{LABELS[a]} {TERM_LABELS[t]}")


class SweepCharts:
    """Thesis fig. 3.5-3.7: optimised objective, noise, NLPD and SMSE against M; upper bound."""

    QUANTITIES = (("log_marginal_likelihood", "objective"), ("noise_variance", "noise variance"),
                  ("nlpd", "NLPD"), ("smse", "SMSE"))

    def __init__(self):
        self.figures, self.series, self.exact_lines = [], {}, {}
        for key, label in self.QUANTITIES:
            fig = lab_figure(f"sweep-{key}", f"{label} against M", 230)
            fig.xaxis.axis_label, fig.yaxis.axis_label = "M", label
            self.series[key] = _Series(fig, f"sweep-{key}-curves")
            span = Span(location=np.nan, dimension="width", line_color="black", line_dash="dotted", line_width=2)
            fig.add_layout(span)
            self.exact_lines[key] = span
            self.figures.append(fig)
        self.placeholders = [range_placeholder(f) for f in self.figures]

    def update(self, sweep):
        rows = sweep.get("rows", []) if sweep else []
        for placeholder in self.placeholders:
            placeholder.visible = not rows
        for key, series in self.series.items():
            with series:
                for a in ("fitc", "vfe"):
                    mine = [r for r in rows if r["approximation"] == a]
                    if mine:
                        series.add([r["M"] for r in mine], [r[key] for r in mine], COLORS[a], "solid", LABELS[a])
                        if key == "log_marginal_likelihood":
                            series.add([r["M"] for r in mine], [r["upper_bound"] for r in mine], COLORS[a],
                                       "dashed", f"upper bound at {LABELS[a]}'s optimum")
                            if "upper_bound_tightened" in mine[0]:
                                series.add([r["M"] for r in mine], [r["upper_bound_tightened"] for r in mine],
                                           COLORS[a], "dotted", "same, Z optimised for the bound")
        exact = (sweep or {}).get("exact") or {}
        for key, span in self.exact_lines.items():
            span.location = float(exact[key]) if key in exact else np.nan
