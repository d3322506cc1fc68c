"""Arrange the sparse-regression lab's widgets and views (no template: the app file picks one)."""

from __future__ import annotations

import operator

import panel as pn

from gpexplorer.ui import settings as cfg
from gpexplorer.ui.texts import EXPLAIN, TABS

NOTE_WIDTH = 260
WIDGETS = {
    "approximations": pn.widgets.CheckButtonGroup, "band": pn.widgets.RadioButtonGroup,
    **{name: {"type": pn.widgets.EditableFloatSlider, "format": "0.0[000]", "step": 0.01}
       for name in ("variance", "lengthscale", "alpha", "period")},
    "noise_variance": {"type": pn.widgets.EditableFloatSlider, "format": "0.0[0000]", "step": 0.001},
    # structural sliders act on release: each intermediate M would re-draw Z and discard fits
    "M": {"type": pn.widgets.IntSlider, "throttled": True}, "n_points": {"type": pn.widgets.IntSlider, "throttled": True},
}


def _note(key):
    return pn.pane.Markdown(EXPLAIN[key], width=NOTE_WIDTH, styles={"font-size": "0.85em"})


def _view(fig, key, **kw):
    return pn.Row(pn.pane.Bokeh(fig, sizing_mode="stretch_width"), _note(key), sizing_mode="stretch_width", **kw)


def controls(lab):
    """Widgets generated from LabSettings, grouped, plus the action buttons."""
    groups = []
    for title, names in cfg.control_groups().items():
        widget_panel = pn.Param(lab.settings, parameters=names, widgets=WIDGETS, show_name=False,
                                sizing_mode="stretch_width")
        extra = [lab.upload, lab.upload_message] if title == "Data" else []
        extra += [lab.reset_button] if title == "Inducing inputs" else []
        groups.append(pn.Card(widget_panel, *extra, title=title,
                              sizing_mode="stretch_width"))
    actions = pn.Column(pn.Row(lab.fit_button, lab.cancel_button), pn.Row(lab.sweep_button, lab.tighten_button),
                        lab.progress,
                        lab.status, lab.replay_slider, lab.download, sizing_mode="stretch_width")
    return pn.Column(actions, *groups, sizing_mode="stretch_width")


def views(lab):
    """The live views, each with a short explanation beside it."""
    content = {
        "trace": pn.Column(_view(lab.trace.figure, "trace"),
                           pn.pane.Bokeh(lab.trace.terms_figure, sizing_mode="stretch_width"),
                           sizing_mode="stretch_width"),
        "add_one": _view(lab.add_one.figure, "add_one"),
        "sweep": pn.Column(_note("sweep"), pn.GridBox(*[pn.pane.Bokeh(f, sizing_mode="stretch_width")
                                                        for f in lab.sweep_charts.figures], ncols=2,
                                                      sizing_mode="stretch_width"), sizing_mode="stretch_width"),
        "split": _view(lab.split.figure, "split"),
    }
    keys = list(TABS)
    # dynamic: a hidden tab's figures reach the browser only when it is opened (faster first page)
    tabs = pn.Tabs(*[(TABS[k], content[k]) for k in keys], dynamic=True, sizing_mode="stretch_width",
                   active=keys.index(lab.view_tab))
    tabs.param.watch(lambda event: setattr(lab, "view_tab", keys[event.new]), "active")
    return pn.Column(
        lab.badge_pane,
        _view(lab.posterior.figure, "posterior", visible=lab.param.one_dimensional),
        _view(lab.pvt.figure, "pvt", visible=pn.bind(operator.not_, lab.param.one_dimensional)),
        pn.Row(pn.Column(pn.pane.Bokeh(lab.sandwich.figure, sizing_mode="stretch_width"), lab.bounds_readout,
                         sizing_mode="stretch_width"), _note("sandwich"), sizing_mode="stretch_width"),
        pn.Row(pn.Column(pn.pane.Bokeh(lab.terms.figure, sizing_mode="stretch_width"), lab.noise_readout,
                         sizing_mode="stretch_width"), pn.Column(_note("terms"), _note("noise")),
               sizing_mode="stretch_width"),
        tabs, sizing_mode="stretch_width")


def lab_layout(lab):
    """Controls left, views right: what Jupyter shows for ``SparseRegressionLab()``."""
    return pn.Row(pn.Column(controls(lab), width=330), views(lab), sizing_mode="stretch_width")
