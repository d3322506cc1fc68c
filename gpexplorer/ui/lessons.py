"""Lessons for the classroom: short sequences of lab states with a few sentences each.

A lesson is a plain JSON file in ``gpexplorer/ui/lessons/`` (a teacher writes one without
Python)::

    {"id": "why-inducing-points", "title": "...", "lab": "sparse_regression",
     "summary": "one line for the front page",
     "steps": [{"title": "...", "text": "two or three sentences", "state": {"M": 3, ...},
                "action": "optimise", "view": "sandwich",
                "checks": [{"quantity": "vfe.objective", "op": "<", "than": "exact.objective"}]}, ...]}

``state`` holds the lab's URL settings (the keys its address bar shows); a step is opened as
``/<lab>?lesson=<id>&step=<k>&<state>``, so a lesson is just a list of links and each step loads
through the same URL state a user can type. ``action`` (optional) is one of the lab's actions
(``ui/<lab>/quantities.py: ACTIONS``: optimise, sweep, learn, profile, fit, ...): the page runs it
when the step opens and offers its button in the lesson card; ``view`` (optional) names the view
the text is about, which the page brings into sight. ``checks`` are the step's claims as data
(``ui/claims.py``), evaluated after the action against the lab's quantities
(``tests/ui/test_lesson_claims.py`` runs every step of every lesson headless; the card shows them).
``exercise`` (optional) is ``{"question", "answer", "checks"}``: the card asks the question and
folds the answer away; the answer's checks run with the step's (:attr:`Step.all_checks`). In a
text, question or answer, ``$...$`` is TeX, drawn as MathML (``ui/math_text.py``).
:func:`load_lessons` validates every file against the lab's settings, actions, views and the
checks' syntax and says what is wrong (file, step, key) instead of failing in the page.
"""

from __future__ import annotations

import html
import importlib
import json
import pathlib
import urllib.parse
from dataclasses import dataclass, field

from gpexplorer.ui.claims import CheckError, parse_check

LESSONS_DIR = pathlib.Path(__file__).resolve().parent / "lessons"
#: query keys of the lesson feature, which are not lab settings
RESERVED_KEYS = ("lesson", "step", "presenter")
LABS = {"primer": "GP primer", "sparse_regression": "Sparse regression lab", "linearized": "Linearised inference lab",
        "black_box": "Black-box inference lab", "convolutional": "Patches lab",
        "random_features": "Random-features lab"}
#: lab route -> its package under gpexplorer/ui (settings, quantities, lab)
LAB_PACKAGES = {"primer": "gpexplorer.ui.primer", "sparse_regression": "gpexplorer.ui.sparse", "linearized": "gpexplorer.ui.linearized",
                "black_box": "gpexplorer.ui.black_box", "convolutional": "gpexplorer.ui.convolutional",
                "random_features": "gpexplorer.ui.random_features"}


class LessonError(ValueError):
    """A lesson file that cannot be used, with what is wrong in it."""


@dataclass(frozen=True)
class Exercise:
    question: str
    answer: str  # hidden on the card until asked for
    checks: tuple  # what the answer says about the step's numbers, checked like the step's claims


@dataclass(frozen=True)
class Step:
    title: str
    text: str
    state: dict
    action: str | None = None
    view: str | None = None
    checks: tuple = field(default_factory=tuple)
    exercise: Exercise | None = None

    @property
    def all_checks(self):
        """The step's claims, then its exercise answer's."""
        return self.checks + (self.exercise.checks if self.exercise else ())


@dataclass(frozen=True)
class Lesson:
    id: str
    title: str
    lab: str
    summary: str
    steps: tuple

    def url(self, k: int, keep: dict | None = None) -> str:
        """Path and query of step ``k`` (1-based): the lab with the step's state in its URL, plus
        ``keep`` (the page's presentation keys, e.g. ``{"presenter": "1"}``, carried from step to step)."""
        step = self.steps[k - 1]
        query = {"lesson": self.id, "step": k}
        query.update({key: value if isinstance(value, str) else json.dumps(value) for key, value in step.state.items()})
        query.update({key: value for key, value in (keep or {}).items() if key in PRESENTATION_KEYS})
        return f"/{self.lab}?{urllib.parse.urlencode(query)}"


