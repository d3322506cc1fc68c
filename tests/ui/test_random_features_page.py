"""The served random-features lab (apps/random_features.py) driven in a real browser.

One ``panel serve`` process for the module; every test opens its own page (its own Bokeh session
and ``RandomFeaturesLab``), which draws the kernel views at once and fits the four models in the
background as soon as it loads. The page is read through the named Bokeh sources
(gpexplorer/ui/random_features/figures.py, charts.py) and the readouts' element ids (texts.py);
the sliders are moved with the keyboard on their handles, like a user. The slider latencies are
printed (run with ``-s`` to see them) and the screenshots saved to ``assets/screenshots/``.
"""

from __future__ import annotations

import pathlib
import re
import statistics

import pytest
from playwright.sync_api import expect

from bokeh_page import (cds_data, cds_length, lab_opener, measure_latency, overflow, save_screenshot, set_widget_value,
                        slider_handle, wait_for_change)

ROOT = pathlib.Path(__file__).resolve().parents[2]
APP = ROOT / "apps" / "random_features.py"
SCREENSHOTS = ROOT / "assets" / "screenshots"
LOAD_MS = 90_000
FIT_MS = 180_000  # the first fit of a fresh server on a loaded 2-core machine
UPDATE_MS = 30_000
#: small models: the page's fits take a second or two
SMALL = "fit_features=60&glm_steps=100&iterations=60"
#: what a slider move may take from the key press to the redrawn slice, on a loaded CI machine (the
#: target is 150 ms; the measured values are printed)
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
    page.wait_for_function("() => Bokeh.documents[0].get_model_by_name('kernel-slice').get_length() > 0",
                           timeout=LOAD_MS)
    page.wait_for_function("() => Bokeh.documents[0].get_model_by_name('fit-glm').get_length() > 0", timeout=FIT_MS)
    expect(page.locator("#sidebar #job-status")).to_have_attribute("data-state", "done", timeout=FIT_MS)


@pytest.fixture
def open_lab(page, lab_url):
    """Factory ``open_lab(query, viewport) -> LabPage`` that waits for the first fit; every page is
    checked for browser errors and server tracebacks afterwards."""
    yield from lab_opener(page, lab_url, _fitted, update_ms=UPDATE_MS, load_ms=LOAD_MS, viewport=(1600, 1000))


#: the figures' boxes (name -> [left, top, right, bottom]) of every displayed figure of the page
_JS_FIGURE_BOXES = """() => { const out = {};
  const walk = (v) => { const n = v.model && v.model.name;
    if (n && n.endsWith('-figure')) { const r = v.el.getBoundingClientRect();
      if (r.width > 0) out[n] = [r.left, r.top, r.right, r.bottom]; }
    for (const c of (v.child_views ?? [])) walk(c); };
  for (const r of Bokeh.index.roots) walk(r); return out; }"""


#: the first error curve's values, rounded (to compare two readings)
_JS_CURVE_0 = """() => { const d = Bokeh.documents[0].get_model_by_name('curve-0').data;
  const e = d instanceof Map ? d.get('error') : d.error; return Array.from(e).map((v) => Math.round(v * 1e6)); }"""


def _overlapping(page):
    """Pairs of figures whose boxes overlap by more than 2 px either way."""
    boxes = page.evaluate(_JS_FIGURE_BOXES)
    names = sorted(boxes)
    out = []
    for k, a in enumerate(names):
        for b in names[k + 1:]:
            (l1, t1, r1, b1), (l2, t2, r2, b2) = boxes[a], boxes[b]
            if min(r1, r2) - max(l1, l2) > 2 and min(b1, b2) - max(t1, t2) > 2:
                out.append((a, b))
    return out


def _press(page, title, key):
    handle = slider_handle(page, title)
    handle.focus()
    page.keyboard.press(key)


