"""Playwright helpers for driving Panel/Bokeh dashboards in a real browser.

Everything here talks to BokehJS (``window.Bokeh``) through ``page.evaluate`` and to the page
through Playwright's real input events, so tests exercise the same code paths as a user:

* :func:`open_app` loads a served app and waits until BokehJS has rendered a canvas;
* :class:`ConsoleErrors` collects console errors, uncaught exceptions and failed requests;
* :func:`cds_data` / :func:`cds_length` read a named ``ColumnDataSource`` as the browser sees it;
* :func:`data_to_page` / :func:`drag_point` map data coordinates of a named figure to page pixels
  and perform a real mouse drag (e.g. for an active ``PointDrawTool``);
* :func:`set_widget_value` assigns a widget model's value in the browser, which syncs to the
  server exactly like a user edit;
* :func:`wait_for_change` polls a JS getter; :func:`measure_latency` times a server round trip;
* :class:`LabPage`, :func:`wait_until_quiet`, :func:`slider_handle`, :func:`press_on_slider`:
  the page-level checks and slider operations both labs' browser tests share.

Bokeh models are looked up in ``Bokeh.documents[0]`` by their ``name`` (set ``name=...`` on the
Bokeh figure / ColumnDataSource in the app). Panel renders inside open shadow roots; Playwright's
CSS and text locators pierce them, so ``page.locator("#some-id")`` also works for Panel content.
"""

from __future__ import annotations

import dataclasses
import json
import math
import pathlib
import re
import time
from typing import Any, Callable

__all__ = [
    "ConsoleErrors",
    "cds_data",
    "cds_length",
    "data_to_page",
    "frame_edges",
    "drag_point",
    "measure_latency",
    "open_app",
    "set_widget_value",
    "wait_for_change",
    "LabPage",
    "WATCH_DOCUMENT_JS",
    "assert_clean_log",
    "server_log_problems",
    "wait_until_quiet",
    "slider_handle",
    "press_on_slider",
]

# --- JavaScript snippets (function expressions passed to page.evaluate) ------------------------

_JS_READY = "() => !!(window.Bokeh && Bokeh.documents && Bokeh.documents.length > 0)"

_JS_CDS_DATA = """(name) => {
  const src = Bokeh.documents[0].get_model_by_name(name);
  if (src == null || !('data' in src.properties)) return null;
  const plain = (v) => ArrayBuffer.isView(v) ? Array.from(v) : Array.isArray(v) ? v.map(plain) : v;
  const data = src.data instanceof Map ? Object.fromEntries(src.data) : src.data;
  const out = {};
  for (const [k, v] of Object.entries(data)) out[k] = plain(v);
  return out;
}"""

_JS_CDS_LENGTH = """(name) => {
  const src = Bokeh.documents[0].get_model_by_name(name);
  return (src == null || typeof src.get_length !== 'function') ? null : (src.get_length() ?? 0);
}"""

# Find the (first displayed) PlotView of the figure named `name` by walking the view tree from
# Bokeh.index.roots (Panel layouts nest the figure several levels deep): `fig` and `view`, or an
# error returned from the enclosing function.
_JS_FIND_FIGURE_VIEW = """  const fig = Bokeh.documents[0].get_model_by_name(name);
  if (fig == null) return {error: `no model named ${name}`};
  const views = [];
  const walk = (v) => { if (v.model === fig) views.push(v); for (const c of (v.child_views ?? [])) walk(c); };
  for (const root of Bokeh.index.roots) walk(root);
  const view = views.find((v) => v.canvas_view.el.getBoundingClientRect().width > 0);
  if (view == null) return {error: `figure ${name} has no displayed view (${views.length} hidden)`};
"""

