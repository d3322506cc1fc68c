"""Sessions prepared ahead (``gpexplorer serve --prepare``) in Chromium: a prepared page is the
whole page its link asks for, it answers its own sliders only, and it came from the pool with its
prepared serialisation (issue 24, defect 13; ``gpexplorer/ui/session_pool.py``)."""

import pathlib
import re
import time
import urllib.request

import pytest
from playwright.sync_api import expect

from bokeh_page import WATCH_DOCUMENT_JS, ConsoleErrors, cds_data, open_app, press_on_slider, save_screenshot

ROOT = pathlib.Path(__file__).resolve().parents[2]
SCREENSHOTS = ROOT / "assets" / "screenshots"
LABS = ("primer", "linearized", "black_box", "convolutional", "random_features")
LINKS = ("sparse_regression", "sparse_regression?M=7&presenter=1", *LABS)
PER_LINK = 2
LOAD_MS = 90_000


@pytest.fixture(scope="module")
def prepared_server(tmp_path_factory, gpexplorer_serving):
    """``gpexplorer serve --prepare`` for every link, 2 sessions each; yields (base URL, log path)
    once every pool has reported itself full."""
    log_path = tmp_path_factory.mktemp("prepared-serve") / "serve.log"
    arguments = ["--prepare-sessions", str(PER_LINK)] + [a for link in LINKS for a in ("--prepare", link)]
    with gpexplorer_serving(log_path, *arguments) as base:
        deadline = time.monotonic() + 180
        while sum(f"{PER_LINK} sessions of /{link} prepared" in log_path.read_text() for link in LINKS) < len(LINKS):
            assert time.monotonic() < deadline, log_path.read_text()[-3000:]
            time.sleep(0.3)
        yield base, log_path


def _mean(page):
    return cds_data(page, "mean-vfe")["y"]


@pytest.mark.browser
def test_prepared_pages_are_whole_independent_and_from_the_pool(prepared_server, browser):
    base, log_path = prepared_server
    pages, errors = [], []
    for _ in range(2):
        page = browser.new_page(viewport={"width": 1600, "height": 1000})
        errors.append(ConsoleErrors(page, ignore=("favicon",)))
        open_app(page, f"{base}/sparse_regression", timeout=LOAD_MS)
        page.evaluate(WATCH_DOCUMENT_JS)
        pages.append(page)
    for page in pages:  # the whole page at once: the charts below the main plot and the last control card
        page.wait_for_function("() => { const all = Array.from(Bokeh.documents[0].all_models);"
                               " return all.some((m) => m.title === 'Max iter') && all.some((m) => m.name === 'sandwich')"
                               " && all.some((m) => m.name === 'mean-vfe' && m.get_length() > 0); }", timeout=LOAD_MS)
    log = log_path.read_text()
    assert log.count("of /sparse_regression from its prepared pool") == 2, log[-3000:]
    assert "serialising it again" not in log  # each first pull sent the serialisation made ahead
    first, second = (_mean(p) for p in pages)
    assert first == second
    press_on_slider(pages[0], "Lengthscale", "PageUp")
    deadline = time.monotonic() + 30
    while _mean(pages[0]) == first:
        assert time.monotonic() < deadline, "the moved slider did not redraw its own page"
        pages[0].wait_for_timeout(200)
    pages[1].wait_for_timeout(1_000)
    assert _mean(pages[1]) == second  # one student's slider moves only their own page
    save_screenshot(pages[0], SCREENSHOTS / "prepared-sparse_regression-1600x1000.png")
    for page, page_errors in zip(pages, errors):
        page_errors.assert_none()
        page.close()


@pytest.mark.browser
def test_a_prepared_link_with_a_query_is_the_page_that_query_asks_for(prepared_server, browser):
    base, log_path = prepared_server
    before = log_path.read_text().count("from its prepared pool")
    page = browser.new_page(viewport={"width": 1024, "height": 768})
    errors = ConsoleErrors(page, ignore=("favicon",))
    open_app(page, f"{base}/{LINKS[1]}", timeout=LOAD_MS)
    page.evaluate(WATCH_DOCUMENT_JS)
    page.wait_for_function("() => { const s = Bokeh.documents[0].get_model_by_name('inducing');"
                           " return s != null && s.get_length() === 7; }", timeout=LOAD_MS)
    assert log_path.read_text().count("from its prepared pool") == before + 1
    assert page.get_by_role("button", name="?", exact=True).count() >= 2  # presenter mode: explanations folded
    expect(page).to_have_url(re.compile(r"[?&]M=7(&|$)"))
    save_screenshot(page, SCREENSHOTS / "prepared-presenter-sparse_regression-1024x768.png")
    errors.assert_none()
    page.close()


@pytest.mark.browser
@pytest.mark.parametrize("lab", LABS)
def test_every_lab_serves_its_prepared_page(prepared_server, browser, lab, tmp_path):
    """Each lab's prepared page renders in Chromium from the serialisation made ahead, and the
    session lives on (a lab that starts a fit once the page is loaded finishes it)."""
    base, log_path = prepared_server
    before = log_path.read_text().count(f"of /{lab} from its prepared pool")
    page = browser.new_page(viewport={"width": 1600, "height": 1000})
    errors = ConsoleErrors(page, ignore=("favicon",))
    open_app(page, f"{base}/{lab}", timeout=LOAD_MS)
    page.evaluate(WATCH_DOCUMENT_JS)
    log = log_path.read_text()
    assert log.count(f"of /{lab} from its prepared pool") == before + 1
    assert "serialising it again" not in log
    save_screenshot(page, tmp_path / f"prepared-{lab}.png", settle_ms=500)  # not blank
    errors.assert_none()
    page.close()


def test_a_link_without_a_pool_is_built_on_request(prepared_server):
    """A query no pool was prepared for (M=9) is built for its request, as without --prepare."""
    base, log_path = prepared_server
    before = log_path.read_text().count("from its prepared pool")
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    with opener.open(f"{base}/sparse_regression?M=9", timeout=60) as response:
        assert response.status == 200
    assert log_path.read_text().count("from its prepared pool") == before
