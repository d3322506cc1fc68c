"""The linearised-inference lab: EGP, UGP, EKS and UKS side by side on one inversion problem.

``LinearizedLab`` is a Panel Viewer. What a user sets lives in its own
:class:`~gpexplorer.ui.linearized.settings.LinearizedSettings` (one per session, mirrored in the
URL). Every change re-runs the inner Gauss-Newton loop of each shown method at fixed
hyperparameters (EGP paper eq. 34-37, EKS eq. 16-19) and rewrites the figures' data sources in
place; moving x0 only redraws the close-up. "Learn hyperparameters" runs each method's
derivative-free free-energy maximisation (EGP section 3.2, EKS section 4.4) as a
:class:`BackgroundJob` polled from the session's event loop; afterwards each method is shown at
its own learnt hyperparameters until a kernel or noise slider moves. A method whose search ended on
its budget rather than its own convergence test gets a badge and "Continue learning", which runs
the same budget again from its learnt values (issue 23). "Profile free energy" runs
the inner loop along one hyperparameter, another background job
(:mod:`gpexplorer.ui.linearized.profile`); a profile is cleared when the models change. The
computations are :mod:`gpexplorer.linearized.comparison`'s; this class holds the session's state.
"""

from __future__ import annotations

import logging
import time

import numpy as np
import panel as pn
import param

from gpexplorer.linearized import comparison
from gpexplorer.linearized.comparison import METHODS
from gpexplorer.ui.lab_base import LabBase, next_tick
from gpexplorer.ui.linearized import layout, texts
from gpexplorer.ui.linearized import settings as cfg
from gpexplorer.ui.linearized.figures import CloseupFigure, LatentFigure, ObjectiveFigure, ObservationFigure
from gpexplorer.ui.linearized.profile import ProfileFigure
from gpexplorer.ui.markup import TextBlock
from gpexplorer.ui.uploads import MAX_UPLOAD_BYTES
from gpexplorer.ui.widgets import PromptButton

logger = logging.getLogger(__name__)


