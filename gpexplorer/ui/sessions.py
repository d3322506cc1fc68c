"""Give the memory of closed sessions back to the operating system.

A served lab is freed when its session is destroyed (``tests/ui/test_session_lifecycle.py``), but
the process keeps the memory: after 30 sessions of the sparse page closed, CPython's small-object
allocator held ~117 MB of empty pools in partly used arenas (live Python blocks: 66 MB, the same
after every cycle of 30 sessions, so nothing leaks; the next class reuses the memory). Under
``PYTHONMALLOC=malloc`` the objects live in glibc's heap instead, and ``malloc_trim(0)`` after the
sessions' garbage is collected returns the free pages: measured in-process, RSS 236 MB before, 422-447
MB after 30 sessions closed, 239-240 MB after the trim (three cycles). Without ``PYTHONMALLOC=malloc``
the trim gives back about 10 MB.

:func:`track` is called once per served session (by the page around a lab); when sessions are
destroyed, one release (full garbage collection, then ``malloc_trim``) runs on the server's event
loop ``RELEASE_DELAY_S`` later, however many sessions ended together. On systems without glibc it
only collects garbage.

:func:`track` also makes the page say when its server has gone (issue 24 defect 12: a tab whose
server died kept showing "running ... iteration 772"): on BokehJS's ``connection_lost`` event,
fired in the browser when the websocket closes, a client-side callback replaces every job status
line of the page (``#job-status``) by :data:`DISCONNECTED_TEXT`, without sending anything to the
server that is gone; if Bokeh reconnects the session, the previous lines come back.
"""

from __future__ import annotations

import ctypes
import gc
import time

__all__ = ["DISCONNECTED_TEXT", "RELEASE_DELAY_S", "release_count", "release_memory", "show_disconnect", "track"]

RELEASE_DELAY_S = 2.0  # after the destroyed sessions' documents have let go of their labs
DISCONNECTED_TEXT = "The server stopped; reload when it is back"

#: the document's connection_lost callback (cb_obj: the document); ``text`` is the new status line
_ON_CONNECTION_LOST = """
const saved = window.__gpx_before_disconnect || (window.__gpx_before_disconnect = new Map());
const docs = (cb_obj && cb_obj.all_models) ? [cb_obj] : Bokeh.documents;
for (const doc of docs) {
  for (const model of doc.all_models) {
    if (typeof model.text !== "string" || !model.text.includes('id="job-status"')) continue;
    if (model.text.includes('data-state="disconnected"')) continue;
    saved.set(model, model.text);
    try { model.setv({text: text}, {sync: false}); } catch (err) { model.text = text; }
  }
}
"""
#: the document's client_reconnected callback: the session is back, so are its status lines
_ON_RECONNECTED = """
const saved = window.__gpx_before_disconnect;
if (saved) {
  for (const [model, before] of saved) {
    try { model.setv({text: before}, {sync: false}); } catch (err) { model.text = before; }
  }
  saved.clear();
}
"""


class _Releases:
    """When the last release ran and whether one is scheduled (process-wide: memory is)."""

    scheduled = False
    count = 0
    last = None


def _malloc_trim():
    try:
        return ctypes.CDLL(None).malloc_trim
    except (OSError, AttributeError):  # not glibc
        return None


def release_memory() -> bool:
    """Collect garbage, then return free heap pages to the system; True if ``malloc_trim`` ran."""
    gc.collect()
    trim = _malloc_trim()
    if trim is not None:
        trim(0)
    _Releases.count, _Releases.last = _Releases.count + 1, time.monotonic()
    return trim is not None


def release_count() -> int:
    """How many releases have run in this process (scheduled ones and direct calls)."""
    return _Releases.count


def _session_destroyed(session_context):
    """Bokeh's session-destroyed callback: schedule one release for every session ending now."""
    if _Releases.scheduled:
        return
    from tornado.ioloop import IOLoop

    _Releases.scheduled = True

    def run():
        _Releases.scheduled = False
        release_memory()

    IOLoop.current().call_later(RELEASE_DELAY_S, run)


def show_disconnect(doc) -> None:
    """In the browser, replace the page's job status lines by :data:`DISCONNECTED_TEXT` when the
    connection to the server is lost (and restore them if it comes back)."""
    from bokeh.models import CustomJS

    from gpexplorer.ui.markup import status_html

    doc.js_on_event("connection_lost", CustomJS(code=_ON_CONNECTION_LOST,
                                                args={"text": status_html("disconnected", DISCONNECTED_TEXT)}))
    doc.js_on_event("client_reconnected", CustomJS(code=_ON_RECONNECTED))


def track(doc) -> None:
    """Release memory after the session serving ``doc`` (a Bokeh Document) is destroyed, and show
    the disconnect in the page if its server goes (:func:`show_disconnect`); does nothing outside
    a server session (Jupyter, tests)."""
    if doc is not None and doc.session_context is not None:
        doc.on_session_destroyed(_session_destroyed)
        show_disconnect(doc)
