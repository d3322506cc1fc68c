"""Smoke run of tests/benchmarks/feature_latency.py (issue 15): its quick mode, one feature type,
2 repetitions, against a real ``gpexplorer serve`` in Chromium; the table is well formed. Nothing
is timed against the target (that is the benchmark's job, on a quiet machine)."""

import json
import math
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.browser

ROOT = Path(__file__).resolve().parents[2]
BENCH = ROOT / "tests" / "benchmarks" / "feature_latency.py"
COLUMNS = ["feature", "M", "action", "n", "median (ms)", "p90 (ms)", "all updates, median (ms)", "median < 150 ms"]


@pytest.fixture(scope="module")
def chromium(browser_type_launch_args):
    """Debian's Chromium as conftest.py finds it (skipped locally, failed in CI, when missing)."""
    return browser_type_launch_args["executable_path"]


def _cells(line):
    return [cell.strip() for cell in line.strip().strip("|").split("|")]


def test_quick_run_for_multiscale_features_prints_a_well_formed_table(chromium, tmp_path):
    out = tmp_path / "feature-latency.json"
    # a process of its own: the script runs Playwright's sync API, and pytest-playwright may hold an
    # event loop in this one
    run = subprocess.run([sys.executable, str(BENCH), "--quick", "--feature", "multiscale", "--reps", "2",
                          "--json", str(out), "--chromium", chromium],
                         cwd=ROOT, capture_output=True, text=True, timeout=240)
    assert run.returncode == 0, run.stdout[-4000:] + run.stderr[-4000:]
    report = json.loads(out.read_text())
    assert report["problems"] == []
    assert report["markdown"] in run.stdout

    lines = report["markdown"].splitlines()
    header = next(i for i, line in enumerate(lines) if line.startswith("| feature |"))
    assert _cells(lines[header]) == COLUMNS
    assert _cells(lines[header + 1]) == ["---"] * len(COLUMNS)
    rows = [_cells(line) for line in lines[header + 2:] if line.startswith("|")]
    assert [row[2] for row in rows] == ["noise slider", "Feature width slider", "drag of a centre"]
    for row in rows:
        assert len(row) == len(COLUMNS)
        assert row[:2] == ["multiscale", "15"] and row[3] == "2"
        median, p90, everything = (float(v) for v in row[4:7])
        assert 0 < median <= p90 < 60_000 and everything >= median - 1  # all updates: no earlier than the mean
        assert row[7] in ("yes", "**no**")
    for row in report["rows"]:
        assert row["n"] == 2 and math.isfinite(row["median_ms"]) and row["met"] == (row["median_ms"] < 150)
    assert "load average" in report["markdown"] and len(report["load_start"]) == 3
