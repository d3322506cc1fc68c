"""The primer page (issue 28): a GP prior and posterior for a first lecture.

``PrimerLab`` is a Panel Viewer. What a user sets lives in its own
:class:`~gpexplorer.ui.primer.settings.PrimerSettings` (one per session, mirrored in the URL), the
data points included (``points``: a tap on the posterior plot adds one or removes the one tapped, a
drag moves one, *Clear points* removes them all; ``X`` and ``y`` are their decoded lists). Every
view is recomputed at once in the session's thread from one factorisation of K + s2 I
(:class:`~gpexplorer.primer.ObservedData`; 10-20 ms at ``MAX_POINTS`` = 500 points): the prior's
samples and covariance, the posterior given the points, the 2-D marginal of (f(x1), f(x2)) (with
f(x1) fixed at a value, in both views) and the evidence as sequential prediction; *Filter prior
samples* runs Occam's filter for three lengthscales; *Animate* moves the prior's samples along
great circles of their Gaussian. The computations are :mod:`gpexplorer.primer`; this class turns
settings into its calls and its results into views.
"""

from __future__ import annotations

import logging
import math

import numpy as np
import panel as pn
from bokeh.events import DoubleTap

from gpexplorer import primer
from gpexplorer.ui.lab_base import LabBase, next_tick
from gpexplorer.ui.markup import TextBlock
from gpexplorer.ui.primer import layout, texts
from gpexplorer.ui.primer import settings as cfg
from gpexplorer.ui.primer.figures import CovarianceFigure, EvidenceFigure, InvarianceFigure, PairFigure, \
    PosteriorFigure, PriorFigure, x_range
from gpexplorer.ui.widgets import PromptButton

logger = logging.getLogger(__name__)

#: milliseconds between two frames of the animated prior samples
ANIMATION_MS = 150
#: the noise variance of the point f(x1) = a that the prior is conditioned on (noise-free, up to rounding)
FIXED_NOISE = 1e-8

__all__ = ["PrimerLab"]


