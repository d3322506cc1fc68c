"""The random-features lab (issue 27): random Fourier features, the kernel they estimate, and the
models built on them beside the exact GP.

``RandomFeaturesLab`` is a Panel Viewer. What a user sets lives in its own
:class:`~gpexplorer.ui.random_features.settings.RandomFeaturesSettings` (one per session, mirrored
in the URL). A kernel setting (basis, lengthscale, D, seed, x0, d) redraws the kernel views at
once, in the session's thread (the slice and the maps first; the error curves on the next tick, or,
when they must be recomputed, once the slider has rested for CURVE_DELAY_MS);
a model setting starts the fit of the exact GP, VFE, the SLM and the GLM as a
:class:`~gpexplorer.ui.jobs.BackgroundJob` with progress and Cancel; *Fit ARD* fits an ARD SLM on
Boston housing the same way. One job runs at a time: a fit asked for while another job runs
waits for it (a stale fit is cancelled first). The computations are
:mod:`gpexplorer.random_features.lab_backend`; this class turns settings into its calls and its
results into views.
"""

from __future__ import annotations

import logging
import time

import panel as pn

from gpexplorer.random_features import lab_backend as backend
from gpexplorer.ui.lab_base import LabBase, next_tick
from gpexplorer.ui.markup import TextBlock
from gpexplorer.ui.random_features import layout, texts
from gpexplorer.ui.random_features import settings as cfg
from gpexplorer.ui.random_features.charts import ArdFigure, FitFigure, WeightFigure
from gpexplorer.ui.random_features.figures import ErrorCurveFigure, KernelMaps, SliceFigure
from gpexplorer.ui.widgets import PromptButton

logger = logging.getLogger(__name__)
STARTED = {"fit": "fitting the exact GP, VFE, the SLM and the GLM", "ard": "fitting ARD lengthscales on Boston"}
#: a new basis, lengthscale or d redraws the error curves (60-150 ms) this long after the last such move, so
#: that a dragged lengthscale slider is not held up by them; a new D only moves the curves' dots (next tick)
CURVE_DELAY_MS = 200


