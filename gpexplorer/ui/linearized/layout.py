"""Arrange the linearised-inference lab's widgets and views (no template: the app file picks one)."""

from __future__ import annotations

import panel as pn

from gpexplorer.ui.linearized import settings as cfg
from gpexplorer.ui.linearized.texts import EXPLAIN
from gpexplorer.ui.widgets import PromptFloatSlider, control_cards, with_note

NOTE_WIDTH = 250
WIDGETS = {
    "methods": pn.widgets.CheckButtonGroup, "forward": pn.widgets.Select, "y_prediction": pn.widgets.RadioButtonGroup,
    **{name: {"type": PromptFloatSlider, "format": "0.0[000]", "step": 0.01}
       for name in ("variance", "lengthscale", "kappa", "x0")},
    "noise_variance": {"type": PromptFloatSlider, "format": "0.0[0000]", "step": 0.001},
    # structural sliders act on release: each intermediate N would redraw the data set
    **{name: {"type": pn.widgets.IntSlider, "throttled": True} for name in ("n_train", "n_features", "max_iter")},
}


def _view(item, key):
    return with_note(item, EXPLAIN[key], NOTE_WIDTH)


def controls(lab):
    """Widgets generated from the settings, grouped, plus the action buttons."""
    titles = cfg.control_groups()
    data_card = {t: [lab.expression_message, lab.upload, lab.upload_message] for t in titles if t.startswith("Data")}
    groups = control_cards(lab.settings, titles, WIDGETS, data_card)
    actions = pn.Column(pn.Row(lab.learn_button, lab.cancel_button), pn.Row(lab.show_learnt_button, lab.profile_button),
                        lab.progress, lab.status, lab.download,
                        lab.slide_tools, lab.address_bar, sizing_mode="stretch_width")
    return pn.Column(actions, *groups, sizing_mode="stretch_width")


def views(lab):
    """The live views, each with a short explanation beside it."""
    return pn.Column(
        lab.badge_pane,
        lab.continue_button,
        _view(lab.latent.figure, "latent"),
        _view(lab.observation.figure, "observation"),
        _view(lab.objective.figure, "objective"),
        _view(lab.closeup.figure, "closeup"),
        _view(lab.metrics_readout, "metrics"),
        _view(lab.hyper_readout, "hyper"),
        _view(lab.profile.figure, "profile"),
        sizing_mode="stretch_width")

