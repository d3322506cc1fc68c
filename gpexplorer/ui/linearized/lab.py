"""The linearised-inference lab: EGP, UGP, EKS and UKS side by side on one inversion problem.

``LinearizedLab`` is a Panel Viewer. What a user sets lives in its own
:class:`~gpexplorer.ui.linearized.settings.LinearizedSettings` (one per session, mirrored in the
URL). Every change re-runs the inner Gauss-Newton loop of each shown method at fixed
hyperparameters (EGP paper eq. 34-37, EKS eq. 16-19) and rewrites the figures' data sources in
place; moving x0 only redraws the close-up. "Learn hyperparameters" runs each method's
derivative-free free-energy maximisation (EGP section 3.2, EKS section 4.4) as a
:class:`BackgroundJob` polled from the session's event loop; afterwards each method is shown at
its own learnt hyperparameters until a kernel or noise slider moves. "Profile free energy" runs
the inner loop along one hyperparameter, another background job
(:mod:`gpexplorer.ui.linearized.profile`); a profile is cleared when the models change.
"""

from __future__ import annotations

import contextlib
import inspect
import io
import logging
import time

import numpy as np
import panel as pn
import param
import threadpoolctl

from gpexplorer.ui.linearized import settings as cfg
from gpexplorer.ui.linearized import texts
from gpexplorer.ui.jobs import JobControls, JobPoller
from gpexplorer.ui.layout import PromptButton
from gpexplorer.ui.linearized.figures import (CloseupFigure, LatentFigure, ObjectiveFigure, ObservationFigure,
                                              lab_layout)
from gpexplorer.ui.linearized.profile import ProfileFigure, profile_methods
from gpexplorer.ui.markup import TextBlock

logger = logging.getLogger(__name__)


