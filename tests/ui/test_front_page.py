"""The front page at ``/`` and every lesson step, served by ``gpexplorer serve`` as a user starts it."""

import os
import pathlib
import subprocess
import sys
import time
import urllib.request

import pytest
from playwright.sync_api import expect

from bokeh_page import ConsoleErrors, cds_length, server_log_problems
from gpexplorer.ui.lessons import load_lessons
from server_process import free_port, stop_process_group

LESSONS = load_lessons()
STEPS = [(lesson_id, k) for lesson_id, lesson in LESSONS.items() for k in range(1, len(lesson.steps) + 1)]
#: a source of each lab's main plot that every lesson of that lab fills
MAIN_SOURCE = {"sparse_regression": "mean-vfe", "linearized": "latent-ugp", "black_box": "latent-fg"}
LOAD_MS = 90_000
SCREENSHOTS = pathlib.Path(__file__).resolve().parents[2] / "assets" / "screenshots"
SCREENSHOT_STEP = ("fitc-noise-clumping", 1)  # the lesson step shown in the README


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    """``gpexplorer serve`` on a free port; yields its base URL."""
    port = free_port()
    log_path = tmp_path_factory.mktemp("front") / "serve.log"
    with open(log_path, "wb") as log:
        process = subprocess.Popen([sys.executable, "-m", "gpexplorer.cli", "serve", "--port", str(port)],
                                   stdout=log, stderr=subprocess.STDOUT, env=dict(os.environ), start_new_session=True)
    base = f"http://127.0.0.1:{port}"
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    deadline = time.monotonic() + 120
    try:
        while True:
            assert process.poll() is None, log_path.read_text()
            try:
                with opener.open(base + "/", timeout=30) as response:
                    assert response.status == 200
                    break
            except OSError:
                assert time.monotonic() < deadline, log_path.read_text()
                time.sleep(0.2)
        yield base, log_path
    finally:
        stop_process_group(process)
    log = server_log_problems(log_path.read_text())
    assert "Traceback" not in log, log[-3000:]


def _watch_hosts(page):
    """Every request to a host other than the server's, collected as the page makes it."""
    foreign = []
    page.on("request", lambda r: foreign.append(r.url)
            if not r.url.startswith(("http://127.0.0.1", "ws://127.0.0.1", "data:", "blob:", "about:")) else None)
    return foreign


@pytest.mark.browser
def test_front_page_names_the_labs_and_lessons_with_real_images_and_no_foreign_requests(page, server):
    base, _ = server
    errors, foreign = ConsoleErrors(page), _watch_hosts(page)
    page.set_viewport_size({"width": 1024, "height": 768})
    page.goto(base + "/", timeout=LOAD_MS)
    expect(page.locator("h1")).to_have_text("gpexplorer")
    for route in ("sparse_regression", "linearized"):
        card = page.locator(f"#card-{route}")
        expect(card).to_be_visible()
        image = card.locator("img")
        assert image.evaluate("img => img.complete && img.naturalWidth > 100"), f"{route} thumbnail did not load"
    assert page.locator("a.lesson").count() == len(LESSONS)
    page.screenshot(path=str(SCREENSHOTS / "front-page-1024x768.png"), full_page=True)
    page.locator("#card-sparse_regression").click()
    page.wait_for_url("**/sparse_regression", timeout=LOAD_MS)
    page.locator("canvas").first.wait_for(state="visible", timeout=LOAD_MS)
    errors.assert_none()
    assert foreign == [], f"requests to other hosts: {foreign}"


@pytest.mark.browser
@pytest.mark.parametrize("lesson_id, k", STEPS, ids=[f"{i}-{k}" for i, k in STEPS])
def test_every_lesson_step_loads_its_state_and_renders(page, server, lesson_id, k):
    base, _ = server
    lesson = LESSONS[lesson_id]
    errors, foreign = ConsoleErrors(page, ignore=("favicon",)), _watch_hosts(page)
    page.set_viewport_size({"width": 1024, "height": 768})  # a classroom projector
    page.goto(base + lesson.url(k), timeout=LOAD_MS)
    card = page.locator("#lesson-card")
    expect(card).to_contain_text(f"step {k} of {len(lesson.steps)}", timeout=LOAD_MS)
    expect(card).to_contain_text(lesson.steps[k - 1].title)
    page.wait_for_function("name => { const d = window.Bokeh && Bokeh.documents[0]; if (!d) return false;"
                           " const s = d.get_model_by_name(name); return s != null && s.get_length() > 0; }",
                           arg=MAIN_SOURCE[lesson.lab], timeout=LOAD_MS)
    assert cds_length(page, MAIN_SOURCE[lesson.lab]) > 0
    state = lesson.steps[k - 1].state
    if "M" in state:  # the lab uses the step's state, not its defaults
        page.wait_for_function("n => Bokeh.documents[0].get_model_by_name('inducing').get_length() === n",
                               arg=state["M"], timeout=LOAD_MS)
    if lesson.lab == "linearized" and "methods" in state:
        for method in ("egp", "ugp", "eks", "uks"):
            if method not in state["methods"]:
                assert cds_length(page, f"latent-{method}") == 0, f"{method} is not in the step's methods"
    assert page.get_by_text("ignored URL values").count() == 0, "a lesson value was rejected by the lab"
    assert page.get_by_text("ignored", exact=False).count() == 0
    if k < len(lesson.steps):
        assert f"step={k + 1}" in card.locator("#lesson-next").get_attribute("href")
    if (lesson_id, k) == SCREENSHOT_STEP:
        page.wait_for_timeout(1500)  # the cards and charts below the main plot follow it
        page.screenshot(path=str(SCREENSHOTS / "lesson-step-1024x768.png"))
    errors.assert_none()
    assert foreign == []


@pytest.mark.browser
def test_an_unknown_lesson_is_named_and_the_lab_still_works(page, server):
    base, _ = server
    page.goto(base + "/sparse_regression?lesson=no-such-lesson&M=7", timeout=LOAD_MS)
    expect(page.locator("#lesson-card")).to_contain_text("Unknown lesson", timeout=LOAD_MS)
    page.wait_for_function("() => { const d = window.Bokeh && Bokeh.documents[0];"
                           " const s = d && d.get_model_by_name('mean-vfe'); return s != null && s.get_length() > 0; }",
                           timeout=LOAD_MS)
