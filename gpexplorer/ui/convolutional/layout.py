"""Arrange the patches lab's widgets and views (no template: the app file picks one)."""

from __future__ import annotations

import panel as pn

from gpexplorer.ui.convolutional import settings as cfg
from gpexplorer.ui.convolutional.texts import EXPLAIN
from gpexplorer.ui.markup import TextBlock
from gpexplorer.ui.widgets import control_cards, folded_in_presenter_mode, note, with_note

NOTE_WIDTH = 250
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
    return pn.pane.Bokeh(fig, sizing_mode="stretch_width")


def _fixed(fig):
    return pn.pane.Bokeh(fig)


def explained(item, *keys):
    """``item`` with its explanation(s) under it, folded under a "?" toggle in presenter mode."""
    return pn.Column(item, *(note(EXPLAIN[k], None) for k in keys), sizing_mode="stretch_width")


def controls(lab):
    """The job buttons, progress and status, then one card per group of settings."""
    actions = pn.Column(pn.Row(lab.fit_button, lab.cancel_button), lab.race_button, lab.progress, lab.status,
                        lab.download, lab.address_bar, sizing_mode="stretch_width")
    return pn.Column(actions, *control_cards(lab.settings, cfg.control_groups(), WIDGETS), sizing_mode="stretch_width")


def views(lab):
    """Tiles, the editor with the predictions, contributions, weights and edge effect, the race,
    the drawing canvas and the model's numbers; each with a short note on what it shows."""
    editor = pn.Column(TextBlock("<b>Selected inducing patch</b> (click to flip a pixel, drag to paint)"),
                       lab.editor, lab.undo_button, width=240)
    d = lab.digits
    canvas = pn.Column(TextBlock("<b>Draw a digit here</b>"), d.canvas, pn.Row(d.clear_button, d.fit_button),
                       width=290)
    digits = pn.Column(pn.Row(canvas, pn.Column(_bokeh(d.charts.figure), pn.Row(_fixed(d.charts.seen_fig), d.readout),
                                                sizing_mode="stretch_width"), sizing_mode="stretch_width"),
                       pn.Row(d.progress, d.cancel_button, sizing_mode="stretch_width"), d.status,
                       sizing_mode="stretch_width")
    return pn.Column(
        folded_in_presenter_mode(lab.intro),
        lab.badge_pane,
        lab.note_pane,
        with_note(lab.tiles.figure, EXPLAIN["tiles"], NOTE_WIDTH),
        explained(pn.Column(pn.Row(editor, _bokeh(lab.predictions.figure), sizing_mode="stretch_width"),
                            lab.edit_readout, sizing_mode="stretch_width"), "editor", "predictions"),
        explained(pn.Row(_fixed(lab.contributions.image_fig), _fixed(lab.contributions.heat_fig)), "contributions"),
        explained(pn.Row(_fixed(lab.weights.figure), _fixed(lab.edge.counts_fig)), "weights"),
        explained(_bokeh(lab.edge.bar_fig), "edge"),
        explained(pn.Column(_bokeh(lab.race_chart.figure), lab.race_table, sizing_mode="stretch_width"), "race"),
        explained(digits, "digits"),
        with_note(lab.fit_table, EXPLAIN["metrics"], NOTE_WIDTH),
        sizing_mode="stretch_width")
