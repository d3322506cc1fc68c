"""The primer page (issue 28): a GP prior and posterior for a first lecture.

``PrimerLab`` is a Panel Viewer. What a user sets lives in its own
:class:`~gpexplorer.ui.primer.settings.PrimerSettings` (one per session, mirrored in the URL); the
data points live in the lab (a tap on the posterior plot adds one, *Clear points* removes them).
Every view is recomputed at once in the session's thread (milliseconds for at most
``MAX_POINTS`` points): the prior's samples, the posterior given the points, the 2-D marginal of
(f(x1), f(x2)) and the evidence as sequential prediction; *Filter prior samples* runs Occam's
filter for three lengthscales. The computations are :mod:`gpexplorer.primer`; this class turns
settings into its calls and its results into views.
"""

from __future__ import annotations

import logging
import math

import numpy as np

from gpexplorer import primer
from gpexplorer.ui.lab_base import LabBase, next_tick
from gpexplorer.ui.markup import TextBlock
from gpexplorer.ui.primer import layout, texts
from gpexplorer.ui.primer import settings as cfg
from gpexplorer.ui.primer.figures import EvidenceFigure, PairFigure, PosteriorFigure, PriorFigure, x_range
from gpexplorer.ui.widgets import PromptButton

logger = logging.getLogger(__name__)

__all__ = ["PrimerLab"]


