"""The BLAS-thread policy is scoped and reference-counted: overlapping sessions (worker threads
of a dashboard) neither undo each other's limit nor leave the process limited afterwards, and a
worker thread's limit really applies."""

import threading

import pytest

from gpexplorer import _threads


def _count():
    return _threads.blas_thread_count()


@pytest.fixture
def two_threads():
    # the process's own count, not one set here (a test must not change the process's setting)
    if _count() < 2:
        pytest.skip("BLAS runs one thread in this process (OPENBLAS_NUM_THREADS=1?)")


def _run_two_sessions(scope):
    """Session A enters, B enters, A leaves, B leaves, each on a worker thread; returns what
    this (main) thread and the open-scope counter saw at each step."""
    steps = [threading.Event() for _ in range(4)]
    done = [threading.Event() for _ in range(4)]
    seen = {}

    def session(enter, leave):
        steps[enter].wait(5)
        with scope():
            done[enter].set()
            steps[leave].wait(5)
        done[leave].set()

    workers = [threading.Thread(target=session, args=(0, 2)), threading.Thread(target=session, args=(1, 3))]
    for w in workers:
        w.start()
    for k, name in enumerate(("a_in", "b_in", "a_out", "b_out")):
        steps[k].set()
        done[k].wait(5)
        seen[name] = (_count(), _threads.open_scopes())
    for w in workers:
        w.join(10)
    return seen


def test_nested_scopes_keep_one_thread_until_the_last_leaves(two_threads):
    with _threads.single_threaded():
        assert _count() == 1
        with _threads.single_threaded():
            assert _count() == 1
        assert _count() == 1  # the inner scope did not restore two threads under the outer one
    assert _count() == 2


def test_a_worker_threads_scope_really_limits_blas(two_threads):
    """The limit set from a worker thread takes effect even after the main thread has set and
    restored a count (OpenBLAS ignores its process-wide setter from workers then)."""
    with _threads.single_threaded():
        pass  # the main thread has now set and restored the count explicitly
    inside = {}

    def session():
        with _threads.single_threaded():
            inside["count"] = _count()

    worker = threading.Thread(target=session)
    worker.start()
    worker.join(10)
    assert inside["count"] == 1 and _count() == 2


def test_overlapping_sessions_are_reference_counted(two_threads):
    before = _count()
    seen = _run_two_sessions(_threads.single_threaded)
    assert seen == {"a_in": (1, 1), "b_in": (1, 2), "a_out": (1, 1), "b_out": (before, 0)}
    assert _count() == before


def test_large_work_gets_threads_and_returns_to_one_inside_a_scope(two_threads):
    with _threads.single_threaded():
        with _threads.threads_for(_threads.THREADED_WORK * 10, threads=2):
            assert _count() == 2
        assert _count() == 1
        with _threads.threads_for(10.0):
            assert _count() == 1
    assert _count() == 2
