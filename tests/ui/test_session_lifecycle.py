"""A closed session gives its lab back: nothing keeps a student's lab alive after the tab closes.

The real app file (``apps/sparse_regression.py``) is served in this process by Panel's server on
a thread (``pn.serve(..., threaded=True)``) with Bokeh's unused-session checks shortened to
0.1 s (the defaults discard a session 15-32 s after its websocket closes). A client session that
speaks Bokeh's websocket protocol as a browser tab does (``ClientSession`` of
``tests/benchmarks/load_clients.py``: page GET, websocket, document pull, ``document_ready``)
opens the page, moves a slider and closes; the test then checks in this process that the
session's lab object and Bokeh document were garbage-collected, and that a background job still
running when the tab closed was cancelled. No debug endpoint: the server is the test's own.
"""

from __future__ import annotations

import asyncio
import gc
import importlib.util
import pathlib
import socket
import threading
import time
import weakref

import panel as pn
import pytest
from bokeh.document import Document

from gpexplorer.ui import sessions
from gpexplorer.ui.sparse.lab import SparseRegressionLab
from server_process import free_port

ROOT = pathlib.Path(__file__).resolve().parents[2]
APP = ROOT / "apps" / "sparse_regression.py"
FREED_WITHIN_S = 15.0


def _load_client():
    spec = importlib.util.spec_from_file_location("load_clients", ROOT / "tests" / "benchmarks" / "load_clients.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.ClientSession


ClientSession = _load_client()


def _run(coroutine):
    """``asyncio.run`` on a thread of its own: in a full test run Playwright's sync API keeps an
    event loop running on the main thread, where ``asyncio.run`` refuses to start another."""
    box = {}

    def target():
        try:
            box["result"] = asyncio.run(coroutine)
        except BaseException as err:  # noqa: BLE001 - re-raised on the test's thread
            box["error"] = err

    thread = threading.Thread(target=target)
    thread.start()
    thread.join()
    if "error" in box:
        raise box["error"]
    return box.get("result")


@pytest.fixture(scope="module")
def served():
    """The sparse page served in-process; yields its URL."""
    port = free_port()
    server = pn.serve({"sparse_regression": str(APP)}, port=port, address="127.0.0.1", threaded=True, show=False,
                      start=True, websocket_origin=[f"127.0.0.1:{port}"],
                      check_unused_sessions_milliseconds=100, unused_session_lifetime_milliseconds=100)
    try:
        deadline = time.monotonic() + 60
        while True:  # the server thread starts listening a moment after pn.serve returns
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                assert time.monotonic() < deadline, "the in-process server did not start listening"
                time.sleep(0.05)
        url = f"http://127.0.0.1:{port}/sparse_regression"
        # A first visit: Panel starts a process-wide periodic task (``state._cleanup_busy_counter``)
        # when the first session's events are processed, and the task's copied context keeps that first document (emptied
        # when the session is destroyed; its lab is freed) alive for the life of the process. One
        # document per process, not per session; the tests look at the sessions after it.
        _run(_visit_and_leave(url))
        yield url
    finally:
        server.stop()  # stops the server thread's loop: pytest does not wait for it at exit


def _live(cls):
    """The live instances of ``cls``, weakly held."""
    gc.collect()
    return weakref.WeakSet(o for o in gc.get_objects() if isinstance(o, cls))


def _new_refs(cls, before, keep=lambda o: True):
    """Weak references to the instances of ``cls`` not in ``before`` for which ``keep`` is true."""
    return [weakref.ref(o) for o in _live(cls) if o not in before and keep(o)]


def _served(doc):
    """A session's document (Bokeh's and Panel's process-wide default documents have no session)."""
    return doc.session_context is not None


def _referrers(obj, depth=2):
    """What keeps ``obj`` alive, for the failure message."""
    lines = []
    for r in gc.get_referrers(obj):
        if r is obj or isinstance(r, list) and len(r) > 1000:
            continue
        lines.append(f"{type(r).__name__}: {str(r)[:150]}")
        if depth > 1 and isinstance(r, dict):
            lines += ["  <- " + line for line in _referrers(r, depth - 1)[:5]]
    return lines[:20]


def _wait_freed(refs, what):
    deadline = time.monotonic() + FREED_WITHIN_S
    while any(r() is not None for r in refs):
        if time.monotonic() > deadline:
            alive = next(r() for r in refs if r() is not None)
            pytest.fail(f"{what} still alive {FREED_WITHIN_S:.0f} s after its session closed; referrers:\n"
                        + "\n".join(_referrers(alive)))
        time.sleep(0.1)
        gc.collect()


async def _visit_and_leave(url):
    session = await _open(url)
    await asyncio.wait_for(session.move(0.6), 30)
    await session.close()


async def _open(url):
    session = ClientSession(url, "Lengthscale", "mean-vfe")
    await session.open(quiet=0.5, timeout=60)
    return session


def test_a_closed_sessions_lab_and_document_are_garbage_collected(served):
    labs_before, docs_before = _live(SparseRegressionLab), _live(Document)

    async def visit():
        session = await _open(served)
        assert await asyncio.wait_for(session.move(0.7), 30) > 0  # the lab re-evaluated for this session
        labs, docs = _new_refs(SparseRegressionLab, labs_before), _new_refs(Document, docs_before, _served)
        await session.close()
        return labs, docs

    labs, docs = _run(visit())
    assert len(labs) == 1 and labs[0]() is not None, "one lab per session, alive while the session is open"
    assert len(docs) == 1 and docs[0]() is not None, "one served document per session"
    _wait_freed(labs, "the lab")
    _wait_freed(docs, "the Bokeh document")


def test_a_job_running_when_the_tab_closes_is_cancelled(served):
    """An M sweep (several seconds) started, then the tab closed: the sweep stops, the lab is freed."""
    labs_before = _live(SparseRegressionLab)

    async def start_sweep_and_leave():
        session = await _open(served)
        (lab_ref,) = _new_refs(SparseRegressionLab, labs_before)
        await session.click("Run M sweep")
        deadline = time.monotonic() + 30
        while lab_ref().job is None:
            assert time.monotonic() < deadline, "the sweep did not start"
            await asyncio.sleep(0.02)
        job = lab_ref().job
        assert job.state == "running"
        await session.close()
        return lab_ref, job

    lab_ref, job = _run(start_sweep_and_leave())
    assert job.join(FREED_WITHIN_S) == "cancelled", f"the sweep went on after the tab closed: {job.state}"
    _wait_freed([lab_ref], "the lab")


def _releases_settled(quiet_s=sessions.RELEASE_DELAY_S + 1.0, timeout=30.0):
    """The release count once it stopped changing for ``quiet_s`` (earlier tests' sessions ending)."""
    deadline, count, since = time.monotonic() + timeout, sessions.release_count(), time.monotonic()
    while time.monotonic() - since < quiet_s and time.monotonic() < deadline:
        time.sleep(0.1)
        if sessions.release_count() != count:
            count, since = sessions.release_count(), time.monotonic()
    return count


def test_a_served_page_releases_memory_once_its_session_is_destroyed(served, monkeypatch):
    """``lab_page`` tracks its session (``sessions.track``): after the session ends, one garbage
    collection + malloc_trim runs on the server's loop; sessions ending within RELEASE_DELAY_S of
    the first share one (on a loaded machine the server may destroy the second later than that:
    the destroy times are recorded, and the expected number of releases follows from them)."""
    destroyed = []  # (time, session id) of every destroy after the release count settled
    real = sessions._session_destroyed
    recording_on = []

    def recording(session_context):
        if recording_on:
            destroyed.append((time.monotonic(), session_context.id))
        return real(session_context)

    monkeypatch.setattr(sessions, "_session_destroyed", recording)
    before = _releases_settled()
    recording_on.append(True)
    # an earlier test's session may still be open: the server destroys it when it gets to it
    # (one was, 5 s into this test, in a CI run): only this test's two are required here
    earlier = {d.session_context.id for d in _live(Document) if _served(d)}

    mine = set()

    async def two_visits():
        pair = [await _open(served) for _ in range(2)]
        mine.update(d.session_context.id for d in _live(Document) if _served(d))
        for session in pair:
            await session.close()

    _run(two_visits())
    mine -= earlier  # the sessions this test opened (another may have been opened and closed meanwhile)
    deadline = time.monotonic() + FREED_WITHIN_S
    while sessions.release_count() == before:
        assert time.monotonic() < deadline, "no memory release after the sessions were destroyed"
        time.sleep(0.1)
    time.sleep(sessions.RELEASE_DELAY_S + 0.5)
    # each of this test's sessions destroyed (under load Bokeh has delivered one session's destroy
    # callback twice, 3 s apart; a repeat only schedules a release that is coalesced or redundant)
    ours = {sid for _, sid in destroyed if sid in mine}
    assert len(mine) >= 2 and ours == mine, \
        f"expected this test's {len(mine)} sessions destroyed, saw {len(ours)} (and {len(destroyed)} events in all)"
    windows, start = 0, None
    for t in sorted(t for t, _ in destroyed):  # a release coalesces every destroy until it runs
        if start is None or t > start + sessions.RELEASE_DELAY_S:
            windows, start = windows + 1, t
    assert sessions.release_count() == before + windows
    assert sessions.release_memory() is True  # glibc: malloc_trim ran (this test machine is Linux/glibc)
