"""A killed warm-up does not stall the next server (issue 24 defect 10).

On an empty numba cache ``gpexplorer serve`` starts a warm-up in the background. Killed with its
server (SIGKILL, workers included), it used to leave a progress file saying "under way" that the
next server believed for five minutes (until the file was 300 s old): no new warm-up started and
every page showed "Preparing (first run only)". The warm-up now holds a ``flock`` for its whole
life, which the kernel drops the moment the process dies, and "under way" means "that lock is
held". Both tests use a cache directory of their own (``NUMBA_CACHE_DIR`` in a temporary folder).
"""

from __future__ import annotations

import os
import pathlib
import signal
import subprocess
import sys
import time

import pytest

from gpexplorer.ui import warmup
from gpexplorer.ui import preparing

HOLDER = """
import sys, time
from gpexplorer.ui import warmup
fd = warmup.take_lock()
warmup._write_progress(done=1, total=7, finished=False, error=None)
print("held" if fd is not None and fd >= 0 else "not held", flush=True)
time.sleep(120)
"""


@pytest.fixture
def empty_cache(tmp_path, monkeypatch):
    """An empty numba cache for this test and every process it starts; yields the folder the
    warm-up fills (the one ``warmup.cache_dir()`` names in those processes)."""
    base = tmp_path / "numba"
    monkeypatch.setenv("NUMBA_CACHE_DIR", str(base))
    folder = subprocess.run([sys.executable, "-c", "from gpexplorer.ui import warmup; print(warmup.cache_dir())"],
                            capture_output=True, text=True, check=True, timeout=120).stdout.strip()
    folder = pathlib.Path(folder)
    assert folder.is_dir() and folder.parent == base
    monkeypatch.setattr(warmup, "cache_dir", lambda: folder)
    assert not warmup.is_warm() and warmup.progress() is None
    return folder


def _group_members(pgid):
    """Live processes of the group (a killed worker stays a zombie until init reaps it)."""
    members = []
    for entry in pathlib.Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if fields[0] != "Z" and int(fields[2]) == pgid:
                members.append(int(entry.name))
    return members


def _kill_group(process):
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    process.wait(timeout=30)


@pytest.mark.skipif(warmup.fcntl is None, reason="no flock on this system: the progress file's age decides")
def test_a_killed_holder_of_the_lock_is_not_waited_for(empty_cache):
    holder = subprocess.Popen([sys.executable, "-c", HOLDER], stdout=subprocess.PIPE, text=True,
                              start_new_session=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        assert warmup.lock_held() and preparing.warmup_under_way()
        assert warmup.progress()["done"] == 1
        assert warmup.start_in_background() is None  # a live warm-up holds the lock: no second one
    finally:
        _kill_group(holder)
    killed = time.monotonic()
    assert not warmup.lock_held() and not preparing.warmup_under_way() and warmup.progress() is None
    assert time.monotonic() - killed < 1.0


@pytest.mark.slow
@pytest.mark.skipif(warmup.fcntl is None, reason="no flock on this system: the progress file's age decides")
@pytest.mark.skipif(not pathlib.Path("/proc").is_dir(), reason="counts the warm-up's workers in /proc")
def test_a_warmup_killed_with_its_workers_is_replaced_at_once(empty_cache):
    """The real background warm-up, killed (SIGKILL, with its worker processes) while it compiles:
    the next start begins a new warm-up at once, which holds the lock and makes progress."""
    first = warmup.start_in_background()
    assert first is not None
    second = None
    try:
        assert warmup.lock_held() and preparing.warmup_under_way()  # from the first instant
        deadline = time.monotonic() + 60
        while len(_group_members(first.pid)) < 2:  # its worker processes are compiling
            assert first.poll() is None and time.monotonic() < deadline, "the warm-up started no workers"
            time.sleep(0.2)
        time.sleep(3.0)
        assert warmup.progress() is not None and not warmup.progress()["finished"]
        _kill_group(first)
        killed = time.monotonic()
        deadline = killed + 10
        while _group_members(first.pid):  # the workers are gone too
            assert time.monotonic() < deadline
            time.sleep(0.05)
        gone = time.monotonic()
        assert not preparing.warmup_under_way() and warmup.progress() is None
        second = warmup.start_in_background()
        restarted = time.monotonic() - gone
        assert second is not None, "no new warm-up started after the first one was killed"
        assert restarted < 1.0, f"a new warm-up started only {restarted:.1f} s after the kill"
        assert warmup.lock_held() and preparing.warmup_under_way()
        time.sleep(2.0)
        assert second.poll() is None and warmup.lock_held()  # the new one is warming
    finally:
        _kill_group(first)
        if second is not None:
            _kill_group(second)
