"""Counts and names in the README's classroom section come from the data (issue 23: it said six
lessons when there were seven)."""

import pathlib
import re

from gpexplorer.ui.lessons import LABS, load_lessons

README = (pathlib.Path(__file__).resolve().parents[1] / "README.md").read_text(encoding="utf-8")
WORDS = {w: n for n, w in enumerate("zero one two three four five six seven eight nine ten eleven twelve".split())}


def _classroom():
    start = README.index("## In the classroom")
    return README[start:README.index("\n## ", start + 10)]


def test_the_readme_names_as_many_lessons_as_there_are_and_each_by_its_title():
    section = _classroom()
    said = re.search(r"(\w+) come with gpexplorer", section)
    assert said, "the classroom section no longer says how many lessons come with gpexplorer"
    lessons = load_lessons()
    assert WORDS[said.group(1).lower()] == len(lessons)
    flat = " ".join(section.split()).lower()
    for lesson in lessons.values():
        assert lesson.title.lower() in flat, f"the README does not name the lesson {lesson.title!r}"


def test_the_readme_names_every_lab_a_lesson_may_use():
    section = _classroom()
    for route in LABS:
        assert f"`{route}`" in section


def test_every_screenshot_the_readme_shows_exists():
    root = pathlib.Path(__file__).resolve().parents[1]
    for path in re.findall(r"\]\((assets/[^)]+\.png)\)", README):
        assert (root / path).is_file(), path
