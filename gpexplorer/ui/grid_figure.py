"""The inter-domain grid's figure (thesis figs. 4.6 and 4.11 in one page): a heat map of test
RMSE over (M, C) for each variant of the grid and the storage-vs-NLPD frontier.

A standalone Bokeh HTML file with its JavaScript inline, so it opens offline; hovering a cell
or a point gives its numbers. The numbers, frontiers included, come from
:func:`gpexplorer.experiments.inter_domain_grid.run` (its result is all this module reads: the
pages import nothing from ``experiments``); nothing is computed here but the layout.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
from bokeh.embed import file_html
from bokeh.layouts import column, row
from bokeh.models import ColumnDataSource, Div, HoverTool
from bokeh.palettes import Category10, Viridis256
from bokeh.plotting import figure
from bokeh.resources import INLINE
from bokeh.transform import linear_cmap

__all__ = ["grid_layout", "write_figure"]

VARIANT_TITLES = {"clean": "clean", "noisy": "noisy copy (+0.4 s.d.)", "noisy-0.05": "noisy copy (+0.05 s.d.)",
                  "fixed": "fixed hyperparameters"}


def _variants(result):
    return [v for v in VARIANT_TITLES if any(r["variant"] == v for r in result["rows"])]


def _heat_map(result, variant):
    rows = [r for r in result["rows"] if r["variant"] == variant]
    low, high = _range([r["rmse"] for r in rows])
    Ms, Cs = [str(M) for M in result["Ms"]], [str(C) for C in result["Cs"]]
    source = ColumnDataSource({"M": [str(r["M"]) for r in rows], "C": [str(r["C"]) for r in rows],
                               "rmse": [r["rmse"] for r in rows], "nlpd": [r["nlpd"] for r in rows],
                               "label": [f"{r['rmse']:.3f}" for r in rows],
                               "ink": ["black" if r["rmse"] > (low + high) / 2 else "white" for r in rows]})
    p = figure(x_range=Cs, y_range=Ms, width=330, height=300, toolbar_location=None,
               title=f"test RMSE, {VARIANT_TITLES[variant]}", x_axis_label="C (deltas per inducing variable)",
               y_axis_label="M (inducing variables)")
    p.rect("C", "M", 1, 1, source=source, line_color=None,
           fill_color=linear_cmap("rmse", Viridis256, low, high))
    p.text("C", "M", text="label", source=source, text_align="center", text_baseline="middle",
           text_font_size="9pt", text_color="ink")
    p.add_tools(HoverTool(tooltips=[("M", "@M"), ("C", "@C"), ("RMSE", "@rmse{0.0000}"), ("NLPD", "@nlpd{0.0000}")]))
    p.grid.visible = False
    return p


def _frontier_plot(result):
    p = figure(x_axis_type="log", width=900, height=380, title="test NLPD against model size (lines: frontiers)",
               x_axis_label="model size: M + M² + MC(D+1) numbers", y_axis_label="test NLPD",
               tools="pan,wheel_zoom,box_zoom,reset,save")
    for colour, v in zip(Category10[10], _variants(result)):
        rows = [r for r in result["rows"] if r["variant"] == v]
        source = ColumnDataSource({"storage": [r["storage"] for r in rows], "nlpd": [r["nlpd"] for r in rows],
                                   "M": [r["M"] for r in rows], "C": [r["C"] for r in rows],
                                   "rmse": [r["rmse"] for r in rows]})
        dots = p.scatter("storage", "nlpd", source=source, size=7, color=colour, alpha=0.75,
                         legend_label=VARIANT_TITLES[v])
        p.add_tools(HoverTool(renderers=[dots], tooltips=[("variant", v), ("M", "@M"), ("C", "@C"),
                                                          ("size", "@storage"), ("NLPD", "@nlpd{0.0000}"),
                                                          ("RMSE", "@rmse{0.0000}")]))
        front = result["frontiers"][v]
        p.line([r["storage"] for r in front], [r["nlpd"] for r in front], color=colour, line_width=2)
    p.legend.click_policy = "hide"
    p.add_layout(p.legend[0], "right")  # beside the plot, never over the points
    return p


def _range(values):
    values = np.asarray(values, dtype=float)
    low, high = float(np.nanmin(values)), float(np.nanmax(values))
    return low, (high if high > low else low + 1e-12)


def grid_layout(result):
    """The Bokeh layout: a title, one heat map per variant (each its own colour scale: the
    variants' errors differ more than the cells of one), the frontier."""
    title = Div(text=f"<h3>{result['dataset']}: VFE with sums of deltas (thesis §4.5)</h3>"
                     f"<p>{result['n_train']} training / {result['n_test']} test rows; darker cells: lower "
                     "RMSE (each map has its own colour scale); hover for the numbers.</p>", width=1000)
    maps = row(*[_heat_map(result, v) for v in _variants(result)])
    return column(title, maps, _frontier_plot(result))


def write_figure(result, path):
    """Save the figure as one self-contained HTML file at ``path``; returns the path."""
    path = Path(path)
    path.write_text(file_html(grid_layout(result), INLINE, title="inter-domain grid"), encoding="utf-8")
    return path