class PrimerLab(LabBase):
    """The primer page; ``PrimerLab()`` in Jupyter or a served app file."""

    state_filename = "gpexplorer-primer.json"
    #: the page's one action (the filter) finishes inside its call: no background job to wait for
    actions_run_inline = True

    def __init__(self, **params):
        super().__init__(cfg.PrimerSettings(), **params)
        self.X, self.y = [], []
        self.kernel, self.kernel_used, self.kernel_error, self.error = None, "se", None, None
        self.prior = self.conditioned = self.evidence = self.pair = self.given = self.invariance = None
        self._prior_key, self._prior_pair, self.phase = None, None, 0.0
        self.filter_results, self.filter_stale, self.filter_message = None, False, None
        self._build_components()
        self._connect_settings(self._first_load)

    def _build_components(self):
        shared = x_range()
        self.prior_chart = PriorFigure(shared)
        self.posterior_chart = PosteriorFigure(shared, self._on_tap, self._on_drag)
        self.covariance_chart = CovarianceFigure()
        self.invariance_chart = InvarianceFigure()
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
        self.animate_toggle = pn.widgets.Toggle(label="Animate samples", value=False, color="light")
        self.animate_toggle.param.watch(self._on_animate, "value")
        self._animation = None

    # the lab base's hooks ---------------------------------------------------------------
    def slide_figures(self):
        return {"Prior samples": "prior-figure", "Posterior": "posterior-figure", "Two views": "pair-figure",
                "Covariance": "covariance-figure", "Evidence bars": "evidence-figure",
                "Invariance": "invariance-figure"}

    def _settings_names(self):
        return cfg.url_parameters()

    def _settings_changed(self, names):
        self._apply_on_next_tick(names)

    def _check_url_value(self, name, value):
        try:
            if name == "kernel":
                cfg.kernel_for(value, 1.0, 1.0)
            elif name == "points":
                cfg.decode_points(value)
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
        self._load_points()
        self._update_kernel()
        self.draw()
        next_tick(self.draw_invariance)  # a tenth of a second: after the first views are on screen

    def _apply_settings(self, names):
        try:
            if "points" in names:
                self._load_points()
            if "images" in names:
                self.draw_invariance()
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
    def _load_points(self):
        """X and y from the ``points`` setting (a refused text, which only code can set: no points)."""
        try:
            self.X, self.y = cfg.decode_points(self.settings.points)
        except ValueError as err:
            self.X, self.y, self.error = [], [], f"the data points were refused: {err}"
        self.points_readout.object = texts.points_html(len(self.X), cfg.MAX_POINTS)

    def _set_points(self, X, y):
        """New data points: the setting (so the address bar follows), then every view at once."""
        with self._silenced():
            self.settings.points = cfg.encode_points(X, y)
        self._load_points()
        self._data_changed()

    def _on_tap(self, event):
        """A tap on the posterior plot (a Bokeh Tap or DoubleTap event, data coordinates): on a point
        removes it, elsewhere adds one. Bokeh reports a click soon after another as a DoubleTap (and
        the first as a Tap): at another place it adds a point like a tap; on a point it does nothing,
        so a double click adds one point instead of adding and removing it."""
        x, y = getattr(event, "x", None), getattr(event, "y", None)
        second = isinstance(event, DoubleTap)
        next_tick(lambda: self.tap(x, y, remove=not second))

    def tap(self, x, y, remove=True):
        """What a tap at (x, y) does: remove the point under it (if ``remove``), else add (x, y);
        returns "removed", "added" or None (nothing done)."""
        if x is None or y is None or not (math.isfinite(x) and math.isfinite(y)):
            return None
        hit = self.posterior_chart.hit(x, y, self.X, self.y)
        if hit is not None:
            if not remove:
                return None
            self.remove_point(hit)
            return "removed"
        return "added" if self.add_point(x, y) else None

    def _on_drag(self, attr, old, new):
        """The browser moved a point (PointDrawTool): follow its x and y (ours when unchanged)."""
        if self._quiet:
            return
        x, y = list(new.get("x", [])), list(new.get("y", []))
        next_tick(lambda: self.move_points(x, y))

    def move_points(self, x, y):
        """Take the dragged points' coordinates (x clipped to the plotted range); False when they
        are not the current points' count or not finite, or nothing moved."""
        try:
            x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
        except (TypeError, ValueError):
            return False
        if x.shape != (len(self.X),) or y.shape != x.shape or not (np.all(np.isfinite(x)) and np.all(np.isfinite(y))):
            return False
        x = np.clip(x, cfg.GRID[0], cfg.GRID[-1])
        y = np.clip(y, -cfg.MAX_ABS_Y, cfg.MAX_ABS_Y)
        if np.allclose(x, self.X, rtol=0, atol=5e-5) and np.allclose(y, self.y, rtol=0, atol=5e-5):
            return False
        self._set_points(x.tolist(), y.tolist())
        return True

    def add_point(self, x, y):
        """Add the data point (x, y) (x clipped to the plotted range); False when refused."""
        if x is None or y is None or not (math.isfinite(x) and math.isfinite(y)) or abs(y) > cfg.MAX_ABS_Y:
            return False
        if len(self.X) >= cfg.MAX_POINTS:
            self.points_readout.object = texts.points_html(len(self.X), cfg.MAX_POINTS, refused=True)
            return False
        self._set_points(self.X + [float(np.clip(x, cfg.GRID[0], cfg.GRID[-1]))], self.y + [float(y)])
        return True

    def remove_point(self, index):
        """Remove the data point at ``index`` (in the order they were added)."""
        if 0 <= index < len(self.X):
            self._set_points(self.X[:index] + self.X[index + 1:], self.y[:index] + self.y[index + 1:])

    def clear_points(self):
        self._set_points([], [])

    def default_points(self):
        self._set_points(list(cfg.DEFAULT_X), list(cfg.DEFAULT_Y))

    def resample(self):
        """New prior and posterior samples: the next seed (in the URL like any setting)."""
        lo, hi = self.settings.param.seed.bounds
        self.settings.seed = lo if self.settings.seed >= hi else self.settings.seed + 1

    def _data_changed(self):
        self._invalidate_filter()
        self.draw()

    # animation ----------------------------------------------------------------------------
    def _on_animate(self, event):
        if event.new and self._animation is None:
            self._animation = pn.state.add_periodic_callback(self.animate_step, period=ANIMATION_MS)
        elif not event.new and self._animation is not None:
            self._animation.stop()
            self._animation = None

    def animate_step(self, step=0.12):
        """Move the prior's samples along great circles: f(t) = cos t f_a + sin t f_b with f_a, f_b
        independent draws (the seed's and the next seed's) is again a draw from the prior for every
        t, so the functions change smoothly without leaving the prior."""
        self.phase = (self.phase + step) % (2 * math.pi)
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
            self.prior = self._prior_draws(k, grid)
            data = primer.ObservedData(k, X, y, s.noise_variance) if len(self.X) else None
            self.conditioned = primer.condition(k, None, None, s.noise_variance, grid, num_samples=cfg.N_POSTERIOR,
                                                seed=s.seed + 1, data=data)
            self.pair = (primer.pair_marginal(k, s.x1, s.x2),
                         primer.pair_marginal(k, s.x1, s.x2, noise_variance=s.noise_variance, data=data))
            self.given = (s.f_x1, primer.condition(k, [[s.x1]], [s.f_x1], FIXED_NOISE, grid)) if s.fix_x1 else None
            self.evidence = (primer.sequential_evidence(k, X, y, s.noise_variance, order=self.order(), data=data)
                             if len(self.X) else None)
            self.error = None
        except ValueError as err:
            self.error = f"the views could not be computed: {err}"
            self._update_badges()
            return
        dots_x = [np.interp(s.x1, cfg.GRID, f) for f in self.prior]
        dots_y = [np.interp(s.x2, cfg.GRID, f) for f in self.prior]
        with self._silenced():
            self.prior_chart.update(self.prior, self.kernel_used, s.x1, s.x2, self.given)
            self.posterior_chart.update(self.X, self.y, self.conditioned, s.x1, s.x2)
            self.pair_chart.update(*self.pair, dots_x, dots_y, s.x1, s.x2, s.f_x1 if s.fix_x1 else None)
            self.covariance_chart.mark(s.x1, s.x2)
            self.evidence_chart.update(self.X, self.evidence, s.reverse)
            self.evidence_readout.object = texts.evidence_html(self.evidence)
        self._update_badges()

    def _prior_draws(self, kernel, grid):
        """The prior's samples at the animation's phase (phase 0: the seed's own draws). The two
        draws and the covariance image are made once per kernel and seed."""
        s = self.settings
        key = (self.kernel_used, s.lengthscale, s.variance, s.seed)
        if key != self._prior_key:
            pair, _ = primer.prior_samples_per_seed(kernel, grid, cfg.N_PRIOR, (s.seed, s.seed + 1))
            self._prior_key, self._prior_pair, self.phase = key, tuple(pair), 0.0
            with self._silenced():
                self.covariance_chart.update(kernel.K(grid[::2]), self.kernel_used)
        if self.phase == 0.0:
            return self._prior_pair[0]
        return math.cos(self.phase) * self._prior_pair[0] + math.sin(self.phase) * self._prior_pair[1]

    def draw_invariance(self):
        """Stamped images one at a time: each kernel's evidence as sequential prediction (thesis fig. 5.5)."""
        X, y, _ = primer.stamped_images(self.settings.images)
        result = primer.evidence_as_data_arrive(primer.invariance_kernels(), X, y, cfg.IMAGE_NOISE)
        self.invariance = (X, y, result)
        with self._silenced():
            self.invariance_chart.update(X, y, result)

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
