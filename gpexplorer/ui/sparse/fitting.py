"""The sparse lab's background jobs (Optimise, Continue, M sweep, Tighten upper bound) and what
their results change, as a mixin of :class:`gpexplorer.ui.sparse.lab.SparseRegressionLab`.

The computing is the library's (``sparse.joint_fit``, ``sparse.studies``); this module turns the
settings into those calls on a worker thread and applies a finished job's result: fits to the
replay slider, the trace charts and the sliders (a warm start for the next fit), badges to the
badge pane. A fit stopped by its iteration budget gets a ``not-converged`` badge and the
Continue button, which runs more iterations from where each such fit stopped.
"""

from __future__ import annotations

import numpy as np
import panel as pn

from gpexplorer._threads import threads_for
from gpexplorer.inducing import InducingFeature
from gpexplorer.sparse import studies
from gpexplorer.sparse.comparison import APPROXIMATIONS, build_model, parameter_key
from gpexplorer.sparse.feature_position import closest_pair
from gpexplorer.sparse.joint_fit import continue_fits, convergence_badges, fit_all
from gpexplorer.ui.markup import status_html
from gpexplorer.ui.sparse import settings as cfg
from gpexplorer.ui.widgets import PromptButton

__all__ = ["FitJobs", "blas_threads", "reference_approximation", "TIGHTEN_ITERATIONS"]

TIGHTEN_ITERATIONS = 150


def blas_threads(ds):
    """The scoped BLAS-thread policy for evaluating every view on ``ds``: the exact GP's N^3
    dominates (one thread at Snelson's N = 200, where threads thrash on a shared 2-core server)."""
    return threads_for(ds.n ** 3)


def reference_approximation(names):
    """The approximation whose optimum is written back into the sliders after a fit (and whose
    replayed iterate the draggable Z show): the last of the table (VFE) among ``names``."""
    return next(n for n in reversed(APPROXIMATIONS) if n in names)


