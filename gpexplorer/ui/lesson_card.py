"""The lesson card of a served lab page: the step's text, its action, its claims checked live.

With ``?lesson=<id>&step=<k>`` a lab page is headed by this card (``ui/page.py``). It holds:

* the step's title and text, and links to the previous and next step that keep the page's
  presentation keys (``?presenter=1`` stays on from step to step);
* when the step has an ``action`` (Optimise, Learn hyperparameters, ...), its button, which the
  card also presses itself once the page has loaded, with the job's progress beside it: the
  text's "after optimising" then describes what the screen shows, not "Not fitted yet";
* the step's claims (``checks``, ``ui/claims.py``), evaluated against the lab's quantities once
  the action (or the page's own fit) has finished, and again after every change a user makes:
  a tick where a claim holds, a cross with both values where a change made it fail;
* when the step names a ``view``, an invisible :class:`BringIntoView` that scrolls that chart
  into sight once it has been laid out (and shows its tab first, for views in tabs).

The computations are the lesson runner's (``ui/lesson_runner.py``), the same the CI test runs.
"""

from __future__ import annotations

import html

import panel as pn
import param
from panel.custom import JSComponent

from gpexplorer.ui.claims import evaluate, format_value
from gpexplorer.ui.lab_base import next_tick
from gpexplorer.ui.lesson_runner import show_view, step_query, step_values
from gpexplorer.ui.lessons import PRESENTATION_KEYS, LessonError, find_step, lab_module
from gpexplorer.ui.markup import TextBlock
from gpexplorer.ui.math_text import escaped_with_math
from gpexplorer.ui.url_state import read_query
from gpexplorer.ui.widgets import PromptButton

__all__ = ["BringIntoView", "LessonCard", "lesson_card"]

ERROR_STYLE = "background:#f8d7da;border:1px solid #9ab;border-radius:8px;padding:6px 12px;margin:0"


class BringIntoView(JSComponent):
    """Invisible; scrolls the Bokeh figure named ``figure`` (or the element with id ``element``)
    into the viewport once it is laid out, and again while the page around it settles (readouts
    arriving above it move it), until the user scrolls or after ``settle_ms``."""

    figure = param.String(default=None, allow_None=True)
    element = param.String(default=None, allow_None=True)
    settle_ms = param.Integer(default=8000)

    _esm = """
    export function render({ model, el }) {
      el.style.display = 'none';
      const started = Date.now();
      let userMoved = false;
      for (const kind of ['wheel', 'touchmove', 'keydown', 'mousedown'])
        window.addEventListener(kind, () => { userMoved = true; }, {once: true, passive: true});
      const byId = (root, id) => {
        const found = root.getElementById ? root.getElementById(id) : root.querySelector('#' + id);
        if (found) return found;
        for (const node of root.querySelectorAll('*')) {
          if (node.shadowRoot) { const inner = byId(node.shadowRoot, id); if (inner) return inner; }
        }
        return null;
      };
      const figureEl = (name) => {
        if (!window.Bokeh || !Bokeh.documents.length) return null;
        const fig = Bokeh.documents[0].get_model_by_name(name);
        if (fig == null) return null;
        let hit = null;
        const walk = (v) => {
          if (hit) return;
          if (v.model === fig && v.el.getBoundingClientRect().height > 0) { hit = v.el; return; }
          for (const c of (v.child_views ?? [])) walk(c);
        };
        for (const root of Bokeh.index.roots) walk(root);
        return hit;
      };
      // the lesson card sticks to the top of the scrolled main area: a view must clear its bottom
      const stickyBottom = () => {
        let node = byId(document, 'lesson-card');
        while (node) {
          if (node.nodeType === 1 && getComputedStyle(node).position === 'sticky') return node.getBoundingClientRect().bottom;
          node = node.parentNode || (node.host ?? null);
          if (node && node.nodeType === 11) node = node.host;
        }
        return 0;
      };
      const tick = () => {
        if (userMoved) return;
        const target = model.figure ? figureEl(model.figure) : (model.element ? byId(document, model.element) : null);
        const scroller = document.getElementById('main') || document.scrollingElement;
        if (target && scroller) {
          const r = target.getBoundingClientRect(), top = stickyBottom() + 4, bottom = window.innerHeight;
          let delta = 0;
          if (r.top < top) delta = r.top - top;
          else if (r.bottom > bottom) delta = Math.min(r.bottom - bottom, r.top - top);
          if (r.height > 0 && Math.abs(delta) > 1) scroller.scrollBy(0, delta);
        }
        if (Date.now() - started < model.settle_ms) setTimeout(tick, 250);
      };
      setTimeout(tick, 250);
    }
    """

    def __init__(self, **params):
        params.setdefault("height", 0)
        params.setdefault("margin", 0)
        super().__init__(**params)