def test_the_lab_draws_the_kernel_and_four_fits_and_its_sliders_answer_promptly(open_lab):
    lab = open_lab()
    page = lab.page
    assert cds_length(page, "kernel-slice") == 161 and cds_length(page, "kernel-estimate") == 1
    assert [cds_length(page, f"curve-{k}") for k in range(4)] == [17, 17, 17, 0]
    for key in ("exact", "vfe", "slm", "glm"):
        assert cds_length(page, f"fit-{key}") == 200
    assert cds_length(page, "fit-data") == 200 and cds_length(page, "fit-inducing") == 15
    assert cds_length(page, "weights-components") == 5 and cds_length(page, "weights-exact") == 1
    table = page.locator("#fit-table")
    expect(table).to_have_attribute("data-state", "fitted")
    for label in ("exact GP", "VFE bound", "log evidence", "ELBO", "Squared exponential"):
        expect(page.locator("#main")).to_contain_text(label)
    names = page.evaluate("""() => Array.from(Bokeh.documents[0].all_models)
        .map((m) => m.name).filter((n) => typeof n === 'string' && /^[a-z][a-z0-9_+-]*$/.test(n))""")
    assert not sorted({n for n in names if names.count(n) > 1}), "a name is used by more than one model"
    readout = page.locator("#kernel-readout")
    expect(readout).to_have_attribute("data-features", "100")
    save_screenshot(page, SCREENSHOTS / "random_features-1600x1000.png")

    # D by the keyboard on its slider: each press redraws the slice, the maps and the curves' dots
    latencies = []
    for k, key in enumerate(["ArrowRight", "ArrowRight", "ArrowLeft", "PageUp", "PageDown", "ArrowLeft"]):
        latencies.append(measure_latency(page, "kernel-slice", lambda key=key: _press(page, "D (features)", key),
                                         from_last_input=True))
    expect(readout).to_have_attribute("data-features", re.compile(r"^\d+$"))
    curve = _JS_CURVE_0
    before = page.evaluate(curve)
    for key in ["ArrowLeft", "ArrowRight", "ArrowLeft", "ArrowRight", "ArrowRight"]:
        latencies.append(measure_latency(page, "kernel-slice", lambda key=key: _press(page, "Lengthscale", key),
                                         from_last_input=True))
    wait_for_change(page, curve, before)  # the error curves follow the lengthscale (0.71 now), a moment later
    print("slider latencies (ms):", [round(v) for v in latencies])
    print(f"slider latency median {statistics.median(latencies):.0f} ms")
    assert statistics.median(latencies) < LATENCY_LIMIT_MS
    assert not page.locator("#sidebar #job-status[data-state='running']").count()  # no fit for a kernel setting
    seconds = float(readout.get_attribute("data-seconds"))
    print(f"server-side recomputation of the last move: {1000 * seconds:.1f} ms")

    page.set_viewport_size({"width": 1024, "height": 768})
    page.evaluate("() => (document.getElementById('main') || document.scrollingElement).scrollTo(0, 0)")
    wide = overflow(page)
    assert wide[0] <= 2, f"the page is wider than a 1024 px screen: {wide}"
    assert _overlapping(page) == []
    save_screenshot(page, SCREENSHOTS / "random_features-1024x768.png")


def test_ard_a_refit_and_cancel_and_bad_url_values(open_lab):
    lab = open_lab(f"?n_features=21&weight_i=abc&{SMALL}")
    page = lab.page
    badges = page.locator("#badges")
    expect(badges).to_contain_text("ignored URL values")
    for key in ("n_features (must be even", "weight_i ("):
        expect(badges).to_contain_text(key)
    status = page.locator("#sidebar #job-status")
    page.get_by_role("button", name="Fit ARD (Boston)").click()
    expect(status).to_have_attribute("data-state", "running")
    expect(page.locator("#ard-readout")).to_have_attribute("data-state", "fitted", timeout=FIT_MS)
    assert cds_length(page, "ard") == 13
    assert int(page.locator("#ard-readout").get_attribute("data-pruned")) >= 1
    lengthscales = cds_data(page, "ard")["lengthscale"]
    assert min(lengthscales) > 0 and max(lengthscales) <= 1000.0 + 1e-6

    # a model setting refits by itself; a long fit is cancelled and the page keeps working
    before = page.locator("#fit-table tr[data-model='glm']").get_attribute("data-objective")
    set_widget_value(page, "K (GLM components)", 2)
    expect(page.locator("#fit-table tr[data-model='glm']")).not_to_have_attribute("data-objective", before,
                                                                                   timeout=FIT_MS)
    expect(status).to_have_attribute("data-state", "done", timeout=FIT_MS)
    page.wait_for_function("() => Bokeh.documents[0].get_model_by_name('weights-components').get_length() === 2")
    set_widget_value(page, "GLM Adam steps", 5000)
    expect(status).to_have_attribute("data-state", "running")
    page.get_by_role("button", name="Cancel").first.click()
    expect(status).to_have_attribute("data-state", "cancelled")
    expect(page.get_by_role("button", name="Fit the four models")).to_be_enabled()
    expect(page.locator("#fit-table")).to_have_attribute("data-stale", "true")
    expect(page.locator("#main")).to_contain_text("changed since this fit")
    _press(page, "D (features)", "ArrowRight")  # the kernel views still answer
    expect(page.locator("#kernel-readout")).to_have_attribute("data-features", "102")


def test_presenter_mode_gives_the_slice_the_width_at_1024x768(open_lab):
    lab = open_lab(f"?presenter=1&{SMALL}", viewport=(1024, 768))
    page = lab.page
    width = page.evaluate("""() => { const fig = Bokeh.documents[0].get_model_by_name('kernel-slice-figure'); let w = 0;
        const walk = (v) => { if (v.model === fig) w = v.el.getBoundingClientRect().width; for (const c of (v.child_views ?? [])) walk(c); };
        for (const r of Bokeh.index.roots) walk(r); return w; }""")
    assert width >= 0.6 * 1024, f"the slice takes {width:.0f} px of 1024"
    assert page.get_by_role("button", name="?", exact=True).count() >= 7  # the intro and every note are folded
    wide = overflow(page)
    assert wide[0] <= 2, f"the page is wider than a 1024 px screen: {wide}"
    assert _overlapping(page) == []
    save_screenshot(page, SCREENSHOTS / "presenter-random_features-1024x768.png")
