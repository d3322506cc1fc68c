"""Run a lesson step without a browser, the way its page would, and evaluate its checks.

A step is opened exactly as its link opens it: a fresh lab of the lesson's kind, the step's URL
query applied through the lab's own URL handling (``LabBase.apply_url``), the named view's tab
shown, any job the page starts by itself (the black-box lab's fit) waited for. Then the values
of every quantity are read (``ui/<lab>/quantities.py``), the step's ``action`` runs to its end as
its button would run it, the values are read again, and each check is evaluated against the
second reading, the first being available as ``before:<name>``.

``tests/ui/test_lesson_claims.py`` runs every step of every bundled lesson this way;
``gpexplorer lessons check`` does the same for a teacher's own lesson files.
"""

from __future__ import annotations

import time
import urllib.parse
from dataclasses import dataclass, field

from gpexplorer.ui.claims import evaluate
from gpexplorer.ui.lessons import lab_module, load_lessons

__all__ = ["StepRun", "step_query", "open_step", "run_action", "step_values", "run_step", "run_lessons", "report"]

ACTION_TIMEOUT_S = 900.0


@dataclass
class StepRun:
    """One step run headless: the values its checks saw and each check's outcome."""

    lesson: object
    k: int
    values: dict
    outcomes: list
    seconds: float
    action_state: str | None = None
    lab: object = field(default=None, repr=False)

    @property
    def failed(self):
        return [o for o in self.outcomes if not o.holds]

    @property
    def where(self):
        return f"lesson {self.lesson.id} (step {self.k}, {self.lesson.steps[self.k - 1].title!r})"


def step_query(lesson, k) -> dict:
    """The URL query of step ``k`` (key -> text), as its link carries it."""
    parsed = urllib.parse.parse_qs(urllib.parse.urlparse(lesson.url(k)).query, keep_blank_values=True)
    return {key: values[-1] for key, values in parsed.items()}


def open_step(lesson, k, timeout=ACTION_TIMEOUT_S):
    """A lab showing step ``k`` of ``lesson`` as its link opens it (view shown, jobs finished)."""
    support = lab_module(lesson.lab, "quantities")
    lab = support.make_lab()
    lab.wait_for_jobs(timeout)
    lab.apply_url(step_query(lesson, k))
    lab.wait_for_jobs(timeout)
    show_view(lab, lesson.lab, lesson.steps[k - 1].view)
    return lab


def show_view(lab, route, view):
    """Bring ``view`` up in ``lab`` (a tab, for views that live in one); nothing for others."""
    if view is None:
        return
    tab = lab_module(route, "quantities").VIEWS[view].get("tab")
    if tab is not None:
        lab.view_tab = tab


def run_action(lab, route, action, timeout=ACTION_TIMEOUT_S):
    """Press the button of ``action`` and wait for its job (and what its result starts)."""
    if action is None:
        return None
    _, method = lab_module(route, "quantities").ACTIONS[action]
    getattr(lab, method)()
    state = lab.wait_for_jobs(timeout)
    if state is None and getattr(lab, "actions_run_inline", False):
        return "done"  # the action finished inside its call (no background job)
    return state


def step_values(lab, route, before=None) -> dict:
    """The lab's quantities now, with ``before`` (an earlier reading) as ``before:<name>``."""
    values = dict(lab_module(route, "quantities").quantities(lab))
    values.update({f"before:{key}": value for key, value in (before or {}).items()})
    return values


def run_step(lesson, k, timeout=ACTION_TIMEOUT_S) -> StepRun:
    """Open step ``k`` (1-based) of ``lesson``, run its action, evaluate its checks (its exercise's too)."""
    t0 = time.perf_counter()
    step = lesson.steps[k - 1]
    lab = open_step(lesson, k, timeout)
    before = step_values(lab, lesson.lab)
    state = run_action(lab, lesson.lab, step.action, timeout)
    values = step_values(lab, lesson.lab, before)
    outcomes = [evaluate(check, values) for check in step.all_checks]
    return StepRun(lesson, k, values, outcomes, time.perf_counter() - t0, state, lab)


def run_lessons(lessons=None, only=None, progress=None):
    """A StepRun for every step of every lesson (of ``only``: lesson ids), in order."""
    lessons = load_lessons() if lessons is None else lessons
    runs = []
    for lesson in lessons.values():
        if only and lesson.id not in only:
            continue
        for k in range(1, len(lesson.steps) + 1):
            run = run_step(lesson, k)
            runs.append(run)
            if progress is not None:
                progress(run)
    return runs


def report(run: StepRun) -> str:
    """Lines naming the step, its action's outcome and each check with its values."""
    step = run.lesson.steps[run.k - 1]
    action = f", action {step.action} -> {run.action_state}" if step.action else ""
    lines = [f"{run.where}{action}, {run.seconds:.1f} s"]
    for o in run.outcomes:
        mark = "ok  " if o.holds else "FAIL"
        lines.append(f"  {mark} {o.message}")
    if not step.checks:
        lines.append("  FAIL the step has no checks")
    return "\n".join(lines)

