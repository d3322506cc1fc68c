"""The served primer page (apps/primer.py) driven in a real browser.

One ``panel serve`` process for the module; every test opens its own page (its own Bokeh session
and ``PrimerLab``). The page is read through the named Bokeh sources
(gpexplorer/ui/primer/figures.py) and the readouts' element ids (texts.py); a point is added by a
real mouse click on the posterior plot and the kernel expression typed into its box, like a user.
The screenshots are saved to ``assets/screenshots/``.
"""

from __future__ import annotations

import pathlib
import re
import statistics

import pytest
from playwright.sync_api import expect

from bokeh_page import (cds_data, cds_length, data_to_page, lab_opener, measure_latency, overflow, save_screenshot,
                        slider_handle, wait_for_change, wait_until_quiet)

ROOT = pathlib.Path(__file__).resolve().parents[2]
APP = ROOT / "apps" / "primer.py"
SCREENSHOTS = ROOT / "assets" / "screenshots"
LOAD_MS = 90_000
UPDATE_MS = 30_000

#: every source's name and its row count on a fresh page (201 grid points, 5 prior samples, 4 data points)
SOURCES = {"prior-samples": 5, "posterior": 201, "posterior-samples": 3, "data-points": 4, "pair-prior": 100,
           "pair-posterior": 100, "pair-dots": 5, "evidence-bars": 4, "covariance": 1, "prior-given-x1": 0}

_JS_PRIOR_FIRST = """() => { const d = Bokeh.documents[0].get_model_by_name('prior-samples').data;
  const ys = d instanceof Map ? d.get('ys') : d.ys;
  return Array.from(ys[0]).filter((_, i) => i % 8 === 0).map((v) => Math.round(v * 1e6)); }"""


@pytest.fixture(scope="module")
def lab_url(panel_server):
    return panel_server(APP)


@pytest.fixture(autouse=True)
def patient_expect():
    expect.set_options(timeout=UPDATE_MS)
    yield
    expect.set_options(timeout=None)


def _drawn(page):
    page.wait_for_function("() => Bokeh.documents[0].get_model_by_name('evidence-bars').get_length() > 0",
                           timeout=LOAD_MS)


@pytest.fixture
def open_lab(page, lab_url):
    """Factory ``open_lab(query, viewport) -> LabPage`` that waits for the first drawing; every page
    is checked for browser errors and server tracebacks afterwards."""
    yield from lab_opener(page, lab_url, _drawn, update_ms=UPDATE_MS, load_ms=LOAD_MS, viewport=(1600, 1000))


def test_the_page_loads_with_data_in_every_source_and_a_click_adds_a_point(open_lab):
    lab = open_lab()
    page = lab.page
    for name, length in SOURCES.items():
        assert cds_length(page, name) == length, name
    assert len(cds_data(page, "prior-samples")["ys"][0]) == 201
    expect(page.locator("#main")).to_contain_text("log p(y) =")
    expect(page.locator("#kernel-message")).to_have_attribute("data-state", "ok")
    total = float(page.locator("#evidence-readout").get_attribute("data-total"))
    assert total == pytest.approx(sum(cds_data(page, "evidence-bars")["term"]), abs=1e-9)
    # the explanations' equations are MathML the browser draws itself: laid out, with width and height
    maths = page.locator("math")
    assert maths.count() >= 10
    box = maths.first.bounding_box()
    assert box is not None and box["width"] > 20 and box["height"] > 8
    save_screenshot(page, settle_ms=500, path=SCREENSHOTS / "primer-1600x1000.png")

    # a click on the posterior plot: the server's Tap callback adds a data point
    px, py = data_to_page(page, "posterior-figure", 3.3, 0.0)
    page.mouse.click(px, py)
    page.wait_for_function("() => Bokeh.documents[0].get_model_by_name('data-points').get_length() === 5")
    x = cds_data(page, "data-points")["x"][-1]
    assert x == pytest.approx(3.3, abs=0.05)
    page.wait_for_function("() => Bokeh.documents[0].get_model_by_name('evidence-bars').get_length() === 5")
    expect(page.locator("#points-readout")).to_have_attribute("data-points", "5")

    # the order reversed: other bars, the same sum
    page.get_by_role("button", name="Reverse order").click()
    expect(page.locator("#evidence-readout")).to_have_attribute("data-order", "4,3,2,1,0")
    reversed_total = float(page.locator("#evidence-readout").get_attribute("data-total"))
    assert reversed_total == pytest.approx(sum(cds_data(page, "evidence-bars")["term"]), abs=1e-9)

    # the filter: a table of three lengthscales and grey lines on the posterior plot
    page.get_by_role("button", name="Filter prior samples").click()
    expect(page.locator("#filter-readout")).to_have_attribute("data-state", "done")
    expect(page.locator("#filter-readout tr[data-lengthscale]")).to_have_count(3)
    page.get_by_role("button", name="Clear points").click()
    page.wait_for_function("() => Bokeh.documents[0].get_model_by_name('data-points').get_length() === 0")
    expect(page.locator("#filter-readout")).to_have_attribute("data-state", "stale")
    assert cds_length(page, "kept-samples") == 0


