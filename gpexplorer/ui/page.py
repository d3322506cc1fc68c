"""The served page around a lab (the files in ``apps/`` build one each)."""

from __future__ import annotations

import panel as pn

from gpexplorer.ui import presenter, sessions
from gpexplorer.ui.lessons import lesson_html
from gpexplorer.ui.markup import LightBootstrapTemplate, TextBlock
from gpexplorer.ui.preparing import when_warm

__all__ = ["lab_page", "SIDEBAR_WIDTH"]

SIDEBAR_WIDTH = 340  # pixels of the served page's sidebar; the Jupyter layout gives controls 330
#: the URL path of each lab's page (apps/<name>.py), as lessons name them
LAB_ROUTES = {"SparseRegressionLab": "sparse_regression", "LinearizedLab": "linearized", "BlackBoxLab": "black_box"}


def lab_page(lab, title):
    """The served page: a lab's controls in the sidebar, its views in the main area.

    ``lab`` is a lab object, or a callable that builds one (a lab class): then, on a fresh
    install whose numba warm-up is still running, the page shows "preparing (first run only)"
    with its progress and builds the lab when the warm-up is done (``ui/preparing.py``), so the
    session does not compile the same code a second time. Build the page inside
    ``pn.io.hold(freeze=True)`` (one model-graph recompute for the whole page) and call
    ``.servable(...)`` on it, as the files in ``apps/`` do.

    With ``?lesson=<id>&step=<k>`` in the URL a lesson card (``ui/lessons.py``) heads the views;
    with ``?presenter=1`` the page is in presenter mode (``ui/presenter.py``): sidebar folded,
    larger type, explanations behind "?" toggles. A button in the sidebar switches modes."""
    sidebar, main = pn.Column(sizing_mode="stretch_width"), pn.Column(sizing_mode="stretch_width")

    lab_class = lab if isinstance(lab, type) else type(lab)
    card = lesson_html(LAB_ROUTES.get(lab_class.__name__, ""), pn.state.session_args or {})

    def build():
        the_lab = lab() if isinstance(lab, type) or not hasattr(lab, "controls") else lab
        with pn.io.hold():
            return [toggle, the_lab.controls()], ([TextBlock(card)] if card else []) + [the_lab.views()]

    sessions.track(pn.state.curdoc)  # memory given back once this session ends
    presenting = presenter.active()
    toggle = presenter.toggle_button()
    when_warm(build, [sidebar, main])
    template = LightBootstrapTemplate(title=title, sidebar=[sidebar], main=[main], sidebar_width=SIDEBAR_WIDTH,
                                      collapsed_sidebar=presenting)
    if presenting:
        template.config.raw_css.append(presenter.PRESENTER_CSS)
        presenter.apply_theme()
    return template
