"""The served page around a lab (the files in ``apps/`` build one each)."""

from __future__ import annotations

from gpexplorer.ui.markup import LightBootstrapTemplate

__all__ = ["lab_page", "SIDEBAR_WIDTH"]

SIDEBAR_WIDTH = 340  # pixels of the served page's sidebar; the Jupyter layout gives controls 330


def lab_page(lab, title):
    """The served page: ``lab``'s controls in the sidebar, its views in the main area. Build it
    inside ``pn.io.hold(freeze=True)`` (one model-graph recompute for the whole page) and call
    ``.servable(...)`` on it, as the files in ``apps/`` do."""
    return LightBootstrapTemplate(title=title, sidebar=[lab.controls()], main=[lab.views()],
                                  sidebar_width=SIDEBAR_WIDTH)
