"""The served lesson card without a browser: it runs the step's action itself, then checks the
step's claims against the lab, live; its links keep presenter mode (issue 23)."""

from __future__ import annotations

import urllib.parse

from gpexplorer.ui.lesson_card import LessonCard, lesson_card
from gpexplorer.ui.lesson_runner import step_query
from gpexplorer.ui.lessons import load_lessons, parse_lesson
from gpexplorer.ui.sparse.quantities import make_lab

LESSONS = load_lessons()


def _query(lesson, k, **extra):
    return {key: [value.encode()] for key, value in {**step_query(lesson, k), **extra}.items()}


def test_the_card_runs_the_steps_action_and_ticks_its_claims_then_a_change_crosses_one():
    lesson = LESSONS["why-inducing-points"]  # step 3: Optimise moves only the inducing inputs
    lab = make_lab()
    lab.apply_url(step_query(lesson, 3))  # a served lab reads its page's URL itself
    card = lesson_card("sparse_regression", _query(lesson, 3), lab, {"presenter": "1"})
    assert isinstance(card, LessonCard)
    assert lab.wait_for_jobs(120) == "done" and lab.fits  # the card pressed Optimise by itself
    card.refresh()
    assert 'data-state="all-hold"' in card.claims.object
    assert f"{len(lesson.steps[2].checks)} of {len(lesson.steps[2].checks)} claims hold" in card.claims.object
    lab.settings.noise_variance = 0.3  # a student's change: the noise no longer equals the one before Optimise
    card.refresh()
    assert 'data-state="some-fail"' in card.claims.object and "a change of yours" in card.claims.object


def test_the_cards_links_keep_presenter_mode_and_carry_each_steps_state():
    lesson = LESSONS["fitc-noise-clumping"]
    card = LessonCard(lesson, 2, make_lab(), {"presenter": "1", "other": "x"})
    hrefs = [part.split('"')[0] for part in card.text.object.split('href=".')[1:]]
    assert len(hrefs) == 2  # previous and next
    for href, k in zip(hrefs, (1, 3)):
        query = urllib.parse.parse_qs(urllib.parse.urlparse(href.replace("&amp;", "&")).query)
        assert query["presenter"] == ["1"] and query["step"] == [str(k)] and "other" not in query
        assert query["dataset"] == ["snelson100"]


def test_an_action_waits_for_a_job_the_lab_started_by_itself():
    spec = {"id": "t", "title": "t", "lab": "sparse_regression", "summary": "s",
            "steps": [{"title": "a", "text": "t", "state": {"M": 5, "max_iter": 20}, "action": "optimise",
                       "checks": [{"quantity": "fitted", "op": "==", "than": True}]}]}
    lesson = parse_lesson(spec)
    lab = make_lab()
    lab.apply_url({"M": "5", "max_iter": "20"})
    lab.start_sweep()  # busy when the card starts
    card = LessonCard(lesson, 1, lab)
    card.start()
    assert 'data-state="pending"' in card.claims.object
    assert lab.wait_for_jobs(300) == "done" and lab.fits  # the sweep ended, then the card's Optimise ran
    card.refresh()
    assert 'data-state="all-hold"' in card.claims.object
