"""Presenter mode at projector sizes: the main plot takes most of the width, type is larger,
explanations fold into "?" toggles, and the toggle switches modes keeping the lab's state."""

import pathlib
import statistics

import pytest
from playwright.sync_api import expect

from bokeh_page import ConsoleErrors

ROOT = pathlib.Path(__file__).resolve().parents[2]
SCREENSHOTS = ROOT / "assets" / "screenshots"
APPS = {"primer": ROOT / "apps" / "primer.py", "sparse_regression": ROOT / "apps" / "sparse_regression.py", "linearized": ROOT / "apps" / "linearized.py",
        "black_box": ROOT / "apps" / "black_box.py", "random_features": ROOT / "apps" / "random_features.py"}
SIZES = [(1024, 768), (1280, 720)]
MAIN_SOURCE = {"primer": "posterior", "sparse_regression": "mean-vfe", "linearized": "latent-ugp", "black_box": "latent-fg",
               "random_features": "kernel-slice"}
LOAD_MS = 90_000

# widest canvas whose top is on the first screen: the lab's main plot
_JS_MAIN_PLOT_WIDTH = """() => {
  const widths = [];
  const walk = (root) => {
    for (const el of root.querySelectorAll('*')) {
      if (el.tagName === 'CANVAS') {
        const r = el.getBoundingClientRect();
        if (r.top < window.innerHeight && r.height > 150) widths.push(r.width);
      }
      if (el.shadowRoot) walk(el.shadowRoot);
    }
  };
  walk(document);
  return widths.length ? Math.max(...widths) : 0;
}"""
# figure titles' font size in px (a Bokeh theme applies them as defaults)
_JS_TITLE_SIZES = """() => [...Bokeh.documents[0].all_models]
  .filter(m => (m.constructor.__name__ || m.type || m.constructor.name) === 'Title' && m.text)
  .map(m => parseFloat(m.text_font_size))"""


def _open(page, panel_server, lab, size, query=""):
    page.set_viewport_size({"width": size[0], "height": size[1]})
    errors = ConsoleErrors(page, ignore=("favicon",))
    page.goto(panel_server(APPS[lab]) + query, timeout=LOAD_MS)
    page.locator("canvas").first.wait_for(state="visible", timeout=LOAD_MS)
    page.wait_for_function("name => { const d = window.Bokeh && Bokeh.documents[0];"
                           " const s = d && d.get_model_by_name(name); return s != null && s.get_length() > 0; }",
                           arg=MAIN_SOURCE[lab], timeout=LOAD_MS)  # the black-box lab fits first
    page.wait_for_timeout(1500)  # the rest of the page follows the main plot
    return errors


@pytest.mark.browser
@pytest.mark.parametrize("size", SIZES, ids=[f"{w}x{h}" for w, h in SIZES])
@pytest.mark.parametrize("lab", list(APPS))
def test_presenter_mode_gives_the_main_plot_the_width(page, panel_server, lab, size):
    errors = _open(page, panel_server, lab, size)
    normal_width = page.evaluate(_JS_MAIN_PLOT_WIDTH)
    normal_titles = page.evaluate(_JS_TITLE_SIZES)
    errors.assert_none()

    errors = _open(page, panel_server, lab, size, "?presenter=1")
    width = page.evaluate(_JS_MAIN_PLOT_WIDTH)
    page.screenshot(path=str(SCREENSHOTS / f"presenter-{lab}-{size[0]}x{size[1]}.png"))
    assert width >= 0.6 * size[0], f"main plot {width:.0f} px of {size[0]} (normal mode: {normal_width:.0f} px)"
    assert width > normal_width
    titles = page.evaluate(_JS_TITLE_SIZES)
    assert titles and statistics.median(titles) > statistics.median(normal_titles) and max(titles) >= 16
    toggles = page.get_by_role("button", name="?", exact=True)
    assert toggles.count() >= 2  # the explanations are folded
    errors.assert_none()


@pytest.mark.browser
def test_note_toggle_shows_the_explanation_and_the_mode_button_keeps_the_state(page, panel_server):
    _open(page, panel_server, "sparse_regression", SIZES[0], "?presenter=1&M=7")
    note = page.get_by_text("Dots are data", exact=False)
    expect(note).to_be_hidden()
    page.get_by_role("button", name="?", exact=True).first.click()
    expect(note).to_be_visible()
    page.locator(".bk-menu-icon, .pn-toggle-sidebar, #sidebar-button, .navbar-toggler").first.click()
    page.get_by_role("button", name="Normal mode").click()
    page.wait_for_url(lambda url: "presenter" not in url and "M=7" in url, timeout=LOAD_MS)
    page.locator("canvas").first.wait_for(state="visible", timeout=LOAD_MS)
    expect(page.get_by_role("button", name="Presenter mode")).to_be_visible(timeout=LOAD_MS)


# from the first moment the document has figures: the type size of every axis's tick labels and of
# every legend's labels (a theme applied after loading used to make them jump 13 -> 17 px)
_PROBE_TYPE_SIZES = """
window.__gpxTypeSizes = [];
const probe = () => {
  if (window.Bokeh && Bokeh.documents && Bokeh.documents.length) {
    const sizes = [];
    for (const m of Bokeh.documents[0].all_models) {
      for (const p of ['major_label_text_font_size', 'label_text_font_size'])
        if (m.properties && p in m.properties && !(p === 'label_text_font_size' && !('items' in m.properties)))
          sizes.push([p, parseFloat(m[p])]);
    }
    if (sizes.length) window.__gpxTypeSizes.push({t: performance.now(), sizes});
  }
  if (window.__gpxTypeSizes.length < 60) setTimeout(probe, 50);
};
probe();
"""


@pytest.mark.browser
@pytest.mark.parametrize("lab", list(APPS))
def test_presenter_type_is_large_from_the_first_paint(page, panel_server, lab):
    page.add_init_script(_PROBE_TYPE_SIZES)
    errors = _open(page, panel_server, lab, SIZES[0], "?presenter=1")
    readings = page.evaluate("() => window.__gpxTypeSizes")
    assert readings, "no figure was ever seen"
    first, last = readings[0]["sizes"], readings[-1]["sizes"]
    for name in ("major_label_text_font_size", "label_text_font_size"):
        assert any(p == name for p, _ in first), f"no {name} in the first reading"
        small = [v for p, v in first + last if p == name and v < 16]
        assert not small, f"{name} below 16 px in presenter mode: {small}"
    errors.assert_none()