class PrimerLab(LabBase):
    """The primer page; ``PrimerLab()`` in Jupyter or a served app file."""

    state_filename = "gpexplorer-primer.json"
    #: the page's one action (the filter) finishes inside its call: no background job to wait for
    actions_run_inline = True

    def __init__(self, **params):
        super().__init__(cfg.PrimerSettings(), **params)
        self.X, self.y = list(cfg.DEFAULT_X), list(cfg.DEFAULT_Y)
        self.kernel, self.kernel_used, self.kernel_error, self.error = None, "se", None, None
        self.prior = self.conditioned = self.evidence = self.pair = None
        self.filter_results, self.filter_stale, self.filter_message = None, False, None
        self._build_components()
        self._connect_settings(self._first_load)

    def _build_components(self):
        shared = x_range()
        self.prior_chart = PriorFigure(shared)
        self.posterior_chart = PosteriorFigure(shared, self._on_tap)
        self.pair_chart, self.evidence_chart = PairFigure(), EvidenceFigure()
        self.intro = TextBlock(texts.INTRO, styles={"font-size": "0.95em"})
        self.badge_pane = TextBlock(texts.badges_html([]))
        self.kernel_message = TextBlock(texts.kernel_message_html("se"))
        self.points_readout = TextBlock(texts.points_html(len(self.X), cfg.MAX_POINTS))
        self.evidence_readout = TextBlock(texts.evidence_html(None))
        self.filter_readout = TextBlock(texts.filter_html())
        self._build_shared_widgets()
        self.resample_button = PromptButton(label="Resample", color="primary")
        self.resample_button.on_click(lambda _: self.resample())
        self.clear_button = PromptButton(label="Clear points", color="light")
        self.clear_button.on_click(lambda _: next_tick(self.clear_points))
        self.default_button = PromptButton(label="Default points", color="light")
        self.default_button.on_click(lambda _: next_tick(self.default_points))
        self.filter_button = PromptButton(label="Filter prior samples", color="primary")
        self.filter_button.on_click(lambda _: next_tick(self.run_filter))

    # the lab base's hooks ---------------------------------------------------------------
    def _settings_names(self):
        return cfg.url_parameters()

    def _settings_changed(self, names):
        self._apply_on_next_tick(names)

    def _check_url_value(self, name, value):
        if name == "kernel":
            try:
                cfg.kernel_for(value, 1.0, 1.0)
            except ValueError as err:
                return str(err)
        return None

    def _url_overrides(self):
        """While a typed expression is refused, the address bar shows the kernel still in use."""
        return {"kernel": self.kernel_used} if self.kernel_error is not None else {}

    def _parse_upload(self, contents, filename):
        raise ValueError("this lab takes no uploads")

    def _state_extras(self):
        out = {"kernel_used": self.kernel_used,
               "points": {"x": [float(v) for v in self.X], "y": [float(v) for v in self.y]},
               "log_evidence": None if self.evidence is None else self.evidence.total}
        out["filter"] = None if not self.filter_results else [
            {"role": role, "lengthscale": ls, "share": r.share, "kept": r.n_kept, "log_evidence": r.log_evidence}
            for role, ls, r in self.filter_results]
        return out

    def _show_problems(self):
        self._update_badges()

    def _job_buttons(self):
        return ()

    def _job_finished(self, state, job):  # no background jobs on this page
        pass

    def controls(self):
        return layout.controls(self)

    def views(self):
        return layout.views(self)

    # settings ---------------------------------------------------------------------------
    def _first_load(self):
        self._update_kernel()
        self.draw()

    def _apply_settings(self, names):
        try:
            if names & set(cfg.KERNEL):
                self._update_kernel()
            if names & set(cfg.FILTER):
                self._invalidate_filter()
            self.draw()
        except Exception as err:  # noqa: BLE001 - a bug, not bad input: logged, shown, the session survives
            logger.exception("applying the settings %s failed", sorted(names))
            self.error = f"{type(err).__name__}: {err}"
            self._update_badges()

    def _update_kernel(self):
        """The typed expression with the sliders' lengthscale and variance; a refused expression is
        named in the status line and the previous kernel stays (at the sliders' values)."""
        s = self.settings
        try:
            self.kernel = cfg.kernel_for(s.kernel, s.lengthscale, s.variance)
            self.kernel_used, self.kernel_error = s.kernel.strip(), None
        except ValueError as err:
            self.kernel_error = str(err)
            self.kernel = cfg.kernel_for(self.kernel_used, s.lengthscale, s.variance)
        self.kernel_message.object = texts.kernel_message_html(self.kernel_used, self.kernel_error, self.kernel_used)
        self._update_address()

    # data points ------------------------------------------------------------------------
    def _on_tap(self, event):
        """A tap on the posterior plot (a Bokeh Tap event, data coordinates): a new data point."""
        x, y = getattr(event, "x", None), getattr(event, "y", None)
        next_tick(lambda: self.add_point(x, y))

    def add_point(self, x, y):
        """Add the data point (x, y) (x clipped to the plotted range); False when refused."""
        if x is None or y is None or not (math.isfinite(x) and math.isfinite(y)):
            return False
        if len(self.X) >= cfg.MAX_POINTS:
            self.points_readout.object = texts.points_html(len(self.X), cfg.MAX_POINTS, refused=True)
            return False
        self.X.append(round(float(np.clip(x, cfg.GRID[0], cfg.GRID[-1])), 4))
        self.y.append(round(float(y), 4))
        self._data_changed()
        return True

    def clear_points(self):
        self.X, self.y = [], []
        self._data_changed()

    def default_points(self):
        self.X, self.y = list(cfg.DEFAULT_X), list(cfg.DEFAULT_Y)
        self._data_changed()

    def resample(self):
        """New prior and posterior samples: the next seed (in the URL like any setting)."""
        lo, hi = self.settings.param.seed.bounds
        self.settings.seed = lo if self.settings.seed >= hi else self.settings.seed + 1

    def _data_changed(self):
        self._invalidate_filter()
        self.points_readout.object = texts.points_html(len(self.X), cfg.MAX_POINTS)
        self.draw()

    # the views --------------------------------------------------------------------------
    def order(self):
        """The prediction order of the evidence bars (None: as the points were added)."""
        return np.arange(len(self.X))[::-1] if self.settings.reverse else None

    def draw(self):
        """Recompute every view from the settings, the kernel and the points (milliseconds)."""
        s, k = self.settings, self.kernel
        grid = cfg.GRID[:, None]
        X, y = np.asarray(self.X, dtype=float)[:, None], np.asarray(self.y, dtype=float)
        try:
            self.prior, _ = primer.prior_samples(k, grid, cfg.N_PRIOR, seed=s.seed)
            data = (X, y) if len(self.X) else (None, None)
            self.conditioned = primer.condition(k, *data, s.noise_variance, grid, num_samples=cfg.N_POSTERIOR,
                                                seed=s.seed + 1)
            self.pair = (primer.pair_marginal(k, s.x1, s.x2),
                         primer.pair_marginal(k, s.x1, s.x2, *data, noise_variance=s.noise_variance))
            self.evidence = (primer.sequential_evidence(k, X, y, s.noise_variance, order=self.order())
                             if len(self.X) else None)
            self.error = None
        except ValueError as err:
            self.error = f"the views could not be computed: {err}"
            self._update_badges()
            return
        dots_x = [np.interp(s.x1, cfg.GRID, f) for f in self.prior]
        dots_y = [np.interp(s.x2, cfg.GRID, f) for f in self.prior]
        with self._silenced():
            self.prior_chart.update(self.prior, self.kernel_used, s.x1, s.x2)
            self.posterior_chart.update(self.X, self.y, self.conditioned, s.x1, s.x2)
            self.pair_chart.update(*self.pair, dots_x, dots_y, s.x1, s.x2)
            self.evidence_chart.update(self.X, self.evidence, s.reverse)
            self.evidence_readout.object = texts.evidence_html(self.evidence)
        self._update_badges()

    # Occam's razor by filtering ----------------------------------------------------------
    def filter_lengthscales(self):
        """(role, lengthscale) of the three filters: too short, the page's, too long."""
        return (("too short", cfg.SHORT), ("this page's", float(self.settings.lengthscale)), ("too long", cfg.LONG))

    def filter_call(self, lengthscale, current):
        """The keyword arguments of the filter's :func:`gpexplorer.primer.occam_filter` call."""
        s = self.settings
        return dict(kernel=cfg.kernel_for(self.kernel_used, lengthscale, s.variance),
                    X=np.asarray(self.X, dtype=float)[:, None], y=np.asarray(self.y, dtype=float),
                    noise_variance=s.noise_variance, tolerance=s.tolerance, num_samples=cfg.FILTER_SAMPLES,
                    seed=s.seed, X_plot=cfg.FILTER_GRID[:, None] if current else None, keep=50 if current else 0)

    def run_filter(self):
        """Filter 100,000 prior draws for each of the three lengthscales (about a tenth of a second)."""
        if not self.X:
            self.filter_results = None
            self.filter_message = "Add data points first: the filter keeps prior draws near the data."
        else:
            results = []
            for k, (role, lengthscale) in enumerate(self.filter_lengthscales()):
                results.append((role, lengthscale, primer.occam_filter(**self.filter_call(lengthscale, k == 1))))
            self.filter_results, self.filter_message, self.filter_stale = results, None, False
        self._draw_filter()

    def _invalidate_filter(self):
        if self.filter_results or self.filter_message:
            self.filter_stale = bool(self.filter_results)  # a message (no points) is simply withdrawn
            self.filter_results, self.filter_message = None, None
            self._draw_filter()

    def _draw_filter(self):
        kept = self.filter_results[1][2].kept if self.filter_results else np.zeros((0, len(cfg.FILTER_GRID)))
        with self._silenced():
            self.posterior_chart.show_kept(cfg.FILTER_GRID, kept)
            self.filter_readout.object = texts.filter_html(self.filter_results, self.settings.tolerance,
                                                           self.filter_message, self.filter_stale)

    def _update_badges(self):
        self.badge_pane.object = texts.badges_html([self.error, self.url_warning])
