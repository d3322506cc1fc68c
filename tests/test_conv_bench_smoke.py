"""Smoke test of tests/benchmarks/bench_convolutional.py: its quick form, our side only (no GPflow),
runs and writes the JSON and CSV with every field its report and the README quote; the first call
with an empty numba cache (a fresh process compiling everything, 10-25 s on two cores) is its own
slow test. Nothing is timed against a target here."""

import csv
import importlib.util
import json
import math
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parent / "benchmarks" / "bench_convolutional.py"


@pytest.fixture(scope="module")
def bench():
    sys.path.insert(0, str(BENCH.parent))
    spec = importlib.util.spec_from_file_location("bench_convolutional", BENCH)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _summary(s, n=None):
    assert s["min"] > 0.0 and s["median"] >= s["min"] and math.isfinite(s["median"]), s
    if n is not None:
        assert s["n"] == n, s


def test_quick_run_of_our_side_writes_every_quoted_field(bench, tmp_path, capsys):
    assert bench.main(["--quick", "--no-gpflow", "--no-first-call", "--out", str(tmp_path)]) == 0
    report = capsys.readouterr().out
    results = json.loads((tmp_path / "conv_bench.json").read_text())
    assert results["quick"] is True and results["gpflow_ran"] is False and results["failures"] == []
    assert len(results["load_average_start"]) == 3 and len(results["load_average_end"]) == 3
    cells = {c["case"]: c for c in results["elbo_cells"]}
    assert set(cells) == set(bench.QUICK_CASES)
    for c in cells.values():
        _summary(c["sides"]["gpexplorer"], c["calls"])
        assert set(c) >= {"N", "P", "M", "batch", "route", "calls", "load_start", "load_end", "target"}
        assert "GPflow" not in c["sides"] and "speedup" not in c
    assert cells["rectangles-3x3-M16"]["route"] == "unique" and cells["rectangles-3x3-M16"]["P"] == 676
    assert cells["mnist01-5x5-M50-B10-N100"]["route"] == "se" and cells["mnist01-5x5-M50-B10-N100"]["P"] == 576
    rect = results["rectangles"]
    fit = rect["fit"]
    assert fit["seconds"] > 0.0 and 0.0 <= fit["test_error"] <= 1.0 and math.isfinite(fit["elbo"])
    assert 0.0 < fit["trace_elbo_s"] < fit["seconds"] and fit["trace_elbo_calls"] >= 2
    assert fit["met"] is None and fit["target_s"] is None  # quick: not assessed
    _summary(rect["predict"]["sides"]["gpexplorer"], rect["predict"]["calls"])
    move = rect["lab_move"]
    for side in ("move", "move after a hyperparameter change"):
        _summary(move["sides"][side], move["calls"])
    _summary(move["parts_ms"]["elbo_ms"], move["calls"])
    _summary(move["parts_ms"]["predict_ms"], move["calls"])
    assert move["N"] == 1200 and move["M"] == 16
    digit = results["digit"]
    _summary(digit["classify"])
    assert 0.0 <= digit["test_error"] <= 1.0
    with open(tmp_path / "conv_bench.csv") as f:
        rows = list(csv.DictReader(f))
    assert tuple(rows[0]) == bench.CSV_COLUMNS
    sections = {r["section"] for r in rows}
    assert sections == {"elbo+gradient", "fit", "predict", "lab"}
    assert all(float(r["min_ms"]) > 0.0 and r["load_start"] != "" for r in rows)
    for header in ("### ELBO + gradient", "### Rectangles and the lab", "Targets missed: none."):
        assert header in report
    assert "| rectangles-3x3-M16 | 1200 | 676 | 16 | 100 | unique | 2 |" in report


@pytest.mark.slow
def test_first_call_with_an_empty_numba_cache_reports_its_stages(bench):
    results = {"rows": []}
    case = bench.CASES["rectangles-3x3-M16"][0]
    out = bench.parts.first_call_section(results, {"rectangles-3x3-M16": case})["rectangles-3x3-M16"]
    assert "error" not in out, out.get("error")
    for key in ("import_s", "model_s", "first_call_s", "second_call_s", "process_wall_s"):
        assert out[key] > 0.0, key
    assert out["second_call_s"] < out["first_call_s"] and out["numba_cache_files_written"] > 0
    assert results["rows"][0]["section"] == "first call (empty numba cache)"
