"""The served page around a lab (the files in ``apps/`` build one each)."""

from __future__ import annotations

import panel as pn

from gpexplorer.ui.markup import LightBootstrapTemplate
from gpexplorer.ui.preparing import when_warm

__all__ = ["lab_page", "SIDEBAR_WIDTH"]

SIDEBAR_WIDTH = 340  # pixels of the served page's sidebar; the Jupyter layout gives controls 330


def lab_page(lab, title):
    """The served page: a lab's controls in the sidebar, its views in the main area.

    ``lab`` is a lab object, or a callable that builds one (a lab class): then, on a fresh
    install whose numba warm-up is still running, the page shows "preparing (first run only)"
    with its progress and builds the lab when the warm-up is done (``ui/preparing.py``), so the
    session does not compile the same code a second time. Build the page inside
    ``pn.io.hold(freeze=True)`` (one model-graph recompute for the whole page) and call
    ``.servable(...)`` on it, as the files in ``apps/`` do."""
    sidebar, main = pn.Column(sizing_mode="stretch_width"), pn.Column(sizing_mode="stretch_width")

    def build():
        the_lab = lab() if isinstance(lab, type) or not hasattr(lab, "controls") else lab
        with pn.io.hold():
            return [the_lab.controls()], [the_lab.views()]

    when_warm(build, [sidebar, main])
    return LightBootstrapTemplate(title=title, sidebar=[sidebar], main=[main], sidebar_width=SIDEBAR_WIDTH)
