"""``gpexplorer warmup`` compiles what the labs use, and the pages wait for a warm-up under way."""

import json
import os
import subprocess
import sys
import time

import pytest

from gpexplorer.ui import warmup

# drives the three labs through what a first lesson does, counting numba compilations (cache loads
# do not fire numba's "numba:compile" event; a compilation does)
LAB_WORKOUT = r"""
import json, sys
from numba.core import event
compiled = []
class Count(event.Listener):
    def on_start(self, ev):
        compiled.append(ev.data["dispatcher"].py_func.__qualname__)
    def on_end(self, ev):
        pass
event.register("numba:compile", Count())
from gpexplorer.ui import LinearizedLab, SparseRegressionLab
def finish(lab):
    lab.job.join(300)
    lab.poll_job()
    return lab.job.state
lab = SparseRegressionLab()
lab.settings.max_iter = 20
lab.start_fit()
states = [finish(lab)]
lab.settings.sweep_max_M = 5
lab.start_sweep()
states.append(finish(lab))
for kernel in ("matern32", "periodic", "rq"):
    lab.settings.kernel = kernel
lab.settings.kernel = "se"
from gpexplorer.inducing import FEATURES
for feature in [f for f in ("multiscale", "frequency", "time-frequency", "sum-of-deltas") if f in FEATURES]:
    lab.settings.feature = feature
    lab.view_tab = "position"
    lab.settings.max_iter = 5
    lab.start_fit()
    states.append(finish(lab))
lin = LinearizedLab()
lin.settings.max_evals = 8
lin.start_learning()
states.append(finish(lin))
lin.settings.forward = "tanh2"
from gpexplorer.ui import BlackBoxLab
def settle(lab):  # a setting change cancels the running fit and queues the next: poll until idle
    while lab.job is not None and lab.job.state == "running":
        lab.job.join(300)
        lab.poll_job()
    lab.poll_job()
    return lab.job.state
box = BlackBoxLab()
settle(box)
box.settings.param.update(dataset="toy_binary", rounds=1, evals_per_block=4)
states.append(settle(box))
box.settings.estimator = "quadrature"
states.append(settle(box))
print(json.dumps({"compiled": compiled, "states": states}))
"""


def _env(cache):
    return {**os.environ, "NUMBA_CACHE_DIR": str(cache), "PYTHONWARNINGS": "ignore"}


@pytest.mark.slow
def test_after_a_warmup_the_labs_compile_nothing(tmp_path):
    cold = subprocess.run([sys.executable, "-c", LAB_WORKOUT], env=_env(tmp_path / "cold"), capture_output=True,
                          text=True, timeout=600)
    assert cold.returncode == 0, cold.stderr[-2000:]
    cold_run = json.loads(cold.stdout.strip().splitlines()[-1])
    assert cold_run["compiled"], "an empty cache must compile: the workout would prove nothing"

    done = subprocess.run([sys.executable, "-m", "gpexplorer.cli", "warmup"], env=_env(tmp_path / "warm"),
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "[{0}/{0}]".format(len(warmup.WORKLOADS)) in done.stdout and "done in" in done.stdout
    warm = subprocess.run([sys.executable, "-c", LAB_WORKOUT], env=_env(tmp_path / "warm"), capture_output=True,
                          text=True, timeout=600)
    assert warm.returncode == 0, warm.stderr[-2000:]
    warm_run = json.loads(warm.stdout.strip().splitlines()[-1])
    assert warm_run["states"] == cold_run["states"] and set(cold_run["states"]) == {"done"}
    assert warm_run["compiled"] == [], f"the warm-up missed {sorted(set(warm_run['compiled']))}"


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setattr(warmup, "cache_dir", lambda: tmp_path)
    return tmp_path


def test_a_finished_warmup_leaves_its_marker_and_progress(cache, monkeypatch):
    monkeypatch.setattr(warmup, "WORKLOADS", {"a": lambda: None, "b": lambda: None})
    assert not warmup.is_warm() and warmup.progress() is None
    warmup.main(workers=1, quiet=True)
    assert warmup.is_warm()
    assert warmup.progress() == {"done": 2, "total": 2, "finished": True, "error": None}


def test_a_failed_warmup_reports_its_error_and_is_not_warm(cache, monkeypatch):
    def broken():
        raise RuntimeError("no compiler")

    monkeypatch.setattr(warmup, "WORKLOADS", {"broken": broken})
    with pytest.raises(RuntimeError):
        warmup.main(workers=1, quiet=True)
    assert not warmup.is_warm()
    state = warmup.progress()
    assert state["finished"] and "no compiler" in state["error"]


def test_a_warmup_that_died_is_not_waited_for(cache):
    """Under way while a process holds the warm-up lock; not the instant it lets go (the kernel
    releases a dead process's lock), however fresh its progress file (issue 24 defect 10)."""
    (cache / warmup.PROGRESS_FILE).write_text(json.dumps({"done": 1, "total": 5, "finished": False, "error": None}))
    assert warmup.progress() is None  # a fresh progress file and no warm-up holding the lock
    fd = warmup.take_lock()
    assert fd is not None and warmup.lock_held() and warmup.progress()["done"] == 1
    warmup.release_lock(fd)
    assert warmup.lock_held() is False and warmup.progress() is None


def test_without_locks_a_stale_progress_file_means_a_dead_warmup(cache, monkeypatch):
    monkeypatch.setattr(warmup, "fcntl", None)
    (cache / warmup.PROGRESS_FILE).write_text(json.dumps({"done": 1, "total": 5, "finished": False, "error": None}))
    assert warmup.progress()["done"] == 1
    old = time.time() - warmup.STALE_SECONDS - 5
    os.utime(cache / warmup.PROGRESS_FILE, (old, old))
    assert warmup.progress() is None


def test_serve_does_not_start_a_second_warmup(cache, monkeypatch):
    started = []

    def child(*args, pass_fds=(), **kwargs):  # keeps a copy of the handed-over lock, as the child does
        started.append([os.dup(fd) for fd in pass_fds])
        return object()

    monkeypatch.setattr(warmup.subprocess, "Popen", child)
    assert warmup.start_in_background() is not None
    assert warmup.lock_held()  # handed over: held by the "child" alone
    assert warmup.start_in_background() is None  # the first one holds the lock: it is under way
    for fd in started[0]:
        os.close(fd)  # the child ends
    (cache / warmup.MARKER).write_text("1")
    (cache / warmup.PROGRESS_FILE).unlink()
    assert warmup.start_in_background() is None  # warm already
    assert len(started) == 1


def test_pages_wait_for_a_warmup_under_way_and_build_when_it_ends(cache):
    import panel as pn
    from bokeh.document import Document

    from gpexplorer.ui import preparing

    lock = warmup.take_lock()  # a warm-up under way holds it
    warmup._write_progress(done=2, total=5, finished=False, error=None)
    sidebar, main = pn.Column(), pn.Column()
    built = []
    doc = Document()
    with pn.io.server.set_curdoc(doc):
        callback = preparing.when_warm(lambda: built.append(1) or (["controls"], ["views"]), [sidebar, main])
        assert callback is not None and not built
        assert "Preparing (first run only)" in main.objects[0].object and "2 of 5" in main.objects[0].object
        warmup._write_progress(done=5, total=5, finished=True, error=None)
        warmup.release_lock(lock)
        callback.callback()  # one poll
    assert built == [1]
    assert [o.object for o in sidebar.objects] == ["controls"] and [o.object for o in main.objects] == ["views"]
