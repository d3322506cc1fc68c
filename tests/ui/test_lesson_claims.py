"""Every claim of every lesson step holds in the lab's own numbers (issue 23).

Each step is opened headless as its link opens it (a fresh lab, the step's URL state through the
lab's URL handling, its view's tab), its action runs to the end as its button would, and every
check of the step (``gpexplorer/ui/claims.py``) is evaluated against the lab's quantities
(``ui/<lab>/quantities.py``). A claim that does not hold fails with the file, the step and both
values. Every step must carry at least one check: text that no test reads drifts from the code.
"""

from __future__ import annotations

import pathlib

import pytest

from gpexplorer.ui.lesson_runner import report, run_step
from gpexplorer.ui.lessons import LESSONS_DIR, load_lessons

LESSONS = load_lessons()
FILES = {lesson_id: next(p.name for p in sorted(pathlib.Path(LESSONS_DIR).glob("*.json"))
                         if f'"{lesson_id}"' in p.read_text(encoding="utf-8")) for lesson_id in LESSONS}
STEPS = [(lesson_id, k) for lesson_id, lesson in LESSONS.items() for k in range(1, len(lesson.steps) + 1)]


def test_every_step_of_every_lesson_carries_a_check():
    missing = [f"{FILES[i]} step {k}" for i, k in STEPS if not LESSONS[i].steps[k - 1].checks]
    assert not missing, f"steps without a check: {missing}"


@pytest.mark.parametrize("lesson_id, k", STEPS, ids=[f"{i}-{k}" for i, k in STEPS])
def test_every_claim_of_the_step_holds_in_the_labs_numbers(lesson_id, k):
    run = run_step(LESSONS[lesson_id], k)
    step = LESSONS[lesson_id].steps[k - 1]
    if step.action:
        assert run.action_state == "done", f"{FILES[lesson_id]} step {k}: {step.action} ended {run.action_state}"
    assert not run.failed, f"{FILES[lesson_id]}:\n{report(run)}"
