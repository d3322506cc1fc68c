"""The patches lab's charts: the ELBO race (one trace per kernel, live while the race runs) and
the digit canvas' class probabilities with the image the digit model sees.

Sources: ``race-se``, ``race-conv``, ``race-weighted``, ``race-weighted+se`` (iteration, elbo),
``digit-probabilities`` (digit, p, colour) and ``digit-seen`` (the 14 x 14 image).
"""

from __future__ import annotations

import numpy as np
from bokeh.models import HoverTool, LinearColorMapper, Range1d

from gpexplorer.convolutional_fits import LABELS
from gpexplorer.ui.convolutional.figures import GREYS, image_figure, set_image_ranges, source, top_down
from gpexplorer.ui.convolutional.settings import RACE
from gpexplorer.ui.plotting import assign, lab_figure, legend_item, outside_legend, range_placeholder

#: Okabe-Ito, one per kernel of the race
RACE_COLOURS = {"se": "#999999", "conv": "#0072b2", "weighted": "#009e73", "weighted+se": "#d55e00"}
MIN_SPAN = 10.0  # nats: the least the race chart's y range spans below the best final ELBO


def race_range(traces):
    """(low, high) of the ELBO axis: the best final ELBO down to max(MIN_SPAN, 3 x its drop to the
    lowest point of any trace's second half); the prior's start, far below, would flatten the rest."""
    kept = [np.asarray(t["elbo"], float) for t in traces.values() if len(t.get("elbo", []))]
    if not kept:
        return None
    top = max(float(np.max(e)) for e in kept)
    low = min(float(np.min(e[len(e) // 2:])) for e in kept)
    span = max(MIN_SPAN, 3.0 * (top - low))
    return top - span, top + 0.05 * span


class RaceChart:
    """ELBO against iteration of the SE, conv, weighted and weighted + SE fits on one chart."""

    def __init__(self):
        fig = lab_figure("race-figure", "ELBO race (press Race)", 300)
        fig.xaxis.axis_label, fig.yaxis.axis_label = "iteration", "ELBO"
        self.placeholder = range_placeholder(fig)
        fig.y_range = Range1d(-1.0, 0.0)
        legend = outside_legend(fig)
        self.sources, self.items, hover = {}, {}, []
        for kind in RACE:
            src = source(f"race-{kind}", {"iteration": [], "elbo": []})
            line = fig.line("iteration", "elbo", source=src, color=RACE_COLOURS[kind], line_width=2.5)
            hover.append(fig.scatter("iteration", "elbo", source=src, color=RACE_COLOURS[kind], size=3))
            self.items[kind] = legend_item(LABELS[kind], [line, hover[-1]])
            legend.items.append(self.items[kind])
            self.sources[kind] = src
        fig.add_tools(HoverTool(renderers=hover, tooltips=[("iteration", "@iteration"), ("ELBO", "@elbo{0.00}")]))
        self.figure = fig

    def update(self, traces, running=False):
        """``traces``: kind -> {"iteration", "elbo"} (the running race's or the finished one's)."""
        drawn = False
        for kind, src in self.sources.items():
            t = traces.get(kind)
            ok = bool(t and len(t["iteration"]))
            self.items[kind].visible = ok
            assign(src, {"iteration": list(t["iteration"]), "elbo": list(t["elbo"])} if ok else
                   {"iteration": [], "elbo": []})
            drawn = drawn or ok
        rng = race_range(traces)
        if rng is not None:
            self.figure.y_range.start, self.figure.y_range.end = rng
        self.placeholder.visible = not drawn
        state = "racing" if running else "finished"
        self.figure.title.text = (f"ELBO race ({state}): one fit per kernel on the same images" if drawn
                                  else "ELBO race: press Race to fit the four kernels")

    def lengths(self):
        return {k: len(s.data["iteration"]) for k, s in self.sources.items()}


class DigitCharts:
    """p(digit | drawing) as ten bars (the most probable one highlighted) and the pooled,
    centred 14 x 14 image the model classifies."""

    def __init__(self):
        fig = lab_figure("digit-probabilities-figure", "Class probabilities of your drawing", 260)
        fig.toolbar.autohide = True
        fig.x_range = Range1d(-0.6, 9.6)
        fig.y_range = Range1d(0.0, 1.05)
        fig.xaxis.axis_label, fig.yaxis.axis_label = "digit", "p(digit | drawing)"
        fig.xaxis.ticker = list(range(10))
        self.probs = source("digit-probabilities", {"digit": list(range(10)), "p": [0.0] * 10,
                                                    "colour": ["#9aa3ad"] * 10})
        bars = fig.vbar("digit", top="p", width=0.75, source=self.probs, color="colour")
        fig.add_tools(HoverTool(renderers=[bars], tooltips=[("digit", "@digit"), ("p", "@p{0.000}")]))
        self.figure = fig
        seen = image_figure("digit-seen-figure", "What the model sees", 140)
        seen.toolbar_location = None
        seen.xaxis.axis_label, seen.yaxis.axis_label = "column", "row"
        self.seen = source("digit-seen", {"image": [], "x": [], "y": [], "dw": [], "dh": []})
        seen.image("image", x="x", y="y", dw="dw", dh="dh", source=self.seen,
                   color_mapper=LinearColorMapper(palette=GREYS, low=0.0, high=1.0))
        self.seen_fig = seen

    def update(self, probabilities, seen, side):
        if probabilities is None:
            assign(self.probs, {"digit": list(range(10)), "p": [0.0] * 10, "colour": ["#9aa3ad"] * 10},
                   unless_equal=True)
            self.figure.title.text = "Class probabilities: draw a digit on the canvas"
        else:
            p = np.asarray(probabilities, float)
            best = int(np.argmax(p))
            assign(self.probs, {"digit": list(range(10)), "p": p,
                                "colour": ["#d55e00" if d == best else "#0072b2" for d in range(10)]})
            self.figure.title.text = f"Looks like a {best} (p = {p[best]:.2f})"
        if seen is None:
            assign(self.seen, {n: [] for n in self.seen.data})
            return
        set_image_ranges(self.seen_fig, side, side)
        assign(self.seen, {"image": [top_down(np.asarray(seen).reshape(side, side))], "x": [0.0], "y": [-float(side)],
                           "dw": [float(side)], "dh": [float(side)]})
