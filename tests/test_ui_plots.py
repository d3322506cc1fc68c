"""gpexplorer.ui.plots: each figure holds what the models' own methods give, and renders."""

import holoviews as hv
import numpy as np
import pytest

from gpexplorer import kernels
from gpexplorer.models import ExactGPR, SparseGPR
from gpexplorer.ui import plots


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(3)
    X = np.sort(rng.uniform(-3, 3, 40))[:, None]
    return X, np.sin(2 * X[:, 0]) + 0.2 * rng.standard_normal(40)


@pytest.fixture(scope="module")
def vfe(data):
    X, y = data
    return SparseGPR(X, y, kernel=kernels.SquaredExponential(lengthscale=0.8), Z=np.linspace(-2.5, 2.5, 5)[:, None],
                     approximation="vfe", noise_variance=0.05)


def _by_type(overlay, kind):
    return [e for e in overlay if type(e) is kind]  # exact type: hv.Area is a Curve


def _render(obj):
    figure = hv.render(obj, backend="bokeh")
    assert figure.renderers  # something was drawn
    return figure


def test_posterior_bands_mean_data_and_inducing_inputs_are_the_models(vfe):
    grid = np.linspace(-4, 4, 50)[:, None]
    overlay = plots.posterior(vfe, grid)
    assert isinstance(overlay, hv.Overlay)
    y_band, f_band = _by_type(overlay, hv.Spread)
    (mean_curve,) = _by_type(overlay, hv.Curve)
    data_points, inducing = _by_type(overlay, hv.Scatter)
    mean, var_f = vfe.predict_f(grid)
    _, var_y = vfe.predict_y(grid)
    np.testing.assert_allclose(mean_curve.dimension_values(0), grid[:, 0])
    np.testing.assert_allclose(mean_curve.dimension_values(1), mean)
    for band, var in ((f_band, var_f), (y_band, var_y)):
        np.testing.assert_allclose(band.dimension_values(1), mean)
        np.testing.assert_allclose(band.dimension_values(2), 2 * np.sqrt(var))
    np.testing.assert_allclose(data_points.dimension_values(0), vfe.X[:, 0])
    np.testing.assert_allclose(data_points.dimension_values(1), vfe.y)
    np.testing.assert_allclose(inducing.dimension_values(0), vfe.Z[:, 0])
    assert inducing.dimension_values(1).max() < vfe.y.min()  # below the data, as in the lab
    _render(overlay)


def test_exact_posterior_has_no_inducing_inputs_and_options_drop_layers(data, vfe):
    exact = ExactGPR(*data, kernel=vfe.kernel.copy(), noise_variance=vfe.noise_variance)
    overlay = plots.posterior(exact, data=False, noise=False, n_grid=30)
    assert [type(e) for e in overlay] == [hv.Spread, hv.Curve]
    (curve,) = _by_type(overlay, hv.Curve)
    np.testing.assert_allclose(curve.dimension_values(1), exact.predict_f(curve.dimension_values(0)[:, None])[0])
    _render(plots.posterior(vfe) * overlay)  # composable


def test_posterior_refuses_inputs_of_more_than_one_dimension():
    rng = np.random.default_rng(0)
    model = ExactGPR(rng.normal(size=(10, 2)), rng.normal(size=10), kernel=kernels.SquaredExponential())
    with pytest.raises(ValueError, match="D = 2"):
        plots.posterior(model)


