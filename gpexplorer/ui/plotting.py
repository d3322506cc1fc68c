"""Bokeh helpers every lab's figures share: the figure frame, a legend beside the plot, legend
items, dotted markers, and :func:`assign`, which rewrites a ColumnDataSource only when needed.

Live pages update named ColumnDataSources in place (no re-rendered elements): zoom and tool
state stay as the user left them, and only arrays travel over the websocket.
"""

from __future__ import annotations

import numpy as np
from bokeh.models import GlyphRenderer, Legend, LegendItem, Span
from bokeh.plotting import figure as bokeh_figure

__all__ = ["TOOLS", "lab_figure", "outside_legend", "legend_item", "vertical_marker", "assign", "assign_changed",
           "range_placeholder", "share_x_frame", "SHARED_FRAME_BORDERS"]

TOOLS = "pan,wheel_zoom,box_zoom,reset,save"  # save = PNG export of the figure


def lab_figure(name, title, height, **kw):
    """A full-width figure with the labs' tools above it and no Bokeh logo; ``name`` is the
    handle the browser tests find it by."""
    fig = bokeh_figure(name=name, title=title, height=height, sizing_mode="stretch_width", tools=TOOLS,
                       toolbar_location="above", **kw)
    fig.toolbar.logo = None
    fig.on_change("renderers", _lean_renderers)
    return fig


def _lean_renderers(attr, old, new):
    """One Bokeh model fewer per glyph: the nonselection glyph is left for BokehJS to derive
    ("auto") instead of a model of its own (the labs select nothing; a dragged point's source
    is selected only while dragged, where the derived glyph looks the same).

    Every session's document holds its own models, and the server's cost of building, walking
    and sending a document grows with their number. (Sharing one CDSView between renderers
    would save more, but BokehJS caches a view's mask for one source length: "Size mismatch".)"""
    for renderer in new:
        if isinstance(renderer, GlyphRenderer) and renderer.nonselection_glyph not in (None, "auto"):
            renderer.nonselection_glyph = "auto"


#: (left, right) borders in pixels of figures stacked on one x frame: room for the widest y axis
#: (ticks and label, presenter mode's larger type included) and for the outside legend (measured in
#: Chromium: 135 px, 155 px in presenter mode)
SHARED_FRAME_BORDERS = (76, 175)


def share_x_frame(fig, x_range=None):
    """Fix ``fig``'s left and right borders to SHARED_FRAME_BORDERS (and share ``x_range``): the
    frames of figures stacked in one column, each this wide, then begin and end at the same pixel
    whatever their axes and legends need (a border is the larger of its minimum and its content),
    so one data x sits at one page x in all of them."""
    fig.min_border_left, fig.min_border_right = SHARED_FRAME_BORDERS
    if x_range is not None:
        fig.x_range = x_range
    return fig


def range_placeholder(fig):
    """An invisible line over (0, 0)-(1, 1) that gives ``fig`` its ranges while it has no data.

    BokehJS warns "could not set initial ranges" at every paint of an auto-ranged figure with
    nothing to range over (hidden figures are painted too). The ranges count only visible
    renderers, so set the returned renderer's ``visible`` to whether the figure is empty."""
    fig.x_range.only_visible = fig.y_range.only_visible = True
    return fig.line([0.0, 1.0], [0.0, 1.0], line_alpha=0.0)


def outside_legend(fig):
    """An empty legend right of the plot (never over the lines); a click hides an entry."""
    legend = Legend(click_policy="hide", location="top_left")  # type size: the document's theme (presenter mode)
    fig.add_layout(legend, "right")
    return legend


def legend_item(label, renderers, **kw):
    """One legend entry for ``renderers``."""
    return LegendItem(label=label, renderers=renderers, **kw)


def vertical_marker(fig, color="#555555"):
    """A dotted vertical line; move it by setting its ``location``."""
    span = Span(location=0.0, dimension="height", line_color=color, line_dash="dotted", line_width=2)
    fig.add_layout(span)
    return span


def assign(source, data, unless_equal=False):
    """Replace a source's data, skipping the websocket message when nothing would change:
    empty stays empty, and with ``unless_equal`` identical arrays are not re-sent."""
    old = source.data
    if set(old) == set(data):
        if all(len(v) == 0 for v in data.values()) and all(len(v) == 0 for v in old.values()):
            return
        if unless_equal and all(np.array_equal(np.asarray(old[k]), np.asarray(v)) for k, v in data.items()):
            return
    source.data = data


def _unchanged_rows(old, new):
    """[rows] bool: row i of column ``old`` equals row i of ``new`` (numbers, NaN == NaN, or arrays)."""
    if isinstance(old, np.ndarray) and isinstance(new, np.ndarray) and old.dtype.kind in "fiub" \
            and new.dtype.kind in "fiub" and old.ndim == new.ndim == 1:
        return (old == new) | (np.isnan(old) & np.isnan(new) if old.dtype.kind == new.dtype.kind == "f" else False)
    return np.array([np.array_equal(np.asarray(a), np.asarray(b), equal_nan=True) for a, b in zip(old, new)], bool)


def assign_changed(source, data, patch_fraction=0.25):
    """Like :func:`assign`, but send only what changed when the rows are the same in number: an
    unchanged column is not sent, a column with few changed rows (at most ``patch_fraction`` of
    them) goes as a patch of those rows, any other changed column alone. For sources of many
    long rows (one curve per feature) where one slider or drag changes one curve or none."""
    old = source.data
    lengths = {len(v) for v in data.values()}
    if set(old) != set(data) or len(lengths) != 1 or any(len(old[k]) != len(v) for k, v in data.items()):
        source.data = data
        return
    patches = {}
    for key, new in data.items():
        changed = np.flatnonzero(~_unchanged_rows(old[key], new))
        if changed.size == 0:
            continue
        if changed.size <= patch_fraction * len(new):
            patches[key] = [(int(i), new[i]) for i in changed]
        else:
            source.data[key] = new
    if patches:
        source.patch(patches)
