"""Long computations (fits, sweeps) on a worker thread, with progress and cancellation.

The worker only writes to its own :class:`BackgroundJob`; the page polls the job from its
event loop (a periodic callback) and applies the result there, so no Bokeh model is touched
from another thread. One job object per run, owned by one session: nothing is shared.

Where the polling runs (:meth:`JobPoller.start`): in a served session, on the session's loop
(Panel's periodic callback); in a Jupyter kernel, served or headless (nbclient, ``nbconvert
--execute``: no Bokeh session, ``pn.state.curdoc`` is None), on the kernel's asyncio loop, every
``POLL_MS`` and at once when the job ends (issue 24 defect 11: a lab built in a cell used to say
"running" forever); anywhere else (tests, scripts) the caller polls (``wait_for_jobs``).
"""

from __future__ import annotations

import asyncio
import sys
import threading
import time
import traceback
import weakref

from gpexplorer.ui.markup import status_html


class Cancelled(Exception):
    """Raised inside a job's function when the user pressed cancel."""


class BackgroundJob:
    """Run ``fn(job)`` on a daemon thread; ``fn`` reports with ``job.report(fraction, message)``
    and checks ``job.cancelled``. ``state`` is "running", "done", "failed" or "cancelled"."""

    def __init__(self, name, fn):
        self.name = name
        self.fraction = 0.0
        self.message = "starting"
        self.state = "running"
        self.result = None
        self.error = None
        self.traceback = None
        self.started = time.perf_counter()
        self.elapsed = 0.0
        self._cancel = threading.Event()
        self._lock = threading.Lock()
        self._done_callbacks = []
        self._thread = threading.Thread(target=self._run, args=(fn,), name=f"gpexplorer-{name}", daemon=True)
        self._thread.start()

    @property
    def cancelled(self) -> bool:
        return self._cancel.is_set()

    def cancel(self):
        self._cancel.set()

    def report(self, fraction, message=""):
        if self._cancel.is_set():
            raise Cancelled()
        with self._lock:
            self.fraction = min(max(float(fraction), 0.0), 1.0)
            self.message = message

    def snapshot(self):
        """(state, fraction, message), read consistently from the polling thread."""
        with self._lock:
            return self.state, self.fraction, self.message

    def add_done_callback(self, callback):
        """Call ``callback()`` once the job has ended (on the job's thread; at once if it has)."""
        with self._lock:
            if self.state == "running":
                self._done_callbacks.append(callback)
                return
        callback()

    def _run(self, fn):
        try:
            result = fn(self)
            state = "cancelled" if self._cancel.is_set() else "done"
        except Cancelled:
            result, state = None, "cancelled"
        except Exception as err:  # noqa: BLE001 - any failure is shown in the page, never raised
            result, state = None, "failed"
            self.error = f"{type(err).__name__}: {err}"
            self.traceback = traceback.format_exc()
        with self._lock:
            self.result = result
            self.elapsed = time.perf_counter() - self.started
            self.state = state
            if state == "done":
                self.fraction = 1.0
            callbacks, self._done_callbacks = self._done_callbacks, []
        for callback in callbacks:
            try:
                callback()
            except Exception:  # noqa: BLE001 - a listener's failure must not hide the job's state
                traceback.print_exc()

    def join(self, timeout=None):
        self._thread.join(timeout)
        return self.state


POLL_MS = 50  # job polling; the wait after a finished job is at most this
#: a served session's job is cancelled once its tab has had no connection for this long
LOST_GRACE_S = 0.5
PROGRESS_EVERY_S = 0.25  # progress is shown at most this often (the result, not progress, must be prompt)