def test_the_expression_box_takes_a_sum_and_refuses_a_power(open_lab):
    lab = open_lab(viewport=(1024, 768))
    page = lab.page
    before = page.evaluate(_JS_PRIOR_FIRST)
    box = page.get_by_placeholder("se + periodic * linear")
    box.fill("se + periodic")
    box.press("Enter")
    expect(page.locator("#kernel-message")).to_contain_text("k = se + periodic")
    wait_for_change(page, _JS_PRIOR_FIRST, before, timeout=UPDATE_MS)
    expect(page).to_have_url(re.compile(r"[?&]kernel=se"))
    now = page.evaluate(_JS_PRIOR_FIRST)
    box.fill("se ** 2")
    box.press("Enter")
    message = page.locator("#kernel-message")
    expect(message).to_have_attribute("data-state", "refused")
    expect(message).to_contain_text("not allowed")
    expect(message).to_be_visible()
    assert page.evaluate(_JS_PRIOR_FIRST) == now  # the previous kernel stays

    page.evaluate("() => (document.getElementById('main') || document.scrollingElement).scrollTo(0, 0)")
    wait_until_quiet(page)
    page.wait_for_timeout(500)
    wide = overflow(page)
    assert wide[0] <= 2, f"the page is wider than a 1024 px screen: {wide}"
    box.fill("se")
    box.press("Enter")
    expect(message).to_have_attribute("data-state", "ok")
    save_screenshot(page, settle_ms=500, path=SCREENSHOTS / "primer-1024x768.png")


def test_a_bad_expression_in_the_url_is_named(open_lab):
    lab = open_lab("?kernel=se**2&x1=0.25")
    page = lab.page
    expect(page.locator("#badges")).to_contain_text("kernel")
    expect(page.locator("#kernel-message")).to_contain_text("k = se")
    assert cds_data(page, "pair-dots")["x"]  # drawn at x1 = 0.25


#: what a slider move or a click may take, key press to the redrawn posterior, on a loaded CI machine
#: (the issue's target is 100 ms; the measured values are printed: run with -s)
LATENCY_LIMIT_MS = 600


def test_sliders_and_clicks_redraw_the_posterior_promptly(open_lab):
    """Clicks adding points and key presses on the lengthscale and noise sliders, timed in Chromium
    from the input event to the changed source (the evidence bars for a click, the posterior for a
    slider: browser -> server -> browser)."""
    page = open_lab().page
    wait_until_quiet(page)  # the first drawing has fully arrived before the clicks are timed
    latencies = []
    for k, x in enumerate((2.8, 3.2, 3.6)):
        px, py = data_to_page(page, "posterior-figure", x, 0.2)
        latencies.append(measure_latency(page, "evidence-bars", lambda px=px, py=py: page.mouse.click(px, py),
                                         from_last_input=True))
        page.wait_for_function(f"() => Bokeh.documents[0].get_model_by_name('data-points').get_length() === {5 + k}")
    for title, keys in (("Lengthscale", ["ArrowRight", "ArrowLeft"] * 3), ("Noise variance", ["ArrowRight", "ArrowLeft"])):
        handle = slider_handle(page, title)
        for key in keys:
            def press(handle=handle, key=key):
                handle.focus()
                page.keyboard.press(key)
            latencies.append(measure_latency(page, "posterior", press, from_last_input=True))
    print("primer latencies (ms):", [round(v) for v in latencies])
    print(f"primer latency median {statistics.median(latencies):.0f} ms, max {max(latencies):.0f} ms")
    assert cds_length(page, "data-points") == 7
    assert statistics.median(latencies) < LATENCY_LIMIT_MS


