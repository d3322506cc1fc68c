"""Arrange the patches lab's widgets and views (no template: the app file picks one)."""

from __future__ import annotations

import panel as pn

from gpexplorer.ui.convolutional import settings as cfg
from gpexplorer.ui.convolutional.texts import EXPLAIN
from gpexplorer.ui.markup import TextBlock
from gpexplorer.ui.widgets import control_cards, folded_in_presenter_mode, note

WIDGETS = {
    "dataset": pn.widgets.Select, "kernel": pn.widgets.Select, "z_init": pn.widgets.Select,
    "mnist_side": pn.widgets.RadioButtonGroup,
    # each intermediate value of these sliders would start a fit: act on release
    **{name: {"type": pn.widgets.IntSlider, "throttled": True}
       for name in ("n_train", "patch", "M", "iterations", "digit_train", "digit_M", "digit_steps")},
    # the views' sliders redraw at once (no fit)
    **{name: {"type": pn.widgets.IntSlider, "throttled": False} for name in ("image", "tile")},
}


def _bokeh(fig):
    fig.width = fig.min_width = 260  # else a stretched figure beside a fixed-width block claims its default 600 px
    return pn.pane.Bokeh(fig, sizing_mode="stretch_width", min_width=260)


def _fixed(fig):
    return pn.pane.Bokeh(fig)


def _wrapping(*figures):
    """Fixed-size figures side by side, wrapping onto the next line on a narrow screen."""
    return pn.FlexBox(*(_fixed(f) for f in figures), flex_wrap="wrap", gap="0 18px", sizing_mode="stretch_width")


def explained(item, *keys):
    """``item`` with its explanation(s) under it, folded under a "?" toggle in presenter mode."""
    return pn.Column(item, *(note(EXPLAIN[k], None) for k in keys), sizing_mode="stretch_width")


def controls(lab):
    """The job buttons, progress and status, then one card per group of settings."""
    actions = pn.Column(pn.Row(lab.fit_button, lab.cancel_button), lab.race_button, lab.progress, lab.status,
                        lab.download, lab.slide_tools, lab.address_bar, sizing_mode="stretch_width")
    return pn.Column(actions, *control_cards(lab.settings, cfg.control_groups(), WIDGETS), sizing_mode="stretch_width")


def views(lab):
    """Tiles, the editor with the predictions, contributions, weights and edge effect, the race,
    the drawing canvas and the model's numbers; each with a short note on what it shows."""
    editor = pn.Column(TextBlock("<b>Selected inducing patch</b> (click to flip a pixel, drag to paint)"),
                       lab.editor, lab.undo_button, width=240)
    d = lab.digits
    canvas = pn.Column(TextBlock("<b>Draw a digit here</b>"), d.canvas, pn.Row(d.clear_button, d.fit_button),
                       d.readout, width=290)
    digits = pn.Column(pn.Row(canvas, pn.Column(_bokeh(d.charts.figure), _fixed(d.charts.seen_fig),
                                                sizing_mode="stretch_width"), sizing_mode="stretch_width"),
                       pn.Row(d.progress, d.cancel_button), d.status,
                       sizing_mode="stretch_width")
    return pn.Column(
        folded_in_presenter_mode(lab.intro),
        lab.badge_pane,
        lab.note_pane,
        explained(lab.fit_table, "metrics"),
        explained(_bokeh(lab.tiles.figure), "tiles"),
        explained(pn.Column(pn.Row(editor, _bokeh(lab.predictions.figure), sizing_mode="stretch_width"),
                            lab.edit_readout, sizing_mode="stretch_width"), "editor", "predictions"),
        explained(_wrapping(lab.contributions.image_fig, lab.contributions.heat_fig), "contributions"),
        explained(_wrapping(lab.weights.figure, lab.edge.counts_fig), "weights"),
        explained(_bokeh(lab.edge.bar_fig), "edge"),
        explained(pn.Column(_bokeh(lab.race_chart.figure), lab.race_table, sizing_mode="stretch_width"), "race"),
        explained(digits, "digits"),
        sizing_mode="stretch_width")