# data -> screen via the frame's default scales (canvas-relative px) plus the canvas's client rect
_JS_DATA_TO_PAGE = """([name, x, y, scroll]) => {
""" + _JS_FIND_FIGURE_VIEW + """  const el = view.canvas_view.el;
  if (scroll) el.scrollIntoView({block: 'nearest', inline: 'nearest'});
  const rect = el.getBoundingClientRect();
  const sx = view.frame.x_scale.compute(x), sy = view.frame.y_scale.compute(y);
  const bbox = view.frame.bbox;
  const inside = sx >= bbox.left && sx <= bbox.right && sy >= bbox.top && sy <= bbox.bottom;
  return {px: rect.left + sx, py: rect.top + sy, inside,
          viewport: [window.innerWidth, window.innerHeight]};
}"""

_JS_SET_WIDGET = """([label, value]) => {
  const doc = Bokeh.documents[0];
  const matches = [];
  const labels = [];
  for (const m of doc.all_models) {
    if (!('value' in m.properties)) continue;
    const t = typeof m.title === 'string' ? m.title : (typeof m.label === 'string' ? m.label : null);
    if (t === null) continue;
    labels.push(t);
    if (t === label || m.name === label) matches.push(m);
  }
  if (matches.length !== 1) return {error: `${matches.length} widgets titled ${JSON.stringify(label)}; titles: ${JSON.stringify(labels)}`};
  const w = matches[0];
  const attrs = {value};
  if ('value_throttled' in w.properties) attrs.value_throttled = value;
  w.setv(attrs);
  return {type: w.type};
}"""

# Arm a one-shot listener on the named ColumnDataSource. Returns t0 = performance.now().
# Any of: property `data` replaced (server ModelChanged), in-place column changes
# (ColumnDataChanged -> source.change), stream or patch, records t1 (first one wins).
# Pointer/keyboard events seen before t1 update `last_input`.
_JS_ARM_LATENCY = """(name) => {
  const src = Bokeh.documents[0].get_model_by_name(name);
  if (src == null) return {error: `no model named ${name}`};
  const prev = window.__bokeh_page_latency;
  if (prev && prev.cleanup) prev.cleanup();
  const state = {t0: performance.now(), t1: null, last_input: null, how: null};
  const signals = [['data', src.properties.data.change], ['change', src.change],
                   ['streaming', src.streaming], ['patching', src.patching]];
  const slots = signals.map(([how, sig]) => {
    const slot = () => { if (state.t1 === null) { state.t1 = performance.now(); state.how = how; } };
    sig.connect(slot);
    return [sig, slot];
  });
  const input_types = ['pointerdown', 'pointermove', 'pointerup', 'keydown', 'keyup', 'wheel'];
  const on_input = () => { if (state.t1 === null) state.last_input = performance.now(); };
  for (const t of input_types) window.addEventListener(t, on_input, true);
  state.cleanup = () => {
    for (const [sig, slot] of slots) sig.disconnect(slot);
    for (const t of input_types) window.removeEventListener(t, on_input, true);
  };
  window.__bokeh_page_latency = state;
  return {t0: state.t0};
}"""

_JS_LATENCY_DONE = "() => window.__bokeh_page_latency && window.__bokeh_page_latency.t1 !== null"

_JS_LATENCY_RESULT = """() => {
  const s = window.__bokeh_page_latency;
  s.cleanup();
  return {t0: s.t0, t1: s.t1, last_input: s.last_input, how: s.how};
}"""


# --- page loading and error collection ---------------------------------------------------------

def open_app(page, url: str, timeout: float = 30_000) -> None:
    """Navigate to ``url`` and wait until BokehJS has a document and a visible ``<canvas>``.

    ``timeout`` is in milliseconds (Playwright convention) and applies to each wait.
    """
    page.goto(url, timeout=timeout)
    page.wait_for_function(_JS_READY, timeout=timeout)
    page.locator("canvas").first.wait_for(state="visible", timeout=timeout)


