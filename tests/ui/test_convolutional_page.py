"""The served patches lab (apps/convolutional.py) driven in a real browser.

One ``panel serve`` process for the module; every test opens its own page (its own Bokeh session
and ``ConvolutionalLab``), which fits the lab's model in the background as soon as it loads and
then the digit model (small settings in the URL, fitted once per server process). The page is read
through the named Bokeh sources (gpexplorer/ui/convolutional/figures.py, charts.py) and the
readouts' element ids (texts.py); the two canvases are driven with real mouse events. The edit and
drawing latencies are printed (run with ``-s`` to see them) and the screenshots saved to
``assets/screenshots/``.
"""

from __future__ import annotations

import pathlib
import re
import statistics

import pytest
from playwright.sync_api import expect

from bokeh_page import (cds_data, cds_length, data_to_page, lab_opener, measure_latency, overflow, save_screenshot)

ROOT = pathlib.Path(__file__).resolve().parents[2]
APP = ROOT / "apps" / "convolutional.py"
SCREENSHOTS = ROOT / "assets" / "screenshots"
LOAD_MS = 90_000
FIT_MS = 180_000  # the first fit of a fresh server on a loaded 2-core machine
UPDATE_MS = 30_000
#: a digit model that fits in seconds (the default one takes half a minute)
DIGITS = "digit_train=200&digit_M=10&digit_steps=60"
SMALL = f"n_train=60&M=10&iterations=8&{DIGITS}"
#: what an edit or a drawing may take from the mouse to the redrawn source, on a loaded CI machine
#: (the target is 150 ms; the measured values are printed)
LATENCY_LIMIT_MS = 600


@pytest.fixture(scope="module")
def lab_url(panel_server):
    return panel_server(APP)


@pytest.fixture(autouse=True)
def patient_expect():
    expect.set_options(timeout=UPDATE_MS)
    yield
    expect.set_options(timeout=None)


def _fitted(page):
    page.wait_for_function("() => Bokeh.documents[0].get_model_by_name('tiles').get_length() > 0", timeout=FIT_MS)
    expect(page.locator("#sidebar #job-status")).to_have_attribute("data-state", "done", timeout=FIT_MS)


@pytest.fixture
def open_lab(page, lab_url):
    """Factory ``open_lab(query, viewport) -> LabPage`` that waits for the first fit; every page is
    checked for browser errors and server tracebacks afterwards."""
    yield from lab_opener(page, lab_url, _fitted, update_ms=UPDATE_MS, load_ms=LOAD_MS, viewport=(1600, 1000))


def _canvas(page, label):
    canvas = page.locator(f"canvas[data-canvas={label}]")
    expect(canvas).to_have_count(1)
    canvas.scroll_into_view_if_needed()
    return canvas.bounding_box()


def _click_pixel(page, box, i, j, n):
    page.mouse.click(box["x"] + (j + 0.5) * box["width"] / n, box["y"] + (i + 0.5) * box["height"] / n)


def _stroke(page, box, points, n=28):
    x0, y0 = points[0]
    page.mouse.move(box["x"] + x0 * box["width"] / n, box["y"] + y0 * box["height"] / n)
    page.mouse.down()
    for x, y in points[1:]:
        page.mouse.move(box["x"] + x * box["width"] / n, box["y"] + y * box["height"] / n, steps=6)
    page.mouse.up()