_JS_POINTS = "() => { const d = Bokeh.documents[0].get_model_by_name('data-points').data; " \
             "const g = (k) => Array.from(d instanceof Map ? d.get(k) : d[k]); return {x: g('x'), y: g('y')}; }"


def test_a_click_on_a_point_removes_it_and_a_drag_moves_another(open_lab):
    page = open_lab().page
    wait_until_quiet(page)
    px, py = data_to_page(page, "posterior-figure", 1.0, 0.4)
    page.mouse.click(px, py)
    page.wait_for_function("() => Bokeh.documents[0].get_model_by_name('evidence-bars').get_length() === 3")
    assert 1.0 not in page.evaluate(_JS_POINTS)["x"]
    expect(page).to_have_url(re.compile(r"points=0\.5%3A-0\.3%2C1\.5%3A0\.8%2C2\.2%3A0\.3"))
    wait_until_quiet(page)
    total = float(page.locator("#evidence-readout").get_attribute("data-total"))

    # drag (1.5, 0.8) down to y = -0.5: the browser moves it, the server follows (bars, URL)
    px, py = data_to_page(page, "posterior-figure", 1.5, 0.8)
    tx, ty = data_to_page(page, "posterior-figure", 1.5, -0.5)
    page.mouse.move(px, py)
    page.mouse.down()
    page.mouse.move(tx, ty, steps=8)
    page.mouse.up()
    expect(page.locator("#evidence-readout")).not_to_have_attribute("data-total", f"{total:.12g}")
    moved = page.evaluate(_JS_POINTS)
    assert len(moved["x"]) == 3 and moved["y"][1] == pytest.approx(-0.5, abs=0.1)
    expect(page).to_have_url(re.compile(r"points=0\.5%3A-0\.3%2C1\.\d+%3A-0\.[45]"))
    save_screenshot(page, settle_ms=300, path=SCREENSHOTS / "primer-dragged-1600x1000.png")

    # two quick clicks at two places add two points (Bokeh calls the second a double tap);
    # a double click adds one point, not one added and removed
    wait_until_quiet(page)
    first, second = (data_to_page(page, "posterior-figure", x, 0.2) for x in (2.8, 3.4))
    page.mouse.click(*first)
    page.mouse.click(*second)
    page.wait_for_function("() => Bokeh.documents[0].get_model_by_name('evidence-bars').get_length() === 5")
    wait_until_quiet(page)
    page.mouse.dblclick(*data_to_page(page, "posterior-figure", 3.7, -0.5))
    page.wait_for_function("() => Bokeh.documents[0].get_model_by_name('evidence-bars').get_length() === 6")
    wait_until_quiet(page)
    assert len(page.evaluate(_JS_POINTS)["x"]) == 6


def test_fixing_f_x1_draws_the_conditional_in_both_views(open_lab):
    page = open_lab("?fix_x1=true&f_x1=1.5", viewport=(1600, 1000)).page
    page.wait_for_function("() => Bokeh.documents[0].get_model_by_name('prior-given-x1').get_length() === 201")
    assert cds_length(page, "pair-given-x1") == 2 and cds_data(page, "pair-given-x1")["x"] == [1.5, 1.5]
    assert cds_data(page, "fixed-x1")["y"] == [1.5]
    wait_until_quiet(page)
    data_to_page(page, "pair-figure", 1.5, 0.0)  # scrolls the 2-D view into sight
    save_screenshot(page, settle_ms=400, path=SCREENSHOTS / "primer-fixed-x1-1600x1000.png")
    page.get_by_role("button", name="Fix f(x1)").click()
    page.wait_for_function("() => Bokeh.documents[0].get_model_by_name('prior-given-x1').get_length() === 0")
    page.wait_for_function("() => Bokeh.documents[0].get_model_by_name('pair-given-x1').get_length() === 0")


