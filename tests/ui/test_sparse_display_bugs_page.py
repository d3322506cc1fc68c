"""Issue 23's display bugs of the sparse-regression lab that only a browser shows (Chromium).

* the inducing-features strip shares the posterior's x frame to the pixel (same x range, same
  frame edges), at 1024 x 768 in presenter mode and at 1600 x 1000, before and after a fit;
* the exact, FITC and VFE bands at 1024 x 768 in presenter mode: a screenshot to look at (written
  to pytest's tmp dir, and to ``assets/screenshots/sparse-bands-presenter-1024x768.png`` with
  ``GPEXPLORER_SCREENSHOTS=1``).
"""

from __future__ import annotations

import os
import pathlib
import re

import pytest
from playwright.sync_api import expect

from bokeh_page import cds_data, data_to_page, frame_edges, lab_opener, set_widget_value, wait_until_quiet

pytestmark = pytest.mark.browser

ROOT = pathlib.Path(__file__).resolve().parents[2]
APP = ROOT / "apps" / "sparse_regression.py"
SCREENSHOT = ROOT / "assets" / "screenshots" / "sparse-bands-presenter-1024x768.png"
LOAD_MS, UPDATE_MS, FIT_MS = 60_000, 30_000, 90_000
PRESENTER = ("?presenter=1", {"width": 1024, "height": 768})
NORMAL = ("", {"width": 1600, "height": 1000})


@pytest.fixture(scope="module")
def lab_url(panel_server):
    return panel_server(APP)


def _drawn(page):
    page.wait_for_function("() => { const s = Bokeh.documents[0].get_model_by_name('feature-curves');"
                           " return s != null && s.get_length() > 0; }", timeout=LOAD_MS)
    # the control cards and the charts below follow the main plot
    page.wait_for_function("() => { const all = Array.from(Bokeh.documents[0].all_models);"
                           " return all.some((m) => m.title === 'Max iter') && all.some((m) => m.name === 'sandwich'); }",
                           timeout=LOAD_MS)
    wait_for_idle(page)


@pytest.fixture
def open_lab(page, lab_url):
    """``open_lab(query, viewport)``: a new session of the sparse lab, drawn and idle."""
    expect.set_options(timeout=UPDATE_MS)
    yield from lab_opener(page, lab_url, _drawn, update_ms=UPDATE_MS, load_ms=LOAD_MS, ignore=("favicon",))
    expect.set_options(timeout=None)


def wait_for_idle(page, timeout=UPDATE_MS):
    """Every BokehJS view has finished rendering, plus two animation frames."""
    page.wait_for_function(
        "() => Bokeh.index.roots.length > 0 && Bokeh.index.roots.every((v) => v.has_finished())",
        timeout=timeout)
    page.evaluate("() => new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r)))")


def _pixel_columns(page, figure, xs):
    """Page x pixel of each data x in ``figure`` (at the middle of its y range)."""
    frame = frame_edges(page, figure)
    y = 0.5 * (frame["y_start"] + frame["y_end"])
    return [data_to_page(page, figure, x, y)[0] for x in xs]


def _assert_strip_aligned(page, where):
    posterior, strip = frame_edges(page, "posterior"), frame_edges(page, "feature-strip")
    assert (strip["x_start"], strip["x_end"]) == pytest.approx((posterior["x_start"], posterior["x_end"])), where
    assert abs(strip["left"] - posterior["left"]) <= 1 and abs(strip["right"] - posterior["right"]) <= 1, \
        (where, {k: (posterior[k], strip[k]) for k in ("left", "right")})
    lo, hi = posterior["x_start"], posterior["x_end"]
    xs = [lo + f * (hi - lo) for f in (0.05, 0.3, 0.5, 0.8, 0.95)] + [6.0]  # x = 6: the example
    up, down = _pixel_columns(page, "posterior", xs), _pixel_columns(page, "feature-strip", xs)
    gaps = [round(a - b, 2) for a, b in zip(up, down)]
    assert max(abs(g) for g in gaps) <= 1.0, f"{where}: posterior px - strip px at x = {xs}: {gaps}"