def test_the_lab_fits_an_edit_moves_the_elbo_and_a_drawing_is_classified(open_lab):
    lab = open_lab(f"?{DIGITS}")
    page = lab.page
    assert cds_length(page, "tiles") == 45 and cds_length(page, "predictions") == 60
    assert cds_length(page, "edge-bar") == 28 and cds_length(page, "contrib-heat") == 1 and cds_length(page, "weights") == 1
    table = page.locator("#fit-table")
    expect(table).to_have_attribute("data-state", "fitted")
    for label in ("unique patches U", "converged", "45"):
        expect(table).to_contain_text(label)
    names = page.evaluate("""() => Array.from(Bokeh.documents[0].all_models)
        .map((m) => m.name).filter((n) => typeof n === 'string' && /^[a-z][a-z0-9_+-]*$/.test(n))""")
    assert not sorted({n for n in names if names.count(n) > 1}), "a name is used by more than one model"
    expect(page.locator("#digit-readout")).to_have_attribute("data-state", "ready", timeout=FIT_MS)
    save_screenshot(page, SCREENSHOTS / "convolutional-1600x1000.png")

    # tap the last tile (the largest q(u) mean): the editor holds that inducing patch
    tiles = cds_data(page, "tiles")
    last = len(tiles["index"]) - 1
    x, y = data_to_page(page, "tiles-figure", tiles["cx"][last], tiles["cy"][last])
    page.mouse.click(x, y)
    expect(page).to_have_url(re.compile(rf"[?&]tile={int(tiles['index'][last])}\b"))
    expect(page.locator("#edit-readout")).to_contain_text(f"Inducing patch {int(tiles['index'][last])}")

    # flip pixels of it: each click moves the ELBO and redraws the predictions
    box = _canvas(page, "patch")
    readout = page.locator("#edit-readout")
    fitted = float(readout.get_attribute("data-fitted-elbo"))
    latencies, elbos = [], []
    for k, (i, j) in enumerate([(1, 1), (1, 1), (0, 2), (0, 2), (2, 0), (2, 0)]):
        latencies.append(measure_latency(page, "predictions", lambda: _click_pixel(page, box, i, j, 3),
                                         from_last_input=True))
        print(f"edit {k + 1}: {latencies[-1]:.0f} ms")
        expect(readout).to_have_attribute("data-edits", str(k + 1))
        elbos.append(float(readout.get_attribute("data-elbo")))
    assert elbos[0] != pytest.approx(fitted, abs=1e-6), "flipping a pixel did not move the ELBO"
    assert elbos[1] == pytest.approx(fitted, abs=1e-6)  # flipped back: the fitted patches, the fitted q(u)
    page.get_by_role("button", name="Undo edits").click()
    expect(readout).to_have_attribute("data-edits", "0")
    assert float(readout.get_attribute("data-elbo")) == pytest.approx(fitted, abs=1e-6)

    # draw a one, then a seven: probabilities come back after every stroke
    probabilities = page.locator("#digit-readout")
    box = _canvas(page, "digit")
    strokes = [[(14, 5), (14, 23)], [(8, 6), (20, 6), (12, 23)], [(9, 9), (14, 5), (19, 9), (19, 22)]]
    drawn = []
    for k, stroke in enumerate(strokes):
        if k:
            page.get_by_role("button", name="Clear drawing").click()
            page.wait_for_function("() => { const d = Bokeh.documents[0].get_model_by_name('digit-probabilities').data;"
                                   " return Math.max(...(d instanceof Map ? d.get('p') : d.p)) === 0; }")
        drawn.append(measure_latency(page, "digit-probabilities", lambda: _stroke(page, box, stroke),
                                     from_last_input=True))
        print(f"drawing {k + 1}: {drawn[-1]:.0f} ms")
        expect(probabilities).to_have_attribute("data-digit", re.compile(r"^\d$"))
        p = cds_data(page, "digit-probabilities")["p"]
        assert sum(p) == pytest.approx(1.0, abs=1e-3) and cds_length(page, "digit-seen") == 1
    print(f"edit latency median {statistics.median(latencies):.0f} ms, drawing {statistics.median(drawn):.0f} ms")
    assert statistics.median(latencies) < LATENCY_LIMIT_MS and statistics.median(drawn) < LATENCY_LIMIT_MS

    page.set_viewport_size({"width": 1024, "height": 768})
    page.evaluate("() => (document.getElementById('main') || document.scrollingElement).scrollTo(0, 0)")
    wide = overflow(page)
    assert wide[0] <= 2, f"the page is wider than a 1024 px screen: {wide}"
    save_screenshot(page, SCREENSHOTS / "convolutional-1024x768.png")


def test_bad_url_values_are_named_the_race_draws_four_traces_live_and_cancel_stops_it(open_lab):
    lab = open_lab(f"?patch=1&image=999&kernel=rbf&{SMALL}")
    page = lab.page
    badges = page.locator("#badges")
    expect(badges).to_contain_text("ignored URL values")
    for key in ("patch (", "image (", "kernel ("):
        expect(badges).to_contain_text(key)
    page.get_by_role("button", name="Clear drawing").click()  # an empty drawing: nothing to classify, no error
    status = page.locator("#sidebar #job-status")
    page.get_by_role("button", name="Race the four kernels").click()
    expect(status).to_have_attribute("data-state", "running")
    page.wait_for_function("() => Bokeh.documents[0].get_model_by_name('race-se').get_length() > 0", timeout=FIT_MS)
    expect(status).to_have_attribute("data-state", "done", timeout=FIT_MS)
    for kind in ("se", "conv", "weighted", "weighted+se"):
        assert cds_length(page, f"race-{kind}") > 2
        expect(page.locator(f"#race-table tr[data-kind='{kind}']")).to_have_attribute("data-error-rate", re.compile(r"\d"))
    page.get_by_role("button", name="Race the four kernels").click()
    expect(status).to_have_attribute("data-state", "running")
    page.get_by_role("button", name="Cancel").first.click()
    expect(status).to_have_attribute("data-state", "cancelled")
    expect(page.locator("#race-table")).to_contain_text("not raced yet")
    expect(page.get_by_role("button", name="Fit", exact=True)).to_be_enabled()
    expect(page.locator("#digit-readout")).not_to_have_attribute("data-state", "failed")


def test_presenter_mode_gives_the_tiles_the_width(open_lab):
    lab = open_lab(f"?presenter=1&iterations=20&{DIGITS}", viewport=(1024, 768))
    page = lab.page
    width = page.evaluate("""() => { const fig = Bokeh.documents[0].get_model_by_name('tiles-figure'); let w = 0;
        const walk = (v) => { if (v.model === fig) w = v.el.getBoundingClientRect().width; for (const c of (v.child_views ?? [])) walk(c); };
        for (const r of Bokeh.index.roots) walk(r); return w; }""")
    assert width >= 0.6 * 1024, f"the tiles take {width:.0f} px of 1024"
    assert page.get_by_role("button", name="?", exact=True).count() >= 5  # the notes are folded
    wide = overflow(page)
    assert wide[0] <= 2, f"the page is wider than a 1024 px screen: {wide}"
    save_screenshot(page, SCREENSHOTS / "presenter-convolutional-1024x768.png")
