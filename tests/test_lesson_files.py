"""Every lesson file validates against its lab's settings; malformed lessons are named, not raised in a page."""

import json
import re
import urllib.parse

import pytest

from gpexplorer.ui import lessons


def test_every_lesson_file_loads_and_every_step_state_is_accepted():
    loaded = lessons.load_lessons()
    assert len(loaded) >= 8
    assert {lesson.lab for lesson in loaded.values()} == set(lessons.LABS)
    for lesson in loaded.values():
        for k, step in enumerate(lesson.steps, 1):
            query = urllib.parse.parse_qs(urllib.parse.urlparse(lesson.url(k)).query)
            assert query["lesson"] == [lesson.id] and query["step"] == [str(k)]
            assert set(query) - {"lesson", "step"} == set(step.state)
            assert 40 < len(step.text) < 700, (lesson.id, k)  # two or three sentences


GOOD = {"id": "x", "title": "T", "lab": "sparse_regression", "summary": "s",
        "steps": [{"title": "a", "text": "b", "state": {"M": 3}}]}


@pytest.mark.parametrize("change, message", [
    ({"lab": "nope"}, "unknown lab 'nope'"),
    ({"steps": []}, "'steps' must be a non-empty list"),
    ({"id": "has space"}, "'id' may hold only"),
    ({"title": ""}, "'title' must be a non-empty string"),
    ({"steps": [{"title": "a", "text": "b", "state": {"Mm": 3}}]}, "step 1: unknown setting 'Mm'"),
    ({"steps": [{"title": "a", "text": "b", "state": {"M": -3}}]}, "step 1: M=-3 is not accepted"),
    ({"steps": [{"title": "a", "text": "b", "state": {"lesson": "y"}}]}, "unknown setting 'lesson'"),
    ({"steps": [{"text": "b"}]}, "needs a 'title' and a 'text'"),
    ({"steps": [{"title": "a", "text": "b", "action": "jump"}]}, "step 1: unknown action 'jump'"),
    ({"steps": [{"title": "a", "text": "b", "view": "nowhere"}]}, "step 1: unknown view 'nowhere'"),
    ({"steps": [{"title": "a", "text": "b", "checks": {"quantity": "x"}}]}, "'checks' must be a list"),
    ({"steps": [{"title": "a", "text": "b", "checks": [{"quantity": "x", "op": "~", "than": 1}]}]},
     "step 1, check 1: unknown op '~'"),
    ({"steps": [{"title": "a", "text": "b", "check": []}]}, "unknown key(s) ['check']"),
    ({"steps": [{"title": "a", "text": "b", "exercise": {"question": "q", "answer": "a"}}]}, "an exercise is"),
    ({"steps": [{"title": "a", "text": "b", "exercise": {"question": "q", "answer": "", "checks": []}}]},
     "an exercise is"),
    ({"steps": [{"title": "a", "text": "b", "exercise": {"question": "q", "answer": "a", "checks": []}}]},
     "an exercise's answer needs at least one check"),
])
def test_a_bad_lesson_is_named_with_what_is_wrong(change, message):
    with pytest.raises(lessons.LessonError, match=re.escape(message)):
        lessons.parse_lesson({**GOOD, **change}, "bad.json")


def test_a_duplicate_id_or_broken_json_is_reported(tmp_path):
    (tmp_path / "a.json").write_text(json.dumps(GOOD))
    (tmp_path / "b.json").write_text(json.dumps(GOOD))
    with pytest.raises(lessons.LessonError, match="used twice"):
        lessons.load_lessons(tmp_path)
    (tmp_path / "b.json").write_text("{not json")
    with pytest.raises(lessons.LessonError, match="b.json: not readable JSON"):
        lessons.load_lessons(tmp_path)


def test_the_card_names_its_step_links_its_neighbours_and_survives_bad_queries():
    loaded = {"x": lessons.parse_lesson({**GOOD, "steps": GOOD["steps"] * 3})}
    card = lessons.lesson_html("sparse_regression", {"lesson": [b"x"], "step": [b"2"]}, loaded)
    assert "step 2 of 3" in card and 'id="lesson-prev"' in card and 'id="lesson-next"' in card
    assert "step=1" in card and "step=3" in card
    assert 'id="lesson-end"' in lessons.lesson_html("sparse_regression", {"lesson": ["x"], "step": ["3"]}, loaded)
    assert "steps 1 to 3" in lessons.lesson_html("sparse_regression", {"lesson": ["x"], "step": ["9"]}, loaded)
    assert "steps 1 to 3" in lessons.lesson_html("sparse_regression", {"lesson": ["x"], "step": ["two"]}, loaded)
    assert "Unknown lesson" in lessons.lesson_html("sparse_regression", {"lesson": ["nope"]}, loaded)
    assert "Unknown lesson" in lessons.lesson_html("linearized", {"lesson": ["x"]}, loaded)  # another lab's
    assert lessons.lesson_html("sparse_regression", {}, loaded) == ""


def test_an_exercise_answers_checks_follow_the_steps_claims():
    step = {"title": "a", "text": "b", "checks": [{"quantity": "M", "op": "==", "than": 5}],
            "exercise": {"question": "How many?", "answer": "Six.", "checks": [{"quantity": "M", "op": "==", "than": 6}]}}
    lesson = lessons.parse_lesson({**GOOD, "steps": [step]}, "ok.json")
    parsed = lesson.steps[0]
    assert parsed.exercise.question == "How many?" and parsed.exercise.answer == "Six."
    assert [c.than for c in parsed.all_checks] == [5, 6]  # what lesson_runner.run_step evaluates


def test_every_step_of_every_bundled_lesson_has_an_exercise():
    """What the README says: each step asks a question whose answer is checked against the numbers."""
    missing = [f"{lesson.id} step {k}" for lesson in lessons.load_lessons().values()
               for k, step in enumerate(lesson.steps, 1) if step.exercise is None]
    assert not missing, missing
