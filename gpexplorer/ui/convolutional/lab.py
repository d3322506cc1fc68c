"""The patches lab (issue 26): a convolutional GP's inducing patches, edited by hand.

``ConvolutionalLab`` is a Panel Viewer. What a user sets lives in its own
:class:`~gpexplorer.ui.convolutional.settings.PatchesSettings` (one per session, mirrored in the
URL). A data or model change loads the images again and fits the lab's model (a convolutional or
weighted convolutional GP) as a :class:`~gpexplorer.ui.jobs.BackgroundJob` with progress and
Cancel; *Race* fits the four kernels of the ELBO race the same way, their traces growing live on
one chart. Once fitted, the views are drawn from the model: the inducing patches as tiles, the
predictions, the contributions over a test image, the weights and the edge effect. Editing a
tile's pixels moves that inducing patch (:func:`gpexplorer.convolutional_views.move_inducing_patch`)
and redraws everything at once, without a job. The drawing canvas and its digit model are
:mod:`.digits`. The computations are :mod:`gpexplorer.convolutional_fits` and
:mod:`gpexplorer.convolutional_views`; this class turns settings into their calls, results into
views, and holds the session's state.
"""

from __future__ import annotations

import logging
import time

import numpy as np
import panel as pn

from gpexplorer import convolutional_fits as fits
from gpexplorer import convolutional_views as views
from gpexplorer.kernels.patch_layout import PatchLayout
from gpexplorer.ui.convolutional import layout, texts
from gpexplorer.ui.convolutional import settings as cfg
from gpexplorer.ui.convolutional.canvas import PixelCanvas
from gpexplorer.ui.convolutional.charts import RaceChart
from gpexplorer.ui.convolutional.digits import DigitPanel
from gpexplorer.ui.convolutional.figures import (ContributionsFigure, EdgeFigures, PredictionsFigure, TilesFigure,
                                                 WeightsFigure)
from gpexplorer.ui.lab_base import LabBase, next_tick
from gpexplorer.ui.markup import TextBlock
from gpexplorer.ui.widgets import PromptButton
from gpexplorer.variational.comparison import trace_columns

logger = logging.getLogger(__name__)
LIVE_EVERY_S = 0.3  # the race chart is redrawn at most this often while racing
EDITOR_PIXELS = 150  # screen pixels of the editor's side
#: test images scored and redrawn after every edit (500 took 60 % longer per edit than 200)
N_TEST = 200