class JobPoller:
    """One session's view of its current :class:`BackgroundJob`, polled on the session's loop.

    ``start(job, poll)`` registers ``poll`` (the page's callback, which calls :meth:`check`) as a
    periodic callback when a server session exists (in a Jupyter kernel, on the kernel's loop);
    elsewhere the page calls it itself. Served, the job is cancelled as soon as its tab is gone: a
    fit or an M sweep nobody will see must not keep using the cores the other students share.
    Bokeh destroys a session only 15-32 s after its websocket closed (issue 24 defect 12: a tab
    closed mid-fit kept a core busy until the fit ended), so :meth:`check`, which runs every
    ``POLL_MS`` while a job runs, also cancels it once the session that had a connection has had
    none for ``LOST_GRACE_S`` (a closed tab, a dead network); the session's destruction cancels
    it too (a tab closed before its websocket ever opened)."""

    def __init__(self):
        self.job = None
        self._callback = None
        self._last_progress = 0.0
        self._reported = None  # the job whose final state was already handed out
        self._watched_doc = None  # weak: the document whose destruction cancels the job
        self._server_session = None  # weak: Bokeh's ServerSession of that document (connections)
        self._session_context = None  # weak: where to find it (a session registers after its page's build)
        self._connected, self._lost_since = False, None

    @property
    def running(self) -> bool:
        return self.job is not None and self.job.state == "running"

    def start(self, job, poll):
        import panel as pn

        if self._callback is not None:  # still polling for a job this one replaces
            self._callback.stop()
            self._callback = None
        self.job, self._last_progress = job, 0.0
        self._cancel_with_session(pn.state.curdoc)
        doc = pn.state.curdoc
        if (doc is not None and doc.session_context is not None) or pn.state._is_pyodide:
            self._callback = pn.state.add_periodic_callback(poll, period=POLL_MS)
            return
        loop = kernel_loop()
        if loop is not None:
            self._callback = LoopPolling(loop, poll, job)
        elif doc is not None:  # a document outside a server and outside a kernel: Panel's own way
            self._callback = pn.state.add_periodic_callback(poll, period=POLL_MS)

    def _cancel_with_session(self, doc):
        """Once per served document: cancel the running job when the session is destroyed."""
        if doc is None or doc.session_context is None:
            return
        if self._watched_doc is not None and self._watched_doc() is doc:
            return
        self._watched_doc = weakref.ref(doc)
        doc.on_session_destroyed(self.session_destroyed)
        self._session_context, self._server_session = weakref.ref(doc.session_context), None
        self._connected, self._lost_since = False, None

    def connection_lost(self) -> bool:
        """Whether this served session had a browser connected and has had none for LOST_GRACE_S
        (False outside a server, and while the page's websocket has not opened yet)."""
        context = self._session_context() if self._session_context is not None else None
        if self._server_session is None and context is not None:
            self._server_session = _server_session(context)
        session = self._server_session() if self._server_session is not None else None
        if session is None:
            return False
        if session.connection_count > 0:
            self._connected, self._lost_since = True, None
            return False
        if not self._connected:
            return False
        now = time.monotonic()
        if self._lost_since is None:
            self._lost_since = now
        return now - self._lost_since >= LOST_GRACE_S

    def session_destroyed(self, session_context):
        """Bokeh's session-destroyed callback: cancel the job (its thread ends at its next report)."""
        self.cancel()

    def cancel(self):
        if self.running:
            self.job.cancel()

    def check(self):
        """None when there is nothing to show; ("running", fraction, message) at most every
        PROGRESS_EVERY_S; the final (state, fraction, message) once, after which polling stops."""
        if self.job is None:
            return None
        state, fraction, message = self.job.snapshot()
        if state == "running" and not self.job.cancelled and self.connection_lost():
            self.job.cancel()  # the tab is gone: stop at the job's next iteration
        if state == "running":
            now = time.perf_counter()
            if now - self._last_progress <= PROGRESS_EVERY_S:
                return None
            self._last_progress = now
            return state, fraction, message
        if self._reported is self.job:
            return None
        if self._callback is not None:
            self._callback.stop()
            self._callback = None
        self._reported = self.job
        return state, fraction, message


def _server_session(context):
    """A weak reference to Bokeh's ServerSession of a session context (None while there is none:
    Bokeh registers a session once its page is built; or a test's stand-in context)."""
    try:
        session = context.server_context.application_context.get_session(context.id)
    except Exception:  # noqa: BLE001 - bokeh's ProtocolError ("no such session") or a stand-in context
        return None
    return weakref.ref(session) if hasattr(session, "connection_count") else None