@pytest.mark.parametrize("query, viewport", [PRESENTER, NORMAL], ids=["1024x768-presenter", "1600x1000"])
def test_the_feature_strip_shares_the_posterior_x_frame(open_lab, viewport, query):
    """Issue 23 bug 3: x = 6 was at 732 px in the posterior and 843 px in the strip (1024 x 768
    presenter): the strip's frame had no legend beside it and a narrower y axis."""
    page = open_lab(query, viewport).page
    _assert_strip_aligned(page, "on load")
    # after a fit the legend gains entries ("Z at fit start", "Z of each fit"): still aligned
    set_widget_value(page, "Max iter", 15)
    expect(page).to_have_url(re.compile(r"[?&]max_iter=15(&|$)"))
    sidebar = page.locator(".bk-menu-icon, .pn-toggle-sidebar, #sidebar-button, .navbar-toggler").first
    if query:  # presenter mode folds the sidebar, with Optimise, away
        sidebar.click()
    page.get_by_role("button", name="Optimise").click()
    expect(page.locator("#job-status")).to_have_attribute("data-state", "done", timeout=FIT_MS)
    if query:
        sidebar.click()
    page.wait_for_function("() => Bokeh.documents[0].get_model_by_name('inducing-fitted').get_length() > 0")
    wait_until_quiet(page)
    wait_for_idle(page)
    _assert_strip_aligned(page, "after a fit")


def test_bands_at_projector_size_screenshot(open_lab, tmp_path):
    """Issue 23 bug 5: exact, FITC and VFE bands at 1024 x 768 presenter mode, each band with its
    own edges; the screenshot is there to be looked at."""
    query, viewport = PRESENTER
    page = open_lab(query + "&M=8&band=f", viewport).page
    for name in ("exact", "fitc", "vfe"):
        edges = cds_data(page, f"band-{name}")
        assert len(edges["x"]) > 50 and len(edges["lower"]) == len(edges["x"])
    data_to_page(page, "posterior", 3.0, 0.0)  # scrolls the posterior into view
    page.mouse.move(0, 0)
    wait_for_idle(page)
    png = page.screenshot(path=str(tmp_path / "bands.png"))
    assert len(png) > 30_000, f"screenshot suspiciously small ({len(png)} bytes)"
    if os.environ.get("GPEXPLORER_SCREENSHOTS") == "1":
        SCREENSHOT.write_bytes(png)


def test_overestimates_and_an_unfinished_fit_are_said_and_continue_extends_the_trace(open_lab, tmp_path):
    """Issue 23 bugs 4 and 9 in the page: after Optimise (Snelson, M = 15, random Z, seed 0,
    Max iter 300) FITC sits right of the exact tick (badge "above-exact", black outline) and
    stopped on its budget (badge "not-converged"); Continue, beside the badges, runs on from there
    and the trace grows. The screenshot of badges, posterior and sandwich is there to be looked at."""
    page = open_lab(*NORMAL).page
    page.get_by_role("button", name="Optimise").click()
    expect(page.locator("#job-status")).to_have_attribute("data-state", "done", timeout=FIT_MS)
    badges = page.locator("#badges")
    expect(badges.locator('[data-kind="above-exact"][data-approximation="fitc"]')).to_have_count(1)
    expect(badges.locator('[data-kind="not-converged"][data-approximation="fitc"]')).to_have_count(1)
    expect(badges).to_contain_text("Above the exact log p(y)")
    page.wait_for_function("() => Bokeh.documents[0].get_model_by_name('sandwich-evidence').get_length() > 0")
    evidence = cds_data(page, "sandwich-evidence")
    outline = dict(zip(evidence["row"], evidence["line"]))
    assert outline["FITC"] == "#000000" and outline["VFE"] != "#000000"
    before = max(len(xs) for xs in cds_data(page, "trace-objective")["xs"])
    wait_for_idle(page)
    page.mouse.move(0, 0)
    page.screenshot(path=str(tmp_path / "after-optimise.png"), full_page=True)
    continue_button = page.get_by_role("button", name="Continue")
    expect(continue_button).to_be_visible()
    continue_button.click()
    expect(page.locator("#job-status")).to_contain_text("continue finished", timeout=FIT_MS)
    page.wait_for_function("(n) => { const d = Bokeh.documents[0].get_model_by_name('trace-objective').data;"
                           " const xs = d instanceof Map ? d.get('xs') : d.xs;"
                           " return xs.some((x) => x.length > n); }", arg=before, timeout=UPDATE_MS)
