"""The jitted cos/sin of the random Fourier features against numpy's (the C library's) values: within
a few units in the last place for every magnitude a projection may have, the quadrant selection
checked at multiples of pi/4, the C-library fallback beyond the reduction limit, and the scale."""

import numpy as np
import pytest

from gpexplorer.random_features import trig_loops
from gpexplorer.random_features.trig_loops import REDUCTION_LIMIT, cos_sin_columns


def _both(P, scale=1.0):
    out = cos_sin_columns(np.ascontiguousarray(P), np.empty((P.shape[0], 2 * P.shape[1])), scale)
    m = P.shape[1]
    return out[:, :m], out[:, m:]


@pytest.mark.parametrize("magnitude", [1e-300, 1e-8, 1.0, 30.0, 1e3, 1e5, 9e5])
def test_against_the_c_library(magnitude):
    P = np.random.default_rng(0).normal(size=(64, 257)) * magnitude
    c, s = _both(P)
    assert np.max(np.abs(c - np.cos(P))) <= 4.5e-16
    assert np.max(np.abs(s - np.sin(P))) <= 4.5e-16


def test_quadrants_special_points_and_the_fallback():
    k = np.arange(-40, 41)
    P = np.concatenate([k * np.pi / 4, [0.0, -0.0, REDUCTION_LIMIT, -3e7, 1e15]])[None, :]
    c, s = _both(P)
    assert np.allclose(c, np.cos(P), atol=4.5e-16, rtol=0) and np.allclose(s, np.sin(P), atol=4.5e-16, rtol=0)
    c2, s2 = _both(P, scale=0.25)
    assert np.allclose(c2, 0.25 * c, rtol=1e-15, atol=0) and np.allclose(s2, 0.25 * s, rtol=1e-15, atol=0)


@pytest.mark.parametrize("d", [3, 10, 40])
def test_fused_and_threaded_features_equal_the_projection_then_the_loop(d, monkeypatch):
    """fourier_features: the fused loop (d <= FUSED_MAX_INPUTS) or one GEMM, split over threads for
    large outputs, into a contiguous or a strided ``out``: the same values as X @ W then the loop."""
    rng = np.random.default_rng(d)
    X, W = rng.normal(size=(301, d)), rng.normal(size=(d, 50))
    reference = cos_sin_columns(np.ascontiguousarray(X @ W), np.empty((301, 100)), 0.1)
    for threshold in (trig_loops.THREADED_PAIRS, 64):  # one thread, then as many as the machine has
        monkeypatch.setattr(trig_loops, "THREADED_PAIRS", threshold)
        out = trig_loops.fourier_features(X, W, np.empty((301, 100)), 0.1)
        assert np.max(np.abs(out - reference)) <= 1e-14
        wide = np.full((301, 103), 7.0)
        trig_loops.fourier_features(X, W, wide[:, 1:101], 0.1)  # a concatenation's block of columns
        assert np.max(np.abs(wide[:, 1:101] - reference)) <= 1e-14
        assert np.all(wide[:, 0] == 7.0) and np.all(wide[:, 101:] == 7.0)
