"""Tests for gpexplorer.metrics against hand-computed values (GPML section 2.5)."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp
from scipy.stats import norm

from gpexplorer.metrics import error_rate, msll, nlp, nlpd, rmse, smse

Y = np.array([1.0, 2.0, 3.0, 4.0])
MU = np.array([1.5, 2.0, 2.0, 5.0])
VAR = np.array([0.5, 1.0, 2.0, 4.0])


def test_rmse_hand_computed():
    # squared errors 0.25, 0, 1, 1 -> mean 0.5625
    assert rmse(Y, MU) == pytest.approx(0.75)
    assert rmse(Y, Y) == 0.0


def test_smse_hand_computed():
    # var(Y) = 1.25 (ddof=0)
    assert smse(Y, MU) == pytest.approx(0.5625 / 1.25)


def test_smse_of_mean_predictor_is_one():
    y = np.random.default_rng(1).normal(size=50)
    assert smse(y, np.full_like(y, y.mean())) == pytest.approx(1.0)


def test_nlpd_hand_computed_and_scipy():
    expected = np.mean(0.5 * np.log(2 * np.pi * VAR) + 0.5 * (Y - MU) ** 2 / VAR)
    assert nlpd(Y, MU, VAR) == pytest.approx(expected)
    assert nlpd(Y, MU, VAR) == pytest.approx(-np.mean(norm.logpdf(Y, MU, np.sqrt(VAR))))
    # single standard-normal point at its mean: 0.5 log(2 pi)
    assert nlpd([0.0], [0.0], [1.0]) == pytest.approx(0.5 * np.log(2 * np.pi))


@settings(max_examples=60, deadline=None)
@given(st.integers(1, 30).flatmap(lambda n: st.tuples(
    hnp.arrays(np.float64, n, elements=st.floats(-100, 100)),
    hnp.arrays(np.float64, n, elements=st.floats(-100, 100)),
    hnp.arrays(np.float64, n, elements=st.floats(1e-3, 100)))))
def test_nlpd_matches_scipy(args):
    y, mu, var = args
    assert nlpd(y, mu, var) == pytest.approx(-np.mean(norm.logpdf(y, mu, np.sqrt(var))),
                                             rel=1e-10, abs=1e-10)


def test_msll_hand_computed():
    y_train = np.array([0.0, 2.0, 4.0])  # mean 2, var 8/3
    m0, v0 = 2.0, 8.0 / 3.0
    model = -norm.logpdf(Y, MU, np.sqrt(VAR))
    trivial = -norm.logpdf(Y, m0, np.sqrt(v0))
    assert msll(Y, MU, VAR, y_train) == pytest.approx(np.mean(model - trivial))


@settings(max_examples=40, deadline=None)
@given(hnp.arrays(np.float64, st.integers(2, 40), elements=st.floats(-50, 50)),
       hnp.arrays(np.float64, st.integers(1, 20), elements=st.floats(-50, 50)))
def test_msll_of_trivial_model_is_zero(y_train, y_test):
    if np.var(y_train) < 1e-6:
        y_train = np.append(y_train, y_train[0] + 1.0)
    n = y_test.shape[0]
    value = msll(y_test, np.full(n, y_train.mean()), np.full(n, np.var(y_train)), y_train)
    assert value == pytest.approx(0.0, abs=1e-9)


def test_good_model_has_negative_msll():
    rng = np.random.default_rng(0)
    x = rng.uniform(0, 6, 200)
    y = np.sin(3 * x) + 0.1 * rng.standard_normal(200)
    assert msll(y, np.sin(3 * x), np.full(200, 0.01), y) < -1.0


def test_column_vectors_accepted():
    assert rmse(Y[:, None], MU[:, None]) == pytest.approx(0.75)
    assert nlpd(Y[:, None], MU, VAR[:, None]) == pytest.approx(nlpd(Y, MU, VAR))


@pytest.mark.parametrize(
    "call, pattern",
    [
        (lambda: rmse([1, 2, 3], [1, 2]), r"length mismatch: y has 3, mean has 2"),
        (lambda: rmse(np.zeros((2, 2)), np.zeros((2, 2))), r"shape \(N,\) or \(N, 1\)"),
        (lambda: rmse([], []), r"empty"),
        (lambda: rmse([1, np.nan], [1, 2]), r"y contains 1 NaN/inf"),
        (lambda: nlpd([1, 2], [1, 2], [1, 0]), r"var must be strictly positive; 1 value"),
        (lambda: nlpd([1, 2], [1, 2], [1, -2]), r"strictly positive"),
        (lambda: nlpd([1, 2], [1, 2], [1, 2, 3]), r"length mismatch"),
        (lambda: smse([2, 2, 2], [1, 2, 3]), r"zero variance"),
        (lambda: msll([1, 2], [1, 2], [1, 1], [3, 3]), r"y_train has zero variance"),
        (lambda: msll([1, 2], [1, 2], [0, 1], [1, 3]), r"strictly positive"),
        (lambda: rmse(["a"], [1]), r"y must be numeric"),
    ],
)
def test_regression_validation(call, pattern):
    with pytest.raises(ValueError, match=pattern):
        call()


def test_error_rate_both_label_conventions():
    p = np.array([0.9, 0.2, 0.6, 0.4, 0.5])
    assert error_rate([1, 0, 0, 1, 0], p) == pytest.approx(2 / 5)
    assert error_rate([1, -1, -1, 1, -1], p) == pytest.approx(2 / 5)
    assert error_rate([1, 0, 0, 1, 0], p, threshold=0.3) == pytest.approx(2 / 5)  # 0.4->1, 0.5->1
    assert error_rate([1, 1], [0.9, 0.8]) == 0.0


def test_nlp_hand_computed_and_clipping():
    labels = np.array([1, 0, 1])
    p = np.array([0.8, 0.3, 0.5])
    expected = -np.mean(np.log([0.8, 0.7, 0.5]))
    assert nlp(labels, p) == pytest.approx(expected)
    assert nlp(2 * labels - 1, p) == pytest.approx(expected)
    # confident mistakes are finite: -log(1e-12)
    assert nlp([1, 0], [0.0, 1.0]) == pytest.approx(-np.log(1e-12), rel=1e-6)
    assert nlp([1, 0], [1.0, 0.0]) == pytest.approx(0.0, abs=1e-11)


@pytest.mark.parametrize(
    "call, pattern",
    [
        (lambda: error_rate([0, 1, 2], [0.1, 0.2, 0.3]), r"labels must all be in \{0, 1\}"),
        (lambda: nlp([-1, 0, 1], [0.1, 0.2, 0.3]), r"labels must all be in"),
        (lambda: nlp([0, 1], [0.1, 1.2]), r"prob_positive must lie in \[0, 1\]"),
        (lambda: error_rate([0, 1], [0.1, 0.2, 0.3]), r"length mismatch"),
        (lambda: error_rate([0, 1], [0.1, 0.2], threshold=2), r"threshold"),
    ],
)
def test_classification_validation(call, pattern):
    with pytest.raises(ValueError, match=pattern):
        call()