class FitJobs:
    """Needs the lab's ``settings``, ``dataset``, ``fits``, ``fit_start``, ``feature``, ``replay``,
    ``mode``, ``trace``, ``status``, ``refresh()``, ``_shared()``, ``parameter_sets()`` and the
    job controls of :class:`gpexplorer.ui.lab_base.LabBase`."""

    def _build_fit_buttons(self):
        self.fit_button = PromptButton(label="Optimise", color="primary")
        self.continue_button = pn.widgets.Button(label="Continue", color="primary", disabled=True,
                                                 visible=False)
        self.sweep_button = pn.widgets.Button(label="Run M sweep", color="default")
        self.tighten_button = pn.widgets.Button(label="Tighten upper bound")
        self.fit_button.on_click(lambda _: self.start_fit())
        self.continue_button.on_click(lambda _: self.start_continue())
        self.sweep_button.on_click(lambda _: self.start_sweep())
        self.tighten_button.on_click(lambda _: self.start_tighten())
        self._generation = 0  # bumped by every structural reload: a job started before it is stale

    # what the fits say ------------------------------------------------------------------
    def fit_badges(self):
        """``not-converged`` badges of the fits held now (shown in manual mode too: Continue
        continues them)."""
        return convergence_badges(self.fits)

    def reference_iterate(self):
        """The reference fit's ParameterSet at the replayed iteration, in fitted mode (else None)."""
        if self.mode != "fitted" or not self.fits:
            return None
        o = self.fits[reference_approximation(self.fits)]
        return o.trace[min(self.replay, len(o.trace) - 1)] if o.trace else o.final

    def _can_continue(self):
        return bool(self.fits) and any(not o.converged for o in self.fits.values())

    def _forget_fits(self, reason):
        """Fits, replay and their status go with the problem they were made for."""
        had = self.fits is not None or (self.job is not None and self.job.state != "running")
        self._generation += 1
        with self._silenced():
            self.replay = 0
        self.fits, self.fit_start, self.sweep, self.mode = None, None, None, "manual"
        self.param.replay.bounds = (0, 1)  # Bokeh rejects a slider with start == end
        self.replay_slider.disabled = True
        self.continue_button.visible, self.continue_button.disabled = False, True
        if had:
            self.status.object = status_html("idle", f"{reason}: earlier results discarded")

    # starting jobs ----------------------------------------------------------------------
    def _start(self, name, fn):
        self._job_generation = self._generation
        self._start_job(name, fn)

    def start_fit(self):
        if self.dataset is None or self._busy():
            return
        s, ds = self.settings, self.dataset
        start = self._shared().copy()
        names = [n for n in s.approximations if n != "exact"] or ["vfe"]
        reference = reference_approximation(["exact", *names])
        # warm start: the sliders and Z hold the reference fit's optimum (plus the user's edits);
        # every other approximation continues from its own previous optimum
        warm = {n: o.final for n, o in (self.fits or {}).items() if n != reference}
        kw = dict(fixed=cfg.fixed_names(s), restarts=s.restarts, max_iter=s.max_iter, seed=s.seed,
                  vfe_from_fitc=s.vfe_from_fitc, warm=warm)
        self.fit_start = start
        self._start("fit", lambda job: fit_all(ds, start, names, report=job.report, **kw))

    def start_continue(self):
        """Run Max iter more iterations of every fit that stopped on its budget, from where it stopped."""
        if self.dataset is None or self._busy() or not self._can_continue():
            return
        ds, fits, fixed, max_iter = self.dataset, dict(self.fits), cfg.fixed_names(self.settings), self.settings.max_iter
        self._start("continue", lambda job: continue_fits(ds, fits, fixed, max_iter, report=job.report))

    def start_sweep(self):
        if self.dataset is None or self._busy():
            return
        s, ds, p = self.settings, self.dataset, self._shared()
        Ms = sorted(set(np.linspace(1, min(s.sweep_max_M, ds.n), 12).round().astype(int).tolist()))
        self._start("sweep", lambda job: studies.m_sweep(
            ds, p.kernel, p.noise_variance, Ms, z_init=s.z_init, seed=s.seed, max_iter=s.max_iter,
            progress=job.report, cancelled=lambda: job.cancelled, tighten_upper_bound=TIGHTEN_ITERATIONS,
            inducing=p.inducing if isinstance(p.inducing, InducingFeature) else None))

    def start_tighten(self):
        """Minimise the upper bound over its own Z at each shown approximation's parameters."""
        if self.dataset is None or self._busy():
            return
        ds = self.dataset
        todo = {parameter_key(p): p for n, p in self.parameter_sets().items() if n != "exact"}

        def tighten(job):
            out = {}
            for k, (key, p) in enumerate(todo.items()):
                job.report(k / len(todo), f"tightening bound {k + 1} of {len(todo)}")
                with blas_threads(ds):
                    out[key] = build_model(ds, "vfe", p).tightened_upper_bound(TIGHTEN_ITERATIONS)[0]
            return out

        self._start("tighten", tighten)

    # the job controls' hooks ------------------------------------------------------------
    def _job_buttons(self):
        return (self.fit_button, self.sweep_button, self.tighten_button)

    def _lock_job_buttons(self, locked):
        super()._lock_job_buttons(locked)
        can = self._can_continue()
        self.continue_button.visible, self.continue_button.disabled = can, locked or not can

    def _job_finished(self, state, job):
        if state == "done" and job.name in ("fit", "continue") and self._job_generation != self._generation:
            self.status.object = status_html("cancelled", f"{job.name} discarded: the problem changed while it ran")
        elif state == "done":
            {"fit": self._apply_fit, "continue": self._apply_fit, "sweep": self._apply_sweep,
             "tighten": self._apply_tighten}[job.name](job.result)
            self.status.object = status_html("done", f"{job.name} finished in {job.elapsed:.2f} s")
        else:
            self.status.object = status_html(state, f"{job.name} {state}: {job.error or ''}")

    # applying results -------------------------------------------------------------------
    def _apply_fit(self, outcomes):
        self.fits = outcomes
        longest = max(len(o.trace) for o in outcomes.values()) - 1
        reference = outcomes[reference_approximation(outcomes)]
        with self._silenced():
            self.param.replay.bounds = (0, max(longest, 1))
            self.replay = longest
            self.mode = "fitted"
            if reference.final.inducing is not None:
                self.feature = reference.final.inducing.copy()
        self.refresh()  # the plots first: they are what the user is waiting for
        with self._silenced():
            cfg.adopt(self.settings, reference.final)  # warm start for the next fit
            if self.feature is not None and self.dataset.input_dim == 1 and self._draggable():
                self.settings.inducing_inputs = [round(float(v), 6) for v in self.Z[:, 0]]
            if self.settings.select_closest and reference.final.inducing is not None:
                self.settings.selected_feature = closest_pair(reference.final.inducing, reference.final.kernel)[0]
            self._show_selected_feature()
        self.replay_slider.disabled = False
        self.trace.update(outcomes)

    def _apply_tighten(self, result):
        self.tightened.update(result)
        self.refresh()

    def _apply_sweep(self, result):
        self.sweep = result
        self.sweep_charts.update(result)