def kernel_loop():
    """The running asyncio loop of this thread when it is a Jupyter kernel's, else None.

    Only a kernel's: elsewhere a loop running in this thread (Playwright's, in the tests) is not
    one that the code which started the job expects to apply its result."""
    shell = getattr(sys.modules.get("IPython"), "get_ipython", lambda: None)()
    if getattr(shell, "kernel", None) is None:
        return None
    try:
        return asyncio.get_running_loop()
    except RuntimeError:
        return None


class LoopPolling:
    """Call ``poll()`` on an asyncio ``loop`` every ``POLL_MS`` (progress) and as soon as ``job``
    ends (its result), until :meth:`stop`; the periodic callback's stand-in in a Jupyter kernel.

    ``poll`` runs on the loop's thread only (the kernel's main thread, where the notebook's code
    runs too), never on the job's thread."""

    def __init__(self, loop, poll, job, period_s=POLL_MS / 1000):
        self._loop, self._poll, self._period = loop, poll, period_s
        self.running = True
        self._handle = loop.call_later(period_s, self._tick)
        job.add_done_callback(self._job_ended)

    def _job_ended(self):
        try:
            self._loop.call_soon_threadsafe(self._tick, False)
        except RuntimeError:  # the kernel's loop is closed: nobody is left to show the result
            pass

    def _tick(self, again=True):
        if not self.running:
            return
        try:
            self._poll()
        except Exception:  # noqa: BLE001 - as a periodic callback would: report and keep polling
            traceback.print_exc()
        if again and self.running:
            self._handle = self._loop.call_later(self._period, self._tick)

    def stop(self):
        self.running = False
        self._handle.cancel()


class JobControls:
    """A lab's background job as the user sees it: progress bar, status line, locked buttons.

    Mixed into every lab through :class:`gpexplorer.ui.lab_base.LabBase`, which provides ``jobs``
    (a :class:`JobPoller`), ``progress``, ``status`` (a TextBlock) and ``cancel_button``; the lab
    defines ``_job_buttons()`` (locked while a job runs) and ``_job_finished(state, job)``
    (applies the result and reports it in ``status``). A job's function passes ``job.report``
    and ``lambda: job.cancelled`` to the computation as its plain progress and cancel callables."""

    @property
    def job(self):
        """The current (or last) background job, None before the first."""
        return self.jobs.job

    def cancel_job(self):
        self.jobs.cancel()

    def _busy(self):
        return self.jobs.running

    def _start_job(self, name, fn, started=None):
        self._lock_job_buttons(True)
        self.progress.visible, self.progress.value = True, 0
        self.status.object = status_html("running", started or f"{name} started")
        self.jobs.start(BackgroundJob(name, fn), self.poll_job)

    def poll_job(self):
        """Apply a job's progress or result (called on the session's event loop)."""
        update = self.jobs.check()
        if update is None:
            return
        state, fraction, message = update
        if state == "running":
            self.progress.value = int(100 * fraction)
            self.status.object = status_html("running", self._progress_text(self.jobs.job, message))
            return
        self._job_finished(state, self.jobs.job)
        self._lock_job_buttons(False)
        self.progress.visible = False

    def _progress_text(self, job, message):
        return f"{job.name}: {message}"

    def wait_for_jobs(self, timeout=900.0):
        """Outside a server (tests, notebooks, the lesson checks): wait for the running job and for
        any job its result starts, applying each one as the page's polling would. Returns the last
        job's final state (None without a job); TimeoutError after ``timeout`` seconds."""
        deadline = time.monotonic() + timeout
        while True:
            job = self.jobs.job
            if job is None:
                return None
            remaining = deadline - time.monotonic()
            if remaining <= 0 or job.join(remaining) == "running":
                raise TimeoutError(f"the {job.name} job was still running after {timeout:g} s")
            self.poll_job()
            if self.jobs.job is job and not self._busy():
                return job.state

    def _lock_job_buttons(self, locked):
        for button in self._job_buttons():
            button.disabled = locked
        self.cancel_button.disabled = not locked
