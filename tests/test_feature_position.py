"""The bound against one feature's position (thesis fig. 4.4) and the near-duplicate check."""

import numpy as np
import pytest

from gpexplorer import inducing, kernels, models
from gpexplorer.sparse.feature_position import near_duplicates, position_curve, u_correlation, zoom_grid


def _model(Z, jitter=1e-6):
    rng = np.random.default_rng(0)
    X = rng.uniform(0, 6, (80, 1))
    y = np.sin(X[:, 0]) + 0.2 * rng.normal(size=80)
    return models.SparseGPR(X, y, kernel=kernels.SquaredExponential(1.0, 0.7), Z=Z, noise_variance=0.05,
                            jitter=jitter)


def test_each_point_of_the_curve_is_the_bound_with_that_member_moved():
    model = _model(np.array([[1.0], [3.0], [4.5]]))
    grid = np.array([0.5, 2.0, 5.5])
    curve = position_curve(model, 1, grid)
    for x, bound in zip(grid, curve.bound):
        assert bound == pytest.approx(_model(np.array([[1.0], [x], [4.5]])).log_marginal_likelihood(), rel=1e-12)
    np.testing.assert_array_equal(model.Z, [[1.0], [3.0], [4.5]])  # the model itself is untouched


def test_the_curve_moves_a_time_frequency_member_and_keeps_its_frequency():
    feature = inducing.TimeFrequency(np.array([[1.0], [3.0]]), np.array([[2.0], [0.5]]), 0.0, 0.4)
    model = _model(feature)
    curve = position_curve(model, 0, np.linspace(0, 6, 7))
    moved = feature.moved(0, [4.0])
    assert moved.omega[0, 0] == 2.0 and moved.mu[0, 0] == 4.0 and feature.mu[0, 0] == 1.0
    assert curve.bound[4] == pytest.approx(_model(moved).log_marginal_likelihood(), rel=1e-12)


def test_zoom_grid_surrounds_the_maximum_and_jitter_is_applied():
    model = _model(np.array([[1.0], [3.0], [4.5]]))
    coarse = position_curve(model, 2, np.linspace(0, 6, 25))
    zoom = zoom_grid(coarse)
    x, _ = coarse.best
    assert zoom.min() < x < zoom.max() and zoom.max() - zoom.min() == pytest.approx(4 * 0.25)
    assert position_curve(model, 2, zoom, jitter=1e-2).jitter == 1e-2
    with pytest.raises(ValueError, match="member"):
        position_curve(model, 3, zoom)
    with pytest.raises(ValueError, match="finite"):
        position_curve(model, 0, [np.nan])


def test_near_duplicates_are_the_pairs_whose_u_are_almost_perfectly_correlated():
    k = kernels.SquaredExponential(1.0, 0.7)
    feature = inducing.InducingPoints(np.array([[1.0], [3.0], [3.0001], [5.0]]))
    C = u_correlation(feature, k)
    np.testing.assert_allclose(np.diag(C), 1.0)
    (pair,) = near_duplicates(feature, k)
    assert pair[:2] == (1, 2) and pair[2] > 0.9999
    assert near_duplicates(inducing.InducingPoints(np.array([[1.0], [3.0]])), k) == []


def test_closest_pair_is_the_most_correlated_pair_whatever_the_order():
    from gpexplorer.inducing import InducingPoints
    from gpexplorer.kernels import SquaredExponential
    from gpexplorer.sparse.feature_position import closest_pair

    k = SquaredExponential(lengthscale=0.5)
    for order in ([0.0, 2.0, 0.05], [0.05, 0.0, 2.0], [2.0, 0.05, 0.0]):
        z = np.array(order)[:, None]
        i, j = closest_pair(InducingPoints(z), k)
        assert i < j and {order[i], order[j]} == {0.0, 0.05}
    assert closest_pair(InducingPoints(np.zeros((1, 1))), k) == (0, 0)
