"""Every lesson walked as a lecturer walks it: 1024x768 in presenter mode, step to step through the
card's own *next* links, in Chromium against ``gpexplorer serve`` (issue 23).

At each step: presenter mode is still on, the lab uses the step's state (nothing rejected), the
step's action has run by itself and its claims hold in the page's own card, the chart the step
names is in the viewport below the sticky lesson card, nothing was requested from another host and
nothing was logged as an error. A screenshot of every step goes to ``assets/lessons/``.
"""

from __future__ import annotations

import pathlib

import pytest
from playwright.sync_api import expect

from bokeh_page import ConsoleErrors
from gpexplorer.ui.lessons import lab_module, load_lessons

LESSONS = load_lessons()
#: sources of each lab's main plot, one of which every lesson step of that lab fills
MAIN_SOURCES = {"primer": ["posterior"], "sparse_regression": ["mean-vfe"], "linearized": [f"latent-{m}" for m in ("egp", "ugp", "eks", "uks")],
                "black_box": ["latent-fg", "latent-mog1"], "convolutional": ["tiles"],
                "random_features": ["kernel-slice"]}
LOAD_MS = 90_000
ACTION_MS = 240_000  # a step's own action (a sweep, learning, a fit) on a loaded 2-core machine
SHOTS = pathlib.Path(__file__).resolve().parents[2] / "assets" / "lessons"

#: where a view is on the page relative to the viewport and the sticky lesson card (None: not drawn)
_JS_VIEW_BOX = """([figure, element]) => {
  const byId = (root, id) => {
    const found = root.getElementById ? root.getElementById(id) : root.querySelector('#' + id);
    if (found) return found;
    for (const node of root.querySelectorAll('*'))
      if (node.shadowRoot) { const inner = byId(node.shadowRoot, id); if (inner) return inner; }
    return null;
  };
  let target = null;
  if (figure) {
    const fig = Bokeh.documents[0].get_model_by_name(figure);
    const walk = (v) => { if (target) return; if (v.model === fig && v.el.getBoundingClientRect().height > 0) target = v.el;
                         for (const c of (v.child_views ?? [])) walk(c); };
    for (const root of Bokeh.index.roots) walk(root);
  } else target = byId(document, element);
  if (target == null) return null;
  let node = byId(document, 'lesson-card'), sticky = 0;
  while (node) {
    if (node.nodeType === 1 && getComputedStyle(node).position === 'sticky') { sticky = node.getBoundingClientRect().bottom; break; }
    node = node.parentNode; if (node && node.nodeType === 11) node = node.host;
  }
  const r = target.getBoundingClientRect();
  return {top: r.top, bottom: r.bottom, height: r.height, sticky: sticky, viewport: window.innerHeight};
}"""


def _foreign_requests(page):
    foreign = []
    page.on("request", lambda r: foreign.append(r.url)
            if not r.url.startswith(("http://127.0.0.1", "ws://127.0.0.1", "data:", "blob:", "about:")) else None)
    return foreign


def _view_in_sight(page, lab, view, timeout_s=20.0):
    where = lab_module(lab, "quantities").VIEWS[view]
    args = [where.get("figure"), where.get("element")]
    page.wait_for_function(f"(args) => {{ const b = ({_JS_VIEW_BOX})(args); return b != null && b.height > 0 &&"
                           " b.top >= b.sticky - 2 && b.bottom <= b.viewport + 2; }", arg=args, timeout=timeout_s * 1e3)


@pytest.mark.browser
@pytest.mark.parametrize("lesson_id", list(LESSONS))
def test_a_lesson_walked_in_presenter_mode_keeps_its_promises(page, gpexplorer_server, lesson_id):
    base, _ = gpexplorer_server
    lesson = LESSONS[lesson_id]
    SHOTS.mkdir(exist_ok=True)
    # a next link leaves the page while it may still fetch a stylesheet: those aborted requests are ours
    errors, foreign = ConsoleErrors(page, ignore=("favicon", "net::ERR_ABORTED")), _foreign_requests(page)
    page.set_viewport_size({"width": 1024, "height": 768})
    page.goto(base + lesson.url(1, {"presenter": "1"}), timeout=LOAD_MS)
    n = len(lesson.steps)
    for k, step in enumerate(lesson.steps, 1):
        card = page.locator("#lesson-card")
        expect(card).to_contain_text(f"step {k} of {n}", timeout=LOAD_MS)
        assert "presenter=1" in page.url and f"step={k}" in page.url
        page.wait_for_function("names => { const d = window.Bokeh && Bokeh.documents[0]; if (!d) return false;"
                               " return names.some(n => { const s = d.get_model_by_name(n);"
                               " return s != null && s.get_length() > 0; }); }",
                               arg=MAIN_SOURCES[lesson.lab], timeout=LOAD_MS)
        claims = page.locator("#lesson-claims")
        expect(claims).to_have_attribute("data-state", "all-hold", timeout=ACTION_MS)
        if step.exercise is not None:  # the question is shown, its answer only when asked for
            answer, fold = page.locator("#exercise-answer"), page.locator("#lesson-exercise details")
            # (the words before any equation: $...$ is drawn as MathML)
            expect(page.locator("#lesson-exercise")).to_contain_text(step.exercise.question.split("$")[0][:40])
            expect(answer).to_be_hidden()
            # opened as a click on "Show the answer" would (a real click would first scroll the sticky card's
            # place, the top of the page, into view)
            fold.evaluate("d => { d.open = true; }")
            expect(answer).to_be_visible()
            expect(answer).to_contain_text(step.exercise.answer.split("$")[0][:40])
            fold.evaluate("d => { d.open = false; }")  # folded again for the screenshot
        if step.view:
            _view_in_sight(page, lesson.lab, step.view)
        assert page.get_by_text("ignored URL values").count() == 0, f"step {k}: a lesson value was rejected"
        page.wait_for_timeout(600)  # the readouts follow the plots
        page.screenshot(path=str(SHOTS / f"{lesson_id}-step{k}.png"))
        if k < n:
            page.locator("#lesson-next").click()
            page.wait_for_url(f"**step={k + 1}**", timeout=LOAD_MS)
    errors.assert_none()
    assert foreign == [], f"requests to other hosts: {foreign}"


@pytest.mark.browser
def test_a_short_lesson_link_opens_the_steps_own_state(page, gpexplorer_server):
    base, _ = gpexplorer_server
    lesson = LESSONS["fitc-noise-clumping"]
    page.set_viewport_size({"width": 1024, "height": 768})
    page.goto(f"{base}/sparse_regression?lesson={lesson.id}&step=1", timeout=LOAD_MS)
    expect(page.locator("#lesson-card")).to_contain_text("step 1 of", timeout=LOAD_MS)
    page.wait_for_function("n => { const s = window.Bokeh && Bokeh.documents[0] && "
                           "Bokeh.documents[0].get_model_by_name('data'); return s != null && s.get_length() === n; }",
                           arg=100, timeout=LOAD_MS)  # snelson100, the step's data set, not the default
    expect(page.locator("#lesson-claims")).to_have_attribute("data-state", "all-hold", timeout=LOAD_MS)
    page.wait_for_function("() => window.location.search.includes('dataset=snelson100') && "
                           "window.location.search.includes('lesson=')", timeout=LOAD_MS)