class LinearizedLab(JobControls, pn.viewable.Viewer):
    """The EGP/UGP/EKS/UKS dashboard; ``LinearizedLab()`` in Jupyter or a served app file."""

    mode = param.Selector(default="manual", objects=["manual", "fitted"],
                          doc="Shared slider hyperparameters, or each method's learnt ones")

    def __init__(self, **params):
        threadpoolctl.threadpool_limits(1, user_api="blas")  # see sparse_lab: threads thrash on 2 cores
        self.settings = cfg.LinearizedSettings()
        super().__init__(**params)
        self.forward, self.data, self.uploaded = None, None, None
        self.results, self.refused, self.fitted = {}, [], None
        self.error, self.expression_error, self.url_warning = None, None, None
        self.jobs, self._quiet = JobPoller(), False
        self.timing_ms, self._pending, self._learning_context = {}, set(), None
        self._model_version, self._profile_request = 0, None  # a profile belongs to one model version
        self._build_components()
        self._sync_url()
        self._reload()
        self.settings.param.watch(self._on_settings, cfg.url_parameters())

    # construction ----------------------------------------------------------------------
    def _build_components(self):
        self.latent, self.observation = LatentFigure(), ObservationFigure()
        self.objective, self.closeup = ObjectiveFigure(), CloseupFigure()
        self.profile = ProfileFigure()
        self.latent.tap.on_change("data", self._on_tap)
        self.metrics_readout, self.hyper_readout = TextBlock(), TextBlock()
        self.badge_pane = TextBlock()
        self.expression_message, self.upload_message = TextBlock(), TextBlock()
        self.expression_message.visible = self.upload_message.visible = False
        self.status = TextBlock(texts.status_html("idle", ""))
        self.progress = pn.indicators.Progress(value=0, max=100, visible=False, sizing_mode="stretch_width")
        self.learn_button = PromptButton(label="Learn hyperparameters", color="primary")
        self.cancel_button = pn.widgets.Button(label="Cancel", color="warning", disabled=True)
        self.show_learnt_button = pn.widgets.Button(label="Show learnt", disabled=True)
        self.profile_button = PromptButton(label="Profile free energy", color="light")
        self.learn_button.on_click(lambda _: self.start_learning())
        self.profile_button.on_click(lambda _: self.start_profile())
        self.cancel_button.on_click(lambda _: self.cancel_job())
        self.show_learnt_button.on_click(lambda _: pn.state.execute(self.show_learnt, schedule=True))
        self.upload = pn.widgets.FileInput(accept=".csv,text/csv", label="CSV upload (x, y; max 2 MB)")
        self.upload.param.watch(self._on_upload, "value")
        self.download = pn.widgets.FileDownload(callback=self._state_json, filename="gpexplorer-linearized.json",
                                                label="Download state (JSON)", color="light")

    def _sync_url(self):
        location = pn.state.location
        if location is not None and pn.state.curdoc is not None:
            location.sync(self.settings, {p: p for p in cfg.url_parameters()}, on_error=self._bad_url)

    def _bad_url(self, mapped):
        self.url_warning = f"ignored invalid URL values {mapped}: each must be within its control's range and type"
        if self.data is not None:
            self._update_badges()

    # data and settings -----------------------------------------------------------------
    def _reload(self):
        """Forward model or data changed: new data set, learnt hyperparameters discarded."""
        try:
            forward = cfg.forward_model(self.settings)
        except ValueError as err:  # an invalid expression: the previous model stays
            self.expression_error = str(err)
            self._show(self.expression_message, texts.expression_html(error=err))
            self._update_badges()
            return
        self.expression_error = None
        self._show(self.expression_message, texts.expression_html(forward=forward)
                   if self.settings.forward == "custom" else "")
        try:
            data = cfg.load_data(self.settings, forward, self.uploaded)
        except ValueError as err:
            self.error = str(err)
            self._update_badges()
            return
        self.cancel_job()
        self.forward, self.data, self.error, self.fitted, self.mode = forward, data, None, None, "manual"
        lo, hi = round(float(data.grid[0]), 4), round(float(data.grid[-1]), 4)
        with self._silenced():
            self.settings.param.x0.bounds = (lo, hi)
            self.settings.x0 = float(np.clip(self.settings.x0, lo, hi))
        self.refresh()

    def _on_settings(self, *events):
        """Collect changed setting names and apply them on the next tick of the session's loop.

        Panel runs some widget events (a TextInput's Enter) as coroutines without the Bokeh
        document lock, and rewriting a ColumnDataSource there raises; a next-tick callback always
        holds the lock. Without a server (tests, Jupyter) the change is applied at once."""
        if not self._quiet:
            self._request({e.name for e in events})

    def _request(self, names):
        first = not self._pending
        self._pending |= set(names)
        if first:
            pn.state.execute(self._apply_pending, schedule=True)

    def _apply_pending(self):
        names, self._pending = self._pending, set()
        try:
            if names & set(cfg.STRUCTURAL):
                self._reload()
            elif names & (set(cfg.MODEL) | set(cfg.PREDICTION)):
                if names & (set(cfg.MODEL) - {"methods"}):
                    self.mode = "manual"
                if names & set(cfg.FIT_CONTEXT):  # learnt values belong to the model they were learnt for
                    self.fitted = None
                self.refresh(models_changed=bool(names & set(cfg.MODEL)))
            elif names & set(cfg.CLOSEUP):
                t0 = time.perf_counter()
                self._update_closeup()
                self.timing_ms = {"closeup": 1e3 * (time.perf_counter() - t0)}
            if names & set(cfg.PROFILE) and self.profile.parameter not in (None, self.settings.profile_parameter):
                self.profile.clear("press 'Profile free energy' for the new hyperparameter")
        except Exception as err:  # noqa: BLE001 - a bug, not bad input: logged, shown, the session survives
            logger.exception("applying the settings %s failed", sorted(names))
            self.error = f"{type(err).__name__}: {err}"
            self._update_badges()

    def _on_tap(self, attr, old, new):
        x = list(new.get("x", []))
        if self._quiet or self.data is None or len(x) != 1 or not np.isfinite(x[0]):
            return
        lo, hi = self.settings.param.x0.bounds
        self.settings.x0 = round(float(np.clip(x[0], lo, hi)), 4)  # -> _on_settings -> close-up

    def _on_upload(self, event):
        try:
            self.uploaded = cfg.parse_upload(event.new, self.upload.filename or "upload.csv")
        except ValueError as err:
            self._show(self.upload_message, texts.upload_html(error=err))
            return
        self._show(self.upload_message, texts.upload_html(dataset=self.uploaded))
        if self.settings.dataset == "upload":
            self._request({"dataset"})
        else:
            self.settings.dataset = "upload"

    # evaluation ------------------------------------------------------------------------
    def parameters(self, method):
        """The hyperparameters ``method`` is shown at (its learnt ones in fitted mode)."""
        if self.mode == "fitted" and self.fitted and method in self.fitted:
            return {k: self.fitted[method][k] for k in cfg.HYPERPARAMETERS}
        return cfg.shared_parameters(self.settings)

    def _learnt_model(self, method):
        """In fitted mode, the model as learning left it: warm-started inner loops (UKS in
        particular) can end at another fixed point than a run from the prior at the same values."""
        if self.mode == "fitted" and self.fitted and method in self.fitted:
            return self.fitted[method]["model"]
        return None

    def refresh(self, models_changed=True):
        """Re-run every shown method's inner loop and rewrite every view (no learning). When the
        models changed (anything but how y* is predicted) a shown free-energy profile is cleared."""
        if self.data is None:
            self._update_badges()
            return
        if models_changed:
            self._model_version += 1
            if self.profile.parameter is not None:
                self.profile.clear("the model changed; press 'Profile free energy' again")
        t0 = time.perf_counter()
        run, self.refused = cfg.active_methods(self.settings, self.forward)
        self.results = {m: cfg.evaluate(m, self.data, self.forward, self.settings, self.parameters(m),
                                        self._learnt_model(m)) for m in run}
        t1 = time.perf_counter()
        self._update_views()
        t2 = time.perf_counter()
        self.show_learnt_button.disabled = not self.fitted or self.mode == "fitted"
        self.timing_ms = {"inference": 1e3 * (t1 - t0), "views": 1e3 * (t2 - t1), "total": 1e3 * (t2 - t0)}
        self.metrics_readout.object = texts.metrics_html(self.results, self.refused, self.timing_ms["total"])

    def _update_views(self):
        with self._silenced():
            self.latent.update(self.data, self.results)
            self.observation.update(self.data, self.results, self.forward)
            self.objective.update(self.results)
            self._update_closeup()
            self.hyper_readout.object = texts.hyper_html(self.results, self.fitted, self.mode)
            self._update_badges()

    def closeups(self):
        """method -> Closeup at the current x0 (methods that failed are left out)."""
        out = {}
        for m, r in self.results.items():
            if r.error is None:
                try:
                    out[m] = cfg.closeup(r, self.forward, self.settings.x0, self.settings.kappa)
                except (ValueError, FloatingPointError) as err:
                    r.error = f"{cfg.LABELS[m]} close-up failed: {err}"
        return out

    def _update_closeup(self):
        if self.data is None:
            return
        x0, truth = self.settings.x0, None
        if self.data.f_true is not None:
            truth = float(np.interp(x0, self.data.grid, self.data.f_true))
        self.closeup.update(self.forward, self.closeups(), x0, truth)
        self.latent.x0.location = self.observation.x0.location = x0

    def _update_badges(self):
        problems = [self.expression_error and f"custom expression: {self.expression_error}", self.error,
                    self.url_warning]
        self.badge_pane.object = texts.badges_html(self.results, self.forward, self.refused, problems)

    # learning hyperparameters (background job) ------------------------------------------
    def start_learning(self):
        if self.data is None or self._busy():
            return
        run, _ = cfg.active_methods(self.settings, self.forward)
        if not run:
            return
        s = cfg.snapshot(self.settings)  # the worker must not see later edits
        data, forward, start = self.data, self.forward, cfg.shared_parameters(s)
        self._learning_context = cfg.fit_context(s)
        self._start_job("learn", lambda job: learn_hyperparameters(job, run, data, forward, s, start),
                        started="learning started")

    def _job_buttons(self):
        return (self.learn_button, self.profile_button)

    def _progress_text(self, job, message):
        return message if job.name == "learn" else f"profile: {message}"

    def _job_finished(self, state, job):
        if job.name == "profile":
            self._profile_finished(state, job)
        elif state == "done" and self._learning_context != cfg.fit_context(self.settings):
            self.status.object = texts.status_html(
                "discarded", "learnt values discarded: the model settings changed while learning")
        elif state == "done":
            self.fitted = job.result
            self.show_learnt()
            self.status.object = texts.status_html("done", f"learnt in {job.elapsed:.2f} s")
        else:
            self.status.object = texts.status_html(state, f"learning {state}: {job.error or ''}")

    # free-energy profile (background job) --------------------------------------------------
    def start_profile(self):
        """F and the test NLPD along ``profile_parameter`` for every shown method, each around the
        hyperparameters it is shown at (its learnt ones in fitted mode)."""
        if self.data is None or self._busy():
            return
        run = [m for m, r in self.results.items() if r.error is None]
        if not run:
            return
        s, parameters = cfg.snapshot(self.settings), {m: self.parameters(m) for m in run}
        data, forward, parameter = self.data, self.forward, s.profile_parameter
        self._profile_request = (self._model_version, parameter)
        self._start_job("profile", lambda job: profile_methods(job, run, data, forward, s, parameters, parameter),
                        started="profile started")

    def _profile_finished(self, state, job):
        version, parameter = self._profile_request
        if state != "done":
            self.status.object = texts.status_html(state, f"profile {state}: {job.error or ''}")
        elif version != self._model_version:
            self.status.object = texts.status_html("discarded", "profile discarded: the model changed while profiling")
        else:
            shown = {m: (r.params[parameter], r.free_energy) for m, r in self.results.items() if m in job.result}
            self.profile.update(job.result, parameter, shown)
            points = sum(len(p.values) for p in job.result.values())
            self.status.object = texts.status_html("done", f"profiled {points} points in {job.elapsed:.2f} s")

    def show_learnt(self):
        if not self.fitted:
            return
        self.mode = "fitted"
        self.refresh()

    # helpers ---------------------------------------------------------------------------
    @staticmethod
    def _show(block, html):
        """A message block takes no space while it is empty."""
        block.object, block.visible = html, bool(html)

    @contextlib.contextmanager
    def _silenced(self):
        """Programmatic updates inside this block do not re-trigger the change handlers."""
        before, self._quiet = self._quiet, True
        try:
            yield
        finally:
            self._quiet = before

    def _state_json(self):
        return io.StringIO(cfg.to_json(self.settings, self.fitted))

    def __panel__(self):
        return lab_layout(self)


