"""The served black-box inference lab (apps/black_box.py) driven in a real browser.

One ``panel serve`` process for the module; every test opens a fresh page, i.e. its own Bokeh
session with its own ``BlackBoxLab``, which fits FG, MoG1 and MoG2 on the coal-mining counts in
the background as soon as it loads. The page is read through the named Bokeh data sources
(gpexplorer/ui/black_box/figures.py, charts.py) and the readouts' element ids (texts.py).
"""

from __future__ import annotations

import pathlib
import re

import pytest
from playwright.sync_api import expect

from bokeh_page import (cds_length, lab_opener, wait_until_quiet)

ROOT = pathlib.Path(__file__).resolve().parents[2]
APP = ROOT / "apps" / "black_box.py"
VIEWPORT = {"width": 1500, "height": 1000}
LOAD_MS = 60_000  # the first page of a fresh server also pays numba's cache load
UPDATE_MS = 30_000
FIT_MS = 90_000
GRID = 200  # the 1-D views' grid (gpexplorer/ui/black_box/data.py GRID_POINTS)
POSTERIORS = ("fg", "mog1", "mog2")
#: a fit long enough to watch and to cancel: 100 rounds of 2 blocks x 100 evaluations with the
#: score estimator at S = 3000 (the lab stops a fit once it has converged or stalled, issue 23: a
#: quadrature fit of 30 rounds x 30 evaluations ends within seconds)
LONG_FIT = "?rounds=100&evals_per_block=100&estimator=score&num_samples=3000"


def length_js(name):
    return f"() => Bokeh.documents[0].get_model_by_name('{name}').get_length()"


@pytest.fixture(scope="module")
def lab_url(panel_server):
    return panel_server(APP)


@pytest.fixture(autouse=True)
def patient_expect():
    expect.set_options(timeout=UPDATE_MS)
    yield
    expect.set_options(timeout=None)


def _fitted(page, fitted=True):
    if fitted:
        page.wait_for_function(f"() => {length_js('latent-fg')[6:]} > 0", timeout=FIT_MS)
        expect(page.locator("#job-status")).to_have_attribute("data-state", "done", timeout=FIT_MS)


@pytest.fixture
def open_lab(page, lab_url):
    """Factory ``open_lab(query="", fitted=True, viewport=None) -> LabPage``; ``fitted`` waits for
    the first fit's latent curves. Every page is checked for errors afterwards."""
    yield from lab_opener(page, lab_url, _fitted, update_ms=UPDATE_MS, load_ms=LOAD_MS, viewport=VIEWPORT)


def test_page_loads_fits_and_fills_every_view(open_lab):
    lab = open_lab()
    page = lab.page
    wait_until_quiet(page)
    for p in POSTERIORS:
        assert cds_length(page, f"latent-{p}") == GRID and cds_length(page, f"obs-{p}") == GRID
        assert cds_length(page, f"elbo-{p}") > 5
        assert cds_length(page, f"components-{p}-0") == 15
    assert cds_length(page, "components-mog2-1") == 15
    assert cds_length(page, "obs-data") == 100  # the default 100 bins
    for curve in ("score", "score-cv", "reparam"):
        assert cds_length(page, f"variance-{curve}") >= 5
    table = page.locator("#metrics-table")
    for label in ("FG", "MoG1", "MoG2", "NLPD", "SSE"):
        expect(table).to_contain_text(label)
    expect(page.locator("#data-note")).to_contain_text("811 bins of 50 days")
    expect(page.get_by_role("button", name="Fit")).to_be_enabled()
    names = page.evaluate("""() => Array.from(Bokeh.documents[0].all_models)
        .map((m) => m.name).filter((n) => typeof n === 'string' && /^[a-z][a-z0-9_-]*$/.test(n))""")
    duplicates = sorted({n for n in names if names.count(n) > 1})
    assert not duplicates, f"names used by more than one model: {duplicates}"
    lab.assert_healthy()


def test_the_elbo_trace_grows_while_fitting_and_cancel_stops_it(open_lab):
    lab = open_lab(LONG_FIT, fitted=False)
    page = lab.page
    status = page.locator("#job-status")
    expect(status).to_have_attribute("data-state", "running", timeout=LOAD_MS)
    page.wait_for_function(f"() => {length_js('elbo-fg')[6:]} > 3", timeout=FIT_MS)
    first = cds_length(page, "elbo-fg")
    page.wait_for_function(f"(n) => {length_js('elbo-fg')[6:]} > n", arg=first, timeout=FIT_MS)
    expect(status).to_have_attribute("data-state", "running")  # still fitting: the trace grew live
    expect(page.locator(".bk-progress, progress").first).to_be_visible()
    page.get_by_role("button", name="Cancel").click()
    expect(status).to_have_attribute("data-state", "cancelled")
    expect(status).to_contain_text("fit cancelled")
    expect(page.get_by_role("button", name="Fit")).to_be_enabled()
    stopped = cds_length(page, "elbo-fg")
    page.wait_for_timeout(1500)
    assert cds_length(page, "elbo-fg") == stopped  # nothing more arrives
    assert cds_length(page, "latent-fg") == 0  # the cancelled fit left no result