def _five_hundred():
    import numpy as np

    from gpexplorer.ui.primer.settings import encode_points

    rng = np.random.default_rng(1)
    x = np.round(rng.uniform(-1, 4, 500), 3)
    return encode_points(x, np.round(np.sin(2 * x) + 0.1 * rng.standard_normal(500), 3))


def test_five_hundred_points_from_a_link_redraw_promptly(open_lab):
    """A link with 500 points (the issue's size): every view drawn from them, and key presses on the
    lengthscale slider timed in Chromium to the redrawn posterior."""
    page = open_lab("?points=" + _five_hundred().replace(":", "%3A").replace(",", "%2C"),
                    viewport=(1600, 1000)).page
    page.wait_for_function("() => Bokeh.documents[0].get_model_by_name('evidence-bars').get_length() === 500")
    expect(page.locator("#points-readout")).to_have_attribute("data-points", "500")
    wait_until_quiet(page)
    handle = slider_handle(page, "Lengthscale")
    latencies = []
    for key in ["ArrowRight", "ArrowLeft"] * 6:
        def press(key=key):
            handle.focus()
            page.keyboard.press(key)
        latencies.append(measure_latency(page, "posterior", press, from_last_input=True))
    print("primer, 500 points, latencies (ms):", [round(v) for v in latencies])
    print(f"primer, 500 points, latency median {statistics.median(latencies):.0f} ms, max {max(latencies):.0f} ms")
    wait_until_quiet(page)  # the readout and the bars arrive after the posterior that the timing waits for
    total = float(page.locator("#evidence-readout").get_attribute("data-total"))
    assert total == pytest.approx(sum(cds_data(page, "evidence-bars")["term"]), abs=1e-6)
    assert statistics.median(latencies) < LATENCY_LIMIT_MS


def test_the_invariance_view_shows_images_and_both_kernels_evidence(open_lab):
    page = open_lab().page
    page.wait_for_function("() => Bokeh.documents[0].get_model_by_name('invariance-evidence').get_length() === 40")
    curves = cds_data(page, "invariance-evidence")
    assert curves["convolutional"][-1] > curves["se"][-1]
    assert cds_length(page, "invariance-images") == 8
    wait_until_quiet(page)
    data_to_page(page, "invariance-figure", 20.0, 0.0)  # scrolls the view into sight
    save_screenshot(page, settle_ms=400, path=SCREENSHOTS / "primer-invariance-1600x1000.png")


def test_a_figure_exports_as_a_high_resolution_png_and_an_svg_with_its_legend(open_lab):
    """The slide tools: the posterior figure as a PNG three times its size and as an SVG holding
    its legend's labels; Copy link puts the page's link (with the state) on the clipboard."""
    import struct
    import xml.etree.ElementTree as ET

    page = open_lab("?lengthscale=0.5").page
    wait_until_quiet(page)
    page.get_by_label("Figure to export").select_option("posterior-figure")
    with page.expect_download() as info:
        page.get_by_role("button", name="SVG").click()
    svg_path = info.value.path()
    root = ET.parse(svg_path).getroot()
    assert root.tag.endswith("svg")
    text = " ".join(t.text or "" for t in root.iter() if t.tag.endswith("text"))
    for label in ("posterior mean", "±2 sd of f", "data"):
        assert label in text, label  # the legend is in the file
    assert info.value.suggested_filename == "posterior-figure.svg"
    import json

    expect(page.locator("[data-last-export]")).to_have_count(1)  # the component's element (in its shadow root)
    frame = json.loads(page.locator("[data-last-export]").get_attribute("data-last-export"))
    assert frame["figure"] == "posterior-figure" and frame["format"] == "svg"

    with page.expect_download() as info:
        page.get_by_role("button", name="PNG (3x)").click()
    data = pathlib.Path(info.value.path()).read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    width, height = struct.unpack(">II", data[16:24])  # the IHDR chunk
    assert width == round(3 * frame["width"]) and height == round(3 * frame["height"]) and width >= 1800
    page.get_by_role("button", name="Copy link").click()
    expect(page.locator("[data-copied]")).to_have_attribute("data-copied", re.compile(r"lengthscale=0\.5"))