#: keys of the page's presentation that a lesson's links carry from step to step
PRESENTATION_KEYS = ("presenter",)


def lab_module(lab, name):
    """The module ``name`` (settings, quantities, lab) of the lab at route ``lab``."""
    return importlib.import_module(f"{LAB_PACKAGES[lab]}.{name}")


def _settings_for(lab):
    """A fresh settings object of ``lab`` and the names its URL carries."""
    return lab_module(lab, "quantities").settings_and_names()


def _check_step(where, lab, raw):
    if not isinstance(raw, dict) or not isinstance(raw.get("text"), str) or not isinstance(raw.get("title"), str):
        raise LessonError(f"{where}: a step needs a 'title' and a 'text' (strings)")
    unknown = set(raw) - {"title", "text", "state", "action", "view", "checks", "exercise"}
    if unknown:
        raise LessonError(f"{where}: unknown key(s) {sorted(unknown)} (a step has title, text, state, action, "
                          "view, checks, exercise)")
    state = raw.get("state", {})
    if not isinstance(state, dict):
        raise LessonError(f"{where}: 'state' must be an object of settings")
    settings, names = _settings_for(lab)
    for key, value in state.items():
        if key in RESERVED_KEYS or key not in names:
            raise LessonError(f"{where}: unknown setting {key!r} for the {LABS[lab]} (known: {', '.join(names)})")
        try:
            settings.param.update({key: value})
        except (ValueError, TypeError) as err:
            raise LessonError(f"{where}: {key}={value!r} is not accepted: {err}") from None
    support = lab_module(lab, "quantities")
    action, view = raw.get("action"), raw.get("view")
    if action is not None and action not in support.ACTIONS:
        raise LessonError(f"{where}: unknown action {action!r} for the {LABS[lab]} (known: "
                          f"{', '.join(support.ACTIONS)})")
    if view is not None and view not in support.VIEWS:
        raise LessonError(f"{where}: unknown view {view!r} for the {LABS[lab]} (known: {', '.join(support.VIEWS)})")
    parsed = _checks(where, raw.get("checks", []))
    return Step(raw["title"], raw["text"], dict(state), action, view, parsed, _exercise(where, raw.get("exercise")))


def _checks(where, checks):
    if not isinstance(checks, list):
        raise LessonError(f"{where}: 'checks' must be a list of checks")
    try:
        return tuple(parse_check(c, f"{where}, check {i}") for i, c in enumerate(checks, 1))
    except CheckError as err:
        raise LessonError(str(err)) from None


def _exercise(where, raw):
    """An exercise: a question, its answer, and at least one check of what the answer says."""
    if raw is None:
        return None
    if not isinstance(raw, dict) or set(raw) != {"question", "answer", "checks"} or not all(
            isinstance(raw[k], str) and raw[k].strip() for k in ("question", "answer")):
        raise LessonError(f"{where}: an exercise is {{'question': text, 'answer': text, 'checks': [...]}}")
    checks = _checks(f"{where}, exercise", raw["checks"])
    if not checks:
        raise LessonError(f"{where}: an exercise's answer needs at least one check")
    return Exercise(raw["question"], raw["answer"], checks)


def parse_lesson(data: dict, source: str = "lesson") -> Lesson:
    """A validated :class:`Lesson` from the decoded JSON of one file."""
    if not isinstance(data, dict):
        raise LessonError(f"{source}: a lesson is a JSON object")
    for key in ("id", "title", "lab", "summary"):
        if not isinstance(data.get(key), str) or not data[key].strip():
            raise LessonError(f"{source}: '{key}' must be a non-empty string")
    if data["lab"] not in LABS:
        raise LessonError(f"{source}: unknown lab {data['lab']!r}; one of {', '.join(LABS)}")
    if not all(c.isalnum() or c == "-" for c in data["id"]):
        raise LessonError(f"{source}: 'id' may hold only letters, digits and '-' (it goes into URLs)")
    steps = data.get("steps")
    if not isinstance(steps, list) or not steps:
        raise LessonError(f"{source}: 'steps' must be a non-empty list")
    parsed = tuple(_check_step(f"{source}, step {k}", data["lab"], raw) for k, raw in enumerate(steps, 1))
    return Lesson(data["id"], data["title"], data["lab"], data["summary"], parsed)


