"""A page opened while the first run's warm-up compiles shows "preparing" and opens by itself."""

import json
import pathlib

import pytest
from playwright.sync_api import expect

from bokeh_page import ConsoleErrors
from gpexplorer.ui import warmup

ROOT = pathlib.Path(__file__).resolve().parents[2]
APP = ROOT / "apps" / "sparse_regression.py"


@pytest.fixture
def warmup_under_way():
    """The progress file of a warm-up that has done 2 of 5 parts, in the cache the server uses, and
    the warm-up lock held by this process as a live warm-up holds it."""
    path = warmup.cache_dir() / warmup.PROGRESS_FILE
    before = path.read_text() if path.exists() else None
    lock = warmup.take_lock(wait=True)
    path.write_text(json.dumps({"done": 2, "total": 5, "finished": False, "error": None}))
    yield path
    warmup.release_lock(lock)
    if before is None:
        path.unlink(missing_ok=True)
    else:
        path.write_text(before)


@pytest.mark.browser
def test_page_waits_for_the_warmup_then_builds_the_lab(page, panel_server, warmup_under_way):
    url = panel_server(APP)
    errors = ConsoleErrors(page, ignore=("favicon",))
    page.goto(url, timeout=60_000)
    preparing = page.locator("#preparing")
    preparing.wait_for(state="visible", timeout=60_000)
    assert "Preparing (first run only)" in preparing.inner_text() and "2 of 5" in preparing.inner_text()
    assert page.locator("canvas").count() == 0  # the lab is not built while the warm-up runs
    warmup_under_way.write_text(json.dumps({"done": 4, "total": 5, "finished": False, "error": None}))
    expect(preparing).to_contain_text("4 of 5", timeout=10_000)  # the page follows the progress
    warmup_under_way.write_text(json.dumps({"done": 5, "total": 5, "finished": True, "error": None}))
    page.locator("canvas").first.wait_for(state="visible", timeout=60_000)
    assert page.locator("#preparing").count() == 0
    errors.assert_none()
