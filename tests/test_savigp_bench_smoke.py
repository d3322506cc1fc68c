"""Smoke test of tests/benchmarks/bench_savigp.py on a tiny case: it runs and its tables are well
formed, the score estimator's split is a proper one (shares in [0, 100] % summing to 100 %), and
gpexplorer's ELBO and gradients equal GPflow's SVGP's; nothing is timed against a target. Only the
GPflow part is skipped, and only where its venv is missing."""

import importlib.util
import math
import sys
from pathlib import Path

import numpy as np
import pytest

BENCH = Path(__file__).resolve().parent / "benchmarks" / "bench_savigp.py"
TINY = 2  # timed calls per side


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


def _check_score_split(score):
    """The score estimator's split: sampling, likelihood and rest each in [0, 100] % and summing to
    100 % within 1 %; the sub-rows ("  of which") within their stage; every evaluation's stages >= 0."""
    shares = [score[k] for k in ("sampling_share", "likelihood_share", "rest_share")]
    assert all(0.0 <= s <= 1.0 for s in shares), shares
    assert abs(sum(shares) - 1.0) <= 0.01, shares
    top_level = [q for q in score["split"] if not q["part"].startswith("  ")]
    assert len(top_level) == 3 and [q["share"] for q in top_level] == pytest.approx(shares)
    by_key = {q["key"]: q["share"] for q in score["split"]}
    assert by_key["log_p"] + by_key["checks"] == pytest.approx(by_key["likelihood"])
    assert by_key["sums"] + by_key["outside"] == pytest.approx(by_key["rest"])
    assert all(0.0 <= q["share"] <= 1.0 and q["ms"] >= 0.0 for q in score["split"])
    for row in score["per_eval_ms"]:
        assert min(row[k] for k in ("sampling", "likelihood", "log_p", "checks", "sums", "outside")) >= 0.0, row
        assert row["sampling"] + row["likelihood"] + row["rest"] == pytest.approx(row["total"], rel=1e-9)


def test_score_split_restores_the_estimator_and_the_likelihood(bench):
    """The split's wrappers are gone afterwards, and it refuses a run that bypasses the fast path."""
    model = bench.gpexplorer_model(bench.make_problem(40, 5), estimator="score", num_samples=30)
    original = bench.estimators._fast_score
    rows = bench.score_split(model, bench.local_side(model).call, 2)
    assert len(rows) == 2 and bench.estimators._fast_score is original
    assert not {"log_density", "dlog_density_dparams", "_log_density"} & set(vars(model.likelihood))
    assert all(r["likelihood"] > 0.0 and r["sampling"] > 0.0 for r in rows)
    with pytest.raises(RuntimeError, match="fast path"):
        bench.score_split(model, lambda i: None, 1)
    assert bench.estimators._fast_score is original and "log_density" not in vars(model.likelihood)


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
        cell = bench.local_only(40, 5, TINY)
        prof = bench.profile_quadrature(40, 5, calls=3)
        score = bench.score_section(40, 5, 50, TINY, calls=2)
    assert cell["sides"]["gpexplorer"]["min"] > 0.0 and math.isfinite(cell["elbo"])
    assert cell["calls"] == TINY and cell["sides"]["gpexplorer"]["n"] == TINY
    assert sum(q["share"] for q in prof["parts"] if not q["part"].startswith("  ")) == pytest.approx(1.0)
    assert all(q["ms"] > 0.0 for q in prof["parts"][:len(bench.QUADRATURE_PARTS)])  # the fused path was profiled
    _check_score_split(score)
    assert 0.0 < score["likelihood_share"] < 1.0 and score["time"]["min"] > 0.0
    results = {"quick": True, "environment": bench.bench_sparse.environment(),
               "load_average_start": [0.0, 0.0, 0.0], "load_average_end": [0.0, 0.0, 0.0], "gpflow_ran": False,
               "cells": [cell], "profile": prof, "score": score, "failures": []}
    text = bench.format_markdown(results)
    rows = _table_rows(text, "| N | M | D |")
    assert len(rows) == 1 and rows[0].startswith("| 40 | 5 | 2 | 20 |")
    assert len(_table_rows(text, "| part | calls / eval |")) == len(prof["parts"])
    score_rows = _table_rows(text, "| part | ms / eval | share |")
    assert len(score_rows) == len(score["split"])
    assert all(0.0 <= float(r.rstrip("| ").rsplit("|", 1)[1].strip().rstrip("%")) <= 100.0 for r in score_rows)
    assert "S = 50" in text and "Targets missed: none." in text


def test_gpflow_agrees_with_gpexplorer_on_tiny_case(bench, tmp_path):
    python = bench.peer_pythons(["gpflow"]).get("gpflow")
    if python is None:
        pytest.skip("no GPflow venv (see tests/benchmarks/README.md; $GPFLOW_PYTHON)")
    worker = bench.savigp_peers.SVGPPeer("gpflow", python)
    try:
        with bench.threadpool_limits(limits=1):
            cell = bench.compare_gpflow(worker, 60, 6, 3.0, TINY, str(tmp_path))
    finally:
        worker.close()
    assert cell["value_agree"], cell
    assert cell["sides"]["gpexplorer"]["n"] == cell["sides"]["GPflow"]["n"] == TINY  # equal work per side
    assert cell["value_rel_diff"] <= bench.VALUE_RTOL
    assert cell["gradient_agree"], cell["gradient_scaled_diff"]
    assert cell["terms"]["ell"] == pytest.approx(cell["terms"]["gpflow_var_exp"], rel=1e-8)
    assert cell["terms"]["minus_kl"] == pytest.approx(cell["terms"]["gpflow_minus_kl"], rel=1e-8, abs=1e-9)
    results = {"quick": True, "environment": bench.bench_sparse.environment(),
               "load_average_start": None, "load_average_end": None, "gpflow_ran": True,
               "gpflow_info": {"version": "2.11"}, "cells": [cell],
               "score": bench.score_section(40, 5, 20, TINY, calls=2), "failures": []}
    _check_score_split(results["score"])
    rows = _table_rows(bench.format_markdown(results), "| N | M | D |")
    assert len(rows) == 1 and rows[0].startswith("| 60 | 6 | 2 | 20 |") and ">= 3x" in rows[0]