def load_lessons(folder=LESSONS_DIR) -> dict:
    """id -> Lesson for every ``*.json`` in ``folder``, in file-name order; LessonError if one is bad."""
    lessons = {}
    for path in sorted(pathlib.Path(folder).glob("*.json")):
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as err:
            raise LessonError(f"{path.name}: not readable JSON ({err})") from None
        lesson = parse_lesson(data, path.name)
        if lesson.id in lessons:
            raise LessonError(f"{path.name}: lesson id {lesson.id!r} is used twice")
        lessons[lesson.id] = lesson
    return lessons


def find_step(lab: str, query: dict, lessons=None):
    """The step a page's query (``lesson``, ``step``) asks for: None without a lesson, else
    (lesson, k), or the HTML of a card saying what is wrong (an unknown lesson or step; the lab
    works as usual)."""
    lesson_id = _first(query.get("lesson"))
    if not lesson_id:
        return None
    try:
        lessons = load_lessons() if lessons is None else lessons
    except LessonError as err:
        return _card("Lessons unavailable", f"<p>{html.escape(str(err))}</p>", error=True)
    lesson = lessons.get(lesson_id)
    if lesson is None or lesson.lab != lab:
        return _card("Unknown lesson", f"<p>There is no lesson {html.escape(lesson_id)!s} for this lab. "
                     '<a href="./">All lessons</a></p>', error=True)
    try:
        k = int(_first(query.get("step")) or 1)
    except ValueError:
        k = 0
    if not 1 <= k <= len(lesson.steps):
        return _card(lesson.title, f"<p>This lesson has steps 1 to {len(lesson.steps)}; "
                     f'<a href=".{html.escape(lesson.url(1))}">start at step 1</a>.</p>', error=True)
    return lesson, k


def lesson_html(lab: str, query: dict, lessons=None) -> str:
    """The static lesson card for ``query`` (the served page uses ``ui/lesson_card.py``, which
    adds the action and the claims): "" without a lesson, a card saying what is wrong for a bad one."""
    found = find_step(lab, query, lessons)
    if found is None or isinstance(found, str):
        return found or ""
    lesson, k = found
    step = lesson.steps[k - 1]
    keep = {key: _first(query.get(key)) for key in PRESENTATION_KEYS if query.get(key)}
    links = [f'<a id="lesson-prev" href=".{html.escape(lesson.url(k - 1, keep))}">&larr; previous</a>' if k > 1 else "",
             f'<a id="lesson-next" href=".{html.escape(lesson.url(k + 1, keep))}">next &rarr;</a>'
             if k < len(lesson.steps) else '<a id="lesson-end" href="./">all lessons</a>']
    body = (f"<p style='margin:4px 0'>{html.escape(step.text)}</p>"
            f"<p style='margin:4px 0'>{' &nbsp; '.join(link for link in links if link)}</p>")
    return _card(f"{lesson.title}: step {k} of {len(lesson.steps)}, {step.title}", body)


def _first(value):
    if isinstance(value, (list, tuple)):
        value = value[0] if value else None
    if isinstance(value, bytes):
        value = value.decode("utf-8", "replace")
    return value


def _card(title, body, error=False):
    colour = "#f8d7da" if error else "#e7f1ff"
    return (f'<div id="lesson-card" style="background:{colour};border:1px solid #9ab;border-radius:8px;'
            f'padding:6px 12px;margin:4px 0"><b>{html.escape(title)}</b>{body}</div>')
