"""The sparse lab's inducing-feature side (thesis ch. 4), as a mixin of
:class:`gpexplorer.ui.sparse.lab.SparseRegressionLab`: the markers a feature type is drawn
and dragged by, the selected feature's width and frequency sliders, the strip of basis
functions and the bound against one feature's position."""

from __future__ import annotations

import functools

import numpy as np
import panel as pn

from gpexplorer.sparse.comparison import basis_functions, build_model, default_grid
from gpexplorer.sparse.feature_position import position_curve, zoom_grid
from gpexplorer.ui.sparse import features as lab_features
from gpexplorer.ui.sparse.feature_charts import FeatureStrip, PositionChart

POSITION_POINTS = 120  # coarse sweep; the zoom has as many again
STRIP_POINTS = 300


class FeatureViews:
    """Needs ``self.feature``, ``self.settings``, ``self.dataset``, ``self.posterior``,
    ``self._silenced()``, ``self.parameter_sets()`` and ``self.reference_iterate()`` from the lab."""

    @functools.cached_property
    def strip(self):
        strip = FeatureStrip(self.posterior.figure.x_range)
        strip.deltas.on_change("data", self._on_delta_drag)
        return strip

    def _on_delta_drag(self, attr, old, new):
        """A sum of deltas' delta dragged in the strip: move that delta alone, re-evaluate everything."""
        if self._quiet or self.feature is None or self.feature.delta_positions() is None:
            return
        x, members, deltas = (np.asarray(new.get(k, []), dtype=float) for k in ("x", "member", "delta"))
        if len(x) != self.feature.Z.shape[0] * self.feature.C or not np.all(np.isfinite(x)):
            return
        Z = np.array(self.feature.Z)
        Z[members.astype(int), deltas.astype(int), 0] = x
        if np.array_equal(Z, self.feature.Z):
            return
        self.feature = self.feature.copy().set_parameters(Z=Z)
        self.mode = "manual"
        with pn.io.hold():
            self.refresh()

    @functools.cached_property
    def position_chart(self):
        return PositionChart()

    # what is drawn and dragged ---------------------------------------------------------
    @property
    def Z(self):
        """[M, D] the inducing locations drawn as draggable markers (none for frequency features,
        which all sit at the origin)."""
        return None if self.feature is None else self._markers(self.feature)

    def _draggable(self):
        return lab_features.is_draggable(self.feature)

    def _markers(self, feature):
        if feature is None:
            return None
        if not lab_features.is_draggable(feature):
            return np.empty((0, feature.input_dim))
        return np.asarray(feature.locations, dtype=float)

    # the selected feature's sliders ----------------------------------------------------
    def _selected(self):
        return min(int(self.settings.selected_feature), len(self.feature) - 1)

    def _edit_feature(self, names):
        """Apply the width/frequency sliders to the feature (the selected member where it has its own)."""
        if self.feature is None:
            return
        m, s = self._selected(), self.settings
        if "feature_width" in names:
            self.feature = lab_features.with_width(self.feature, m, s.feature_width)
        if "feature_frequency" in names:
            self.feature = lab_features.with_frequency(self.feature, m, s.feature_frequency)

    def _show_selected_feature(self):
        """Point the sliders at the selected feature's own width and frequency (no re-evaluation)."""
        if self.feature is None:
            return
        s = self.settings
        width, frequency = lab_features.member_values(self.feature, self._selected())
        with self._silenced():
            s.param.selected_feature.bounds = (0, max(len(self.feature) - 1, 1))
            if s.selected_feature > len(self.feature) - 1:
                s.selected_feature = len(self.feature) - 1
            if width is not None:
                s.feature_width = float(np.clip(width, *s.param.feature_width.bounds))
            if frequency is not None:
                s.feature_frequency = float(np.clip(frequency, *s.param.feature_frequency.bounds))
        self._stale_tabs.add("position")
        self._update_tab()

    # views -----------------------------------------------------------------------------
    def _strip_parameters(self, psets):
        """The feature drawn: the reference fit's replayed iterate when showing fits (the one the
        draggable markers show), else the shared one."""
        replayed = self.reference_iterate()
        if replayed is not None and replayed.inducing is not None:
            return replayed
        for name in ("vfe", "fitc", "dtc", "sor"):
            if name in psets and psets[name].inducing is not None:
                return psets[name]
        return self._shared()

    def _update_strip(self, psets):
        p = self._strip_parameters(psets)
        grid = default_grid(self.dataset.X, STRIP_POINTS)
        try:
            basis = basis_functions(p, grid)
        except (ValueError, NotImplementedError, FloatingPointError):
            basis = np.empty((0, grid.shape[0]))
        z = lab_features.delta_positions(p.inducing)
        weights = None if z is None else np.asarray(p.inducing.weights)
        self.strip.update(grid[:, 0], basis, z, weights)

    def _update_position(self, psets):
        """Fig. 4.4: VFE's bound against the selected feature's position, over the inputs and zoomed
        around where the feature is (a narrow peak there, at a near-coincident partner, falls
        between the coarse grid's points)."""
        if not self._draggable():
            self.position_chart.clear("Frequency features have no position: all sit at the origin")
            return
        p = self._strip_parameters(psets)
        m = self._selected()
        lo, hi = default_grid(self.dataset.X, 2)[:, 0]
        model = build_model(self.dataset, "vfe", p)
        jitter = float(self.settings.position_jitter)
        try:
            coarse = position_curve(model, m, np.linspace(lo, hi, POSITION_POINTS), jitter=jitter)
            here = float(p.inducing.locations[m, 0])
            # the feature's own place too: a peak narrower than the zoom's steps is still drawn
            zoom = position_curve(model, m, np.union1d(zoom_grid(coarse, center=here), [here]), jitter=jitter)
        except ValueError as err:
            self.position_chart.clear(f"position sweep unavailable: {err}")
            return
        if not np.any(np.isfinite(coarse.bound)):
            self.position_chart.clear("position sweep: the bound failed everywhere")
            return
        self.position_chart.update(coarse, zoom, float(p.inducing.locations[m, 0]))