class RandomFeaturesLab(LabBase):
    """The random-features dashboard; ``RandomFeaturesLab()`` in Jupyter or a served app file."""

    state_filename = "gpexplorer-random-features.json"

    def __init__(self, **params):
        super().__init__(cfg.RandomFeaturesSettings(), **params)
        self.view = self.curves = self.comparison = self.ard = self.weights = None
        self.error = self.weight_message = None
        self.fit_context = self.ard_context = self._job_context = None
        self.queue, self._curves_pending, self._drawn_curves, self.last_kernel_seconds = [], False, None, None
        self._last_move = 0.0
        self._build_components()
        self._connect_settings(self._first_load, defer=True)
        # the fit starts once the page has loaded; asked for here, before a lesson card's own onload,
        # so that the card checks its claims after this fit and not before it starts
        pn.state.onload(self.request_fit)

    def _build_components(self):
        self.slice, self.maps, self.curve_chart = SliceFigure(), KernelMaps(), ErrorCurveFigure()
        self.fits_chart, self.weight_chart = FitFigure(), WeightFigure()
        self.ard_chart = ArdFigure(backend.boston_standardised()[2])
        self.intro = TextBlock(texts.INTRO, styles={"font-size": "0.95em"})
        self.badge_pane, self.kernel_readout = TextBlock(texts.badges_html([])), TextBlock(texts.kernel_html(None, None))
        self.fit_table, self.weights_readout = TextBlock(texts.fit_html(None)), TextBlock(texts.weights_html(None))
        self.ard_readout = TextBlock(texts.ard_html(None))
        self._build_shared_widgets()
        self.fit_button = PromptButton(label="Fit the four models", color="primary")
        self.fit_button.on_click(lambda _: self.request_fit())
        self.ard_button = PromptButton(label="Fit ARD (Boston)", color="primary")
        self.ard_button.on_click(lambda _: self.request_ard())

    # the lab base's hooks ---------------------------------------------------------------
    def slide_figures(self):
        return {"Fits": "fits-figure", "Kernel slice": "kernel-slice-figure", "Error curve": "error-curve-figure", "ARD lengthscales": "ard-figure", "Mixture weights": "weights-figure"}

    def _settings_names(self):
        return cfg.url_parameters()

    def _settings_changed(self, names):
        self._apply_on_next_tick(names)

    def _check_url_value(self, name, value):
        if name in cfg.EVEN and isinstance(value, int) and value % 2:
            return f"must be even (a cos and a sin per frequency), not {value}"
        return None

    def _parse_upload(self, contents, filename):
        raise ValueError("this lab takes no uploads")

    def _state_extras(self):
        out = {"kernel": None if self.view is None else {"error": self.view.error, "n_features": self.view.n_features}}
        out["fits"] = None if self.comparison is None else {
            k: {"objective": f.objective, "seconds": f.seconds, "error": f.error} for k, f in self.comparison.fits.items()}
        out["ard"] = None if self.ard is None or self.ard.error else dict(zip(self.ard.names, self.ard.lengthscale.tolist()))
        return out

    def _show_problems(self):
        self._update_badges()

    def controls(self):
        return layout.controls(self)

    def views(self):
        return layout.views(self)

    # settings ---------------------------------------------------------------------------
    def _first_load(self):
        self.draw_kernel()
        self._draw_models()

    def _apply_settings(self, names):
        try:
            if names & set(cfg.KERNEL):
                self.draw_kernel()
            if names & set(cfg.MODEL):
                self.request_fit()
                self._draw_models()  # the table says the fit is stale until the new one arrives
            elif names & set(cfg.WEIGHTS):
                self._draw_weights()
            if names & set(cfg.ARD):
                self._draw_ard()
        except Exception as err:  # noqa: BLE001 - a bug, not bad input: logged, shown, the session survives
            logger.exception("applying the settings %s failed", sorted(names))
            self.error = f"{type(err).__name__}: {err}"
            self._update_badges()

    # the kernel views (at once) ---------------------------------------------------------
    def draw_kernel(self):
        """Recompute the slice and the maps now, the error curves just after (:meth:`_schedule_curves`)."""
        t0, s = time.perf_counter(), self.settings
        try:
            self.view = backend.kernel_view(s.basis, s.lengthscale, s.n_features, s.seed, s.x0)
            self.error = None
        except ValueError as err:
            self.error = f"the kernel estimate failed: {err}"
            self._update_badges()
            return
        with self._silenced():
            self.slice.update(self.view)
            self.maps.update(self.view)
        self.last_kernel_seconds = time.perf_counter() - t0
        self._update_badges()
        self._schedule_curves()

    def _curve_key(self):
        s = self.settings
        return s.basis, float(s.lengthscale), int(s.dim)

    def _schedule_curves(self):
        """The error curves after the slice and the maps have gone out: on the next tick for a new D,
        once no move came for CURVE_DELAY_MS for new curves (at once outside a server)."""
        self._last_move = time.monotonic()
        if self._curves_pending:
            return
        self._curves_pending = True
        doc = pn.state.curdoc
        if doc is not None and doc.session_context is not None and self._drawn_curves != self._curve_key():
            self._wait_for_quiet(doc)
        else:
            next_tick(self._draw_curves)

    def _wait_for_quiet(self, doc):
        left = CURVE_DELAY_MS - 1000 * (time.monotonic() - self._last_move)
        if left > 5:
            doc.add_timeout_callback(lambda: self._wait_for_quiet(doc), int(left))
        else:
            next_tick(self._draw_curves)

    def _draw_curves(self):
        self._curves_pending = False
        s = self.settings
        try:
            self.curves = backend.error_curves(s.basis, s.lengthscale, s.dim, s.n_features)
        except ValueError as err:
            self.error = f"the error curves failed: {err}"
            self._update_badges()
            return
        self._drawn_curves = self._curve_key()
        with self._silenced():
            self.curve_chart.update(self.curves)
            self.kernel_readout.object = texts.kernel_html(self.view, self.curves, self.last_kernel_seconds)

    # background jobs: the four fits and ARD ----------------------------------------------
    def _enqueue(self, name):
        if name not in self.queue:
            self.queue.append(name)

    def _request(self, name, context, work):
        """Start job ``name`` now, or after the running one (cancelled first when it is a stale run of
        the same job); nothing if that very job is already running."""
        if self._busy():
            running = self.jobs.job.name
            if running == name and self._job_context == context and name not in self.queue:
                return
            self._enqueue(name)
            if running == name:
                self.cancel_job()
            return
        self._job_context = context
        self._start_job(name, work, started=STARTED[name])

    def request_fit(self):
        """Fit the exact GP, VFE, the SLM and the GLM with the current settings, in the background."""
        basis, options = self.settings.basis, cfg.fit_options(self.settings)
        self._request("fit", cfg.fit_context(self.settings),
                      lambda job: backend.fit_models(basis, options, job.report, lambda: job.cancelled))

    def request_ard(self):
        """Fit the ARD SLM on Boston housing with the current settings, in the background."""
        basis, o = self.settings.basis, cfg.ard_options(self.settings)
        self._request("ard", cfg.ard_context(self.settings),
                      lambda job: backend.ard_fit(basis, o["n_features"], o["seed"], o["iterations"], job.report,
                                                  lambda: job.cancelled))
        self._draw_ard()

    def poll_job(self):
        super().poll_job()
        if not self._busy() and self.queue:
            {"fit": self.request_fit, "ard": self.request_ard}[self.queue.pop(0)]()

    def _job_buttons(self):
        return (self.fit_button, self.ard_button)

    def _job_finished(self, state, job):
        current = cfg.fit_context(self.settings) if job.name == "fit" else cfg.ard_context(self.settings)
        what = "the four models" if job.name == "fit" else "ARD"
        if state == "done" and job.result is not None and self._job_context == current:
            if job.name == "fit":
                self.comparison, self.fit_context = job.result, self._job_context
            else:
                self.ard, self.ard_context = job.result, self._job_context
            self.status.object = texts.status_html("done", f"fitted {what} in {job.elapsed:.1f} s")
        elif state == "done":
            self.status.object = texts.status_html("discarded", f"{what}: discarded, the settings changed meanwhile")
        else:
            self.status.object = texts.status_html(state, f"{what}: {state} {job.error or ''}")
        if job.name == "fit":
            self._draw_models()
        else:
            self._draw_ard()

    # views of the fits --------------------------------------------------------------------
    def _draw_models(self):
        stale = self.comparison is not None and self.fit_context != cfg.fit_context(self.settings)
        with self._silenced():
            self.fits_chart.update(self.comparison, stale)
            running = self._busy() and self.jobs.job.name == "fit" or "fit" in self.queue
            self.fit_table.object = texts.fit_html(self.comparison, stale, running)
        self._draw_weights()

    def _draw_weights(self):
        c, self.weight_message, self.weights = self.comparison, None, None
        glm = c.fits["glm"] if c is not None else None
        if glm is not None and glm.error is None:
            slm = c.fits["slm"].model if c.fits["slm"].error is None else None
            try:
                self.weights = backend.weight_view(glm.model, slm, cfg.weight_pick(self.settings))
            except ValueError as err:
                self.weight_message = f"{err}; showing the two that spread most"
                self.weights = backend.weight_view(glm.model, slm)
        with self._silenced():
            self.weight_chart.update(self.weights)
            self.weights_readout.object = texts.weights_html(self.weights, self.weight_message)

    def _draw_ard(self):
        stale = self.ard is not None and self.ard_context != cfg.ard_context(self.settings)
        running = self._busy() and self.jobs.job.name == "ard"
        with self._silenced():
            self.ard_chart.update(self.ard, stale)
            self.ard_readout.object = texts.ard_html(self.ard, stale, running)

    def _update_badges(self):
        failed = [f"{backend.MODELS[k]}: {f.error}" for k, f in (self.comparison.fits.items() if self.comparison else ())
                  if f.error]
        self.badge_pane.object = texts.badges_html([self.error, *failed, self.url_warning])
