"""A page that waits for the first run's warm-up instead of compiling the same code again.

On a fresh install ``gpexplorer serve`` compiles the numerical kernels in a background process
(:mod:`gpexplorer.ui.warmup`). A lab built meanwhile would compile them a second time on the same
two cores and take longer than waiting. So a page opened during the warm-up shows "preparing
(first run only)" with the warm-up's progress, polls it, and builds its lab when it is done (or
at once if no warm-up is under way, or if the warm-up failed: the lab then compiles itself).
"""

from __future__ import annotations

import html

import panel as pn

from gpexplorer.ui import warmup
from gpexplorer.ui.markup import TextBlock

__all__ = ["warmup_under_way", "when_warm"]

POLL_MS = 500


def warmup_under_way() -> bool:
    """Whether a warm-up has started and not finished; a dead one does not count, from the moment
    it died (its lock is gone: :func:`gpexplorer.ui.warmup.lock_held`)."""
    state = warmup.progress()
    return state is not None and not state.get("finished")


def _progress_html(state):
    done, total = (state or {}).get("done", 0), (state or {}).get("total", 1)
    return (f'<div id="preparing" style="font-size:1.2em;margin:2em">'
            f"<b>Preparing (first run only)</b>: compiling the numerical kernels, {done} of {total} parts done. "
            f"This happens once per install; the page opens by itself when it is ready.</div>")


def when_warm(build, into):
    """Fill the layouts of ``into`` (a list of Panel ListLike layouts) with what ``build()``
    returns (a list of objects per layout), now or once the warm-up is done.

    Call inside a served session; outside one (tests, Jupyter) it builds at once."""
    if pn.state.curdoc is None or not warmup_under_way():
        _fill(into, build())
        return None
    message = TextBlock(_progress_html(warmup.progress()))
    into[-1].objects = [message]
    for layout in into[:-1]:
        layout.objects = []

    def poll():
        if warmup_under_way():
            message.object = _progress_html(warmup.progress())
            return
        callback.stop()
        state = warmup.progress() or {}
        if state.get("error"):
            message.object = (f'<div id="preparing">The warm-up failed ({html.escape(state["error"])}); '
                              "building the page now, which compiles as it goes.</div>")
        _fill(into, build())

    callback = pn.state.add_periodic_callback(poll, period=POLL_MS)
    return callback


def _fill(into, contents):
    for layout, objects in zip(into, contents):
        layout.objects = list(objects)