class ConsoleErrors:
    """Collect browser-side problems of a page: console errors, uncaught exceptions, failed requests.

    Attach *before* ``open_app`` so load-time problems are caught::

        errors = ConsoleErrors(page)
        open_app(page, url)
        ...
        errors.assert_none()

    ``ignore`` is an iterable of substrings; matching messages/URLs are dropped (use sparingly).
    A request the browser cancelled itself (``net::ERR_ABORTED``: the next ``goto`` leaves a
    stylesheet of the previous page unloaded, or a re-rendered widget drops its ``<link>``) is not
    a failure; a response with an HTTP error status (4xx/5xx) is.
    Console warnings are kept separately in ``warnings`` and never fail ``assert_none``.
    """

    def __init__(self, page, ignore: tuple[str, ...] | list[str] = ()):
        self.ignore = tuple(ignore)
        self.errors: list[str] = []
        self.warnings: list[str] = []
        self.failed_requests: list[str] = []
        page.on("console", self._on_console)
        page.on("pageerror", self._on_pageerror)
        page.on("requestfailed", self._on_requestfailed)
        page.on("response", self._on_response)

    def _keep(self, text: str) -> bool:
        return not any(pattern in text for pattern in self.ignore)

    def _on_console(self, message) -> None:
        text = f"console.{message.type}: {message.text}"
        if message.type == "error" and self._keep(text):
            self.errors.append(text)
        elif message.type == "warning" and self._keep(text):
            self.warnings.append(text)

    def _on_pageerror(self, error) -> None:
        text = f"pageerror: {error}"
        if self._keep(text):
            self.errors.append(text)

    def _on_requestfailed(self, request) -> None:
        text = f"{request.method} {request.url}: {request.failure}"
        if "net::ERR_ABORTED" not in str(request.failure) and self._keep(text):
            self.failed_requests.append(text)

    def _on_response(self, response) -> None:
        text = f"{response.request.method} {response.url}: HTTP {response.status}"
        if response.status >= 400 and self._keep(text):
            self.failed_requests.append(text)

    @property
    def problems(self) -> list[str]:
        """All errors and failed requests collected so far."""
        return self.errors + [f"request failed: {r}" for r in self.failed_requests]

    def assert_none(self) -> None:
        """Raise ``AssertionError`` listing every console error / page error / failed request."""
        assert not self.problems, "browser reported problems:\n  " + "\n  ".join(self.problems)


# --- reading Bokeh models ----------------------------------------------------------------------

def cds_data(page, name: str) -> dict[str, list]:
    """Columns of the ColumnDataSource named ``name`` as plain lists (typed arrays converted)."""
    data = page.evaluate(_JS_CDS_DATA, name)
    if data is None:
        raise LookupError(f"no ColumnDataSource named {name!r} in Bokeh.documents[0]")
    return data


def cds_length(page, name: str) -> int:
    """Row count of the ColumnDataSource named ``name`` (BokehJS ``get_length()``)."""
    length = page.evaluate(_JS_CDS_LENGTH, name)
    if length is None:
        raise LookupError(f"no ColumnDataSource named {name!r} in Bokeh.documents[0]")
    return int(length)


# --- mapping data coordinates to the page and dragging -----------------------------------------

def data_to_page(page, figure_name: str, x: float, y: float, scroll: bool = True) -> tuple[float, float]:
    """Page (viewport) pixel coordinates of data point ``(x, y)`` in the figure named ``figure_name``.

    Uses the figure's default x/y scales, so the result is valid for the current ranges only
    (recompute after zoom/pan/range changes). With ``scroll`` the canvas is first scrolled into
    view. Raises ``ValueError`` if the point is outside the plot frame or the viewport.
    """
    result = page.evaluate(_JS_DATA_TO_PAGE, [figure_name, x, y, scroll])
    if "error" in result:
        raise LookupError(result["error"])
    px, py = result["px"], result["py"]
    width, height = result["viewport"]
    if not result["inside"]:
        raise ValueError(f"data point ({x}, {y}) lies outside the frame of {figure_name!r}")
    if not (0 <= px < width and 0 <= py < height):
        raise ValueError(f"data point ({x}, {y}) maps to ({px:.0f}, {py:.0f}), outside the viewport")
    return px, py


