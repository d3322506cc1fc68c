"""Smoke test of tests/benchmarks/bench_sparse.py on a tiny case: it runs, nothing is timed against a target."""

import importlib.util
import math
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parent / "benchmarks" / "bench_sparse.py"


@pytest.fixture(scope="module")
def bench():
    spec = importlib.util.spec_from_file_location("bench_sparse", BENCH)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


TINY = dict(target_seconds=0.01, min_repeats=2, max_repeats=2)


@pytest.mark.parametrize("approximation", ["vfe", "fitc"])
def test_gpexplorer_measurement_on_tiny_case(bench, approximation):
    out = bench.measure_gpexplorer(50, 5, approximation, **TINY)
    assert out["repeats"] == 2
    for key in ("median_ms", "min_ms", "q1_ms", "q3_ms"):
        assert math.isfinite(out[key]) and out[key] > 0.0
    assert math.isfinite(out["log_marginal_likelihood"])
    fd = out["fd_check"]
    assert fd["passed"], fd
    assert fd["max_rel_err"] < bench.FD_TOL, fd  # at this size the objective is precise enough to resolve it
    assert len(fd["entries"]) == 5


@pytest.mark.parametrize("approximation", ["vfe", "fitc"])
def test_gpy_peer_on_tiny_case(bench, approximation):
    if not bench.gpy_available():
        pytest.skip("GPy is not installed (pip install -e '.[bench]')")
    ours = bench.measure_gpexplorer(50, 5, approximation, fd_check=False, **TINY)
    theirs = bench.measure_gpy(50, 5, approximation, **TINY)
    assert math.isfinite(theirs["median_ms"]) and theirs["median_ms"] > 0.0
    l1, l2 = ours["log_marginal_likelihood"], theirs["log_marginal_likelihood"]
    assert abs(l1 - l2) <= bench.LML_RTOL * abs(l1)


def test_markdown_report_without_gpy(bench):
    cell = {"approximation": "vfe", "N": 50, "M": 5, "target": 15.0,
            "gpexplorer": bench.measure_gpexplorer(50, 5, "vfe", **TINY)}
    results = {"quick": True, "environment": bench.environment(), "cells": [cell], "failures": []}
    text = bench.format_markdown(results)
    assert "| VFE | 50 | 5 |" in text


def test_timing_quartiles_stay_within_the_measured_range(bench):
    """With two very different timings, exclusive quantiles would extrapolate below zero."""
    import time

    durations = iter([0.0, 0.0, 0.0, 0.0, 0.03])  # warm-up x2, sizing call, then two timed calls

    out = bench.time_call(lambda i: time.sleep(next(durations, 0.0)), target_seconds=0.01,
                          min_repeats=2, max_repeats=2)
    assert out["repeats"] == 2
    assert 0.0 < out["min_ms"] <= out["q1_ms"] <= out["median_ms"] <= out["q3_ms"]


# the worker protocol of sparse_peers.py (peers run as processes in their own venvs) ----------


def test_gpexplorer_worker_answers_info_and_eval(bench, tmp_path):
    """A worker in this venv: the same protocol the GPflow and GPyTorch workers speak."""
    import sys

    X, y, Z = bench.make_problem(60, 6)
    data = bench.write_data(tmp_path, "tiny", X, y, Z)
    worker = bench.peers.PeerProcess("gpexplorer", sys.executable, "gpexplorer")
    try:
        assert worker.ask({"kind": "info"})["library"] == "gpexplorer"
        out = worker.ask({"kind": "eval", "data": data, "approximation": "fitc", "repeats": 3})
    finally:
        worker.close()
    assert len(out["times_ms"]) == 3 and all(t > 0.0 for t in out["times_ms"])
    ours = bench.gpexplorer_model(X, y, Z, "fitc").log_marginal_likelihood()
    assert out["log_marginal_likelihood"] == pytest.approx(ours, rel=1e-12)


def test_interleaved_rounds_rotate_and_collect_every_block(bench):
    calls = []
    sides = {name: (lambda repeats, name=name: calls.append(name) or [1.0] * repeats) for name in "abc"}
    times = bench.peers.interleave(sides, rounds=3, block={"a": 1, "b": 2, "c": 3})
    assert calls == ["a", "b", "c", "b", "c", "a", "c", "a", "b"]
    assert {k: len(v) for k, v in times.items()} == {"a": 3, "b": 6, "c": 9}


@pytest.mark.parametrize("peer", ["gpflow", "gpytorch"])
def test_peer_worker_agrees_with_gpexplorer(bench, tmp_path, peer):
    pythons = bench.peer_pythons([peer])
    if peer not in pythons:
        pytest.skip(f"no {peer} venv (see tests/benchmarks/README.md)")
    X, y, Z = bench.make_problem(60, 6)
    data = bench.write_data(tmp_path, "tiny", X, y, Z)
    worker = bench.peers.PeerProcess(peer, pythons[peer], peer)
    try:
        out = worker.ask({"kind": "eval", "data": data, "approximation": "vfe", "repeats": 2})
    finally:
        worker.close()
    ours = bench.gpexplorer_model(X, y, Z, "vfe").log_marginal_likelihood()
    # GPflow adds the same jitter; GPyTorch its own, so only roughly
    assert out["log_marginal_likelihood"] == pytest.approx(ours, rel=1e-9 if peer == "gpflow" else 1e-3)

