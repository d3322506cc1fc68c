"""A tab closed mid-fit stops its fit at once (issue 24 defect 12).

Bokeh destroys a session 15-32 s after its websocket closed, and the fit was cancelled only
then: a closed tab kept a core busy until its fit ended. Now the job's poller cancels the job once
the session that had a connection has had none for ``LOST_GRACE_S``. Checked on the poller with a
stand-in session, then in a browser: a long black-box fit, the tab closed, the server's own CPU
time read from ``/proc`` while the session still exists (its destruction comes much later).
"""

from __future__ import annotations

import pathlib
import time
from types import SimpleNamespace

import pytest

from gpexplorer.ui import jobs
from gpexplorer.ui.jobs import BackgroundJob, JobPoller

LONG_FIT = "?num_samples=3000&M=60&rounds=100&evals_per_block=60"


class FakeServerSession:
    connection_count = 0


class _Context:
    """A stand-in for Bokeh's session context (weakly referenced, as the document holds it)."""

    def __init__(self, app):
        self.id, self.server_context = "s1", SimpleNamespace(application_context=app)


class _ServedDoc:
    """A stand-in for a served Bokeh document: its session context finds ``session``."""

    def __init__(self, session):
        app = SimpleNamespace(get_session=lambda session_id: session)
        self.session_context = _Context(app)

    def on_session_destroyed(self, callback):
        pass


def _served_doc(session):
    return _ServedDoc(session)


def _endless(job):
    while True:
        job.report(0.5, "iteration")
        time.sleep(0.001)


def test_a_job_is_cancelled_once_its_connected_session_lost_its_connection():
    session = FakeServerSession()
    poller = JobPoller()
    poller.start(BackgroundJob("fit", _endless), poll=lambda: None)
    doc = _served_doc(session)  # the server keeps its session context alive: so does the test
    poller._cancel_with_session(doc)  # what start() does in a served session
    try:
        assert poller.check() is None or poller.running  # never connected yet (page loading): runs on
        time.sleep(jobs.LOST_GRACE_S + 0.1)
        poller.check()
        assert poller.running and not poller.job.cancelled, "cancelled before the page had ever connected"
        session.connection_count = 1
        poller.check()
        session.connection_count = 0  # the tab closes
        poller.check()
        assert not poller.job.cancelled  # a blip shorter than the grace is forgiven
        time.sleep(jobs.LOST_GRACE_S + 0.05)
        poller.check()
        assert poller.job.cancelled
        assert poller.job.join(5) == "cancelled"
    finally:
        poller.cancel()


def test_a_reconnection_within_the_grace_keeps_the_job():
    session = FakeServerSession()
    session.connection_count = 1
    poller = JobPoller()
    poller.start(BackgroundJob("fit", _endless), poll=lambda: None)
    doc = _served_doc(session)
    poller._cancel_with_session(doc)
    try:
        poller.check()
        session.connection_count = 0
        poller.check()
        time.sleep(jobs.LOST_GRACE_S / 2)
        session.connection_count = 1  # Bokeh reconnected the session
        poller.check()
        session.connection_count = 0
        poller.check()
        time.sleep(jobs.LOST_GRACE_S / 2 + 0.05)
        poller.check()
        assert poller.running and not poller.job.cancelled  # the grace restarted at the second loss
        time.sleep(jobs.LOST_GRACE_S)
        poller.check()
        assert poller.job.cancelled and doc is not None  # and it runs out
    finally:
        poller.cancel()


@pytest.fixture
def server(tmp_path):
    from own_server import OwnServer

    served = OwnServer("black_box", tmp_path / "server.log")
    yield served
    served.stop()


def _cpu_rate(server, seconds):
    """The server's CPU use over the next ``seconds``, in cores."""
    before, start = server.cpu_seconds(), time.monotonic()
    time.sleep(seconds)
    return (server.cpu_seconds() - before) / (time.monotonic() - start)


@pytest.mark.browser
@pytest.mark.skipif(not pathlib.Path("/proc/self/stat").exists(), reason="reads the server's CPU time in /proc")
def test_closing_the_tab_mid_fit_frees_the_core_at_once(page, server):
    from playwright.sync_api import expect

    page.goto(server.url + LONG_FIT, timeout=120_000)
    status = page.locator("#job-status")
    expect(status).to_have_attribute("data-state", "running", timeout=120_000)
    expect(status).to_contain_text("iteration", timeout=120_000)
    fitting = _cpu_rate(server, 2.0)
    assert fitting > 0.15, f"the fit used only {fitting:.2f} of a core: nothing to measure"
    page.close()
    closed = time.monotonic()
    time.sleep(2.0)  # the grace, the iteration under way, the cancelled job's last poll
    after = _cpu_rate(server, 5.0)
    elapsed = time.monotonic() - closed
    assert elapsed < 14, "the measurement ran into Bokeh's session clean-up (15 s or later)"
    assert after < max(0.05, 0.3 * fitting), (
        f"2-7 s after the tab closed the server still used {after:.2f} of a core (fitting: {fitting:.2f})")
    from bokeh_page import server_log_problems  # tornado's closed-websocket report when the tab goes is noise

    log = server_log_problems(server.log_path.read_text())
    assert "Traceback" not in log, log[-3000:]


