"""Arrange the primer page's widgets and views (no template: the app file picks one)."""

from __future__ import annotations

import panel as pn

from gpexplorer.ui.primer import settings as cfg
from gpexplorer.ui.primer.texts import EXPLAIN
from gpexplorer.ui.widgets import PromptFloatSlider, control_cards, folded_in_presenter_mode, note

WIDGETS = {
    "kernel": {"type": pn.widgets.TextInput, "placeholder": "se + periodic * linear"},
    **{name: {"type": PromptFloatSlider, "format": "0.0[00]"} for name in ("lengthscale", "variance", "x1", "x2",
                                                                             "tolerance")},
    "noise_variance": {"type": PromptFloatSlider, "format": "0.0[000]"},
    "seed": {"type": pn.widgets.IntSlider, "throttled": True},
    "reverse": {"type": pn.widgets.Toggle, "color": "light"},
    "fix_x1": {"type": pn.widgets.Toggle, "color": "light"},
    "f_x1": {"type": PromptFloatSlider, "format": "0.0[0]"},
}


def _bokeh(fig):
    fig.width = fig.min_width = 260  # else a stretched figure beside a fixed-width block claims its default 600 px
    return pn.pane.Bokeh(fig, sizing_mode="stretch_width", min_width=260)


def explained(item, key):
    """``item`` with its explanation under it, folded under a "?" toggle in presenter mode."""
    return pn.Column(item, note(EXPLAIN[key], None), sizing_mode="stretch_width")


def controls(lab):
    """The data buttons, then one card per group of settings (the kernel's status line and
    Resample under the prior's settings, the filter's button under its tolerance)."""
    points = pn.Column(pn.Row(lab.clear_button, lab.default_button), lab.points_readout, lab.download,
                       lab.slide_tools, lab.address_bar, sizing_mode="stretch_width")
    titles = list(cfg.control_groups())
    extras = {titles[0]: [lab.kernel_message, pn.Row(lab.resample_button, lab.animate_toggle)],
              titles[2]: [lab.filter_button]}
    return pn.Column(points, *control_cards(lab.settings, cfg.control_groups(), WIDGETS, extras),
                     sizing_mode="stretch_width")


def views(lab):
    """The prior, the posterior, the pair of values beside the covariance matrix and the evidence
    bars, the filter's table."""
    pair, bars, cov = lab.pair_chart.figure, lab.evidence_chart.figure, lab.covariance_chart.figure
    pair_and_bars = pn.FlexBox(
        pn.Column(pn.pane.Bokeh(pair), note(EXPLAIN["pair"], pair.width), width=pair.width + 20),
        pn.Column(pn.pane.Bokeh(cov), note(EXPLAIN["covariance"], cov.width), width=cov.width + 20),
        pn.Column(pn.pane.Bokeh(bars), lab.evidence_readout, note(EXPLAIN["evidence"], bars.width),
                  width=bars.width + 20),
        flex_wrap="wrap", gap="0 18px", sizing_mode="stretch_width")
    return pn.Column(
        folded_in_presenter_mode(lab.intro),
        lab.badge_pane,
        explained(_bokeh(lab.prior_chart.figure), "prior"),
        explained(_bokeh(lab.posterior_chart.figure), "posterior"),
        pair_and_bars,
        explained(lab.filter_readout, "filter"),
        pn.Column(pn.pane.Bokeh(lab.invariance_chart.strip, width=lab.invariance_chart.WIDTH + 60),
                  pn.pane.Bokeh(lab.invariance_chart.figure),
                  note(EXPLAIN["invariance"], lab.invariance_chart.figure.width), sizing_mode="stretch_width"),
        sizing_mode="stretch_width")