class ConvolutionalLab(LabBase):
    """The patches dashboard; ``ConvolutionalLab()`` in Jupyter or a served app file."""

    state_filename = "gpexplorer-patches.json"

    def __init__(self, **params):
        super().__init__(cfg.PatchesSettings(), **params)
        self.problem, self.outcome, self.error = None, None, None
        self.fitted, self.edits, self.edit_message, self.last_edit_seconds = None, 0, None, None
        self.race, self.race_context, self._live, self._live_drawn = {}, None, None, 0.0
        self._context, self._pending_job, self.extra, self._job_context = None, None, {}, None
        self.current = None  # the model's ELBO, test error and contribution sum as drawn
        self._build_components()
        self._connect_settings(self._reload, defer=True)

    # construction ----------------------------------------------------------------------
    def _build_components(self):
        self.tiles = TilesFigure(lambda index: next_tick(lambda: self.select_tile(index)))
        self.tiles.reserve(self.settings.M)
        self.predictions, self.contributions = PredictionsFigure(), ContributionsFigure()
        self.weights, self.edge, self.race_chart = WeightsFigure(), EdgeFigures(), RaceChart()
        self.editor = PixelCanvas(rows=3, cols=3, pixel=EDITOR_PIXELS // 3, brush="toggle", label="patch",
                                  values=[0.0] * 9, locked=True, margin=(5, 10))
        self.editor.param.watch(lambda e: next_tick(lambda: self.edit_patch(e.new)), "values")
        self.digits = DigitPanel(lambda: cfg.digit_options(self.settings))
        self.intro = TextBlock(texts.INTRO, styles={"font-size": "0.95em"})
        self.badge_pane, self.note_pane, self.fit_table = TextBlock(), TextBlock(), TextBlock(texts.fit_html(None, {}))
        self.edit_readout, self.race_table = TextBlock(texts.edit_html(None, 0, 0, 0, 0, 0)), TextBlock(texts.race_html({}))
        self._build_shared_widgets()
        self.fit_button = PromptButton(label="Fit", color="primary")
        self.fit_button.on_click(lambda _: self.request_fit())
        self.race_button = PromptButton(label="Race the four kernels", color="primary")
        self.race_button.on_click(lambda _: self.request_race())
        self.undo_button = PromptButton(label="Undo edits", color="light", disabled=True)
        self.undo_button.on_click(lambda _: self.undo_edits())

    # the lab base's hooks ---------------------------------------------------------------
    def slide_figures(self):
        return {"Predictions": "predictions-figure", "Race": "race-figure", "Tiles": "tiles-figure", "Digit probabilities": "digit-probabilities-figure", "Edge counts": "edge-bar-figure"}

    def _settings_names(self):
        return cfg.url_parameters()

    def _settings_changed(self, names):
        self._apply_on_next_tick(names)

    def _parse_upload(self, contents, filename):
        raise ValueError("this lab takes no uploads")

    def _state_extras(self):
        out = {"fit": self.outcome.metrics if self.outcome is not None and self.outcome.error is None else None}
        out["race"] = {k: o.metrics for k, o in self.race.items() if o.error is None}
        return out

    def _show_problems(self):
        self._update_badges()

    def controls(self):
        return layout.controls(self)

    def views(self):
        return layout.views(self)

    # data and settings -----------------------------------------------------------------
    def _reload(self):
        """Data settings changed: load the images, forget the fit, draw what needs no model, fit."""
        self.cancel_job()
        s = self.settings
        try:
            problem = fits.load_problem(s.dataset, s.n_train, s.mnist_side if s.dataset == "mnist01" else None, N_TEST)
        except ValueError as err:
            self.error = str(err)
            self._update_badges()
            return
        self.problem, self.error, self.outcome, self.fitted = problem, None, None, None
        self._update_views()
        pn.state.onload(self.request_fit)

    def _apply_settings(self, names):
        try:
            if names & set(cfg.DATA):
                self._reload()
            elif names & set(cfg.MODEL):
                self._update_views()  # the table says the fit is stale
                self.request_fit()
            if names & set(cfg.VIEW) and not names & set(cfg.DATA):
                self._draw_model_views()
            if names & set(cfg.DIGITS) and (self.digits.options is not None or self._served()):
                self.digits.start(cfg.digit_options(self.settings))
        except Exception as err:  # noqa: BLE001 - a bug, not bad input: logged, shown, the session survives
            logger.exception("applying the settings %s failed", sorted(names))
            self.error = f"{type(err).__name__}: {err}"
            self._update_badges()

    @staticmethod
    def _served():
        return pn.state.curdoc is not None and pn.state.curdoc.session_context is not None

    @staticmethod
    def _lesson_page():
        return bool((pn.state.session_args or {}).get("lesson"))

    # background jobs: the fit and the race ---------------------------------------------
    def request_fit(self):
        """Fit the lab's model; a running job is cancelled first and this one starts after it."""
        if self.problem is None:
            return
        if self._busy():
            if self.jobs.job.name == "fit" and self._job_context == self._fit_context() and self._pending_job is None:
                return  # that very fit is running (the page's first load can ask twice)
            self._pending_job = "fit"
            self.cancel_job()
            return
        problem, options, kind = self.problem, cfg.fit_options(self.settings), self.settings.kernel
        self._job_context = self._fit_context()
        self._start_job("fit", lambda job: fits.fit_one(problem, kind, options, self._progress_callback(job, options),
                                                        reuse=True),
                        started=f"fitting the {fits.LABELS[kind]} model")
        self.editor.locked = True  # the fit's result replaces the model: no edits meanwhile

    def _progress_callback(self, job, options):
        count = [0]
        budget = max(1, options["iterations"])

        def callback(entry):
            count[0] += 1
            job.report(min(0.97, count[0] / budget), f"iteration {entry.iteration}, ELBO {-entry.objective:.2f}")
            return False
        return callback

    def request_race(self):
        """Fit SE, conv, weighted and weighted + SE in turn, their traces live on the race chart."""
        if self.problem is None:
            return
        if self._busy():
            self._pending_job = "race"
            self.cancel_job()
            return
        problem, options = self.problem, cfg.fit_options(self.settings)
        live = fits.LiveTrace()
        self._live, self._live_drawn, self.race = live, 0.0, {}
        self._job_context = cfg.race_context(self.settings) + (self.problem.name,)
        self._start_job("race", lambda job: fits.race(problem, cfg.RACE, options, live, job.report,
                                                      lambda: job.cancelled), started="racing the four kernels")
        self._draw_race()

    def _fit_context(self):
        return cfg.fit_context(self.settings)

    def _fitting(self):
        """Whether the lab's own fit runs (the race fits models of its own: edits go on meanwhile)."""
        return self._busy() and self.jobs.job.name == "fit"

    def poll_job(self):
        super().poll_job()
        if self._busy():
            now = time.perf_counter()
            if self.jobs.job.name == "race" and now - self._live_drawn > LIVE_EVERY_S:
                self._live_drawn = now
                self._draw_race()
        elif self._pending_job is not None:
            job, self._pending_job = self._pending_job, None
            (self.request_race if job == "race" else self.request_fit)()

    def _job_buttons(self):
        return (self.fit_button, self.race_button)

    def _job_finished(self, state, job):
        if job.name == "race":
            self._race_finished(state, job)
        elif state == "done" and job.result is not None and self._job_context == self._fit_context():
            self._accept_fit(job.result)
            verb = "fitted" if job.result.error is None else "fit failed"
            self.status.object = texts.status_html("done" if job.result.error is None else "failed",
                                                   f"{verb}: {fits.LABELS[job.result.kind]} in {job.elapsed:.1f} s")
            if self._served() and not self._lesson_page():
                self.digits.start(cfg.digit_options(self.settings))
            elif self.digits.options is None:  # a lesson's steps leave it to the button
                self.digits.readout.object = texts.digit_html("waiting", "Press 'Fit the digit model' to draw.")
        elif state == "done":
            self.status.object = texts.status_html("discarded", "fit discarded: the settings changed while fitting")
        else:
            self.status.object = texts.status_html(state, f"{job.name} {state}: {job.error or ''}")
        self._update_views()

    def _race_finished(self, state, job):
        if state == "done" and job.result is not None:
            self.race, self.race_context = job.result, self._job_context
            self.status.object = texts.status_html("done", f"race finished in {job.elapsed:.1f} s")
        else:
            self.status.object = texts.status_html(state, f"race {state}: {job.error or ''}")
        self._draw_race()

    def _accept_fit(self, outcome):
        self.outcome, self._context, self.edits, self.edit_message = outcome, self._job_context, 0, None
        self.fitted = None
        if outcome.error is not None:
            return
        model, problem = outcome.model, self.problem
        kernel, feature = views.convolutional_part(model)
        seen = views.read_off(model, problem.X_test, problem.y_test)
        self.fitted = {"parameters": model.parameters, "elbo": seen["elbo"], "error_rate": seen["error_rate"],
                       "p": seen["p"][:, 1]}
        self.extra = {"unique": views.unique_patch_count(kernel, problem.X), "M": int(feature.Z.shape[0])}
        if not 0 <= self.settings.tile < feature.Z.shape[0]:
            with self._silenced():
                self.settings.tile = 0

    # editing the inducing patches (no job: at once) --------------------------------------
    def _model(self):
        ok = self.outcome is not None and self.outcome.error is None and self._context == self._fit_context()
        return self.outcome.model if ok else None

    def select_tile(self, index):
        if index is not None and index != self.settings.tile:
            self.settings.tile = int(index)  # -> VIEW: the editor and the highlight follow

    def edit_patch(self, values):
        """The editor sent the pixels of the selected inducing patch: move it and redraw."""
        model = self._model()
        if model is None or self._fitting():
            self._load_editor()  # no model, or a fit replaces it: the edit is undone on the screen
            return
        t0 = time.perf_counter()
        index = self._tile()
        current = model.features[0].Z[index]
        patch = np.asarray(values, dtype=float)
        if patch.shape == current.shape and np.array_equal(patch, current):
            return
        elbo = None
        try:
            fitted_Z = self.fitted["parameters"][views.feature_parameter(model)]
            Z = model.features[0].Z.copy()
            back = patch.shape == Z[index].shape and Z.shape == fitted_Z.shape
            if back:
                Z[index] = patch
            if back and np.allclose(Z, fitted_Z, rtol=0.0, atol=1e-6):
                # back to the fitted patches (a pixel flipped back reads exactly 0 or 1, the fit left
                # it within 1e-7 of that): the fitted q(u) and the fitted ELBO
                model.set_parameters(**self.fitted["parameters"])
            else:
                elbo = views.move_inducing_patch(model, index, patch)
            self.edits += 1
            self.edit_message = None
        except ValueError as err:
            self.edit_message = f"that edit was refused: {err}"
            self._load_editor()
        self._draw_model_views(elbo if elbo is not None and np.isfinite(elbo) else None)
        self.last_edit_seconds = time.perf_counter() - t0

    def undo_edits(self):
        model = self._model()
        if model is None or self.fitted is None:
            return
        model.set_parameters(**self.fitted["parameters"])
        self.edits, self.edit_message = 0, None
        self._draw_model_views()

    def _tile(self):
        model = self._model()
        M = model.features[0].Z.shape[0] if model is not None else 1
        return int(min(max(self.settings.tile, 0), M - 1))

    def _load_editor(self):
        model = self._model()
        if model is None:
            self.editor.locked = True
            return
        kernel, feature = views.convolutional_part(model)
        h, w = kernel.layout.patch_shape
        values = [float(v) for v in feature.Z[self._tile()]]
        shown = np.asarray(self.editor.values, dtype=float)
        update = {"rows": h, "cols": w, "pixel": max(12, EDITOR_PIXELS // max(h, w)), "locked": self._fitting()}
        if shown.shape != (len(values),) or not np.allclose(shown, values, rtol=0.0, atol=1e-6):
            update["values"] = values  # not sent back when the browser shows it already (an edit's own pixels)
        self.editor.param.update(**{k: v for k, v in update.items() if getattr(self.editor, k) != v})

    # views ------------------------------------------------------------------------------
    def image_index(self):
        """The test image the contributions view shows (the setting, within the test set)."""
        return int(min(max(self.settings.image, 0), len(self.problem.X_test) - 1))

    def _draw_model_views(self, elbo=None):
        """Everything drawn from the model: tiles, editor, predictions, contributions, weights, edge."""
        model, problem = self._model(), self.problem
        # no pn.io.hold() here: its "combine" policy, with the sources' binary buffers, once left the
        # browser with "Offset is outside the bounds of the DataView" and an empty edge chart
        with self._silenced():
            if problem is None:
                return
            k = self.image_index()
            image = problem.X_test[k].reshape(problem.image_shape)
            if model is None:
                self.tiles.update(None)
                self.predictions.update(None, None, None, ())
                self.contributions.update(image, np.zeros((1, 1)), 1, f"Test image {k}", "c_p (after a fit)")
                self.edge.update(views.patch_counts(self.layout_now()), None)
                self.weights.update(None, False)
                self.edit_readout.object = texts.edit_html(None, 0, 0, 0, 0, 0)
                self.undo_button.disabled = True
                self._load_editor()
                return
            kernel, _ = views.convolutional_part(model)
            seen = views.read_off(model, problem.X_test, problem.y_test, k, elbo=elbo)
            # what an edit is watched for first: the predictions, then the rest
            self.predictions.update(seen["p"][:, 1], self.fitted["p"], problem.y_test, problem.class_names)
            self.tiles.update(seen["tiles"], self._tile())
            self._load_editor()
            mean = float(seen["contributions"].sum())
            names = problem.class_names or ("0", "1")
            self.contributions.update(image, seen["contributions"], kernel.layout.patch_shape[0],
                                      f"Test image {k}: {names[int(problem.y_test[k])]}", f"c_p, sum {mean:+.2f} = E[f]")
            self.weights.update(seen["weights"], kernel.weighted)
            self.edge.update(views.patch_counts(kernel.layout), seen["bar"])
            self.current = {"elbo": seen["elbo"], "error_rate": seen["error_rate"], "contribution_sum": mean,
                            "contribution_max": float(np.max(np.abs(seen["contributions"]))),
                            "f_mean": float(seen["f_mean"][k]), "bar": seen["bar"], "tiles": seen["tiles"], "p": seen["p"]}
            self.edit_readout.object = texts.edit_html(seen["elbo"], self.fitted["elbo"], seen["error_rate"],
                                                       self.fitted["error_rate"], self.edits, self._tile(),
                                                       self.edit_message)
            self.undo_button.disabled = self.edits == 0

    def layout_now(self):
        """The patch geometry of the fitted model, else of the settings."""
        model = self._model()
        if model is not None:
            return model.kernels[0].layout
        side = self.problem.side
        return PatchLayout((side, side), (min(self.settings.patch, side),) * 2)

    def _race_traces(self):
        if self._busy() and self.jobs.job.name == "race" and self._live is not None:
            return {k: trace_columns(rows) for k, rows in self._live.snapshot().items()}
        return {k: o.trace for k, o in self.race.items() if o.error is None}

    def _draw_race(self):
        running = self._busy() and self.jobs.job.name == "race"
        self.race_chart.update(self._race_traces(), running)
        stale = bool(self.race) and self.race_context != cfg.race_context(self.settings) + (
            self.problem.name if self.problem is not None else None,)
        self.race_table.object = texts.race_html(self.race, stale, running)

    def _update_views(self):
        with self._silenced():
            self.tiles.reserve(self.extra["M"] if self._model() is not None else self.settings.M)
            stale = self.outcome is not None and self._context != self._fit_context()
            self.fit_table.object = texts.fit_html(self.outcome, self.extra, stale)
            self.note_pane.object = texts.note_html(self.problem)
            self._draw_model_views()
            self._draw_race()
            self._update_badges()

    def _update_badges(self):
        failed = self.outcome.error if self.outcome is not None else None
        self.badge_pane.object = texts.badges_html([self.error, failed, self.url_warning])
