"""The one BLAS-thread policy: always scoped (a context manager), never set globally for good.

On a shared 2-core machine OpenBLAS threads cost milliseconds per small call (measured: a
16 x 16 triangular solve with 40 right-hand sides took 3 ms with 2 threads under load, 0.08 ms
with 1; 1000 FITC iterations on Snelson 6.9 s against 0.63 s). So small work runs on one thread
and only work above :data:`THREADED_WORK` flops (N M^2 for a sparse objective, N^3 for the exact
GP, N D^2 for the kitchen sinks) gets the threads the process started with.

A BLAS thread count is process-wide, and a dashboard serves several sessions from worker
threads at once, so the scopes are reference-counted: the first scope to enter (in any thread)
sets one thread, the last to leave restores what the process had. Overlapping sessions can
therefore neither undo each other's limit nor leave the process limited after they all end.

How the count is set: OpenBLAS (numpy's and scipy's BLAS) ignores ``openblas_set_num_threads``
called from a worker thread once the main thread has called it (OpenBLAS 0.3.31, measured: a
worker's limit then left a 1500 x 1500 product on two threads), which is what threadpoolctl's
``limit`` calls. ``openblas_set_num_threads_local`` is honoured from any thread (and, in this
pthreads build, acts process-wide), so it is used where every loaded BLAS has it; other BLAS
libraries go through threadpoolctl.
"""

from __future__ import annotations

import contextlib
import ctypes
import functools
import threading

import numpy  # noqa: F401  (loads the BLAS libraries the controller must see)
from threadpoolctl import ThreadpoolController

#: work (flops scale) above which one evaluation is worth BLAS threads
THREADED_WORK = 2e7

_lock = threading.Lock()
_state = {"depth": 0, "restore": None}  # open single-threaded scopes; what restores the counts


@functools.lru_cache(maxsize=1)
def blas_controller():
    """Process-wide view of the loaded BLAS libraries (building it scans the process: ~6 ms)."""
    return ThreadpoolController()


@functools.lru_cache(maxsize=1)
def openblas_setters():
    """``openblas_set_num_threads_local`` of every loaded BLAS, or () if any BLAS lacks one."""
    setters = []
    for lib in blas_controller().select(user_api="blas").lib_controllers:
        try:
            setter = ctypes.CDLL(lib.filepath).openblas_set_num_threads_local
        except (OSError, AttributeError):
            return ()
        setter.argtypes, setter.restype = [ctypes.c_int], ctypes.c_int
        setters.append(setter)
    return tuple(setters)


def blas_thread_count():
    """Threads the BLAS libraries would use now (the largest over the loaded libraries)."""
    return max([lib.num_threads for lib in blas_controller().select(user_api="blas").lib_controllers] or [1])


def _set_threads(threads):
    """Set every BLAS to ``threads``; returns a function restoring the previous counts."""
    setters = openblas_setters()
    if setters:
        previous = [set_count(int(threads)) for set_count in setters]

        def restore():
            for set_count, old in zip(setters, previous):
                set_count(old)

        return restore
    return blas_controller().limit(limits=int(threads), user_api="blas").restore_original_limits


def open_scopes():
    """How many single-threaded scopes are open now (in any thread)."""
    return _state["depth"]


@contextlib.contextmanager
def single_threaded():
    """Context: BLAS on one thread inside the block (nested and concurrent scopes share one
    setting; the last one out restores the original counts)."""
    with _lock:
        if _state["depth"] == 0:
            _state["restore"] = _set_threads(1)
        _state["depth"] += 1
    try:
        yield
    finally:
        with _lock:
            _state["depth"] -= 1
            if _state["depth"] == 0:
                _state["restore"]()
                _state["restore"] = None


@contextlib.contextmanager
def _threaded(threads):
    """Context: ``threads`` BLAS threads for one large piece of work, then back to one thread if
    a single-threaded scope is still open (else to what was there before)."""
    with _lock:
        restore = _set_threads(threads)
    try:
        yield
    finally:
        with _lock:
            if _state["depth"] > 0:
                _set_threads(1)
            else:
                restore()


def threads_for(work, threads=None):
    """Context for one piece of work: one BLAS thread below THREADED_WORK; above it ``threads``
    (default: leave the current setting)."""
    if work < THREADED_WORK:
        return single_threaded()
    if threads is None:
        return contextlib.nullcontext()
    return _threaded(threads)
