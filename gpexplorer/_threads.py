"""The one BLAS-thread policy: always scoped (a context manager), never set globally.

On a shared 2-core machine OpenBLAS threads cost milliseconds per small call (measured: a
16 x 16 triangular solve with 40 right-hand sides took 3 ms with 2 threads under load, 0.08 ms
with 1; 1000 FITC iterations on Snelson 6.9 s against 0.63 s). So small work runs on one thread
and only work above :data:`THREADED_WORK` flops (N M^2 for a sparse objective, N D^2 for the
kitchen sinks) gets the threads the process started with.

BLAS thread counts are process-wide, and a dashboard serves several sessions from worker
threads at once, so the scopes are reference-counted: the first scope to enter limits BLAS to
one thread, the last to leave restores what the process had. Overlapping scopes of different
sessions can therefore neither undo each other's limit nor leave the process limited after
they all end. Nothing here changes a setting outside a ``with`` block.
"""

from __future__ import annotations

import contextlib
import functools
import threading

import numpy  # noqa: F401  (loads the BLAS the controller must see)
from threadpoolctl import ThreadpoolController

#: work (flops scale) above which one evaluation is worth BLAS threads
THREADED_WORK = 2e7

_lock = threading.Lock()
_state = {"depth": 0, "limiter": None}  # open single-threaded scopes; what restores the original


@functools.lru_cache(maxsize=1)
def blas_controller():
    """Process-wide view of the loaded BLAS libraries (building it scans the process: ~6 ms)."""
    return ThreadpoolController()


def blas_thread_count():
    """Threads the BLAS libraries would use now (the largest over the loaded libraries)."""
    return max([lib.num_threads for lib in blas_controller().select(user_api="blas").lib_controllers] or [1])


def open_scopes():
    """How many single-threaded scopes are open now (in any thread)."""
    return _state["depth"]


@contextlib.contextmanager
def single_threaded():
    """Context: BLAS on one thread inside the block (nested and concurrent scopes share one
    limit; the last one out restores the original thread counts)."""
    with _lock:
        if _state["depth"] == 0:
            _state["limiter"] = blas_controller().limit(limits=1, user_api="blas")
        _state["depth"] += 1
    try:
        yield
    finally:
        with _lock:
            _state["depth"] -= 1
            if _state["depth"] == 0:
                _state["limiter"].restore_original_limits()
                _state["limiter"] = None


@contextlib.contextmanager
def _threaded(threads):
    """Context: ``threads`` BLAS threads for one large piece of work, then back to one thread if
    a single-threaded scope is still open (else to what was there before)."""
    with _lock:
        limiter = blas_controller().limit(limits=threads, user_api="blas")
    try:
        yield
    finally:
        with _lock:
            if _state["depth"] > 0:
                blas_controller().limit(limits=1, user_api="blas")
            else:
                limiter.restore_original_limits()


def threads_for(work, threads=None):
    """Context for one piece of work: one BLAS thread below THREADED_WORK; above it ``threads``
    (default: leave the current setting)."""
    if work < THREADED_WORK:
        return single_threaded()
    if threads is None:
        return contextlib.nullcontext()
    return _threaded(threads)
