"""Smoke test of tests/benchmarks/bench_revrand.py (ours side only; revrand needs its own venv): every
case builds and runs once on small data, nothing is timed against a target."""

import importlib.util
from pathlib import Path

import numpy as np
import pytest

BENCH = Path(__file__).resolve().parent / "benchmarks" / "bench_revrand.py"


@pytest.fixture(scope="module")
def bench():
    spec = importlib.util.spec_from_file_location("bench_revrand", BENCH)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_every_case_of_ours_runs(bench):
    bench.our_slm()(0)
    for name, [(X, y, b, lik, S)] in bench.glm_cases().items():
        for estimator in ("monte_carlo", "quadrature"):
            bench.our_glm_step(X[:40], y[:40], b, lik, 3, estimator)(0)
    seconds = bench.features_seconds(N=2000, d=3, columns=20, chunk=1000, repeats=2)
    assert set(seconds) == {"one buffer", "new array per block"} and all(v["min"] > 0 for v in seconds.values())
    out = bench.fastfood_vs_dense(calls=1, N=20, d=30, columns=(8,))
    assert set(out[8]) >= {"fastfood", "dense", "speedup", "projection speedup"}
    assert np.isfinite(out[8]["speedup"]["min"])
    seconds, evaluations, value = bench.slm_fit(seed=0, memory=100)
    assert seconds > 0 and evaluations > 0 and np.isfinite(value)
