"""Arrange the random-features lab's widgets and views (no template: the app file picks one)."""

from __future__ import annotations

import panel as pn

from gpexplorer.ui.markup import TextBlock
from gpexplorer.ui.random_features import settings as cfg
from gpexplorer.ui.random_features.texts import EXPLAIN
from gpexplorer.ui.widgets import PromptFloatSlider, PromptIntSlider, control_cards, folded_in_presenter_mode, note

WIDGETS = {
    "basis": pn.widgets.Select,
    # the kernel views are redrawn for every value a slider passes through (no fit)
    "lengthscale": {"type": PromptFloatSlider, "format": "0.0[00]", "step": 0.01},
    "x0": {"type": PromptFloatSlider, "format": "0.0[0]", "step": 0.01},
    **{name: {"type": PromptIntSlider, "throttled": False} for name in ("n_features", "dim")},
    # these start a fit: act on release
    **{name: {"type": pn.widgets.IntSlider, "throttled": True}
       for name in ("seed", "fit_features", "M", "components", "glm_steps", "iterations", "weight_i", "weight_j",
                    "ard_features", "ard_iterations")},
}


def _bokeh(fig):
    fig.width = fig.min_width = 260  # else a stretched figure beside a fixed-width block claims its default 600 px
    return pn.pane.Bokeh(fig, sizing_mode="stretch_width", min_width=260)


def _wrapping(*figures):
    """Fixed-size figures side by side, wrapping onto the next line on a narrow screen."""
    return pn.FlexBox(*(pn.pane.Bokeh(f) for f in figures), flex_wrap="wrap", gap="0 18px",
                      sizing_mode="stretch_width")


def explained(item, key):
    """``item`` with its explanation under it, folded under a "?" toggle in presenter mode."""
    return pn.Column(item, note(EXPLAIN[key], None), sizing_mode="stretch_width")


def controls(lab):
    """The job buttons, progress and status, then one card per group of settings."""
    actions = pn.Column(pn.Row(lab.fit_button, lab.cancel_button), lab.ard_button, lab.progress, lab.status,
                        lab.download, lab.slide_tools, lab.address_bar, sizing_mode="stretch_width")
    return pn.Column(actions, *control_cards(lab.settings, cfg.control_groups(), WIDGETS), sizing_mode="stretch_width")


def views(lab):
    """The kernel's slice, maps and error curves, the four fits with their table, the GLM's weight
    space and the ARD lengthscales; each with a short note on what it shows."""
    heading = {"font-size": "1.1em", "margin": "8px 0 0 0"}
    return pn.Column(
        folded_in_presenter_mode(lab.intro),
        lab.badge_pane,
        explained(pn.Column(_bokeh(lab.slice.figure), lab.kernel_readout, sizing_mode="stretch_width"), "slice"),
        explained(_wrapping(*lab.maps.figures), "maps"),
        explained(_bokeh(lab.curve_chart.figure), "curve"),
        TextBlock("<b>Models on the features</b>", styles=heading),
        explained(_bokeh(lab.fits_chart.figure), "fits"),
        explained(lab.fit_table, "metrics"),
        explained(pn.Column(_bokeh(lab.weight_chart.figure), lab.weights_readout, sizing_mode="stretch_width"),
                  "weights"),
        explained(pn.Column(_bokeh(lab.ard_chart.figure), lab.ard_readout, sizing_mode="stretch_width"), "ard"),
        sizing_mode="stretch_width")
