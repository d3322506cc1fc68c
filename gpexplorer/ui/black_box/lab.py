"""The black-box inference lab: SAVIGP's FG, MoG1 and MoG2 posteriors side by side.

``BlackBoxLab`` is a Panel Viewer. What a user sets lives in its own
:class:`~gpexplorer.ui.black_box.settings.BlackBoxSettings` (one per session, mirrored in the
URL). A changed data setting loads the data set again; every data or model change starts a fit
of every shown posterior as a :class:`~gpexplorer.ui.jobs.BackgroundJob` (a running fit is
cancelled first, one job per session). While it runs the page polls the job: the progress bar,
the status line and the ELBO chart (from the worker's :class:`~gpexplorer.variational.comparison.LiveTrace`) grow; when it
is done every view is redrawn from the results. A fit stops once it has converged; one that
ended on its budget or stalled gets a badge and Continue, which runs on from where it stopped
(issue 23). Ticking another posterior fits only that one;
unticking one hides it at once. The computations are :mod:`gpexplorer.variational.comparison`'s;
this class turns settings into its calls, results into views, and holds the session's state.
"""

from __future__ import annotations

import logging
import time

import panel as pn

from gpexplorer.ui.black_box import data, layout, texts
from gpexplorer.ui.black_box import settings as cfg
from gpexplorer.ui.black_box.charts import ElboFigure, VarianceFigure
from gpexplorer.ui.black_box.figures import ComponentsFigure, LatentFigure, ObservationFigure
from gpexplorer.ui.lab_base import LabBase
from gpexplorer.ui.markup import TextBlock
from gpexplorer.ui.uploads import MAX_UPLOAD_BYTES
from gpexplorer.ui.widgets import PromptButton
from gpexplorer.variational import comparison

logger = logging.getLogger(__name__)
LIVE_EVERY_S = 0.3  # the live ELBO chart is redrawn at most this often while fitting


