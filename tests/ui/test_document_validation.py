"""Bokeh's document checks for every lab's page, here once instead of in every served session.

``gpexplorer serve`` turns Bokeh's per-session ``Document.validate`` off (it cost about a third of
a sparse-lab session's server time: ``gpexplorer/ui/serve.py``); the same checks run here on each
lab's controls and views, every view built (hidden tabs included), and must find nothing.
"""

from __future__ import annotations

import os

import panel as pn
import pytest
from bokeh.core.validation.check import check_integrity
from bokeh.document import Document

from gpexplorer.ui import serve
from gpexplorer.ui.black_box.lab import BlackBoxLab
from gpexplorer.ui.convolutional.lab import ConvolutionalLab
from gpexplorer.ui.linearized.lab import LinearizedLab
from gpexplorer.ui.primer.lab import PrimerLab
from gpexplorer.ui.random_features.lab import RandomFeaturesLab
from gpexplorer.ui.sparse.lab import SparseRegressionLab


def _issues(lab):
    doc = Document()
    pn.state.curdoc = doc
    try:
        view = pn.Row(pn.Column(*lab.controls()), lab.views())
        with pn.io.hold(doc):
            doc.add_root(view.get_root(doc))
        for tab in view.select(pn.Tabs):  # every tab's content built, as a user clicking through does
            for k in range(len(tab)):
                tab.active = k
        issues = check_integrity(list(doc.models))
    finally:
        pn.state.curdoc = None
        if hasattr(lab, "cancel_job"):
            lab.cancel_job()
    return [f"{i.code} {i.name}: {i.text}" for i in issues.error + issues.warning]


@pytest.mark.parametrize("make", [PrimerLab, SparseRegressionLab, LinearizedLab, BlackBoxLab, ConvolutionalLab,
                                  RandomFeaturesLab], ids=lambda c: c.__name__)
def test_every_lab_page_passes_bokehs_document_checks(make):
    assert _issues(make()) == []


def test_the_check_can_fail():
    """A figure with a renderer whose columns are missing is reported (E-1001-like issues)."""
    from bokeh.models import ColumnDataSource
    from bokeh.plotting import figure

    fig = figure()
    fig.line("x", "y", source=ColumnDataSource({"x": [1, 2]}))
    issues = check_integrity(list(fig.references()))
    assert issues.error or issues.warning


def test_served_pages_skip_bokehs_per_session_validation(monkeypatch):
    monkeypatch.delenv("BOKEH_VALIDATE_DOC", raising=False)
    serve.skip_document_validation()
    from bokeh.settings import settings

    assert os.environ["BOKEH_VALIDATE_DOC"] == "false" and settings.perform_document_validation() is False
    monkeypatch.setenv("BOKEH_VALIDATE_DOC", "true")  # a user's own setting is kept
    serve.skip_document_validation()
    assert settings.perform_document_validation() is True
