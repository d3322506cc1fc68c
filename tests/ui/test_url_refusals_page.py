"""Issue 24 defects 2, 3, 5 and 12 in Chromium, on ``gpexplorer serve`` as a user starts it.

Each reproduction of the issue used to give a blank page, a plot without its controls, a file
ignored without a word or a bare HTTP 400; each must now open with its controls and a badge that
names the refused key (or a message under the upload). A screenshot at 1024x768 of each page goes
to /tmp (``gpx-url-refusal-*.png``).
"""

from __future__ import annotations

import re
import urllib.request

import pytest
from playwright.sync_api import expect

from bokeh_page import WATCH_DOCUMENT_JS, ConsoleErrors, assert_clean_log, open_app, slider_handle, wait_until_quiet

VIEWPORT = {"width": 1024, "height": 768}
LOAD_MS = 90_000  # a fresh server's first page also loads numba's cache; the black box fits at once
FIT_MS = 120_000
MANY_KEYS = "&".join(f"k{i}=1" for i in range(2000))

CASES = {
    "superscript": ("black_box", "?M=%C2%B2", "M (inducing points)", 15, ["M (must be an integer, not text)"]),
    "double-sign": ("black_box", "?M=--5", "M (inducing points)", 15, ["M (must be an integer, not text)"]),
    "5000-digits": ("black_box", "?M=" + "5" * 5000, "M (inducing points)", 15,
                    ["M (a 5,000-digit number; must be an integer from 2 to 100)"]),
    "bool-seed": ("black_box", "?dataset=toy_binary&data_seed=true", "M (inducing points)", 15,
                  ["data_seed (must be an integer, not true)"]),
    "bool-sparse": ("sparse_regression", "?M=true&restarts=true&seed=false", "M", 15,
                    ["M (must be an integer, not true)", "restarts (must be an integer, not true)",
                     "seed (must be an integer, not false)"]),
    "2000-keys": ("black_box", f"?{MANY_KEYS}&M=true&rounds=5", "M (inducing points)", 15,
                  ["M (must be an integer, not true)",
                   "k0, k1, k2, k3, k4, k5, k6, k7 and 1,992 more (not settings of this page)"]),
}


@pytest.fixture
def served(gpexplorer_server):
    base, log_path = gpexplorer_server
    return base, log_path


def open_page(page, url):
    """Open ``url`` at 1024x768; on the black-box page, wait for the fit it starts on loading."""
    page.set_viewport_size(VIEWPORT)
    page.set_default_timeout(LOAD_MS)
    errors = ConsoleErrors(page)
    open_app(page, url, timeout=LOAD_MS)
    page.evaluate(WATCH_DOCUMENT_JS)
    if "/black_box" in url:
        expect(page.locator("#job-status")).to_have_attribute("data-state", "done", timeout=FIT_MS)
    return errors


class _Log:
    """``assert_clean_log`` reads ``log_text()``."""

    def __init__(self, path):
        self.path = path

    def log_text(self):
        return self.path.read_text(errors="replace")


@pytest.mark.parametrize("case", list(CASES))
def test_a_refused_url_value_gives_the_controls_and_a_badge_naming_the_key(page, served, case):
    base, log_path = served
    app, query, slider, default, badges = CASES[case]
    start = len(log_path.read_text(errors="replace"))
    errors = open_page(page, f"{base}/{app}{query}")
    for text in badges:
        expect(page.locator("#badges")).to_contain_text(text, timeout=LOAD_MS)
    expect(slider_handle(page, slider)).to_have_attribute("aria-valuenow", re.compile(rf"^{default}(\.0)?$"))
    assert page.locator(".noUi-handle").count() >= 5  # the controls are all there, not just the plot
    refused = badges[0].split(" (")[0]
    expect(page).not_to_have_url(re.compile(rf"[?&]{refused}="))  # the address bar shows the state used
    if case == "2000-keys":
        expect(page).to_have_url(re.compile(r"[?&]rounds=5(&|$)"))
        assert "k0=" not in page.url
    page.screenshot(path=f"/tmp/gpx-url-refusal-{case}.png")
    wait_until_quiet(page)
    errors.assert_none()
    assert_clean_log(_Log(log_path), start)


def test_two_thousand_query_keys_get_the_page_not_a_bare_400(served):
    """Tornado parsed at most 1,000 query arguments and answered more with an empty HTTP 400."""
    base, _ = served
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    for app in ("black_box", "sparse_regression", "linearized"):
        with opener.open(f"{base}/{app}?{MANY_KEYS}", timeout=60) as response:
            assert response.status == 200 and b"Bokeh" in response.read()


@pytest.mark.parametrize("app", ["sparse_regression", "black_box"])
def test_a_zero_byte_csv_gets_a_message(page, served, app):
    """Defect 5: the browser sent an empty payload, no change, so nothing said why nothing happened."""
    base, log_path = served
    start = len(log_path.read_text(errors="replace"))
    errors = open_page(page, f"{base}/{app}")
    file_input = page.locator("input[type=file]")
    expect(file_input).to_have_count(1)
    file_input.set_input_files(files=[{"name": "empty.csv", "mimeType": "text/csv", "buffer": b""}])
    error = page.locator("#upload-error")
    expect(error).to_contain_text("empty.csv is empty (0 bytes)", timeout=LOAD_MS)
    file_input.set_input_files(files=[{"name": "blank.csv", "mimeType": "text/csv", "buffer": b"  \n \n"}])
    expect(error).to_contain_text("blank.csv holds only blank space")
    file_input.set_input_files(files=[{"name": "empty.csv", "mimeType": "text/csv", "buffer": b""}])
    expect(error).to_contain_text("empty.csv is empty (0 bytes)")  # the same file again: said again
    page.screenshot(path=f"/tmp/gpx-url-refusal-empty-csv-{app}.png")
    wait_until_quiet(page)
    errors.assert_none()
    assert_clean_log(_Log(log_path), start)
