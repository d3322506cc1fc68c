"""The slide tools of every lab (gpexplorer/ui/slide_tools.py): each figure a lab offers for export
is a Bokeh figure of its page, and every lab's controls hold the tools. The export itself is
tested in Chromium (tests/ui/test_primer_page.py: a PNG three times the figure's size and an SVG
with its legend)."""

from __future__ import annotations

import importlib

import panel as pn
import pytest
from bokeh.document import Document
from bokeh.models import Plot

from gpexplorer.ui.lessons import LAB_PACKAGES
from gpexplorer.ui.slide_tools import SlideTools


def _plots(layout):
    root = layout.get_root(Document())
    return {m.name for m in root.references() if isinstance(m, Plot)}


@pytest.mark.parametrize("route", sorted(LAB_PACKAGES))
def test_every_offered_figure_is_on_the_labs_page_and_the_tools_are_in_its_controls(route):
    lab = importlib.import_module(LAB_PACKAGES[route] + ".quantities").make_lab()
    offered = lab.slide_figures()
    assert len(offered) >= 3 and len(set(offered.values())) == len(offered)
    missing = set(offered.values()) - _plots(pn.Column(*lab.views()))
    assert not missing, f"{route} offers figures its page does not have: {sorted(missing)}"
    assert isinstance(lab.slide_tools, SlideTools) and lab.slide_tools.figures == offered
    controls = pn.Column(lab.controls())
    assert any(obj is lab.slide_tools for obj in controls.select(SlideTools))