_JS_FRAME = """(name) => {
""" + _JS_FIND_FIGURE_VIEW + """  const rect = view.canvas_view.el.getBoundingClientRect();
  const bbox = view.frame.bbox;
  return {left: rect.left + bbox.left, right: rect.left + bbox.right, top: rect.top + bbox.top,
          bottom: rect.top + bbox.bottom, x_start: fig.x_range.start, x_end: fig.x_range.end,
          y_start: fig.y_range.start, y_end: fig.y_range.end};
}"""


def frame_edges(page, figure_name: str) -> dict:
    """The plot frame of the figure named ``figure_name`` in page pixels (``left``, ``right``,
    ``top``, ``bottom``) and its ranges as the browser has them (``x_start``, ``x_end``,
    ``y_start``, ``y_end``)."""
    result = page.evaluate(_JS_FRAME, figure_name)
    if "error" in result:
        raise LookupError(result["error"])
    return result


def drag_point(page, figure_name: str, start: tuple[float, float], end: tuple[float, float],
               steps: int = 10) -> None:
    """Real mouse drag in ``figure_name`` from data coordinates ``start`` to ``end``.

    Presses the left button on ``start``, moves in ``steps`` intermediate events, releases on
    ``end``. With an active ``PointDrawTool`` this moves the glyph under ``start``; BokehJS
    syncs the source to the server when the button is released (pan end).
    """
    x0, y0 = data_to_page(page, figure_name, *start)
    x1, y1 = data_to_page(page, figure_name, *end, scroll=False)
    page.mouse.move(x0, y0)
    page.mouse.down()
    page.mouse.move(x1, y1, steps=steps)
    page.mouse.up()


# --- widgets -----------------------------------------------------------------------------------

def set_widget_value(page, title_or_label: str, value: Any) -> None:
    """Set ``value`` of the unique widget model whose ``title``/``label`` (or ``name``) matches.

    Runs ``model.setv({value, value_throttled})`` in BokehJS (``value_throttled`` only if the model
    has it, e.g. sliders), which is sent to the server exactly like a user edit, so Panel
    ``param.watch``/``pn.bind`` callbacks on ``value`` and ``value_throttled`` fire. It does not
    exercise the widget's DOM; use Playwright locators for that (see tests/ui/test_browser_infra).
    """
    result = page.evaluate(_JS_SET_WIDGET, [title_or_label, value])
    if "error" in result:
        raise LookupError(result["error"])


# --- waiting and timing ------------------------------------------------------------------------

def wait_for_change(page, js_getter: str, old_value: Any, timeout: float = 10_000,
                    interval: float = 25) -> Any:
    """Poll JS ``js_getter`` (expression or function source) until its value differs from ``old_value``.

    Values are compared after JSON round-tripping (so tuples equal lists). Returns the new value;
    raises ``TimeoutError`` after ``timeout`` ms reporting the last value seen.
    """
    old = json.loads(json.dumps(old_value))
    deadline = time.monotonic() + timeout / 1000
    while True:
        value = page.evaluate(js_getter)
        if value != old:
            return value
        if time.monotonic() > deadline:
            raise TimeoutError(f"{js_getter} still {value!r} after {timeout:.0f} ms")
        page.wait_for_timeout(interval)


def measure_latency(page, source_name: str, trigger: Callable[[], Any], timeout: float = 30_000,
                    from_last_input: bool = False) -> float:
    """Milliseconds from a user action until the ColumnDataSource ``source_name`` changes in the page.

    What is timed, all on the page's ``performance.now()`` clock:

    * start: a timestamp taken inside the page immediately before ``trigger()`` is called in Python
      (so it includes Playwright's input dispatch, ~1 ms, and the whole duration of the action,
      e.g. every step of a drag). With ``from_last_input=True`` the start is instead the last
      pointer/keyboard event the page received before the change (e.g. the ``pointerup`` ending a
      drag), falling back to the pre-trigger timestamp if the trigger produced no such event (as
      with :func:`set_widget_value`).
    * end: the first time BokehJS signals a change of that source: ``data`` replaced, in-place
      column change (``source.change``), ``stream`` or ``patch``. For a server-computed source this
      covers browser -> websocket -> Python callback -> websocket -> model update; it excludes the
      subsequent canvas repaint.

    Caveat: a source the trigger itself edits locally (e.g. the one a PointDrawTool drags) changes
    immediately, so time a *derived* source that only the server updates.
    """
    armed = page.evaluate(_JS_ARM_LATENCY, source_name)
    if "error" in armed:
        raise LookupError(armed["error"])
    trigger()
    page.wait_for_function(_JS_LATENCY_DONE, timeout=timeout)
    result = page.evaluate(_JS_LATENCY_RESULT)
    start = result["t0"]
    if from_last_input and result["last_input"] is not None:
        start = result["last_input"]
    latency = result["t1"] - start
    if not math.isfinite(latency):
        raise RuntimeError(f"non-finite latency measurement: {result}")
    return latency