class BlackBoxLab(LabBase):
    """The SAVIGP dashboard; ``BlackBoxLab()`` in Jupyter or a served app file."""

    state_filename = "gpexplorer-black-box.json"
    upload_label = (f"CSV upload (inputs, then the target; at most {data.MAX_UPLOAD_ROWS:,} rows, "
                    f"{MAX_UPLOAD_BYTES / 1e6:g} MB)")

    def __init__(self, **params):
        super().__init__(cfg.BlackBoxSettings(), **params)
        self.problem, self.results, self.curve = None, {}, None
        self.error, self.fit_error, self.fit_note = None, None, None
        self._context, self._job_context, self._pending_fit = None, None, False
        self._live, self._live_drawn, self._data_version = None, 0.0, 0
        self._likelihood_used = None  # {"likelihood", "log_likelihood"} of the last accepted fit options
        self._build_components()
        self._connect_settings(self._reload, defer=True)

    # construction ----------------------------------------------------------------------
    def _build_components(self):
        self.latent, self.observation = LatentFigure(), ObservationFigure()
        self.elbo, self.variance, self.components = ElboFigure(), VarianceFigure(), ComponentsFigure()
        self.intro = TextBlock(texts.INTRO, styles={"font-size": "0.95em"})
        self.metrics_readout, self.badge_pane, self.note_pane = TextBlock(), TextBlock(), TextBlock()
        self._build_shared_widgets()
        self.fit_button = PromptButton(label="Fit", color="primary")
        self.fit_button.on_click(lambda _: self.request_fit())
        # shown under the badges while a shown fit ended without converging (issue 23)
        self.continue_button = PromptButton(label="Continue", color="warning", visible=False)
        self.continue_button.on_click(lambda _: self.continue_fit())

    # the lab base's hooks ---------------------------------------------------------------
    def slide_figures(self):
        return {"Latent posterior": "latent", "Observation space": "observation", "q(u) components": "components", "ELBO": "elbo", "Estimator variance": "variance"}

    def _settings_names(self):
        return cfg.url_parameters()

    def _settings_changed(self, names):
        self._apply_on_next_tick(names)

    def _parse_upload(self, contents, filename):
        return data.parse_upload(contents, filename)

    def _state_extras(self):
        return {"metrics": {p: r.metrics for p, r in self.results.items() if r.error is None},
                "errors": {p: r.error for p, r in self.results.items() if r.error is not None}}

    def _show_problems(self):
        self._update_badges()

    def controls(self):
        return layout.controls(self)

    def views(self):
        return layout.views(self)

    # data and settings -----------------------------------------------------------------
    @property
    def shown(self):
        return [p for p in cfg.POSTERIORS.values() if p in self.settings.posteriors]

    def _reload(self):
        """Data settings changed: load the data set, forget every fit, draw the data, fit."""
        self.cancel_job()
        try:
            problem = data.load(self.settings.dataset, self.settings.n_bins, self.settings.n_train,
                                self.settings.data_seed, self.uploaded)
        except ValueError as err:
            self.error = str(err)
            self._update_badges()
            return
        self.problem, self.error, self.results, self.curve = problem, None, {}, None
        self._context, self._live = None, None
        self._data_version += 1
        self._update_views()
        # once the page has loaded: a job's polling callback added while the session's document
        # is still being built never runs (at once when already loaded, or outside a server)
        pn.state.onload(self.request_fit)

    def _apply_settings(self, names):
        """Changed settings, applied on the next tick: reload and fit, fit, or show and fit the missing."""
        try:
            if names & set(cfg.DATA):
                self._reload()
            elif names & set(cfg.MODEL):
                self._update_views()  # the metrics table says the fit is stale
                self.request_fit()
            elif names & set(cfg.SHOWN):
                self._update_views()
                missing = [p for p in self.shown if p not in self.results]
                if missing and self._context == self._fit_context():
                    self.request_fit(missing)
                elif missing:
                    self.request_fit()
        except Exception as err:  # noqa: BLE001 - a bug, not bad input: logged, shown, the session survives
            logger.exception("applying the settings %s failed", sorted(names))
            self.error = f"{type(err).__name__}: {err}"
            self._update_badges()

    # fitting (background job) -----------------------------------------------------------
    def request_fit(self, only=None):
        """Fit the shown posteriors (``only`` these); a running fit is cancelled first and this
        one starts when it has stopped (:meth:`poll_job`)."""
        if self.problem is None:
            return
        if self._busy():
            if not self._pending_fit and self._job_context[:2] == (self._fit_context(), tuple(only or self.shown)):
                return  # that very fit is running (the page's first load can ask twice)
            self._pending_fit = True
            self.cancel_job()
            return
        posteriors = [p for p in (only or self.shown)]
        if not posteriors:
            self.status.object = texts.status_html("idle", "no posterior ticked: nothing to fit")
            return
        try:
            options = cfg.fit_options(self.settings, self.problem)
        except ValueError as err:
            self._refuse_likelihood(err)
            return
        self._accept_likelihood()
        problem, live = self.problem, comparison.LiveTrace()
        self._live, self._live_drawn = live, 0.0
        self._job_context = (self._fit_context(), tuple(posteriors), only is not None)
        self._start_job("fit", lambda job: comparison.fit_all(problem, posteriors, options, live, job.report,
                                                        lambda: job.cancelled),
                        started=f"fitting {', '.join(cfg.LABELS[p] for p in posteriors)}")

    def _refuse_likelihood(self, err):
        """The likelihood (a typed one) cannot be used: say why; the previous fit stays shown, and
        the address bar and the table say which likelihood that fit used (issue 24 item 12)."""
        self.fit_error = str(err)
        self._update_views()
        self._update_address()

    def _accept_likelihood(self):
        self.fit_error = None
        self._likelihood_used = {n: getattr(self.settings, n) for n in ("likelihood", "log_likelihood")}
        self._update_address()

    def _url_overrides(self):
        """While the likelihood is refused, the address bar shows the one the fit on screen used."""
        if self.fit_error is None:
            return {}
        return self._likelihood_used or {n: self.settings.param[n].default for n in ("likelihood", "log_likelihood")}

    def _previous_fit(self):
        """While the likelihood is refused: which likelihood the table's fit used (None otherwise)."""
        if self.fit_error is None or not self.results:
            return None
        used = self._url_overrides()
        if used["likelihood"] in cfg.TYPED_LIKELIHOODS:
            return f"log p(y | f) = {used['log_likelihood']}"
        names = {v: k for k, v in cfg.likelihood_choices().items()}
        return f"likelihood: {names.get(used['likelihood'], used['likelihood'])}"

    def _fit_context(self):
        """What a fit belongs to: the data and model settings, and the data set loaded."""
        return cfg.fit_context(self.settings) + (self._data_version,)

    def poll_job(self):
        """The lab base's polling, plus the live ELBO chart; a fit asked for while another ran
        starts once that one has stopped."""
        super().poll_job()
        if self._busy():
            now = time.perf_counter()
            if self._live is not None and now - self._live_drawn > LIVE_EVERY_S:
                self._live_drawn = now
                self._draw_elbo(running=True)
        elif self._pending_fit:
            self._pending_fit = False
            self.request_fit()

    def _job_buttons(self):
        return (self.fit_button, self.continue_button)

    # continuing fits that did not converge ------------------------------------------------
    def unfinished(self):
        """The shown posteriors whose current fit ended on its budget or stalled (Continue applies)."""
        if self._context != self._fit_context():
            return []
        return [p for p in self.shown if p in self.results and self.results[p].unfinished]

    def continue_fit(self):
        """Run the unfinished fits ``rounds`` more rounds each, from where they stopped, as a job."""
        todo = self.unfinished()
        if not todo or self._busy() or self.problem is None:
            return
        options = cfg.fit_options(self.settings, self.problem)
        problem, live = self.problem, comparison.LiveTrace()
        previous = {p: self.results[p] for p in todo}
        self._live, self._live_drawn = live, 0.0
        self._job_context = (self._fit_context(), tuple(todo), True)
        self._start_job("continue", lambda job: comparison.continue_all(problem, previous, options, live, job.report,
                                                                  lambda: job.cancelled),
                        started=f"continuing {', '.join(cfg.LABELS[p] for p in todo)}")

    def _job_finished(self, state, job):
        context, posteriors, partial = self._job_context
        if state == "done" and job.result is not None and context == self._fit_context():
            if not partial:
                self.results = {}
            self.results.update(job.result["results"])
            self.curve = job.result["variance"] if not partial or self.curve is None else self.curve
            self._context = context
            failed = [cfg.LABELS[p] for p, r in job.result["results"].items() if r.error is not None]
            verb = "continued" if job.name == "continue" else "fitted"
            message = f"{verb} {', '.join(cfg.LABELS[p] for p in posteriors)} in {job.elapsed:.2f} s"
            if failed:
                message += f"; {', '.join(failed)} failed (see the metrics table)"
            if job.result.get("note"):
                message += f"; note: {job.result['note']}"
            self.fit_note = job.result.get("note", self.fit_note if partial else None)  # also a badge: the status line folds away in presenter mode
            self.status.object = texts.status_html("done", message)
        elif state == "done":
            self.status.object = texts.status_html("discarded", "fit discarded: the settings changed while fitting")
        elif state == "cancelled":
            self.status.object = texts.status_html("cancelled", "fit cancelled")
        else:
            self.status.object = texts.status_html(state, f"fit {state}: {job.error or ''}")
        self._update_views()

    # views ------------------------------------------------------------------------------
    def _traces(self):
        """posterior -> trace columns: the running fit's (live), else the results' (the whole trace)."""
        traces = {p: r.trace for p, r in self.results.items() if r.error is None and r.trace}
        if self._live is not None:
            running = self._busy()
            for p, rows in self._live.snapshot().items():
                if running or p not in traces:  # a cancelled fit's trace where there is no result
                    traces[p] = comparison.trace_columns(rows)
        return traces

    def _draw_elbo(self, running=False):
        self.elbo.update(self._traces(), self.shown, running)

    def _update_views(self):
        with self._silenced():
            if self.problem is not None:
                self.latent.update(self.problem, self.results, self.shown)
                self.observation.update(self.problem, self.results, self.shown)
                self.components.update(self.problem, self.results, self.shown)
            self._draw_elbo(running=self._busy())
            self.variance.update(self.curve, self.settings.num_samples)
            stale = bool(self.results) and self._context != self._fit_context()
            label = self.problem.test_label if self.problem is not None else "test"
            self.metrics_readout.object = texts.metrics_html(self.results, self.shown, label, stale,
                                                             previous=self._previous_fit())
            lik = None
            if self.problem is not None:
                try:
                    lik = cfg.likelihood_name(self.settings, self.problem)
                except ValueError:
                    lik = None
            self.note_pane.object = texts.note_html(self.problem, lik)
            self._update_badges()

    def _update_badges(self):
        current = self.results if self._context == self._fit_context() else {}
        notes = [self.fit_note] if current else []
        self.badge_pane.object = texts.badges_html([self.error, self.fit_error, self.url_warning], current, self.shown,
                                                   notes)
        todo = self.unfinished()
        self.continue_button.visible = bool(todo)
        if todo:
            rounds = self.settings.rounds
            self.continue_button.label = (f"Continue {', '.join(cfg.LABELS[p] for p in todo)} "
                                          f"({rounds} more round{'' if rounds == 1 else 's'})")
