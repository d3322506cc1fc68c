"""The linearised lab's free-energy profile figure: F (EGP eq. 41, EKS eq. 20) and the test NLPD
of f* along one hyperparameter, each method around the values it is shown at.

:func:`gpexplorer.linearized.comparison.profile_methods` computes the profiles (on a
:class:`~gpexplorer.ui.jobs.BackgroundJob`'s worker); :class:`ProfileFigure` draws them. It makes
visible what learning climbs and what the metrics table scores: on tanh(2f) the EGP's F peaks at
a smaller kernel variance than its NLPD's minimum. Sources (handles of the browser tests):
``profile-<method>`` (value, F, NLPD, status), ``profile-current`` (each method's shown value and
its F), ``profile-diverged``.
"""

from __future__ import annotations

import numpy as np
from bokeh.models import ColumnDataSource, HoverTool, LinearAxis, Range1d

from gpexplorer.linearized.comparison import METHODS
from gpexplorer.ui.linearized.figures import COLORS, DASH
from gpexplorer.ui.plotting import assign, lab_figure, legend_item, outside_legend

#: the NLPD axis ends at this percentile of the profiled NLPDs (higher points leave the plot; hover shows them)
NLPD_AXIS_PERCENTILE = 60
PARAMETER_LABELS = {"variance": "kernel variance (EKS/UKS: weight variance)", "lengthscale": "lengthscale",
                    "noise_variance": "noise variance"}
_EMPTY = {"value": [], "F": [], "nlpd": [], "status": [], "method": []}
_PLACEHOLDER = {"value": [0.1, 10.0], "F": [0.0, 1.0]}


class ProfileFigure:
    """F of each method against the profiled hyperparameter (log axis; left), the NLPD of f* on
    the test points (thin, dotted; right axis), a star at each method's shown value and an x where
    the inner loop stopped on 'diverge'. Failed points are left out (a gap in the line)."""

    def __init__(self):
        fig = lab_figure("profile", "Free energy along a hyperparameter: press 'Profile free energy'", 330,
                      x_axis_type="log")
        fig.yaxis.axis_label = "free energy F (eq. 41 / EKS eq. 20)"
        self.nlpd_range = Range1d(0.0, 1.0)
        fig.extra_y_ranges = {"nlpd": self.nlpd_range}
        fig.add_layout(LinearAxis(y_range_name="nlpd", axis_label="NLPD of f* (test points, dotted)"), "right")
        legend = outside_legend(fig)
        self.sources, self.items, hover = {}, {}, []
        for m in METHODS:
            src = ColumnDataSource(dict(_EMPTY), name=f"profile-{m}")
            r_f = fig.line("value", "F", source=src, color=COLORS[m], line_width=2, line_dash=DASH[METHODS[m].family])
            r_dots = fig.scatter("value", "F", source=src, color=COLORS[m], size=5)
            r_nlpd = fig.line("value", "nlpd", source=src, color=COLORS[m], line_width=1, line_dash="dotted",
                              y_range_name="nlpd")
            self.items[m] = legend_item(METHODS[m].label, [r_f, r_dots, r_nlpd], visible=False)
            legend.items.append(self.items[m])
            self.sources[m] = src
            hover.append(r_dots)
        # an empty plot's data ranges cannot be set (BokehJS warns "could not set initial ranges"
        # on every render): until a profile is drawn an invisible placeholder spans them
        self.placeholder = ColumnDataSource(dict(_PLACEHOLDER), name="profile-placeholder")
        r_placeholder = fig.scatter("value", "F", source=self.placeholder, alpha=0.0)
        fig.y_range.renderers = hover + [r_placeholder]  # the NLPD lines live on their own axis
        self.current = ColumnDataSource({"value": [], "F": [], "color": [], "method": []}, name="profile-current")
        r_current = fig.scatter("value", "F", source=self.current, marker="star", size=18, color="color",
                                line_color="black")
        self.diverged = ColumnDataSource({"value": [], "F": []}, name="profile-diverged")
        r_div = fig.scatter("value", "F", source=self.diverged, marker="x", size=12, line_width=2, color="red")
        legend.items.append(legend_item("shown value", [r_current]))
        self.diverged_item = legend_item("diverged", [r_div], visible=False)
        legend.items.append(self.diverged_item)
        fig.add_tools(HoverTool(renderers=hover, tooltips=[
            ("method", "@method"), ("value", "@value{0.0000}"), ("F", "@F{0.000}"), ("NLPD f*", "@nlpd{0.000}"),
            ("inner loop", "@status")]))
        self.figure, self.legend, self.parameter = fig, legend, None
        legend.visible = False

    def update(self, profiles, parameter, shown):
        """``profiles``: method -> Profile; ``shown``: method -> (value, F) the other views use."""
        nlpds = self._draw(profiles, shown)
        if nlpds:  # far from the shown value the NLPD soars; the axis keeps its low part readable
            lo, hi = min(nlpds), float(np.percentile(nlpds, NLPD_AXIS_PERCENTILE))
            pad = 0.05 * max(hi - lo, 1e-3)
            self.nlpd_range.start, self.nlpd_range.end = lo - pad, hi + pad
        label = PARAMETER_LABELS[parameter]
        self.figure.xaxis.axis_label = label
        what = "Free energy and test NLPD" if nlpds else "Free energy"  # an uploaded CSV has no true f
        self.figure.title.text = f"{what} along the {label} (others held; star: shown value)"
        self.parameter = parameter

    def clear(self, reason):
        self._draw({}, {})
        self.figure.title.text = f"Free energy along a hyperparameter: {reason}"
        self.parameter = None

    def _draw(self, profiles, shown):
        """Rewrite every source from ``profiles`` (methods without one are emptied); returns the
        finite NLPDs drawn."""
        current = {"value": [], "F": [], "color": [], "method": []}
        diverged = {"value": [], "F": []}
        nlpds = []
        if not profiles:  # the placeholder first: the ranges never see every source empty at once
            assign(self.placeholder, dict(_PLACEHOLDER))
        for m in METHODS:
            p = profiles.get(m)
            self.items[m].visible = p is not None
            if p is None:
                assign(self.sources[m], dict(_EMPTY))
                continue
            status = np.array(p.status)
            ok = status != "failed"
            assign(self.sources[m], {"value": p.values[ok], "F": p.free_energy[ok], "nlpd": p.scores[ok],
                                     "status": status[ok].tolist(), "method": [METHODS[m].label] * int(ok.sum())})
            nlpds += [v for v in p.scores[ok] if np.isfinite(v)]
            div = status == "diverged"
            diverged["value"] += p.values[div].tolist()
            diverged["F"] += p.free_energy[div].tolist()
            if m in shown and np.isfinite(shown[m][1]):
                current["value"].append(shown[m][0]), current["F"].append(shown[m][1])
                current["color"].append(COLORS[m]), current["method"].append(METHODS[m].label)
        assign(self.current, current)
        assign(self.diverged, diverged)
        if profiles:
            assign(self.placeholder, {"value": [], "F": []})
        self.diverged_item.visible = bool(diverged["value"])
        self.legend.visible = bool(profiles)  # no legend box beside an empty plot
        return nlpds