class LinearizedLab(LabBase):
    """The EGP/UGP/EKS/UKS dashboard; ``LinearizedLab()`` in Jupyter or a served app file."""

    mode = param.Selector(default="manual", objects=["manual", "fitted"],
                          doc="Shared slider hyperparameters, or each method's learnt ones")
    state_filename = "gpexplorer-linearized.json"
    upload_label = f"CSV upload (x, y; at most {cfg.MAX_UPLOAD_ROWS:,} rows, {MAX_UPLOAD_BYTES / 1e6:g} MB)"

    def __init__(self, **params):
        super().__init__(cfg.LinearizedSettings(), **params)
        self.forward, self.data = None, None
        self.results, self.refused, self.fitted = {}, [], None
        self.error, self.expression_error, self._forward_used = None, None, None
        self.timing_ms, self._learning_context = {}, None
        self._model_version, self._profile_request = 0, None  # a profile belongs to one model version
        self._build_components()
        self._connect_settings(self._reload)

    # construction ----------------------------------------------------------------------
    def _build_components(self):
        self.latent, self.observation = LatentFigure(), ObservationFigure()
        self.objective, self.closeup = ObjectiveFigure(), CloseupFigure()
        self.profile = ProfileFigure()
        self.latent.tap.on_change("data", self._on_tap)
        self.metrics_readout, self.hyper_readout = TextBlock(), TextBlock()
        self.badge_pane = TextBlock()
        self.expression_message = TextBlock()
        self.expression_message.visible = False
        self._build_shared_widgets()
        self.learn_button = PromptButton(label="Learn hyperparameters", color="primary")
        self.show_learnt_button = pn.widgets.Button(label="Show learnt", disabled=True)
        self.profile_button = PromptButton(label="Profile free energy", color="light")
        # under the badges while a method's learning ended on its budget (issue 23)
        self.continue_button = PromptButton(label="Continue learning", color="warning", visible=False)
        self.learn_button.on_click(lambda _: self.start_learning())
        self.continue_button.on_click(lambda _: self.continue_learning())
        self.profile_button.on_click(lambda _: self.start_profile())
        self.show_learnt_button.on_click(lambda _: next_tick(self.show_learnt))

    # the lab base's hooks ---------------------------------------------------------------
    def slide_figures(self):
        return {"Latent posterior": "latent", "Observation space": "observation", "Objective": "objective", "Linearisation close-up": "closeup", "Free-energy profile": "profile"}

    def _settings_names(self):
        return cfg.url_parameters()

    def _settings_changed(self, names):
        self._apply_on_next_tick(names)

    def _parse_upload(self, contents, filename):
        return cfg.parse_upload(contents, filename)

    def _state_extras(self):
        return cfg.state_extras(self.fitted)

    def _show_problems(self):
        if self.data is not None:
            self._update_badges()

    def controls(self):
        """The layout's controls; the custom-g(f) box keeps a long paste whole (Panel's TextInput
        cuts it at 5,000 characters), so its real length can be reported. pn.Param re-creates the
        box each time it is shown again, hence the override in its ``widgets`` too."""
        controls = layout.controls(self)
        box = {"type": pn.widgets.TextInput, "max_length": cfg.EXPRESSION_BOX_CHARS}
        for generated in controls.select(pn.Param):
            if "expression" in generated.parameters:
                generated.widgets = {**(generated.widgets or {}), "expression": box}
        for widget in controls.select(pn.widgets.TextInput):
            widget.max_length = cfg.EXPRESSION_BOX_CHARS
        return controls

    def views(self):
        return layout.views(self)

    # data and settings -----------------------------------------------------------------
    def _reload(self):
        """Forward model or data changed: new data set, learnt hyperparameters discarded."""
        try:
            forward = cfg.forward_model(self.settings)
        except ValueError as err:  # an invalid expression: the previous model stays
            self._refuse_expression(err)
            return
        try:
            data = cfg.load_data(self.settings, forward, self.uploaded)
        except ValueError as err:
            self._accept_expression(forward)
            self.error = str(err)
            self._update_badges()
            return
        evaluated = self._run_methods(forward, data, manual=True)  # learnt values go with the old g
        unusable = cfg.unusable_expression(self.settings, evaluated[1])
        if unusable:  # the range check passed, yet g is not finite where every method needs it
            self._refuse_expression(unusable)
            return
        self._accept_expression(forward)
        self.cancel_job()
        self.forward, self.data, self.error, self.fitted, self.mode = forward, data, None, None, "manual"
        lo, hi = round(float(data.grid[0]), 4), round(float(data.grid[-1]), 4)
        with self._silenced():
            self.settings.param.x0.bounds = (lo, hi)
            self.settings.x0 = float(np.clip(self.settings.x0, lo, hi))
        self.refresh(evaluated=evaluated)

    def _accept_expression(self, forward):
        """The forward model is usable: no expression error; a typed g's verdict says so."""
        self.expression_error = None
        self._forward_used = {"forward": self.settings.forward, "expression": self.settings.expression}
        self._show(self.expression_message, texts.expression_html(forward=forward)
                   if self.settings.forward == "custom" else "")
        self._update_address()

    def _refuse_expression(self, err):
        """A typed g that cannot be used: say why; the previous model and its views stay."""
        self.expression_error = str(err)
        self._show(self.expression_message, texts.expression_html(error=err))
        self._update_badges()
        self._update_address()

    def _url_overrides(self):
        """While a typed g is refused, the address bar shows the g still in use."""
        if self.expression_error is None:
            return {}
        return self._forward_used or {n: self.settings.param[n].default for n in ("forward", "expression")}

    def _run_methods(self, forward, data, manual=False):
        """(refused methods, method -> result, seconds): every shown method's inner loop for
        ``forward`` on ``data`` at the hyperparameters each is shown at (``manual``: the sliders')."""
        t0 = time.perf_counter()
        s = cfg.comparison_settings(self.settings)
        run, refused = comparison.active_methods(self.settings.methods, forward)
        sliders = {k: float(getattr(self.settings, k)) for k in comparison.HYPERPARAMETERS}
        results = {m: comparison.evaluate(m, data, forward, s, *((sliders, None) if manual else
                                                                 (self.parameters(m), self._learnt_model(m))))
                   for m in run}
        return refused, results, time.perf_counter() - t0

    def _apply_settings(self, names):
        """Changed settings, applied on the next tick (the custom expression's TextInput sends its
        Enter without the document lock): reload, re-run the inner loops, or redraw one view."""
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

    # evaluation ------------------------------------------------------------------------
    def parameters(self, method):
        """The hyperparameters ``method`` is shown at (its learnt ones in fitted mode)."""
        if self.mode == "fitted" and self.fitted and method in self.fitted:
            return {k: self.fitted[method][k] for k in comparison.HYPERPARAMETERS}
        return {k: float(getattr(self.settings, k)) for k in comparison.HYPERPARAMETERS}

    def _learnt_model(self, method):
        """In fitted mode, the model as learning left it: warm-started inner loops (UKS in
        particular) can end at another fixed point than a run from the prior at the same values."""
        if self.mode == "fitted" and self.fitted and method in self.fitted:
            return self.fitted[method]["model"]
        return None

    def refresh(self, models_changed=True, evaluated=None):
        """Re-run every shown method's inner loop (or take ``evaluated``, what :meth:`_run_methods`
        gave for the current model and data) and rewrite every view (no learning). When the models
        changed (anything but how y* is predicted) a shown free-energy profile is cleared."""
        if self.data is None:
            self._update_badges()
            return
        if models_changed:
            self._model_version += 1
            if self.profile.parameter is not None:
                self.profile.clear("the model changed; press 'Profile free energy' again")
        self.refused, self.results, seconds = evaluated or self._run_methods(self.forward, self.data)
        t1 = time.perf_counter()
        t0 = t1 - seconds
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
                    out[m] = comparison.closeup(r, self.forward, self.settings.x0, self.settings.kappa)
                except (ValueError, FloatingPointError) as err:
                    r.error = f"{METHODS[m].label} close-up failed: {err}"
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
        self.badge_pane.object = texts.badges_html(self.results, self.forward, self.refused, problems, self.fitted)
        todo = self.unfinished_learning()
        self.continue_button.visible = bool(todo)
        if todo:
            self.continue_button.label = (f"Continue learning {', '.join(METHODS[m].label for m in todo)} "
                                          f"({self.settings.max_evals} more evaluations each)")

    # learning hyperparameters (background job) ------------------------------------------
    def start_learning(self):
        if self.data is None or self._busy():
            return
        run, _ = comparison.active_methods(self.settings.methods, self.forward)
        if not run:
            return
        s = cfg.comparison_settings(self.settings)  # a snapshot: the worker must not see later edits
        data, forward = self.data, self.forward
        self._learning_context = cfg.fit_context(self.settings)
        self._start_job("learn", lambda job: comparison.learn_hyperparameters(
            run, data, forward, s, progress=job.report, cancelled=lambda: job.cancelled), started="learning started")

    def unfinished_learning(self):
        """The shown methods whose learnt values come from a search cut short by its budget."""
        run, _ = comparison.active_methods(self.settings.methods, self.forward) if self.forward else ([], [])
        return [m for m in run if (self.fitted or {}).get(m, {}).get("reason") == "budget"]

    def continue_learning(self):
        """Learning again from the learnt values of the searches cut short, the same budget each
        (:func:`comparison.learn_hyperparameters` with ``previous``): F never falls."""
        todo = self.unfinished_learning()
        if not todo or self.data is None or self._busy():
            return
        s, previous = cfg.comparison_settings(self.settings), dict(self.fitted)
        data, forward = self.data, self.forward
        self._learning_context = cfg.fit_context(self.settings)
        self._start_job("continue", lambda job: comparison.learn_hyperparameters(
            todo, data, forward, s, progress=job.report, cancelled=lambda: job.cancelled, previous=previous),
            started=f"continuing to learn {', '.join(METHODS[m].label for m in todo)}")

    def _job_buttons(self):
        return (self.learn_button, self.profile_button, self.continue_button)

    def _progress_text(self, job, message):
        return message if job.name in ("learn", "continue") else f"profile: {message}"

    def _job_finished(self, state, job):
        if job.name == "profile":
            self._profile_finished(state, job)
        elif state == "done" and self._learning_context != cfg.fit_context(self.settings):
            self.status.object = texts.status_html(
                "discarded", "learnt values discarded: the model settings changed while learning")
        elif state == "done":
            self.fitted = {**(self.fitted or {}), **job.result} if job.name == "continue" else job.result
            self.show_learnt()
            self.status.object = texts.status_html("done", f"{'continued' if job.name == 'continue' else 'learnt'} "
                                                           f"in {job.elapsed:.2f} s")
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
        s, parameters = cfg.comparison_settings(self.settings), {m: self.parameters(m) for m in run}
        data, forward, parameter = self.data, self.forward, self.settings.profile_parameter
        self._profile_request = (self._model_version, parameter)
        self._start_job("profile", lambda job: comparison.profile_methods(
            run, data, forward, s, parameters, parameter, progress=job.report, cancelled=lambda: job.cancelled),
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
