"""Issue 14's linearised-page bugs 7, 8 and 9 in a real browser (apps/linearized.py).

7: ``exp(exp(exp(f)))`` typed in the box is refused with the range it fails on (it used to be
   accepted, then every method failed with "y contains NaN"); a 40,001-character paste is
   reported with its real length (the box used to cut it to 5,000 characters);
8: the upload states its row limit and a longer file is refused with it;
9: no "could not set initial ranges" console warnings, the close-up's density axis beside its
   plot, no empty legend box, the MAP-objective chart and its step-length strip aligned.
"""

from __future__ import annotations

import pathlib
import re

import pytest
from playwright.sync_api import expect

from bokeh_page import (WATCH_DOCUMENT_JS, ConsoleErrors, LabPage, cds_data, cds_length, open_app,
                        wait_for_change, wait_until_quiet)

ROOT = pathlib.Path(__file__).resolve().parents[2]
APP = ROOT / "apps" / "linearized.py"
LOAD_MS = 60_000
UPDATE_MS = 30_000
PROFILE_MS = 90_000
MEAN_UGP = ("() => { const d = Bokeh.documents[0].get_model_by_name('latent-ugp').data;"
            " return Array.from(d instanceof Map ? d.get('mean') : d['mean']); }")
RANGE_WARNINGS = re.compile(r"could not (set initial ranges|determine (minimum|maximum) data value)")

# Page geometry of a named figure: its frame, and every side panel (axis, legend) on the right.
_JS_GEOMETRY = """(name) => {
  const fig = Bokeh.documents[0].get_model_by_name(name);
  const views = [];
  const walk = (v) => { if (v.model === fig) views.push(v); for (const c of (v.child_views ?? [])) walk(c); };
  for (const root of Bokeh.index.roots) walk(root);
  const view = views.find((v) => v.canvas_view.el.getBoundingClientRect().width > 0);
  const box = (b) => ({left: b.left, right: b.right, top: b.top, bottom: b.bottom});
  const right = fig.right.map((m) => { const v = view.renderer_views.get(m);
    return {type: m.type, visible: m.visible, bbox: v == null || v.bbox == null ? null : box(v.bbox)}; });
  const legends = fig.center.concat(fig.right).filter((m) => m.type === 'Legend');
  return {frame: box(view.frame.bbox), right, legend_visible: legends.map((m) => m.visible)};
}"""


@pytest.fixture(scope="module")
def lab_url(panel_server):
    return panel_server(APP)


@pytest.fixture
def lab(page, lab_url):
    """A fresh session of the page; its console and the server log are checked at the end."""
    page.set_default_timeout(UPDATE_MS)
    expect.set_options(timeout=UPDATE_MS)
    opened = LabPage(page, ConsoleErrors(page), lab_url, len(lab_url.log_text()))
    open_app(page, lab_url, timeout=LOAD_MS)
    page.evaluate(WATCH_DOCUMENT_JS)
    page.wait_for_function("() => Bokeh.documents[0].get_model_by_name('closeup-g').get_length() > 0",
                           timeout=LOAD_MS)
    yield opened
    wait_until_quiet(page)
    opened.assert_healthy()
    expect.set_options(timeout=None)


def _custom_box(page):
    """Choose the custom expression and wait until its default g's posterior is drawn."""
    sine = cds_data(page, "latent-ugp")["mean"]
    page.get_by_label("Forward model g").select_option("custom expression")
    box = page.get_by_label("Custom g(f)")
    expect(box).to_be_visible()
    expect(page.locator("#expression-ok")).to_be_visible()
    wait_for_change(page, MEAN_UGP, sine, timeout=UPDATE_MS)
    wait_until_quiet(page)
    return box


