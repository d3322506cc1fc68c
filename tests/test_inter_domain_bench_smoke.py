"""Smoke test of tests/benchmarks/bench_inter_domain.py (issue 15's performance benchmark): its quick
mode runs, its tables are well formed and every number is finite; nothing is timed against a target.

GPflow is an optional peer in its own venv (tests/benchmarks/README.md): its part is skipped where
the venv is missing, as in test_bench_smoke.py. The width conversion is checked without GPflow.
"""

import importlib.util
import json
import math
import re
import sys
from pathlib import Path

import numpy as np
import pytest

BENCHMARKS = Path(__file__).resolve().parent / "benchmarks"


def _load(name):
    if str(BENCHMARKS) not in sys.path:
        sys.path.insert(0, str(BENCHMARKS))
    spec = importlib.util.spec_from_file_location(name, BENCHMARKS / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def bench():
    return _load("bench_inter_domain")


def _table_rows(text, first_cell):
    """Rows of the markdown table whose first cell is ``first_cell``, as lists of cells."""
    return [[c.strip() for c in line.strip().strip("|").split("|")] for line in text.splitlines()
            if line.startswith(f"| {first_cell} |")]


def _number(cell):
    return float(re.match(r"[-+0-9.e]+", cell).group(0))


def test_quick_run_without_gpflow(bench, tmp_path, capsys):
    out = tmp_path / "out.json"
    assert bench.main(["--quick", "--no-gpflow", "--json", str(out)]) == 0
    text = capsys.readouterr().out
    results = json.loads(out.read_text())
    assert results["gpflow"] == [] and results["failures"] == []
    assert len(results["load_average_start"]) == 3 and len(results["load_average_end"]) == 3
    assert "Load average (1/5/15 min) at start" in text
    names = {"inducing points", "multiscale", "time-frequency", "frequency"} | {
        f"sum of deltas, C = {C}" for C in bench.C_VALUES}
    for approximation in bench.APPROXIMATIONS:
        rows = [r for r in results["features"] if r["approximation"] == approximation]
        assert {r["feature"] for r in rows} == names
        for r in rows:
            assert math.isfinite(r["min_ms"]) and 0.0 < r["min_ms"] <= r["median_ms"]
            assert math.isfinite(r["ratio"]) and r["ratio"] > 0.0
            assert math.isfinite(r["log_marginal_likelihood"])
            assert r["met"] is None  # quick mode does not assess the targets
        assert [r["ratio"] for r in rows if r["feature"] == "inducing points"] == [1.0]
        table = _table_rows(text, approximation.upper())
        assert len(table) == len(names)
        for cells in table:
            assert len(cells) == 10
            N, M = int(cells[2]), int(cells[3])
            assert (N, M) == bench.QUICK_FEATURE_SIZE
            assert math.isfinite(_number(cells[5])) and cells[6].endswith("x") and math.isfinite(_number(cells[6]))


def test_gpflow_width_conversion_round_trips():
    idp = _load("inter_domain_peers")
    delta = np.array([[0.05], [0.3], [2.0]])
    s = idp.gpflow_scales(delta, 0.5)
    assert np.all(s > 0)
    np.testing.assert_allclose(idp.delta_from_scales(s, 0.5), delta, rtol=1e-14)
    np.testing.assert_allclose((0.5 + s) ** 2, 0.5 ** 2 + delta ** 2, rtol=1e-14)  # GPflow's (l + s)^2 = l^2 + delta^2


def test_quick_run_against_gpflow(bench, capsys):
    python = bench.peer_pythons(["gpflow"]).get("gpflow")
    if python is None:
        pytest.skip("no GPflow 2.11 venv (optional peer, see tests/benchmarks/README.md)")
    results = bench.run(quick=True, log=lambda *a, **k: None, with_features=False)
    assert results["failures"] == []
    cells = results["gpflow"]
    assert [(c["approximation"], c["N"], c["M"]) for c in cells] == [("vfe", 200, 10)]
    for c in cells:
        assert c["value_rel_diff"] <= bench.VALUE_RTOL and c["points_value_rel_diff"] <= bench.VALUE_RTOL
        assert c["gradient_agree"], c["gradient_scaled_diff"]
        for side in c["sides"].values():
            assert math.isfinite(side["min"]) and side["min"] > 0.0
        assert math.isfinite(c["speedup"]) and c["speedup"] > 0.0
    text = bench.format_markdown(results)
    rows = _table_rows(text, "VFE")
    assert any(len(cells) == 13 and cells[1] == "200" for cells in rows)