def learn_hyperparameters(job, methods, data, forward, s, start):
    """Fit each method's hyperparameters in turn (runs on the job's worker thread).

    LinearizedGP.fit reports every free-energy evaluation through its callback; the kitchen
    sinks' fit has none, so its evaluations are counted by wrapping that model's free_energy
    (both ways also let Cancel stop a fit between two evaluations)."""
    out = {}
    for k, method in enumerate(methods):
        label = cfg.LABELS[method]

        def report(evaluations, k=k, label=label):
            job.report((k + min(evaluations / s.max_evals, 1.0)) / len(methods),
                       f"{label}: {evaluations} evaluations ({k + 1} of {len(methods)} methods)")

        report(0)
        t0 = time.perf_counter()
        model = cfg.build_model(method, data, forward, s, start)
        count, search = _fit(model, method, s.max_evals, report, s.gp_search)
        out[method] = {**cfg.model_parameters(model), "free_energy": float(model.free_energy()),
                       "evaluations": count, "seconds": time.perf_counter() - t0, "search": search,
                       "model": model}
    return out


def _fit(model, method, max_evals, report, gp_search="fisher"):
    """Learn ``model``'s hyperparameters; returns (free-energy evaluations, name of the search used)."""
    calls = [0]

    def counted(*_):
        calls[0] += 1
        report(calls[0])

    search = cfg.search_label(method, gp_search)
    if cfg.FAMILY[method][0] == "gp":
        model.fit(bounds=cfg.FIT_BOUNDS, max_evals=max_evals, method=gp_search, callback=counted)
    elif "callback" in inspect.signature(model.fit).parameters:
        model.fit(max_evaluations=max_evals, callback=counted)
    else:
        free_energy = model.free_energy

        def observed():
            counted()
            return free_energy()

        model.free_energy = observed
        try:
            model.fit(max_evaluations=max_evals)
        finally:
            del model.free_energy
    return calls[0], search
