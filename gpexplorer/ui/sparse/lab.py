"""The sparse-regression lab: FITC, VFE, DTC, SoR and the exact GP side by side, live.

``SparseRegressionLab`` is a Panel Viewer. Everything a user sets lives in its own
:class:`LabSettings` (one per session, mirrored in the URL); every change re-evaluates all
objectives and rewrites the figures' data sources in place. Fits and M sweeps run as
:class:`BackgroundJob` s polled from the session's event loop.

Modes: "manual" shows every approximation at the shared parameters (sliders + the draggable
inducing inputs); "fitted" shows each approximation at its own optimised parameters, at the
iteration chosen by the replay slider. Moving a slider or dragging returns to manual mode;
a finished fit writes the reference approximation's optimum back into the sliders, so the
next fit starts warm from there; while replaying, the draggable Z follow that fit's iterate.
The jobs and what their results change live in :mod:`gpexplorer.ui.sparse.fitting`.
"""

from __future__ import annotations

import functools

import numpy as np
import panel as pn
import param

from gpexplorer.sparse import studies
from gpexplorer.sparse.comparison import LABELS, badges, build_model, compare, default_grid, parameter_key
from gpexplorer.ui.lab_base import LabBase, next_tick
from gpexplorer.ui.markup import TextBlock
from gpexplorer.ui.sparse import features as lab_features
from gpexplorer.ui.sparse import layout
from gpexplorer.ui.sparse.feature_views import FeatureViews
from gpexplorer.ui.sparse.fitting import FitJobs, blas_threads
from gpexplorer.ui.sparse import settings as cfg
from gpexplorer.ui.sparse.charts import AddOneChart, SandwichChart, SweepCharts, TermsChart, TraceCharts
from gpexplorer.ui.sparse.figures import PosteriorFigure, PredictedVsTrueFigure, SplitFigure
from gpexplorer.ui.sparse.readouts import badges_html, bounds_html, noise_html
from gpexplorer.ui.sparse.texts import TABS

ADD_ONE_CANDIDATES = 80
#: posterior samples are drawn on every third grid point (an eigendecomposition of G/3 x G/3),
#: and drawn against those points
SAMPLE_STRIDE = 3


