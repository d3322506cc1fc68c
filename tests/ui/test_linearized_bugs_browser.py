"""Issue 14 bugs 7 and 9 on the linearised page in a real browser (apps/linearized.py), beyond
tests/ui/test_linearized_bugs_page.py.

7: a typed g that passes the range check but with which every method fails (``sqrt(f + 4.5)``,
   NaN where the predictions evaluate it) is refused in the expression box, the previous g's
   plots stay, and no method row reads "failed";
9: the page loads without a single "could not set initial ranges" console warning, also when the
   methods are switched off and on again (empty trace plots); a screenshot of the loaded page is
   written to the test's temporary directory for looking at.
"""

from __future__ import annotations

import pathlib
import re

import pytest
from playwright.sync_api import expect

from bokeh_page import WATCH_DOCUMENT_JS, ConsoleErrors, LabPage, cds_data, open_app, wait_for_change, wait_until_quiet

ROOT = pathlib.Path(__file__).resolve().parents[2]
APP = ROOT / "apps" / "linearized.py"
LOAD_MS = 60_000
UPDATE_MS = 30_000
MEAN_UGP = ("() => { const d = Bokeh.documents[0].get_model_by_name('latent-ugp').data;"
            " return Array.from(d instanceof Map ? d.get('mean') : d['mean']); }")
RANGE_WARNINGS = re.compile(r"could not (set initial ranges|determine (minimum|maximum) data value)")


@pytest.fixture(scope="module")
def lab_url(panel_server):
    return panel_server(APP)


@pytest.fixture
def lab(page, lab_url):
    """A fresh session of the page at 1400 x 1000; its console and the server log are checked at the end."""
    page.set_viewport_size({"width": 1400, "height": 1000})
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


def test_a_g_every_method_fails_with_is_refused_in_the_box(lab):
    page = lab.page
    sine = cds_data(page, "latent-ugp")["mean"]
    page.get_by_label("Forward model g").select_option("custom expression")
    box = page.get_by_label("Custom g(f)")
    expect(page.locator("#expression-ok")).to_be_visible()
    before = wait_for_change(page, MEAN_UGP, sine, timeout=UPDATE_MS)  # the default custom g drawn
    wait_until_quiet(page)
    box.fill("sqrt(f + 4.5)")
    box.press("Enter")
    error = page.locator("#expression-error")
    expect(error).to_contain_text("every method failed with g(f) = sqrt(f + 4.5)")
    expect(error).to_contain_text("previous forward model is kept")
    wait_until_quiet(page)
    assert cds_data(page, "latent-ugp")["mean"] == before
    expect(page.locator("#metrics-table")).not_to_contain_text("failed")


def test_no_range_warnings_on_load_nor_with_the_methods_switched_off_and_on(lab, tmp_path):
    page = lab.page
    wait_until_quiet(page, quiet_ms=1000)
    page.screenshot(path=str(tmp_path / "linearized-loaded.png"), full_page=True)
    buttons = [page.get_by_role("button", name=label, exact=True) for label in ("EGP", "UGP", "EKS", "UKS")]
    for button in buttons:  # every method off: every trace plot empty
        button.click()
    page.wait_for_function("() => Bokeh.documents[0].get_model_by_name('latent-ugp').get_length() === 0")
    wait_until_quiet(page, quiet_ms=1000)
    page.screenshot(path=str(tmp_path / "linearized-no-methods.png"), full_page=True)
    for button in buttons:
        button.click()
    page.wait_for_function("() => Bokeh.documents[0].get_model_by_name('latent-ugp').get_length() > 0")
    wait_until_quiet(page, quiet_ms=1000)
    warnings = [w for w in lab.errors.warnings if RANGE_WARNINGS.search(w)]
    assert not warnings, warnings
