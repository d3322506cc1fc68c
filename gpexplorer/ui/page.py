"""The served page around a lab (the files in ``apps/`` build one each)."""

from __future__ import annotations

import panel as pn

from gpexplorer.ui import presenter, sessions
from gpexplorer.ui.lesson_card import lesson_card
from gpexplorer.ui.markup import LightBootstrapTemplate
from gpexplorer.ui.preparing import when_warm

__all__ = ["lab_page", "SIDEBAR_WIDTH"]

SIDEBAR_WIDTH = 340  # pixels of the served page's sidebar; the Jupyter layout gives controls 330
#: the URL path of each lab's page (apps/<name>.py), as lessons name them
LAB_ROUTES = {"PrimerLab": "primer", "SparseRegressionLab": "sparse_regression", "LinearizedLab": "linearized", "BlackBoxLab": "black_box",
              "ConvolutionalLab": "convolutional", "RandomFeaturesLab": "random_features"}


def lab_page(lab, title):
    """The served page: a lab's controls in the sidebar, its views in the main area.

    ``lab`` is a lab object, or a callable that builds one (a lab class): then, on a fresh
    install whose numba warm-up is still running, the page shows "preparing (first run only)"
    with its progress and builds the lab when the warm-up is done (``ui/preparing.py``), so the
    session does not compile the same code a second time. Build the page inside
    ``pn.io.hold(freeze=True)`` (one model-graph recompute for the whole page) and call
    ``.servable(...)`` on it, as the files in ``apps/`` do.

    With ``?lesson=<id>&step=<k>`` in the URL a lesson card (``ui/lesson_card.py``: the step's
    text, its action and its claims checked live) heads the views; with ``?presenter=1`` the page
    is in presenter mode (``ui/presenter.py``): sidebar folded, larger type, explanations behind
    "?" toggles. A button in the sidebar switches modes; the title links back to the front page."""
    sidebar, main = pn.Column(sizing_mode="stretch_width"), pn.Column(sizing_mode="stretch_width")

    lab_class = lab if isinstance(lab, type) else type(lab)
    route = LAB_ROUTES.get(lab_class.__name__, "")
    query = pn.state.session_args or {}

    def build():
        the_lab = lab() if isinstance(lab, type) or not hasattr(lab, "controls") else lab
        keep = {presenter.KEY: "1"} if presenting else {}
        card = lesson_card(route, query, the_lab, keep)  # before the views: it may choose their tab
        with pn.io.hold():
            return [toggle, the_lab.controls()], ([card] if card is not None else []) + [the_lab.views()]

    sessions.track(pn.state.curdoc)  # memory given back once this session ends
    presenting = presenter.active()
    toggle = presenter.toggle_button()
    when_warm(build, [sidebar, main])
    design = {"design": presenter.PresenterDesign} if presenting else {}
    template = LightBootstrapTemplate(title=title.removeprefix("gpexplorer: "), sidebar=[sidebar], main=[main],
                                      sidebar_width=SIDEBAR_WIDTH, collapsed_sidebar=presenting, site="gpexplorer",
                                      site_url="./", **design)
    if presenting:
        template.config.raw_css.append(presenter.PRESENTER_CSS)
    return template
