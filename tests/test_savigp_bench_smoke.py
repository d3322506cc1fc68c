"""Smoke test of tests/benchmarks/bench_savigp.py on a tiny case: it runs and its tables are well
formed; nothing is timed against a target. GPflow's part is skipped where its venv is missing."""

import importlib.util
import math
import sys
from pathlib import Path

import numpy as np
import pytest

BENCH = Path(__file__).resolve().parent / "benchmarks" / "bench_savigp.py"
TINY = dict(rounds=1, block_seconds=0.005)


@pytest.fixture(scope="module")
def bench():
    sys.path.insert(0, str(BENCH.parent))
    spec = importlib.util.spec_from_file_location("bench_savigp", BENCH)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _table_rows(text, header_start):
    """The rows of the markdown table whose header line starts with ``header_start``."""
    lines = text.splitlines()
    i = next(k for k, line in enumerate(lines) if line.startswith(header_start))
    header, rule = lines[i], lines[i + 1]
    rows = []
    for line in lines[i + 2:]:
        if not line.startswith("|"):
            break
        rows.append(line)
    width = header.count("|")
    assert rule.count("|") == width and all(set(c) <= set("-:") for c in rule.strip("|").split("|"))
    assert all(r.count("|") == width for r in rows), (header, rows)
    return rows


def test_problem_and_posterior_are_set_exactly(bench):
    p = bench.make_problem(40, 5)
    assert set(np.unique(p["Y"])) <= {0.0, 1.0} and p["Z"].shape == (5, bench.D)
    model = bench.gpexplorer_model(p)
    post = model.posterior
    np.testing.assert_array_equal(post.means[0][0], p["m"])
    np.testing.assert_allclose(post.factor(0), p["L"], rtol=1e-14, atol=0.0)
    value, grads = model.elbo(eval_gradient=True)
    assert math.isfinite(value) and set(grads) >= {"posterior", "kernel0.variance", "kernel0.lengthscale", "feature0.Z"}


def test_gpexplorer_cells_and_score_section_on_tiny_case(bench):
    """The gpexplorer part never skips: timing, the profile, the score split and the table."""
    with bench.threadpool_limits(limits=1):
        cell = bench.local_only(40, 5, **TINY)
        prof = bench.profile_quadrature(40, 5, calls=3)
        score = bench.score_section(40, 5, 50, calls=2, **TINY)
    assert cell["sides"]["gpexplorer"]["min"] > 0.0 and math.isfinite(cell["elbo"])
    assert sum(q["share"] for q in prof["parts"] if not q["part"].startswith("  ")) == pytest.approx(1.0)
    top_level = [q for q in score["split"] if not q["part"].startswith("  ")]
    assert sum(q["share"] for q in top_level) == pytest.approx(1.0)
    assert 0.0 < score["likelihood_share"] < 1.0 and score["time"]["min"] > 0.0
    results = {"quick": True, "rounds": 1, "block_seconds": 0.005, "environment": bench.bench_sparse.environment(),
               "load_average_start": [0.0, 0.0, 0.0], "load_average_end": [0.0, 0.0, 0.0], "gpflow_ran": False,
               "cells": [cell], "profile": prof, "score": score, "failures": []}
    text = bench.format_markdown(results)
    rows = _table_rows(text, "| N | M | D |")
    assert len(rows) == 1 and rows[0].startswith("| 40 | 5 | 2 | 20 |")
    assert len(_table_rows(text, "| part |")) == len(prof["parts"])
    assert "S = 50" in text and "Targets missed: none." in text


def test_gpflow_agrees_with_gpexplorer_on_tiny_case(bench, tmp_path):
    python = bench.peer_pythons(["gpflow"]).get("gpflow")
    if python is None:
        pytest.skip("no GPflow venv (see tests/benchmarks/README.md; $GPFLOW_PYTHON)")
    worker = bench.savigp_peers.SVGPPeer("gpflow", python)
    try:
        with bench.threadpool_limits(limits=1):
            cell = bench.compare_gpflow(worker, 60, 6, 3.0, 1, 0.005, str(tmp_path))
    finally:
        worker.close()
    assert cell["value_agree"], cell
    assert cell["value_rel_diff"] <= bench.VALUE_RTOL
    assert cell["gradient_agree"], cell["gradient_scaled_diff"]
    assert cell["terms"]["ell"] == pytest.approx(cell["terms"]["gpflow_var_exp"], rel=1e-8)
    assert cell["terms"]["minus_kl"] == pytest.approx(cell["terms"]["gpflow_minus_kl"], rel=1e-8, abs=1e-9)
    results = {"quick": True, "rounds": 1, "block_seconds": 0.005, "environment": bench.bench_sparse.environment(),
               "load_average_start": None, "load_average_end": None, "gpflow_ran": True,
               "gpflow_info": {"version": "2.11"}, "cells": [cell],
               "score": bench.score_section(40, 5, 20, calls=2, **TINY), "failures": []}
    rows = _table_rows(bench.format_markdown(results), "| N | M | D |")
    assert len(rows) == 1 and rows[0].startswith("| 60 | 6 | 2 | 20 |") and ">= 3x" in rows[0]
