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


@pytest.mark.parametrize("approximation", ["vfe", "fitc"])
def test_gpexplorer_check_on_tiny_case(bench, approximation):
    out = bench.check_gpexplorer(50, 5, approximation)
    assert math.isfinite(out["log_marginal_likelihood"])
    fd = out["fd_check"]
    assert fd["passed"], fd
    assert fd["max_rel_err"] < bench.FD_TOL, fd  # at this size the objective is precise enough to resolve it
    assert len(fd["entries"]) == 5


@pytest.mark.parametrize("approximation", ["vfe", "fitc"])
def test_cell_gives_every_side_the_same_calls(bench, tmp_path, approximation):
    """gpexplorer, GPy (where installed) and the GEMM reference in one cell: equal calls, alternating."""
    with_gpy = bench.gpy_available()
    cell = bench.compare_cell({}, 50, 5, approximation, str(tmp_path), calls=3, with_gpy=with_gpy, gemm=True)
    expected = {"gpexplorer", "gemm"} | ({"gpy"} if with_gpy else set())
    assert set(cell["sides"]) == expected and cell["calls"] == 3
    for side in cell["sides"].values():
        assert side["n"] == 3 and 0.0 < side["min"] <= side["median"]
    assert cell["gemm"]["gflops"] > 0.0
    lml = cell["log_marginal_likelihood"]
    assert math.isfinite(lml["gpexplorer"])
    if with_gpy:
        assert abs(lml["gpexplorer"] - lml["gpy"]) <= bench.LML_RTOL * abs(lml["gpexplorer"])


def test_markdown_report_without_gpy(bench, tmp_path):
    cell = {"approximation": "vfe", "N": 50, "M": 5, "target": 15.0,
            "gpexplorer": bench.check_gpexplorer(50, 5, "vfe"),
            "compare": bench.compare_cell({}, 50, 5, "vfe", str(tmp_path), calls=2)}
    results = {"quick": True, "environment": bench.environment(), "cells": [cell], "failures": []}
    text = bench.format_markdown(results)
    assert "| VFE | 50 | 5 |" in text


# the timing helper (equal_timing.py): the same number of single calls per side, alternating --------


def test_alternate_gives_every_side_the_same_calls_in_turn(bench):
    calls = []
    sides = {name: (lambda i, name=name: calls.append((name, i)) or 1.0) for name in "abc"}
    times = bench.equal_timing.alternate(sides, 3, warmup=1)
    assert calls[:3] == [("a", -1), ("b", -1), ("c", -1)]  # warm-up, untimed
    assert calls[3:] == [(n, k) for k in range(3) for n in "abc"]  # a, b, c, a, b, c, ...
    assert {k: len(v) for k, v in times.items()} == {"a": 3, "b": 3, "c": 3}


def test_calls_do_not_depend_on_which_side_is_faster(bench):
    """The count comes from the sum of the probes: a 100x faster side gets no more calls."""
    n = bench.equal_timing.calls_for({"fast": 0.1, "slow": 10.0}, budget_seconds=1.0, lo=2, hi=1000)
    assert n == 99
    out = bench.equal_timing.compare({"fast": lambda i: 0.1, "slow": lambda i: 10.0}, calls=4)
    assert out["sides"]["fast"]["n"] == out["sides"]["slow"]["n"] == 4
    r = bench.equal_timing.ratios(out["times"], "slow", "fast")
    assert r["min"] == r["median"] == r["paired_median"] == pytest.approx(100.0)


# the worker protocol of sparse_peers.py (peers run as processes in their own venvs) ----------


def test_gpexplorer_worker_answers_info_and_eval(bench, tmp_path):
    """A worker in this venv: the same protocol the GPflow and GPyTorch workers speak."""
    import sys

    X, y, Z = bench.make_problem(60, 6)
    data = bench.write_data(tmp_path, "tiny", X, y, Z)
    worker = bench.peers.PeerProcess("gpexplorer", sys.executable, "gpexplorer")
    try:
        assert worker.ask({"kind": "info"})["library"] == "gpexplorer"
        out = worker.ask({"kind": "eval", "data": data, "approximation": "fitc", "repeats": 3, "start": 7})
    finally:
        worker.close()
    assert len(out["times_ms"]) == 3 and all(t > 0.0 for t in out["times_ms"])
    ours = bench.gpexplorer_model(X, y, Z, "fitc").log_marginal_likelihood()
    assert out["log_marginal_likelihood"] == pytest.approx(ours, rel=1e-12)


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

