"""Inter-domain inducing features in the sparse lab, in Chromium (issue 15): the feature strip
redraws with one curve per feature when the type changes, dragging a feature's centre changes
the bound readout, and the bound-against-position tab draws its curves."""

from __future__ import annotations

import pathlib
import re

import pytest
from playwright.sync_api import expect

from bokeh_page import cds_data, drag_point, lab_opener, wait_until_quiet

pytestmark = pytest.mark.browser

ROOT = pathlib.Path(__file__).resolve().parents[2]
APP = ROOT / "apps" / "sparse_regression.py"
LOAD_MS, UPDATE_MS = 60_000, 30_000
CURVES = ("() => { const s = Bokeh.documents[0].get_model_by_name('feature-curves');"
          " return s != null && s.get_length() {}; }")


@pytest.fixture(scope="module")
def lab_url(panel_server):
    return panel_server(APP)


def _drawn(page):
    page.wait_for_function(CURVES.replace("{}", "> 0"), timeout=LOAD_MS)


@pytest.fixture
def open_lab(page, lab_url):
    expect.set_options(timeout=UPDATE_MS)
    yield from lab_opener(page, lab_url, _drawn, update_ms=UPDATE_MS, load_ms=LOAD_MS, viewport=(1400, 1000))
    expect.set_options(timeout=None)


def test_switching_the_feature_type_redraws_the_strip(open_lab):
    page = open_lab("?M=7").page
    page.wait_for_function(CURVES.replace("{}", "=== 7"))
    select = page.get_by_label("Inducing features")
    for label, key in (("Multiscale", "multiscale"), ("Sum of deltas", "sum-of-deltas"),
                       ("Time-frequency", "time-frequency"), ("Frequency", "frequency")):
        select.select_option(label)
        expect(page).to_have_url(re.compile(rf"[?&]feature={key}(&|$)"))
        page.wait_for_function(CURVES.replace("{}", "=== 7"))
    # frequency features sit at the origin: no draggable markers, a slider for the frequency
    page.wait_for_function("() => Bokeh.documents[0].get_model_by_name('inducing').get_length() === 0")
    expect(page.get_by_text("Feature frequency")).to_be_visible()


def test_dragging_a_multiscale_centre_changes_the_bound_readout(open_lab):
    page = open_lab("?M=4&feature=multiscale&z_init=even").page
    readout = page.locator("#bound-readout")
    wait_until_quiet(page)
    before = readout.inner_text()
    markers = cds_data(page, "inducing")
    x0, y0 = markers["x"][1], markers["y"][1]
    drag_point(page, "posterior", (x0, y0), (x0 + 0.6, y0))
    expect(readout).not_to_have_text(before)
    assert cds_data(page, "inducing")["x"][1] == pytest.approx(x0 + 0.6, abs=0.05)
    expect(page).to_have_url(re.compile(r"[?&]inducing_inputs="))


def test_a_sum_of_deltas_shows_its_ticks_and_one_delta_can_be_dragged(open_lab):
    page = open_lab("?M=3&feature=sum-of-deltas&C=3&z_init=even&feature_width=0.4").page
    page.wait_for_function("() => Bokeh.documents[0].get_model_by_name('feature-deltas').get_length() === 9")
    readout = page.locator("#bound-readout")
    wait_until_quiet(page)
    before = readout.inner_text()
    handles = cds_data(page, "feature-deltas")
    k = 4
    drag_point(page, "feature-strip", (handles["x"][k], handles["y"][k]), (handles["x"][k] + 0.5, handles["y"][k]))
    expect(readout).not_to_have_text(before)
    page.wait_for_function("(x) => { const d = Bokeh.documents[0].get_model_by_name('feature-deltas').data;"
                           " const xs = Array.from(d instanceof Map ? d.get('x') : d.x);"
                           " return xs.some((v) => Math.abs(v - x) < 0.05); }", arg=handles["x"][k] + 0.5)
    after = sorted(cds_data(page, "feature-deltas")["x"])
    kept = [x for x in after if any(abs(x - b) < 1e-6 for b in handles["x"])]
    assert len(kept) == 8  # that delta alone moved


def test_the_position_sweep_draws_its_curves(open_lab):
    page = open_lab("?M=3&feature=time-frequency&feature_frequency=0").page
    page.get_by_text("Bound vs feature position", exact=True).click()
    for name in ("position-coarse-curve", "position-zoom-curve"):
        page.wait_for_function("(n) => { const s = Bokeh.documents[0].get_model_by_name(n); return s != null && s.get_length() > 50; }", arg=name)
    title = page.evaluate("() => Bokeh.documents[0].get_model_by_name('position-coarse').title.text")
    assert title.startswith("Bound vs position: highest")