class SparseRegressionLab(FitJobs, FeatureViews, LabBase):
    """The FITC-vs-VFE dashboard; ``SparseRegressionLab()`` in Jupyter or a served app file."""

    mode = param.Selector(default="manual", objects=["manual", "fitted"])
    replay = param.Integer(default=0, bounds=(0, 1), doc="Optimisation iterate shown")
    view_tab = param.Selector(default="trace", objects=list(TABS), doc="Tab shown below the main views")
    one_dimensional = param.Boolean(default=True, doc="Inputs are 1-D: posterior plot, not predicted-vs-true")

    state_filename = "gpexplorer-state.json"
    upload_label = "CSV upload (x..., y; max 2 MB)"

    def __init__(self, **params):
        super().__init__(cfg.LabSettings(), **params)
        self.dataset, self.error = None, None
        self.feature = None  # the shared inducing feature (its locations: the inducing inputs)
        self.fits, self.fit_start, self.sweep = None, None, None
        self.tightened = {}  # parameter_key -> upper bound with Z optimised for it
        self.comparison = None
        self._stale_tabs = set()
        self._type_defaults = set()  # width/frequency settings to set from the new feature type's defaults
        self._build_components()
        # Served, the first evaluation (numba's cache load included) runs just after the page's HTML
        # has gone out, while the browser parses its scripts: the document it then pulls has the data.
        self._connect_settings(self._reload, defer=True)

    # construction ----------------------------------------------------------------------
    def _build_components(self):
        self.posterior = PosteriorFigure()
        self.sandwich, self.terms, self.trace = SandwichChart(), TermsChart(), TraceCharts()
        self.posterior.inducing.on_change("data", self._on_drag)
        self.bounds_readout = TextBlock()
        self.noise_readout = TextBlock()
        self.badge_pane = TextBlock()
        self._build_shared_widgets()
        self._build_fit_buttons()
        self.reset_button = pn.widgets.Button(label="Re-initialise Z")
        self.reset_button.on_click(lambda _: self._reinitialise_Z())
        self.replay_slider = pn.widgets.IntSlider.from_param(self.param.replay, label="Replay iteration",
                                                             disabled=True)

    # views out of sight are built on first use: Bokeh model construction dominated start-up
    @functools.cached_property
    def pvt(self):
        return PredictedVsTrueFigure()

    @functools.cached_property
    def split(self):
        return SplitFigure()

    @functools.cached_property
    def add_one(self):
        return AddOneChart()

    @functools.cached_property
    def sweep_charts(self):
        return SweepCharts()

    # the lab base's hooks ---------------------------------------------------------------
    def slide_figures(self):
        return {"Posterior": "posterior", "Bound sandwich": "sandwich", "Bound terms": "terms", "Trace": "trace"}

    def _settings_names(self):
        return cfg.url_parameters()

    def _url_names(self):
        return cfg.url_parameters() + ["inducing_inputs"]  # dragged inducing inputs travel in the URL too

    def _check_url_value(self, name, value):
        """Inducing inputs from a URL: 1 to M's largest value of them, each finite and within 1e6."""
        if name != "inducing_inputs":
            return None
        top = self.settings.param.M.bounds[1]
        if not isinstance(value, list) or not 1 <= len(value) <= top:
            return f"{len(value) if isinstance(value, list) else 'no list of'} values; 1 to {top} are allowed"
        try:
            z = np.asarray(value, dtype=float)
        except (TypeError, ValueError):
            return "every value must be a number"
        if not np.all(np.isfinite(z)) or np.max(np.abs(z)) > cfg.MAX_URL_INPUT:
            return f"every value must be finite and within +-{cfg.MAX_URL_INPUT:g}"
        return None

    def _url_keys_used(self, accepted):
        """Inducing inputs given in the URL decide M, which the URL then shows too; a feature type
        given there starts from its own width and frequency unless the URL gives them too."""
        if "feature" in accepted:
            self._type_defaults = set(cfg.FEATURE_EDITS) - set(accepted)
        if "inducing_inputs" not in accepted:
            return accepted
        with self._silenced():
            self.settings.M = len(self.settings.inducing_inputs)
        return [k for k in accepted if k != "M"] + ["M"]

    def _parse_upload(self, contents, filename):
        return cfg.parse_upload(contents, filename)

    def _state_extras(self):
        return cfg.state_extras(self.Z, {n: o.final for n, o in self.fits.items()} if self.fits else None)

    def _show_problems(self):
        if self.comparison is not None:
            self.refresh()

    def controls(self):
        return layout.controls(self)

    def views(self):
        return layout.views(self)

    # data, Z and settings --------------------------------------------------------------
    def _reload(self, reason="the problem changed"):
        """Structural change: new data set, feature type or initial Z; fits and sweeps are discarded."""
        self.cancel_job()
        self._forget_fits(reason)
        try:
            self.dataset = cfg.load_dataset(self.settings, self.uploaded)
            self._apply_type_defaults()
            url_Z = self._url_Z()
            Z = url_Z if url_Z is not None else cfg.initial_Z(self.dataset, self.settings)
            self.feature = cfg.initial_feature(self.dataset, self.settings, Z)
            self.error = None
        except ValueError as err:  # keep showing the previous data set, with the reason why
            self.error = str(err)
        self.trace.update(None)
        if "sweep_charts" in self.__dict__:
            self.sweep_charts.update(None)
        self.refresh()

    def _url_Z(self):
        Z = self.settings.inducing_inputs
        if not Z or self.dataset is None or self.dataset.input_dim != 1:
            return None
        return np.asarray(Z, dtype=float)[:, None]

    def _reinitialise_Z(self):
        self.settings.inducing_inputs = []
        self._reload("Z re-initialised")

    def _apply_type_defaults(self):
        """The width and frequency a newly chosen feature type starts from (features.type_defaults)."""
        names, self._type_defaults = self._type_defaults, set()
        s = self.settings
        values = lab_features.type_defaults(s.feature, s.lengthscale, self.dataset.X, s.M)
        values = {k: float(np.clip(v, *s.param[k].bounds)) for k, v in values.items() if k in names}
        with self._silenced():
            s.param.update(values)

    def _settings_changed(self, names):
        """Applied at once: every slider move re-evaluates (no next-tick batching on this page)."""
        if names & set(cfg.STRUCTURAL):
            with self._silenced():
                self.settings.inducing_inputs = []
            if "feature" in names:  # a width or frequency changed with the type is the user's
                self._type_defaults = set(cfg.FEATURE_EDITS) - names
            self._reload(f"{' and '.join(sorted(names & set(cfg.STRUCTURAL)))} changed")
            return
        if names & set(cfg.hyperparameters()) or names & {"inducing_inputs", *cfg.FEATURE_EDITS}:
            self.mode = "manual"
            if "inducing_inputs" in names and self._url_Z() is not None:
                self.feature = lab_features.dragged(self.feature, self._url_Z())
            self._edit_feature(names)
        if "selected_feature" in names:
            self._show_selected_feature()
        # one combined message per connection instead of ~13: Bokeh walks the whole document for
        # each (measured with 30 sessions: server CPU per round of moves -25 %); fits are not held
        with pn.io.hold():
            self.refresh()

    def _on_drag(self, attr, old, new):
        if self._quiet or self.dataset is None or self.dataset.input_dim != 1:
            return
        x = np.asarray(new.get("x", []), dtype=float)
        if self.feature is None or len(x) != len(self.Z) or not np.all(np.isfinite(x)):
            return
        self.settings.inducing_inputs = [round(float(v), 6) for v in x]  # -> _on_settings -> refresh

    # evaluation ------------------------------------------------------------------------
    def parameter_sets(self):
        """name -> ParameterSet shown now (shared, or each fit's at the replayed iteration)."""
        names = self.settings.approximations
        if self.mode == "fitted" and self.fits:
            out = {}
            for name in names:
                o = self.fits.get(name)
                out[name] = o.trace[min(self.replay, len(o.trace) - 1)] if o else self._shared()
            return out
        shared = self._shared()
        return {name: shared for name in names}

    def _shared(self):
        return cfg.shared_parameters(self.dataset, self.settings, self.feature)

    def refresh(self):
        """Re-evaluate every objective and rewrite every live view (no optimisation)."""
        if self.dataset is None:
            self._show_error()
            return
        ds = self.dataset
        try:
            psets = self.parameter_sets()
            inputs = default_grid(ds.X) if ds.input_dim == 1 else _prediction_points(ds)[0]
            fitted_noise = ({n: o.final.noise_variance for n, o in self.fits.items()}
                            if self.fits and self.mode == "fitted" else None)
            with blas_threads(ds):
                self.comparison = compare(ds, psets, inputs, num_samples=3 if self.settings.show_samples else 0,
                                          fitted_noise=fitted_noise,
                                          sample_inputs=inputs[::SAMPLE_STRIDE] if ds.input_dim == 1 else None)
            self._attach_tightened(fitted_noise)
            self.comparison.badges = self.comparison.badges + self.fit_badges()
        except ValueError as err:
            self.error = str(err)
            self._show_error()
            return
        self._update_views(psets)

    def _attach_tightened(self, fitted_noise):
        found = False
        for r in self.comparison.results.values():
            value = self.tightened.get(parameter_key(r.params)) if r.name != "exact" else None
            if value is not None:
                r.tightened_upper_bound, found = value, True
        if found:
            self.comparison.badges = badges(self.comparison.results, fitted_noise)

    def _update_views(self, psets):
        ds, c, s = self.dataset, self.comparison, self.settings
        # not batched with pn.io.hold(): BokehJS 3.9 then fails to decode the combined patch after a
        # fit ("RangeError: Offset is outside the bounds of the DataView"); unchanged sources are
        # skipped instead (figures.assign)
        with self._silenced():
            if ds.input_dim == 1:
                fitted_Z = ({n: self._markers(p.inducing) for n, p in psets.items() if p.inducing is not None}
                            if self.mode == "fitted" else None)
                start_Z = self._markers(self.fit_start.inducing) if self.mode == "fitted" and self.fit_start else None
                replayed = self.reference_iterate()  # the triangles follow the replay
                shared_Z = self._markers(replayed.inducing) if replayed is not None else self.Z
                self.posterior.update(ds.X[:, 0], ds.y, c, s.band, shared_Z, fitted_Z, start_Z, s.show_samples)
                self._update_strip(psets)
            else:
                self.pvt.update(_prediction_points(ds)[1], c, _prediction_points(ds)[2])
            self.sandwich.update(c)
            self.terms.update(c)
            self.trace.mark(self.replay if self.mode == "fitted" else -1)
            self._stale_tabs = {"add_one", "split", "position"}
            self._update_tab()
            self.one_dimensional = ds.input_dim == 1
        texts = (bounds_html(c), noise_html(c, self.fits if self.mode == "fitted" else None),
                 badges_html(c.badges, self._problems()))
        # Text readouts change their Div's height, so BokehJS re-lays out the page when one arrives;
        # sent after the plot data, they no longer hold back the updated plot (measured: slider
        # release to new VFE mean 146-173 ms with the texts first, 112-115 ms before they were Divs)
        next_tick(lambda: self._show_readouts(*texts))

    def _show_readouts(self, bounds, noise, badge_list):
        self.bounds_readout.object = bounds
        self.noise_readout.object = noise
        self.badge_pane.object = badge_list

    @param.depends("view_tab", watch=True)
    def _update_tab(self):
        """Views in tabs are computed when their tab is shown, not on every change."""
        tab = self.view_tab
        if tab not in self._stale_tabs or self.comparison is None:
            return
        self._stale_tabs.discard(tab)
        if self.dataset.input_dim != 1:
            {"split": lambda: self.split.clear("g/h split: 1-D inputs only"),
             "add_one": lambda: self.add_one.update({}),
             "position": lambda: self.position_chart.clear("the position sweep needs 1-D inputs")}[tab]()
            return
        with blas_threads(self.dataset):
            {"split": self._update_split, "add_one": self._update_add_one,
             "position": self._update_position}[tab](self.parameter_sets())

    def _update_split(self, psets):
        name = self.settings.split_of
        p = psets.get(name) or self._shared()
        try:
            grid = self.comparison.inputs
            g, gv, hv = build_model(self.dataset, name, p).predict_components(grid)
            self.split.update(grid[:, 0], self.dataset.X[:, 0], self.dataset.y, g, gv, hv, LABELS[name])
        except ValueError as err:
            self.split.clear(f"g/h split unavailable: {err}")

    def _update_add_one(self, psets):
        X = self.dataset.X
        lo, hi = default_grid(X, 2)[:, 0]
        candidates = np.linspace(lo, hi, ADD_ONE_CANDIDATES)[:, None]
        curves = {}
        for name, p in psets.items():
            if name != "exact" and p.inducing is not None and self._draggable():
                curves[name] = studies.add_one_inducing_curve(X, self.dataset.y, p.kernel, p.noise_variance,
                                                              p.inducing, name, candidates)
        self.add_one.update(curves)

    def _problems(self):
        return "; ".join(p for p in (self.error, self.url_warning) if p) or None

    def _show_error(self):
        self.badge_pane.object = badges_html([], self._problems())

    @param.depends("replay", watch=True)
    def _on_replay(self):
        if self._quiet or not self.fits:
            return
        self.mode = "fitted"
        self.refresh()


def _prediction_points(ds):
    """(inputs, their targets, what they are) of the predicted-vs-true view of data with more than
    one input column: the test set if there is one, else the training points (an uploaded CSV)."""
    if ds.X_test is not None and ds.y_test is not None:
        return ds.X_test, ds.y_test, "test points"
    return ds.X, ds.y, "training points: the data has no test set"