def test_an_expression_that_overflows_where_the_methods_evaluate_it_is_refused(lab):
    page = lab.page
    box = _custom_box(page)
    before = cds_data(page, "latent-ugp")["mean"]
    box.fill("exp(exp(exp(f)))")
    box.press("Enter")
    error = page.locator("#expression-error")
    expect(error).to_contain_text(re.compile(r"is inf at f = 1\.9.*for every f in \[-4, 4\] \(the prior's"))
    expect(error).to_contain_text("previous forward model is kept")
    wait_until_quiet(page)
    assert cds_data(page, "latent-ugp")["mean"] == before  # the previous model still shown
    expect(page.locator("#badges")).not_to_contain_text("contains")  # no "y contains NaN"
    expect(page.locator("#metrics-table")).not_to_contain_text("failed")


def test_a_40001_character_paste_is_reported_with_its_real_length(lab):
    page = lab.page
    box = _custom_box(page)
    box.fill("f+" * 20_000 + "f")
    box.press("Enter")
    expect(page.locator("#expression-error")).to_contain_text("too long (40,001 characters; the limit is 200)")


def test_the_upload_states_its_row_limit_and_refuses_a_longer_file(lab, tmp_path):
    page = lab.page
    expect(page.get_by_text("at most 3,000 rows")).to_be_visible()
    csv = tmp_path / "long.csv"
    csv.write_text("x,y\n" + "".join(f"{i / 1000},{i % 7}\n" for i in range(3001)))
    page.locator("input[type=file]").set_input_files(str(csv))
    expect(page.locator("#upload-error")).to_contain_text("more than 3,000 data rows")
    assert cds_length(page, "obs-data") == 200  # the toy data stay


def test_no_range_warnings_on_load_after_a_profile_or_after_clearing_it(lab):
    page = lab.page
    wait_until_quiet(page)
    page.get_by_role("button", name="Profile free energy").click()
    expect(page.locator("#job-status")).to_have_attribute("data-state", "done", timeout=PROFILE_MS)
    page.wait_for_function("() => Bokeh.documents[0].get_model_by_name('profile-egp').get_length() === 21")
    page.get_by_label("Forward model g").select_option("tanh2")  # clears the profile again
    page.wait_for_function("() => Bokeh.documents[0].get_model_by_name('profile-egp').get_length() === 0")
    wait_until_quiet(page, quiet_ms=1000)
    warnings = [w for w in lab.errors.warnings if RANGE_WARNINGS.search(w)]
    assert not warnings, warnings


def test_the_closeups_axis_the_legends_and_the_step_strip_are_in_place(lab):
    page = lab.page
    wait_until_quiet(page)
    closeup = page.evaluate(_JS_GEOMETRY, "closeup")
    axis, legend = closeup["right"]
    assert axis["type"] == "LinearAxis" and legend["type"] == "Legend"
    assert 0 <= axis["bbox"]["left"] - closeup["frame"]["right"] < 5  # the density axis touches the plot
    assert legend["bbox"]["left"] >= axis["bbox"]["right"]  # and the legend is outside it
    assert page.evaluate(_JS_GEOMETRY, "profile")["legend_visible"] == [False]  # nothing profiled yet
    chart, strip = page.evaluate(_JS_GEOMETRY, "objective"), page.evaluate(_JS_GEOMETRY, "objective-steps")
    for side in ("left", "right"):  # the step-length strip's iterations line up with the chart's
        assert abs(chart["frame"][side] - strip["frame"][side]) < 1
    assert cds_length(page, "objective-steps-ugp") >= 1  # one UGP step is cut on the default problem (sin)
    page.get_by_role("button", name="Profile free energy").click()
    expect(page.locator("#job-status")).to_have_attribute("data-state", "done", timeout=PROFILE_MS)
    page.wait_for_function("() => Bokeh.documents[0].get_model_by_name('profile').right"
                           ".find((m) => m.type === 'Legend').visible")  # a legend once there is a profile
    page.get_by_label("Forward model g").select_option("tanh2")  # clears the profile: no legend again
    page.wait_for_function("() => !Bokeh.documents[0].get_model_by_name('profile').right"
                           ".find((m) => m.type === 'Legend').visible")
