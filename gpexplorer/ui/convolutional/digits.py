"""The patches lab's drawing canvas: a hand-drawn digit classified live by a 10-class
convolutional GP (:func:`gpexplorer.convolutional_fits.cached_digit_model`).

The digit model is fitted once per server process and options, in the background with its own
progress bar, status line and Cancel (a job of this panel's own, so that the lab's fits and the
race are not held up by it, nor it by them); a second page waits for the first page's fit instead
of fitting again, and a page closed mid-fit leaves the fit running for the next one
(:class:`SharedFitPoller`). Every finished stroke sends the 28 x 28 drawing (``canvas.PixelCanvas``), which
is centred by its centre of mass and pooled to 14 x 14 as the model's training images were, then
classified (:meth:`SparseVariationalGP.predict_class_probabilities`).
"""

from __future__ import annotations

import logging
import time

import numpy as np
import panel as pn

from gpexplorer import convolutional_fits as fits
from gpexplorer.convolutional_views import centre_by_mass, pool_images
from gpexplorer.ui.convolutional.canvas import PixelCanvas
from gpexplorer.ui.convolutional.charts import DigitCharts
from gpexplorer.ui.convolutional.texts import digit_html
from gpexplorer.ui.jobs import JobControls, JobPoller
from gpexplorer.ui.lab_base import next_tick
from gpexplorer.ui.markup import TextBlock, status_html
from gpexplorer.ui.widgets import PromptButton

logger = logging.getLogger(__name__)
SIDE, MODEL_SIDE = 28, 14


class DigitStatus(TextBlock):
    """The digit fit's status line: ``#digit-status`` (the lab's own is ``#job-status``)."""

    def __init__(self, html: str = ""):
        super().__init__(html.replace('id="job-status"', 'id="digit-status"'))

    @property
    def object(self) -> str:
        return self.value

    @object.setter
    def object(self, text: str):
        self.value = text.replace('id="job-status"', 'id="digit-status"')


class SharedFitPoller(JobPoller):
    """A JobPoller whose job outlives its page: the digit model it fits is kept for every page of
    the server process (:func:`gpexplorer.convolutional_fits.cached_digit_model`), so a tab closed
    mid-fit (a lesson's next step, a reload) leaves the fit running for the next page instead of
    starting it again there. Cancel still stops it."""

    def connection_lost(self) -> bool:
        return False

    def session_destroyed(self, session_context):
        pass


class DigitPanel(JobControls):
    """The canvas, its class probabilities and the digit model's background fit; ``options()``
    gives the digit model's options as the page's settings have them (its button fits those)."""

    def __init__(self, options=dict):
        self.options_now = options
        self.jobs = SharedFitPoller()
        self.outcome, self.options, self.last_seconds = None, None, None
        self.canvas = PixelCanvas(rows=SIDE, cols=SIDE, pixel=9, brush="pen", label="digit", values=[0.0] * SIDE * SIDE,
                                  margin=(5, 10))
        self.canvas.param.watch(lambda e: next_tick(lambda: self.classify(e.new)), "values")
        self.charts = DigitCharts()
        self.readout = TextBlock(digit_html("waiting", "The digit model is fitted after the lab's first fit."), width=270)
        self.status = DigitStatus(status_html("idle", ""))
        self._pending = None  # options to fit once the running fit has stopped
        self.progress = pn.indicators.Progress(value=0, max=100, visible=False, width=260)
        self.cancel_button = pn.widgets.Button(label="Cancel", color="warning", disabled=True)
        self.cancel_button.on_click(lambda _: self.cancel_job())
        self.clear_button = PromptButton(label="Clear drawing", color="light")
        self.clear_button.on_click(lambda _: self.clear())
        self.fit_button = PromptButton(label="Fit the digit model", color="primary")
        self.fit_button.on_click(lambda _: self.start(self.options_now(), force=True))

    # the model ---------------------------------------------------------------------------
    def start(self, options, force=False):
        """Fit (or fetch) the digit model for ``options`` unless that one is here or on its way."""
        options = dict(options)
        if not force and options == self.options and (self._busy() or self.outcome is not None):
            return
        if self._busy():
            self._pending = options  # started once the running fit has stopped (_job_finished)
            self.cancel_job()
            return
        self.options, self.outcome = options, None
        self.readout.object = digit_html("fitting", "Fitting the digit model in the background ...")
        self._start_job("digits", lambda job: fits.cached_digit_model(options, job.report, lambda: job.cancelled),
                        started="fitting the digit model")

    def _job_buttons(self):
        return (self.fit_button,)

    def _job_finished(self, state, job):
        if self._pending is not None:
            options, self._pending = self._pending, None
            next_tick(lambda: self.start(options, force=True))
            return
        if state == "done" and job.result is not None and job.result.error is None:
            self.outcome = job.result
            m = self.outcome.metrics
            self.status.object = status_html("done", f"digit model ready: test error {m['error_rate']:.1%} on "
                                                     f"{m['n_test']} test digits (fitted in {m['seconds']:.0f} s)")
            self.readout.object = digit_html("ready", "Draw a digit on the canvas.")
            self.classify(self.canvas.values)
        elif state == "done":
            error = job.result.error if job.result is not None else "cancelled"
            self.status.object = status_html("failed", f"digit model: {error}")
            self.readout.object = digit_html("failed", f"The digit model could not be fitted: {error}")
        else:
            self.status.object = status_html(state, f"digit model {state}: {job.error or ''}")
            self.readout.object = digit_html("failed" if state == "failed" else "waiting",
                                             "Press 'Fit the digit model' to classify drawings.")

    # the drawing -------------------------------------------------------------------------
    def prepared(self, values):
        """The drawing as the model sees it (centred, pooled to 14 x 14), or None if blank or malformed."""
        x = np.asarray(values, dtype=float).reshape(-1) if values is not None else np.zeros(0)
        if x.size != SIDE * SIDE or not np.all(np.isfinite(x)) or x.max(initial=0.0) <= 0.0:
            return None
        x = np.clip(x, 0.0, 1.0)
        return pool_images(centre_by_mass(x, SIDE)[None, :], SIDE, SIDE // MODEL_SIDE)[0]

    def classify(self, values):
        """Class probabilities of the drawing ``values`` (28 x 28, row-major) into the charts."""
        seen = self.prepared(values)
        if seen is None or self.outcome is None:
            self.charts.update(None, seen, MODEL_SIDE)
            if self.outcome is not None:
                self.readout.object = digit_html("ready", "Draw a digit on the canvas (the canvas is blank).")
            return None
        t0 = time.perf_counter()
        try:
            p = self.outcome.model.predict_class_probabilities(seen[None, :])[0]
        except (ValueError, FloatingPointError, np.linalg.LinAlgError) as err:
            logger.warning("classifying a drawing failed: %s", err)
            self.readout.object = digit_html("failed", f"Could not classify the drawing: {err}")
            return None
        self.last_seconds = time.perf_counter() - t0
        self.charts.update(p, seen, MODEL_SIDE)
        best = int(np.argmax(p))
        self.readout.object = digit_html("ready", f"Looks like a {best} (p = {p[best]:.2f}); classified in "
                                                  f"{1000 * self.last_seconds:.0f} ms.", digit=best)
        return p

    def clear(self):
        self.canvas.clear()
        self.classify(self.canvas.values)
