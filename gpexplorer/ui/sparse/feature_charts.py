"""Bokeh charts of the inducing features (thesis ch. 4): the strip of basis functions under
the posterior, and the bound against one feature's position with its zoom (fig. 4.4)."""

from __future__ import annotations

import numpy as np
from bokeh.models import ColumnDataSource, PointDrawTool, Span
from bokeh.palettes import Category10_10
from bokeh.transform import linear_cmap

from gpexplorer.ui.plotting import (assign, assign_changed, lab_figure, range_placeholder, share_x_frame,
                                   vertical_marker)

__all__ = ["FeatureStrip", "PositionChart"]

TICK_HEIGHT = 0.35  # of a sum of deltas' ticks, in the strip's units (Kuf / sigma^2)


# a numeric column mapped in the browser, not a string colour column: a held update growing a
# string column from 0 rows broke BokehJS 3.9's decoder (see ui/sparse/figures.py)
def _color():
    """A fresh mapper for each glyph: a Bokeh model belongs to one session's document."""
    return linear_cmap("k", list(Category10_10), -0.5, 9.5)


class FeatureStrip:
    """Kuf(x, z_m) / sigma^2 of every feature as a curve, one colour each; a sum of deltas also
    gets a tick at each of its C locations, the ticks of one feature joined."""

    def __init__(self, x_range=None):
        kw = {"x_range": x_range} if x_range is not None else {}
        fig = lab_figure("feature-strip", "Inducing features: basis functions Kuf(x, z_m) / σ²", 170, **kw)
        share_x_frame(fig)  # the posterior's x frame, to the pixel: each bump under its triangle
        fig.yaxis.axis_label = "Kuf / σ²"
        fig.add_layout(Span(location=0, dimension="width", line_color="#999999", line_width=1))
        self.curves = ColumnDataSource({"xs": [], "ys": [], "k": []}, name="feature-curves")
        fig.multi_line("xs", "ys", line_color=_color(), line_width=2, line_alpha=0.85, source=self.curves)
        self.ticks = ColumnDataSource({"xs": [], "ys": [], "k": []}, name="feature-ticks")
        fig.multi_line("xs", "ys", line_color=_color(), line_width=2, source=self.ticks)
        # a sum of deltas' locations, draggable one by one (member, delta index)
        self.deltas = ColumnDataSource({"x": [], "y": [], "k": [], "member": [], "delta": []}, name="feature-deltas")
        handles = fig.scatter("x", "y", source=self.deltas, size=9, fill_color=_color(), line_color="black")
        drag = PointDrawTool(renderers=[handles], add=False, description="Drag a delta location")
        fig.add_tools(drag)
        fig.toolbar.active_drag = drag
        self.placeholder = range_placeholder(fig)
        self.figure = fig

    def update(self, grid, basis, delta_positions=None, weights=None):
        """``basis`` [M, G] on ``grid`` [G]; ``delta_positions``/``weights`` [M, C] for sums of deltas."""
        basis = np.asarray(basis, dtype=np.float32)  # a drawn curve: half the bytes on every drag
        M = basis.shape[0]
        assign_changed(self.curves, {"xs": [grid] * M, "ys": list(basis), "k": np.arange(M) % 10})
        xs, ys, ks = [], [], []
        handles = {"x": [], "y": [], "k": [], "member": [], "delta": []}
        if delta_positions is not None:
            for m, (z, w) in enumerate(zip(delta_positions, weights)):
                order = np.argsort(z)
                top = TICK_HEIGHT * np.sign(w[order]) * np.maximum(np.abs(w[order]) / max(np.abs(w).max(), 1e-300), 0.2)
                # each tick from 0 to its weight's height, the ticks joined along their tops
                x = np.concatenate([[z[k], z[k], np.nan] for k in order] + [z[order]])
                y = np.concatenate([[0.0, t, np.nan] for t in top] + [top])
                xs.append(x), ys.append(y), ks.append(m % 10)
                for j, k in enumerate(order):
                    for key, v in zip(handles, (z[k], top[j], m % 10, m, k)):
                        handles[key].append(v)
        assign_changed(self.ticks, {"xs": xs, "ys": ys, "k": ks})
        assign_changed(self.deltas, {key: np.asarray(v) for key, v in handles.items()})
        self.placeholder.visible = basis.size == 0


class PositionChart:
    """The VFE bound against the selected feature's position (left) and a zoom around where it sits
    (right), each with the feature's current position marked."""

    def __init__(self):
        self.figures, self.sources, self.markers, self.placeholders = [], [], [], []
        for key, title in (("coarse", "Bound against the selected feature's position"),
                           ("zoom", "Zoom around the selected feature")):
            fig = lab_figure(f"position-{key}", title, 260)
            fig.xaxis.axis_label, fig.yaxis.axis_label = "position of the selected feature", "VFE bound"
            source = ColumnDataSource({"x": [], "bound": []}, name=f"position-{key}-curve")
            fig.line("x", "bound", source=source, line_width=2, color="#1f77b4")
            fig.scatter("x", "bound", source=source, size=3, color="#1f77b4")
            self.markers.append(vertical_marker(fig, color="#2ca02c"))
            self.placeholders.append(range_placeholder(fig))
            self.figures.append(fig)
            self.sources.append(source)

    def update(self, coarse, zoom, position, title=None):
        """``coarse``/``zoom``: :class:`gpexplorer.sparse.feature_position.PositionCurve`."""
        for source, curve, placeholder, marker in zip(self.sources, (coarse, zoom), self.placeholders, self.markers):
            bound = np.where(np.isfinite(curve.bound), curve.bound, np.nan)
            assign(source, {"x": curve.grid, "bound": bound})
            placeholder.visible = False
            marker.location = float(position)
        x, b = coarse.best
        zx, zb = zoom.best
        # short: two charts side by side in 1024 px of presenter type
        self.figures[0].title.text = title or (f"Bound vs position: highest {b:.2f} at {x:.3f} "
                                               f"(jitter {coarse.jitter:.0e})")
        self.figures[1].title.text = f"Zoom on the feature: highest {zb:.2f} at {zx:.4f}"

    def clear(self, message):
        for source, placeholder in zip(self.sources, self.placeholders):
            assign(source, {"x": [], "bound": []})
            placeholder.visible = True
        self.figures[0].title.text = message
