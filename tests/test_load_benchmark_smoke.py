"""Smoke run of tests/benchmarks/classroom_load.py with 2 sessions: the script runs end to end
against a real ``gpexplorer serve`` and its figures are well formed; nothing is timed against a
target (that is the benchmark's job, on a quiet machine)."""

import concurrent.futures
import importlib.util
import math
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parent / "benchmarks" / "classroom_load.py"


def _in_thread(fn, *args):
    """The benchmark calls ``asyncio.run``, refused on a thread where an event loop runs (Playwright's)."""
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        return pool.submit(fn, *args).result()


@pytest.fixture(scope="module")
def bench():
    spec = importlib.util.spec_from_file_location("classroom_load", BENCH)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_two_sessions_get_their_new_plot_data_and_memory_is_read(bench, tmp_path):
    args = bench.parse_args(["--sessions", "2", "--rounds", "2", "--after-seconds", "0", "--quiet", "0.5",
                             "--log-dir", str(tmp_path)])
    results = _in_thread(bench.run, args)
    assert results["errors"] == [], results["errors"]
    assert [r["n"] for r in results["rounds"]] == [2, 2]  # every session saw its plot source change, each round
    assert len(results["latencies_s"]) == 4 and all(0 < t < args.timeout for t in results["latencies_s"])
    for key in ("memory_idle", "memory_before", "memory_open", "memory_after"):
        assert results[key]["rss_mb"] > 50 and results[key]["processes"] >= 1, key
    assert results["memory_peak_rss_mb"] >= results["memory_before"]["rss_mb"] * 0.9
    results["after_seconds"] = 0
    table = bench.format_table(results)
    assert "Bokeh websocket protocol sessions" in table and "p95" in table
    assert math.isfinite(bench.overall(results)["p95"])


def test_a_session_that_gets_no_update_counts_as_an_error(bench, tmp_path):
    """A source name that never changes: every move times out and is reported, not lost."""
    args = bench.parse_args(["--sessions", "1", "--rounds", "1", "--after-seconds", "0", "--quiet", "0.5",
                             "--source", "data", "--timeout", "3", "--log-dir", str(tmp_path)])
    results = _in_thread(bench.run, args)
    assert results["rounds"][0]["n"] == 0 and results["rounds"][0]["errors"] == 1
    assert any("no new plot data within 3.0 s" in e for e in results["errors"])


def test_prepared_sessions_open_from_the_pool_and_get_their_new_plot_data(bench, tmp_path):
    """``--prepare 2``: the server reports its pool full before the sessions open, both sessions
    come from it with the serialisation made ahead, and each gets its own update."""
    args = bench.parse_args(["--sessions", "2", "--rounds", "1", "--after-seconds", "0", "--quiet", "0.5",
                             "--prepare", "2", "--log-dir", str(tmp_path)])
    results = _in_thread(bench.run, args)
    assert results["errors"] == [], results["errors"]
    assert results["prepared"] == 2 and results["rounds"][0]["n"] == 2
    log = next(tmp_path.glob("classroom-serve-*.log")).read_text()
    assert log.count("of /sparse_regression from its prepared pool") == 3  # the warm-up session and the two
    assert "serialising it again" not in log
    assert "prepared sessions per process: 2" in bench.format_table({**results, "after_seconds": 0})
