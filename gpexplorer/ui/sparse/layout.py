"""Arrange the sparse-regression lab's widgets and views (no template: the app file picks one)."""

from __future__ import annotations

import panel as pn

from gpexplorer.ui import session_pool
from gpexplorer.ui.sparse import settings as cfg
from gpexplorer.ui.sparse.texts import EXPLAIN, TABS
from gpexplorer.ui.widgets import PromptFloatSlider, control_cards, note, with_note

NOTE_WIDTH = 260

WIDGETS = {
    "approximations": pn.widgets.CheckButtonGroup, "band": pn.widgets.RadioButtonGroup,
    **{name: {"type": PromptFloatSlider, "format": "0.0[000]", "step": 0.01}
       for name in ("variance", "lengthscale", "alpha", "period")},
    "noise_variance": {"type": PromptFloatSlider, "format": "0.0[0000]", "step": 0.001},
    # a selected feature's width and frequency re-evaluate every objective, like the hyperparameters
    "feature_width": {"type": PromptFloatSlider, "format": "0.0[000]", "step": 0.01},
    "feature_frequency": {"type": PromptFloatSlider, "format": "0.0[00]", "step": 0.05},
    "data_noise": {"type": PromptFloatSlider, "format": "0.0[000]", "step": 1e-4, "throttled": True},
    # structural sliders act on release: each intermediate M would re-draw Z and discard fits
    "M": {"type": pn.widgets.IntSlider, "throttled": True}, "n_points": {"type": pn.widgets.IntSlider, "throttled": True},
}


def _note(key):
    return note(EXPLAIN[key], NOTE_WIDTH)


def _view(fig, key):
    return with_note(fig, EXPLAIN[key], NOTE_WIDTH)


def controls(lab):
    """Widgets generated from LabSettings, grouped, plus the action buttons."""
    groups = control_cards(lab.settings, cfg.control_groups(), WIDGETS,
                           {"Data": [lab.upload, lab.upload_message], "Inducing inputs": [lab.reset_button]})
    actions = pn.Column(pn.Row(lab.fit_button, lab.cancel_button), pn.Row(lab.sweep_button, lab.tighten_button),
                        lab.progress,
                        lab.status, lab.replay_slider, lab.download,
                        lab.slide_tools, lab.address_bar, sizing_mode="stretch_width")
    return _progressive([actions], groups)


def _tab_content(lab, key):
    if key == "trace":
        return pn.Column(_view(lab.trace.figure, "trace"),
                         pn.pane.Bokeh(lab.trace.terms_figure, sizing_mode="stretch_width"),
                         sizing_mode="stretch_width")
    if key == "sweep":
        return pn.Column(_note("sweep"), pn.GridBox(*[pn.pane.Bokeh(f, sizing_mode="stretch_width")
                                                      for f in lab.sweep_charts.figures], ncols=2,
                                                    sizing_mode="stretch_width"), sizing_mode="stretch_width")
    if key == "position":
        return pn.Column(_note("position"), pn.Row(*[pn.pane.Bokeh(f, sizing_mode="stretch_width")
                                                      for f in lab.position_chart.figures], sizing_mode="stretch_width"),
                         sizing_mode="stretch_width")
    figure = {"add_one": lambda: lab.add_one.figure, "split": lambda: lab.split.figure}[key]()
    return _view(figure, key)


def views(lab):
    """The live views, each with a short explanation beside it. Views out of sight (other tabs,
    the 4-D predicted-vs-true plot) are built when first shown."""
    keys = list(TABS)
    holders = {k: pn.Column(sizing_mode="stretch_width") for k in keys}

    def fill(key):
        if not holders[key].objects:
            holders[key].objects = [_tab_content(lab, key)]

    fill(lab.view_tab)
    tabs = pn.Tabs(*[(TABS[k], holders[k]) for k in keys], dynamic=True, sizing_mode="stretch_width",
                   active=keys.index(lab.view_tab))

    def on_tab(event):
        lab.view_tab = keys[event.new]  # the tab's data first: a chart drawn empty warns "could not set initial ranges"
        fill(keys[event.new])

    tabs.param.watch(on_tab, "active")
    main_plot = {}

    def posterior_or_pvt(one_dimensional):
        key = "posterior" if one_dimensional else "pvt"
        if key not in main_plot:
            main_plot[key] = (pn.Column(_view(lab.posterior.figure, key), _view(lab.strip.figure, "strip"),
                                        sizing_mode="stretch_width")
                              if one_dimensional else _view(lab.pvt.figure, key))
        return main_plot[key]

    main = pn.panel(pn.bind(posterior_or_pvt, lab.param.one_dimensional), sizing_mode="stretch_width")
    # Continue beside the badge that offers it (shown only when a fit stopped on its budget; in
    # presenter mode the sidebar with Optimise is folded away)
    first = [lab.badge_pane, pn.Row(lab.continue_button, margin=(0, 10)), main]
    rest = [
        pn.Row(pn.Column(pn.pane.Bokeh(lab.sandwich.figure, sizing_mode="stretch_width"), lab.bounds_readout,
                         sizing_mode="stretch_width"), _note("sandwich"), sizing_mode="stretch_width"),
        pn.Row(pn.Column(pn.pane.Bokeh(lab.terms.figure, sizing_mode="stretch_width"), lab.noise_readout,
                         sizing_mode="stretch_width"), pn.Column(_note("terms"), _note("noise")),
               sizing_mode="stretch_width"),
        tabs]
    return _progressive(first, rest)


def _progressive(first, rest):
    """A Column showing ``first`` at once and ``rest`` once the browser has rendered the page.

    Served pages send the main plot first: the browser builds and lays out every model of a
    document before it paints any, so the charts below the main plot would delay it (by about a
    second on the 2-core reference machine). Elsewhere (Jupyter, tests) all come at once, and so
    they do in a page prepared ahead of its request (``ui/session_pool.py``), which is sent whole."""
    column = pn.Column(*first, sizing_mode="stretch_width")
    doc = pn.state.curdoc
    if (doc is not None and doc.session_context is not None and not pn.state.loaded
            and not session_pool.is_prepared(doc)):
        pn.state.onload(lambda: column.extend(rest))
    else:
        column.extend(rest)
    return column