class LessonCard(pn.viewable.Viewer):
    """Step ``k`` of ``lesson`` over ``lab`` (already built); ``keep``: the page keys its links carry."""

    def __init__(self, lesson, k, lab, keep=None, **params):
        super().__init__(**params)
        self.lesson, self.k, self.lab = lesson, k, lab
        self.step = lesson.steps[k - 1]
        self.keep = {key: value for key, value in (keep or {}).items() if key in PRESENTATION_KEYS}
        self.support = lab_module(lesson.lab, "quantities")
        self.before, self.outcomes, self._action_pending = None, [], bool(self.step.action)
        self._started = False  # the page has loaded: a pending action may run
        self.text = TextBlock(self._text_html())
        self.claims = TextBlock(self._claims_html())
        self.progress = pn.indicators.Progress(value=0, max=100, visible=False, width=160, height=18)
        self.job_text = TextBlock("")
        self.button = None
        if self.step.action:
            label, _ = self.support.ACTIONS[self.step.action]
            self.button = PromptButton(label=label, color="primary", css_classes=["gpx-lesson-action"])
            self.button.on_click(lambda _: self.run_action())
        where = self.support.VIEWS[self.step.view] if self.step.view else {}
        self.sight = BringIntoView(figure=where.get("figure"), element=where.get("element")) if where else None
        lab.status.param.watch(lambda *_: next_tick(self.refresh), "value")
        lab.progress.param.watch(self._mirror_progress, ["value", "visible"])
        lab.settings.param.watch(lambda *_: next_tick(self.refresh), list(lab.settings.param))

    # what the card shows --------------------------------------------------------------------
    def _link(self, k, label, link_id):
        return f'<a id="{link_id}" href=".{html.escape(self.lesson.url(k, self.keep))}">{label}</a>'

    def _text_html(self):
        n, k = len(self.lesson.steps), self.k
        links = [self._link(k - 1, "&larr; previous", "lesson-prev") if k > 1 else "",
                 self._link(k + 1, "next &rarr;", "lesson-next") if k < n else '<a id="lesson-end" href="./">all '
                                                                              "lessons</a>"]
        return (f'<div id="lesson-card"><b>{html.escape(self.lesson.title)}: step {k} of {n}, '
                f"{html.escape(self.step.title)}</b><p style='margin:2px 0'>{escaped_with_math(self.step.text)} "
                "&nbsp; "
                f"<span style='white-space:nowrap'>{' &nbsp; '.join(link for link in links if link)}</span></p>"
                f"{self._exercise_html()}</div>")

    def _exercise_html(self):
        """The step's question, its answer folded away until asked for (an HTML details element)."""
        ex = self.step.exercise
        if ex is None:
            return ""
        return (f'<div id="lesson-exercise" style="margin:2px 0"><b>Exercise.</b> {escaped_with_math(ex.question)}'
                f'<details style="display:inline-block;margin-left:6px"><summary style="cursor:pointer">'
                f'<small>Show the answer</small></summary><span id="exercise-answer">{escaped_with_math(ex.answer)}'
                "</span></details></div>")

    def _claims_html(self):
        if not self.step.checks:
            return ""
        if self._action_pending or self.lab.jobs.running:
            what = self.support.ACTIONS[self.step.action][0] if self._action_pending else "the running job"
            return f'<div id="lesson-claims" data-state="pending"><small>Claims checked after {what}.</small></div>'
        items = []
        for o in self.outcomes:
            mark, colour = ("&#10003;", "#1a7f37") if o.holds else ("&#10007;", "#b42318")
            said = html.escape(o.check.why or o.check.text())
            values = (f"{html.escape(format_value(o.left))} {html.escape(o.check.op)} {html.escape(format_value(o.right))}"
                      if o.left is not None else html.escape(o.message))
            items.append(f'<li data-holds="{str(o.holds).lower()}"><span style="color:{colour}">{mark}</span> '
                         f"{said} <span style='color:#555'>({values})</span></li>")
        holding = sum(o.holds for o in self.outcomes)
        state = "all-hold" if holding == len(self.outcomes) else "some-fail"
        head = (f"What the numbers say: {holding} of {len(self.outcomes)} claims hold now"
                + ("" if state == "all-hold" else " (a change of yours makes the others fail)"))
        return (f'<details id="lesson-claims" data-state="{state}"><summary><small>{head}</small></summary>'
                f"<ul style='margin:2px 0 2px 1em;padding:0;font-size:0.9em'>{''.join(items)}</ul></details>")

    def _mirror_progress(self, *_):
        self.progress.value, self.progress.visible = self.lab.progress.value, self.lab.progress.visible
        status = self.lab.status.object.replace('id="job-status"', 'class="gpx-card-status"')
        self.job_text.object = f"<small>{status}</small>" if self.lab.progress.visible else ""
        if self.button is not None:
            self.button.disabled = self.lab.jobs.running

    def refresh(self):
        """Evaluate the claims against what the lab shows now (after its job, if one runs); a step
        action that had to wait for a job the page started by itself runs once that job is done."""
        if self._action_pending and self._started and not self.lab.jobs.running:
            self.run_action()
            return
        if not self.lab.jobs.running and not self._action_pending:
            values = step_values(self.lab, self.lesson.lab, self.before)
            self.outcomes = [evaluate(check, values) for check in self.step.checks]
        self.claims.object = self._claims_html()
        self._mirror_progress()

    # the action -------------------------------------------------------------------------
    def run_action(self):
        """Press the step's action (as its button in the sidebar would), noting the values before it."""
        if not self.step.action or self.lab.jobs.running:
            return
        self.before = self.support.quantities(self.lab)
        self._action_pending = False
        getattr(self.lab, self.support.ACTIONS[self.step.action][1])()
        self.refresh()

    def start(self):
        """Once the page has loaded: run the step's action (after any job the lab runs by itself),
        or check the claims at once."""
        self._started = True
        if self.step.action:
            next_tick(self.run_action)
        else:
            next_tick(self.refresh)

    def __panel__(self):
        row = [self.button, self.progress, self.job_text] if self.button is not None else []
        parts = [self.text, pn.Row(*row, sizing_mode="stretch_width") if row else None, self.claims, self.sight]
        # sticky at the top of the scrolled main area: the text stays in sight when the page brings
        # the step's view up under it
        return pn.Column(*[p for p in parts if p is not None], sizing_mode="stretch_width",
                         styles={"background": "#e7f1ff", "border": "1px solid #9ab", "border-radius": "8px",
                                 "position": "sticky", "top": "0", "z-index": "20"},
                         css_classes=["gpx-lesson-card"], margin=(4, 0))


def lesson_card(route, query, lab, keep=None):
    """The card for ``query`` (the page's ``lesson`` and ``step``) over ``lab``, with the step's
    view shown; a TextBlock saying what is wrong for an unknown lesson or step; None without one."""
    try:
        found = find_step(route, query)
    except LessonError as err:
        return TextBlock(f'<div id="lesson-card" style="{ERROR_STYLE}">{err}</div>')
    if found is None:
        return None
    if isinstance(found, str):
        return TextBlock(found)
    lesson, k = found
    step = lesson.steps[k - 1]
    if step.state and not set(step.state) & set(query):
        # a short link (?lesson=..&step=..) opens the step's own state, as the lesson's links do
        lab.apply_url({**read_query(query), **step_query(lesson, k)})
    show_view(lab, route, step.view)
    card = LessonCard(lesson, k, lab, keep)
    pn.state.onload(card.start)
    return card
