"""The one BLAS-thread policy: always scoped (a context manager), never set globally.

On a shared 2-core machine OpenBLAS threads cost milliseconds per small call (measured: a
16 x 16 triangular solve with 40 right-hand sides took 3 ms with 2 threads under load, 0.08 ms
with 1; 1000 FITC iterations on Snelson 6.9 s against 0.63 s). So small work runs on one thread
and only work above :data:`THREADED_WORK` flops (N M^2 for a sparse objective, N D^2 for the
kitchen sinks) gets the threads the process started with. Nothing here changes a setting outside
the ``with`` block, so one browser session cannot change another's.
"""

from __future__ import annotations

import contextlib
import functools

from threadpoolctl import ThreadpoolController

#: work (flops scale) above which one evaluation is worth BLAS threads
THREADED_WORK = 2e7


@functools.lru_cache(maxsize=1)
def blas_controller():
    """Process-wide view of the loaded BLAS libraries (building it scans the process: ~6 ms)."""
    return ThreadpoolController()


def blas_thread_count():
    """Threads the BLAS libraries would use now (the largest over the loaded libraries)."""
    return max([lib.num_threads for lib in blas_controller().select(user_api="blas").lib_controllers] or [1])


def single_threaded():
    """Context: BLAS on one thread inside the block, restored on exit."""
    return blas_controller().limit(limits=1, user_api="blas")


def threads_for(work, threads=None):
    """Context for one piece of work: one BLAS thread below THREADED_WORK, else ``threads``
    (default: leave the current setting)."""
    if work < THREADED_WORK:
        return single_threaded()
    if threads is None:
        return contextlib.nullcontext()
    return blas_controller().limit(limits=threads, user_api="blas")