def test_bound_sandwich_against_M_holds_the_models_values_and_orders_them(data, vfe):
    X, y = data
    Ms = [1, 3, 6]
    overlay = plots.bound_sandwich(X, y, vfe.kernel, Ms=Ms, noise_variance=0.05, z_init="even")
    assert isinstance(overlay, hv.Overlay)
    objective, upper, exact_curve = _by_type(overlay, hv.Curve)
    assert len(_by_type(overlay, hv.Area)) == 1 and len(_by_type(overlay, hv.Scatter)) == 2
    exact = ExactGPR(X, y, kernel=vfe.kernel.copy(), noise_variance=0.05).log_marginal_likelihood()
    from gpexplorer.inducing import initial_inducing_inputs
    for i, M in enumerate(Ms):
        m = SparseGPR(X, y, kernel=vfe.kernel.copy(), Z=initial_inducing_inputs(X, M, "even", 0),
                      approximation="vfe", noise_variance=0.05)
        assert objective.dimension_values(1)[i] == pytest.approx(m.log_marginal_likelihood(), rel=1e-10)
        assert upper.dimension_values(1)[i] == pytest.approx(m.upper_bound(), rel=1e-10)
    np.testing.assert_allclose(exact_curve.dimension_values(1), exact)
    np.testing.assert_array_equal(objective.dimension_values(0), Ms)
    assert np.all(objective.dimension_values(1) <= exact) and np.all(exact <= upper.dimension_values(1))
    assert upper.dimension_values(1)[-1] < upper.dimension_values(1)[0]  # the bound tightens with M
    _render(overlay)


def test_bound_sandwich_from_precomputed_rows_and_a_scalar_exact():
    rows = [{"M": 4, "approximation": "fitc", "log_marginal_likelihood": -9.0, "upper_bound": -8.0},
            {"M": 2, "approximation": "fitc", "log_marginal_likelihood": -12.0, "upper_bound": -7.0}]
    overlay = plots.bound_sandwich(rows=rows, exact={"log_marginal_likelihood": -10.0})  # m_sweep's "exact"
    objective, upper, exact = _by_type(overlay, hv.Curve)
    np.testing.assert_array_equal(objective.dimension_values(0), [2, 4])  # sorted by M
    np.testing.assert_array_equal(objective.dimension_values(1), [-12.0, -9.0])
    np.testing.assert_array_equal(upper.dimension_values(1), [-7.0, -8.0])
    np.testing.assert_array_equal(exact.dimension_values(1), [-10.0, -10.0])
    with pytest.raises(ValueError, match="exact"):
        plots.bound_sandwich(rows=rows)
    with pytest.raises(ValueError, match="X, y and kernel"):
        plots.bound_sandwich()
    _render(overlay)


def test_models_sandwich_per_model(data, vfe):
    fitc = SparseGPR.from_model(vfe, "fitc")
    overlay = plots.models_sandwich([vfe, fitc])
    (segments,) = _by_type(overlay, hv.Segments)
    exact_pts, upper_pts, objective_pts = _by_type(overlay, hv.Scatter)
    assert list(objective_pts.dimension_values(1)) == ["VFE (M = 5)", "FITC (M = 5)"]
    np.testing.assert_allclose(objective_pts.dimension_values(0),
                               [vfe.log_marginal_likelihood(), fitc.log_marginal_likelihood()])
    np.testing.assert_allclose(upper_pts.dimension_values(0), [vfe.upper_bound(), fitc.upper_bound()])
    exact = ExactGPR(*data, kernel=vfe.kernel.copy(), noise_variance=vfe.noise_variance).log_marginal_likelihood()
    np.testing.assert_allclose(exact_pts.dimension_values(0), [exact, exact])
    np.testing.assert_allclose(segments.dimension_values(0), [exact, exact])
    np.testing.assert_allclose(segments.dimension_values(2), upper_pts.dimension_values(0))
    _render(overlay)


def test_fit_trace_is_the_fit_results_trace(data, vfe):
    model = SparseGPR.from_model(vfe, "vfe")
    result = model.fit(max_iter=15)
    curve = plots.fit_trace(result)
    assert isinstance(curve, hv.Curve)
    np.testing.assert_array_equal(curve.dimension_values(0), [e.iteration for e in result.trace])
    np.testing.assert_array_equal(curve.dimension_values(1), [e.objective for e in result.trace])
    np.testing.assert_array_equal(plots.fit_trace(result, "log_marginal_likelihood").dimension_values(1),
                                  [-e.objective for e in result.trace])
    np.testing.assert_array_equal(plots.fit_trace(result, "complexity").dimension_values(1),
                                  [e.terms["complexity"] for e in result.trace])
    with pytest.raises(ValueError, match="quantity"):
        plots.fit_trace(result, "nonsense")
    _render(curve)
