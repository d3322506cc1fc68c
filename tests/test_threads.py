"""The BLAS-thread policy is scoped: overlapping scopes (several dashboard sessions on worker
threads) neither undo each other's limit nor leave the process limited afterwards."""

import threading

import pytest

from gpexplorer import _threads


def _count():
    return _threads.blas_thread_count()


@pytest.fixture
def two_threads():
    # the process's own count, not one set here: OpenBLAS ignores a later limit set from a worker
    # thread once the main thread has set a count explicitly, which is not how a page runs
    if _count() < 2:
        pytest.skip("BLAS runs one thread in this process (OPENBLAS_NUM_THREADS=1?)")
    yield


def test_nested_scopes_keep_one_thread_until_the_last_leaves(two_threads):
    with _threads.single_threaded():
        assert _count() == 1
        with _threads.single_threaded():
            assert _count() == 1
        assert _count() == 1  # the inner scope did not restore two threads under the outer one
    assert _count() == 2


def test_interleaved_scopes_of_two_sessions(two_threads):
    """Session A enters, B enters, A leaves, B leaves (each on its own worker thread): B's scope
    stays open when A leaves, and after both the original count is back. (What OpenBLAS reports
    for a limit set in another thread depends on its version, so the scopes are counted.)"""
    before = _count()
    steps = [threading.Event() for _ in range(4)]
    done = [threading.Event() for _ in range(4)]
    seen = {}

    def session(enter, leave):
        steps[enter].wait(5)
        with _threads.single_threaded():
            done[enter].set()
            steps[leave].wait(5)
        done[leave].set()

    workers = [threading.Thread(target=session, args=(0, 2)), threading.Thread(target=session, args=(1, 3))]
    for w in workers:
        w.start()
    for k, name in enumerate(("a_in", "b_in", "a_out", "b_out")):
        steps[k].set()
        done[k].wait(5)
        seen[name] = _threads.open_scopes()
    for w in workers:
        w.join(10)
    assert seen == {"a_in": 1, "b_in": 2, "a_out": 1, "b_out": 0}
    assert _count() == before


def test_large_work_gets_threads_and_returns_to_one_inside_a_scope(two_threads):
    with _threads.single_threaded():
        with _threads.threads_for(_threads.THREADED_WORK * 10, threads=2):
            assert _count() == 2
        assert _count() == 1
        with _threads.threads_for(10.0):
            assert _count() == 1
    assert _count() == 2