# --- one served page of a lab, checked when the test ends ----------------------------------------

LOG_CHARS = 4000  # how much of the server log a failed health check shows

# Record when the document last changed (server pushes included), for wait_until_quiet.
WATCH_DOCUMENT_JS = """() => {
  window.__gpx_last_change = performance.now();
  Bokeh.documents[0].on_change(() => { window.__gpx_last_change = performance.now(); });
}"""

# Tornado's complaint when a browser goes away while the server is still writing to its websocket:
# "Task exception was never retrieved ... write_message ... WebSocketClosedError". Harmless.
_CLOSED_SOCKET = re.compile(
    r"Task exception was never retrieved\nfuture: <Task finished name='[^']*' "
    r"coro=<WebSocketProtocol13\.write_message\.<locals>\.wrapper\(\).*?"
    r"\ntornado\.websocket\.WebSocketClosedError\n", re.S)


# Bokeh's complaint when a browser closes a websocket before the server has made its session
# (bokeh/server/connection.py asserts a session in on_close); the other sessions carry on.
_CLOSED_BEFORE_SESSION = re.compile(
    r"[^\n]*\nTraceback \(most recent call last\):\n(?:(?!Traceback)[^\n]*\n)*?[^\n]*notify_connection_lost\(\)\n"
    r"(?:(?!Traceback)[^\n]*\n)*?[^\n]*assert self\._session is not None\n[^\n]*\nAssertionError\n")


def server_log_problems(text):
    """The server log ``text`` without tornado's closed-websocket noise (see _CLOSED_SOCKET) and
    Bokeh's closed-before-its-session race (_CLOSED_BEFORE_SESSION)."""
    return _CLOSED_BEFORE_SESSION.sub("", _CLOSED_SOCKET.sub("", text))


def assert_clean_log(served, start=0):
    """No Traceback in the server log since character ``start`` (closed-socket noise excepted)."""
    log = server_log_problems(served.log_text()[start:])
    assert "Traceback" not in log, log[-LOG_CHARS:]


@dataclasses.dataclass
class LabPage:
    """A page showing one session of a lab, with what is needed to check it at the end."""

    page: Any
    errors: ConsoleErrors
    url: Any  # conftest.ServedApp: the app URL, also giving the server log
    log_start: int  # length of the server log before the page was opened

    def assert_healthy(self):
        """No browser errors so far, and no Traceback in the server log since the page opened."""
        self.errors.assert_none()
        assert_clean_log(self.url, self.log_start)


def wait_until_quiet(page, quiet_ms=400, timeout=30_000):
    """Wait until the Bokeh document (watched with WATCH_DOCUMENT_JS) has not changed for ``quiet_ms``.

    Called before a page is closed so the server is not cut off halfway through pushing an update
    (tornado then logs a WebSocketClosedError traceback, which is noise, not an app failure).
    """
    page.wait_for_function(
        "(quiet) => performance.now() - window.__gpx_last_change > quiet", arg=quiet_ms, timeout=timeout)


