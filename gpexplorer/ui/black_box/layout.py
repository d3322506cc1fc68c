"""Arrange the black-box lab's widgets and views (no template: the app file picks one)."""

from __future__ import annotations

import panel as pn

from gpexplorer.ui.black_box import settings as cfg
from gpexplorer.ui.black_box.texts import EXPLAIN
from gpexplorer.ui.widgets import control_cards, folded_in_presenter_mode, with_note

NOTE_WIDTH = 250
WIDGETS = {
    "dataset": pn.widgets.Select, "likelihood": pn.widgets.Select, "estimator": pn.widgets.Select,
    "posteriors": pn.widgets.CheckBoxGroup,
    # each intermediate value of a slider would start a fit: act on release
    **{name: {"type": pn.widgets.IntSlider, "throttled": True}
       for name in ("n_bins", "n_train", "M", "num_samples", "rounds", "evals_per_block")},
}


def _view(item, key):
    return with_note(item, EXPLAIN[key], NOTE_WIDTH)


def controls(lab):
    """Widgets generated from the settings, grouped, plus the fit buttons and the upload."""
    titles = cfg.control_groups()
    data_card = {t: [lab.upload, lab.upload_message] for t in titles if t.startswith("Data")}
    groups = control_cards(lab.settings, titles, WIDGETS, data_card)
    actions = pn.Column(pn.Row(lab.fit_button, lab.cancel_button), lab.progress, lab.status, lab.download,
                        lab.slide_tools, lab.address_bar, sizing_mode="stretch_width")
    return pn.Column(actions, *groups, sizing_mode="stretch_width")


def views(lab):
    """The live views, each with a short explanation beside it; the introduction folded in
    presenter mode; under the badges, Continue for fits that did not converge."""
    return pn.Column(
        folded_in_presenter_mode(lab.intro),
        lab.badge_pane,
        lab.continue_button,
        lab.note_pane,
        _view(lab.latent.figure, "latent"),
        _view(lab.observation.figure, "observation"),
        _view(lab.elbo.figure, "elbo"),
        _view(lab.variance.figure, "variance"),
        _view(lab.components.figure, "components"),
        _view(lab.metrics_readout, "metrics"),
        sizing_mode="stretch_width")