def test_switching_posterior_redraws(open_lab):
    lab = open_lab()
    page = lab.page
    page.get_by_label("MoG1").uncheck()
    page.wait_for_function(f"() => {length_js('latent-mog1')[6:]} === 0")
    page.wait_for_function(f"() => {length_js('elbo-mog1')[6:]} === 0")
    assert cds_length(page, "latent-fg") == GRID and cds_length(page, "latent-mog2") == GRID
    expect(page).to_have_url(re.compile(r"[?&]posteriors="))
    expect(page.locator("#metrics-table tr[data-posterior='mog1']")).to_have_count(0)
    status = page.locator("#job-status").inner_text()
    page.get_by_label("MoG1").check()  # fitted already: shown again without a new fit
    page.wait_for_function(f"() => {length_js('latent-mog1')[6:]} === {GRID}")
    expect(page.locator("#metrics-table tr[data-posterior='mog1']")).to_contain_text("SSE")
    assert page.locator("#job-status").inner_text() == status
    page.get_by_label("Likelihood").select_option("Poisson")  # the same likelihood by name: a new fit
    expect(page.locator("#job-status")).to_have_attribute("data-state", "running")
    expect(page.locator("#job-status")).to_have_attribute("data-state", "done", timeout=FIT_MS)
    page.wait_for_function(f"() => {length_js('latent-mog1')[6:]} === {GRID}")


def test_changing_the_dataset_refits(open_lab):
    lab = open_lab()
    page = lab.page
    page.get_by_label("Dataset").select_option("Breast cancer (30-D binary)")
    expect(page.locator("#data-note")).to_contain_text("substitute for the paper")
    expect(page.locator("#job-status")).to_contain_text("fitted FG, MoG1, MoG2", timeout=FIT_MS)
    page.wait_for_function(f"() => {length_js('latent-fg')[6:]} === 419")  # 569 - 150 test points
    expect(page.locator("#metrics-table")).to_contain_text("error")


def test_a_bad_upload_is_answered_in_the_page(open_lab):
    lab = open_lab()
    page = lab.page
    file_input = page.locator("input[type=file]")
    expect(file_input).to_have_count(1)
    file_input.set_input_files(files=[{"name": "bad.csv", "mimeType": "text/csv",
                                       "buffer": b"x,y\n1,2\n2,abc\n3,4\n4,5\n5,6\n"}])
    error = page.locator("#upload-error")
    expect(error).to_be_visible()
    expect(error).to_contain_text("abc")
    expect(page.locator("#upload-ok")).to_have_count(0)
    assert cds_length(page, "obs-data") == 100  # still the coal-mining counts
    file_input.set_input_files(files=[{"name": "good.csv", "mimeType": "text/csv",
                                       "buffer": ("x,y\n" + "".join(f"{i / 10},{i % 2}\n" for i in range(40))).encode()}])
    expect(page.locator("#upload-ok")).to_contain_text("40 rows")
    expect(page.locator("#data-note")).to_contain_text("binary target")
    expect(page.locator("#job-status")).to_contain_text("fitted", timeout=FIT_MS)


def test_screenshot(open_lab, tmp_path):
    """A full-page screenshot under the test's tmp path, checked not to be blank."""
    lab = open_lab(viewport={"width": 1500, "height": 2700})
    page = lab.page
    page.mouse.move(0, 0)
    wait_until_quiet(page)
    page.wait_for_function("() => Bokeh.index.roots.length > 0 && Bokeh.index.roots.every((v) => v.has_finished())")
    path = tmp_path / "black_box.png"
    png = page.screenshot(path=str(path), full_page=True)
    print(f"screenshot: {path}")
    assert len(png) > 50_000, f"screenshot suspiciously small ({len(png)} bytes)"
    try:
        from PIL import Image
    except ImportError:
        return
    with Image.open(path) as image:
        rgb_image = image.convert("RGB")
        colours = rgb_image.getcolors(maxcolors=rgb_image.width * rgb_image.height)
        assert image.height >= 2700, f"page only {image.height} px tall"
    assert colours is not None and len(colours) > 200, "screenshot nearly uniform: a blank page?"
    from gpexplorer.ui.black_box.figures import COLORS

    for rgb in (tuple(int(c[i:i + 2], 16) for i in (1, 3, 5)) for c in COLORS.values()):  # each posterior's colour
        assert any(sum(abs(a - b) for a, b in zip(c, rgb)) < 40 for _, c in colours), f"colour {rgb} missing"


def test_a_typed_likelihood_fits_and_a_refused_one_is_answered(open_lab):
    """Likelihood -> "Typed": the text box appears; a written-out Poisson fits; text that is not
    an allowed expression is answered in a badge and the page keeps working."""
    lab = open_lab("?n_bins=40&rounds=1&evals_per_block=4")
    page = lab.page
    page.get_by_label("Likelihood").select_option("Typed: log p(y | f) = ...")
    box = page.get_by_label("log p(y | f) =")
    expect(box).to_be_visible()
    expect(page.locator("#job-status")).to_contain_text("fitted FG, MoG1, MoG2", timeout=FIT_MS)
    expect(page).to_have_url(re.compile(r"[?&]likelihood=expression"))
    box.fill("y*f - exp(f)")  # no log y!: fits, with a note that it is not normalised
    box.press("Enter")
    expect(page.locator("#job-status")).to_contain_text("not to 1", timeout=FIT_MS)
    box.fill("__import__('os').system('true')")
    box.press("Enter")
    expect(page.locator("#badges")).to_contain_text("not allowed", timeout=FIT_MS)
    box.fill("y*f - exp(f) - gammaln(y + 1)")
    box.press("Enter")
    expect(page.locator("#badges")).not_to_contain_text("not allowed", timeout=FIT_MS)
    expect(page.locator("#job-status")).to_have_attribute("data-state", "done", timeout=FIT_MS)
    expect(page.locator("#job-status")).not_to_contain_text("not to 1")
    page.wait_for_function(f"() => {length_js('latent-fg')[6:]} === {GRID}")