def slider_handle(page, title):
    """The noUiSlider handle (role=slider) of the Bokeh slider whose title starts with ``title:``.

    Panel/Bokeh render ``<div class="bk-slider-title">M: <span>15</span></div>`` next to the handle
    inside each widget's shadow root; Playwright's CSS locators pierce the shadow roots.
    """
    from playwright.sync_api import expect

    group = page.locator(".bk-input-group").filter(
        has=page.locator(".bk-slider-title", has_text=re.compile(rf"^\s*{re.escape(title)}:")))
    expect(group).to_have_count(1)
    return group.get_by_role("slider")


def press_on_slider(page, title, key):
    """Focus the slider titled ``title`` and press ``key``; return the new value it shows."""
    from playwright.sync_api import expect

    handle = slider_handle(page, title)
    before = handle.get_attribute("aria-valuenow")
    handle.focus()
    page.keyboard.press(key)
    expect(handle).not_to_have_attribute("aria-valuenow", before)
    return float(handle.get_attribute("aria-valuenow"))


#: how far the widest element of the main area reaches past the window's right edge, and what it is
OVERFLOW_JS = """() => { let widest = [0, '']; const walk = (root) => {
  for (const el of root.querySelectorAll('.bk-Figure, .bk-Div, .bk-Row, .bk-panel-models-layout-Column, canvas, table, button')) {
    const r = el.getBoundingClientRect();
    if (r.width > 0 && r.height > 0 && r.right > widest[0]) widest = [r.right, el.tagName + '.' + el.className]; }
  for (const el of root.querySelectorAll('*')) if (el.shadowRoot) walk(el.shadowRoot); };
  walk(document.getElementById('main') || document); return [widest[0] - window.innerWidth, widest[1]]; }"""


def overflow(page):
    """(px past the window's right edge, the widest element) once the page is quiet and laid out."""
    wait_until_quiet(page)
    page.wait_for_timeout(500)  # a resized window's layout settles
    return page.evaluate(OVERFLOW_JS)


def save_screenshot(page, path, full_page=False, settle_ms=0):
    """Write a screenshot to ``path`` once the page is quiet, failing on a suspiciously small or
    nearly uniform image (a blank page)."""
    from PIL import Image

    path = pathlib.Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    page.mouse.move(0, 0)
    wait_until_quiet(page)
    if settle_ms:
        page.wait_for_timeout(settle_ms)
    png = page.screenshot(path=str(path), full_page=full_page)
    assert len(png) > 40_000, f"{path.name}: screenshot suspiciously small ({len(png)} bytes)"
    with Image.open(path) as image:
        rgb = image.convert("RGB")
        colours = rgb.getcolors(maxcolors=rgb.width * rgb.height)
    assert colours is not None and len(colours) > 200, f"{path.name}: nearly uniform, a blank page?"
    print(f"screenshot: {path}")


def lab_opener(page, lab_url, ready, *, update_ms, load_ms, viewport=None, ignore=()):
    """The generator behind each page test's ``open_lab`` fixture (``yield from lab_opener(...)``).

    It yields ``open_lab(query="", viewport=..., **ready_options) -> LabPage``: a new session of the
    lab at ``lab_url + query``, with the document watched, once ``ready(page, **ready_options)`` has
    seen the lab's first drawing (or fit). ``viewport`` is (width, height) or a dict, the default
    ``viewport``; None leaves the page's. ``ignore``: what :class:`ConsoleErrors` may drop. After
    the test every opened page must be quiet and healthy (:meth:`LabPage.assert_healthy`)."""
    opened = []

    def _open(query="", viewport=viewport, **ready_options):
        page.set_default_timeout(update_ms)
        if viewport:
            page.set_viewport_size(viewport if isinstance(viewport, dict)
                                   else {"width": viewport[0], "height": viewport[1]})
        lab = LabPage(page, ConsoleErrors(page, ignore=ignore), lab_url, len(lab_url.log_text()))
        open_app(page, lab_url + query, timeout=load_ms)
        page.evaluate(WATCH_DOCUMENT_JS)
        ready(page, **ready_options)
        opened.append(lab)
        return lab

    yield _open
    for lab in opened:
        wait_until_quiet(lab.page)
        lab.assert_healthy()
