"""The front page at ``/`` served by ``gpexplorer serve`` as a user starts it (every lesson step: test_lesson_walk_page.py)."""

import pathlib

import pytest
from playwright.sync_api import expect

from bokeh_page import ConsoleErrors
from gpexplorer.ui.front_page import LAB_CARDS
from gpexplorer.ui.lessons import load_lessons

LESSONS = load_lessons()
LOAD_MS = 90_000
SCREENSHOTS = pathlib.Path(__file__).resolve().parents[2] / "assets" / "screenshots"


@pytest.fixture(scope="module")
def server(gpexplorer_server):
    return gpexplorer_server


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
    for route in LAB_CARDS:
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
def test_the_lessons_are_above_the_fold_at_1600x1000_and_every_lab_links_back(page, server):
    base, _ = server
    page.set_viewport_size({"width": 1600, "height": 1000})
    page.goto(base + "/", timeout=LOAD_MS)
    lessons = page.locator("a.lesson")
    assert lessons.count() == len(LESSONS)
    bottoms = [lessons.nth(i).evaluate("a => a.closest('li').getBoundingClientRect().bottom")
               for i in range(lessons.count())]
    assert max(bottoms) <= 1000, f"a lesson ends at {max(bottoms):.0f} px, below the fold of a 1600x1000 screen"
    page.screenshot(path=str(SCREENSHOTS / "front-page-1600x1000.png"))
    for route in LAB_CARDS:
        page.goto(f"{base}/{route}", timeout=LOAD_MS)
        home = page.locator("a", has_text="gpexplorer").first
        home.wait_for(state="visible", timeout=LOAD_MS)
        home.click()
        page.wait_for_url(base + "/", timeout=LOAD_MS)
        expect(page.locator("h1")).to_have_text("gpexplorer")


@pytest.mark.browser
def test_an_unknown_lesson_is_named_and_the_lab_still_works(page, server):
    base, _ = server
    page.goto(base + "/sparse_regression?lesson=no-such-lesson&M=7", timeout=LOAD_MS)
    expect(page.locator("#lesson-card")).to_contain_text("Unknown lesson", timeout=LOAD_MS)
    page.wait_for_function("() => { const d = window.Bokeh && Bokeh.documents[0];"
                           " const s = d && d.get_model_by_name('mean-vfe'); return s != null && s.get_length() > 0; }",
                           timeout=LOAD_MS)
