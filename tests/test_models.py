"""Input validation and numerically awkward-but-legal inputs for ExactGPR / SparseGPR."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

from gpexplorer import datasets, kernels, models
from gpexplorer.linalg import JitterWarning

APPROXIMATIONS = ("sor", "dtc", "fitc", "vfe")


def data(N=20, D=1, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.uniform(-2.0, 2.0, size=(N, D))
    y = np.sin(2.0 * X[:, 0]) + 0.1 * rng.normal(size=N)
    return X, y


def se(**kw):
    return kernels.SquaredExponential(**kw)


def sparse_model(X, y, Z=None, approximation="vfe", **kw):
    if Z is None:
        Z = X[:5].copy()
    kw.setdefault("noise_variance", 0.1)
    return models.SparseGPR(X, y, kw.pop("kernel", se()), Z=Z, approximation=approximation, **kw)


def exact_model(X, y, **kw):
    kw.setdefault("noise_variance", 0.1)
    return models.ExactGPR(X, y, kw.pop("kernel", se()), **kw)


BOTH = [pytest.param(exact_model, id="exact"), pytest.param(sparse_model, id="sparse")]


# ---------------------------------------------------------------------------------------------
# Bad data
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("build", BOTH)
@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf], ids=["nan", "inf", "-inf"])
def test_non_finite_X_raises(build, bad):
    X, y = data()
    X[3, 0] = bad
    with pytest.raises(ValueError, match=r"X contains 1 NaN or infinite"):
        build(X, y, Z=np.zeros((2, 1))) if build is sparse_model else build(X, y)


@pytest.mark.parametrize("build", BOTH)
@pytest.mark.parametrize("bad", [math.nan, math.inf], ids=["nan", "inf"])
def test_non_finite_y_raises(build, bad):
    X, y = data()
    y[[0, 5]] = bad
    with pytest.raises(ValueError, match=r"y contains 2 NaN or infinite"):
        build(X, y)


@pytest.mark.parametrize("bad", [math.nan, math.inf], ids=["nan", "inf"])
def test_non_finite_Z_raises(bad):
    X, y = data()
    Z = X[:4].copy()
    Z[1, 0] = bad
    with pytest.raises(ValueError, match=r"Z contains NaN or infinite"):
        sparse_model(X, y, Z=Z)
    m = sparse_model(X, y)
    with pytest.raises(ValueError, match=r"Z contains NaN or infinite"):
        m.set_parameters(**{"Z": Z})


@pytest.mark.parametrize("build", BOTH)
def test_mismatched_X_y_raises(build):
    X, y = data(N=20)
    with pytest.raises(ValueError, match=r"X has 20 rows but y has 19"):
        build(X, y[:-1])


@pytest.mark.parametrize("build", BOTH)
def test_y_with_several_columns_raises(build):
    X, y = data(N=10)
    with pytest.raises(ValueError, match=r"y must have shape"):
        build(X, np.stack([y, y], axis=1))


def test_y_as_column_vector_is_accepted():
    X, y = data(N=10)
    a = sparse_model(X, y).log_marginal_likelihood()
    b = sparse_model(X, y[:, None]).log_marginal_likelihood()
    assert a == b


def test_Z_with_wrong_number_of_columns_raises():
    X, y = data(N=10, D=2)
    with pytest.raises(ValueError, match=r"Z must have shape \(M, 2\)"):
        sparse_model(X, y, Z=np.zeros((3, 3)))
    with pytest.raises(ValueError, match=r"Z must have shape \(M, 2\)"):
        sparse_model(X, y, Z=np.zeros((3, 2, 1)))


def test_empty_Z_raises():
    X, y = data(N=10)
    with pytest.raises(ValueError, match=r"Z is empty"):
        sparse_model(X, y, Z=np.zeros((0, 1)))


@pytest.mark.parametrize("build", BOTH)
def test_empty_data_raises(build):
    with pytest.raises(ValueError, match=r"X is empty"):
        build(np.zeros((0, 1)), np.zeros(0))
    with pytest.raises(ValueError, match=r"X is empty"):
        build(np.zeros(0), np.zeros(0))
    with pytest.raises(ValueError, match=r"X is empty"):
        build(np.zeros((5, 0)), np.zeros(5))


@pytest.mark.parametrize("build", BOTH)
def test_3d_X_raises(build):
    with pytest.raises(ValueError, match=r"X must have shape \(N, D\)"):
        build(np.zeros((4, 2, 2)), np.zeros(4))


@pytest.mark.parametrize("build", BOTH)
def test_non_numeric_X_raises_value_error(build):
    with pytest.raises(ValueError, match=r"numeric"):
        build(np.array(["a", "b", "c"], dtype=object), np.zeros(3))


@pytest.mark.parametrize("build", BOTH)
@pytest.mark.parametrize("noise,msg", [(0.0, "positive"), (-0.1, "positive"), (math.nan, "finite"),
                                       (math.inf, "finite")], ids=["zero", "negative", "nan", "inf"])
def test_bad_noise_raises(build, noise, msg):
    X, y = data()
    with pytest.raises(ValueError, match=f"noise_variance.*{msg}"):
        build(X, y, noise_variance=noise)
    m = build(X, y)
    with pytest.raises(ValueError, match=f"noise_variance.*{msg}"):
        m.set_parameters(**{"noise_variance": noise})
    assert m.noise_variance == 0.1


@pytest.mark.parametrize("build", BOTH)
def test_bad_kernel_parameter_via_set_parameters_raises(build):
    X, y = data()
    m = build(X, y)
    with pytest.raises(ValueError, match="lengthscale.*positive"):
        m.set_parameters(**{"lengthscale": -2.0})
    with pytest.raises(ValueError, match="no parameter 'bogus'"):
        m.set_parameters(**{"bogus": 1.0})


def test_unknown_approximation_raises():
    X, y = data()
    with pytest.raises(ValueError, match=r"approximation must be one of.*'vfee'"):
        sparse_model(X, y, approximation="vfee")


def test_bad_jitter_raises():
    X, y = data()
    for bad in (-1e-6, math.nan, math.inf):
        with pytest.raises(ValueError, match="jitter"):
            sparse_model(X, y, jitter=bad)


def test_kernel_ard_length_mismatch_raises_at_construction():
    X, y = data(D=3)
    for build in (exact_model, sparse_model):
        with pytest.raises(ValueError, match=r"2 entries.*3 dimensions"):
            build(X, y, kernel=se(lengthscale=[1.0, 2.0]), **({"Z": X[:4]} if build is sparse_model else {}))


def test_non_kernel_raises():
    X, y = data()
    with pytest.raises(ValueError, match="kernel must be"):
        models.ExactGPR(X, y, kernel="se")


def test_unknown_z_init_raises():
    X, y = data()
    with pytest.raises(ValueError, match=r"unknown inducing initialisation 'grid'"):
        models.SparseGPR(X, y, se(), Z=4, z_init="grid")
    with pytest.raises(ValueError, match=r"positive integer"):
        models.SparseGPR(X, y, se(), Z=0)


@pytest.mark.parametrize("build", BOTH)
@pytest.mark.parametrize("method", ["predict_f", "predict_y"])
def test_Xnew_with_wrong_columns_raises(build, method):
    X, y = data(D=2)
    m = build(X, y)
    with pytest.raises(ValueError, match=r"Xnew must have shape \(S, 2\)"):
        getattr(m, method)(np.zeros((3, 3)))
    with pytest.raises(ValueError, match=r"Xnew must have shape \(S, 2\)"):
        getattr(m, method)(np.zeros((3, 3)), full_cov=True)
    with pytest.raises(ValueError, match=r"Xnew must have shape \(S, 2\)"):
        getattr(m, method)(np.zeros((3, 1, 2)))


def test_predict_components_Xnew_with_wrong_columns_raises():
    X, y = data(D=2)
    m = sparse_model(X, y)
    with pytest.raises(ValueError, match=r"Xnew must have shape \(S, 2\)"):
        m.predict_components(np.zeros((3, 1)))


@pytest.mark.parametrize("build", BOTH)
def test_non_finite_Xnew_raises(build):
    X, y = data()
    m = build(X, y)
    with pytest.raises(ValueError, match="Xnew contains NaN"):
        m.predict_f(np.array([[0.0], [np.nan]]))


def test_1d_Xnew_is_accepted():
    X, y = data(D=1)
    m = sparse_model(X, y)
    a = m.predict_f(np.array([0.1, 0.2]))
    b = m.predict_f(np.array([[0.1], [0.2]]))
    np.testing.assert_array_equal(a[0], b[0])
    X2, y2 = data(D=3)
    m2 = sparse_model(X2, y2)
    mean, var = m2.predict_f(np.array([0.1, 0.2, 0.3]))  # one 3-D point
    assert mean.shape == (1,) and var.shape == (1,)


# ---------------------------------------------------------------------------------------------
# Awkward but legal inputs
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("approximation", APPROXIMATIONS)
def test_more_inducing_inputs_than_data(approximation):
    X, y = data(N=8)
    Z = np.linspace(-2.5, 2.5, 15)[:, None]
    m = sparse_model(X, y, Z=Z, approximation=approximation)
    value, grads = m.log_marginal_likelihood(eval_gradient=True)
    assert np.isfinite(value)
    assert all(np.all(np.isfinite(v)) for v in grads.values())
    mean, var = m.predict_f(np.linspace(-3, 3, 5))
    assert np.all(np.isfinite(mean)) and np.all(var >= 0)
    exact = exact_model(X, y).log_marginal_likelihood()
    if approximation == "vfe":
        assert value <= exact + 1e-7 * abs(exact)
        assert m.upper_bound() >= exact - 1e-7 * abs(exact)
    # with M > N dense inducing points every approximation is essentially exact
    assert value == pytest.approx(exact, rel=1e-3)


@pytest.mark.parametrize("approximation", APPROXIMATIONS)
def test_duplicate_inducing_inputs_escalate_jitter_with_warning(approximation):
    X, y = data()
    Z = np.full((5, 1), 0.3)
    m = sparse_model(X, y, Z=Z, approximation=approximation, jitter=0.0)
    with pytest.warns(JitterWarning, match="jitter"):
        value = m.log_marginal_likelihood()
    assert np.isfinite(value)
    assert m.jitter_used > 0.0
    with pytest.warns(JitterWarning):
        value2, grads = m.log_marginal_likelihood(eval_gradient=True)
    assert np.isfinite(value2)
    assert all(np.all(np.isfinite(v)) for v in grads.values())
    # the duplicates carry no more information than a single inducing input at that location
    single = sparse_model(X, y, Z=Z[:1], approximation=approximation).log_marginal_likelihood()
    assert value == pytest.approx(single, rel=1e-5)


def test_duplicate_inducing_inputs_tiny_jitter_evaluates():
    """Requested jitter 1e-12 with all-equal Z: must evaluate finitely (escalating if needed)."""
    X, y = data()
    m = sparse_model(X, y, Z=np.full((6, 1), -0.4), jitter=1e-12)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", JitterWarning)
        value = m.log_marginal_likelihood()
        mean, var = m.predict_f(np.linspace(-2, 2, 4))
    assert np.isfinite(value)
    assert m.jitter_used >= 1e-12
    assert np.all(np.isfinite(mean)) and np.all(np.isfinite(var))


def test_jitter_escalation_on_clumped_inputs_is_reported():
    """A genuinely singular Kuu (rank one) escalates from a requested jitter of 0."""
    X, y = data()
    m = sparse_model(X, y, Z=np.full((3, 1), 1.0), approximation="fitc", jitter=0.0)
    with pytest.warns(JitterWarning):
        m.q_u()
    assert m.jitter_used > 0.0


@pytest.mark.parametrize("build", BOTH)
def test_duplicate_training_inputs(build):
    X, y = data(N=10)
    X = np.vstack([X, X, X[:3]])
    y = np.concatenate([y, y + 0.05, y[:3] - 0.05])
    m = build(X, y)
    value, grads = m.log_marginal_likelihood(eval_gradient=True)
    assert np.isfinite(value)
    assert all(np.all(np.isfinite(v)) for v in grads.values())
    mean, var = m.predict_y(np.linspace(-2, 2, 7))
    assert np.all(np.isfinite(mean)) and np.all(var > 0)


def test_duplicate_training_inputs_all_approximations_agree_with_exact_ordering():
    X, y = data(N=10)
    X = np.vstack([X, X])
    y = np.concatenate([y, y + 0.1])
    exact = exact_model(X, y).log_marginal_likelihood()
    vfe = sparse_model(X, y, Z=X[:10]).log_marginal_likelihood()
    assert vfe <= exact + 1e-7 * abs(exact)
    assert vfe == pytest.approx(exact, rel=1e-4)  # Z covers all distinct inputs


ABSURD = [
    dict(lengthscale=1e6, variance=1e-8),
    dict(lengthscale=1e6, variance=1.0),
    dict(lengthscale=1e-6, variance=1.0),
    dict(lengthscale=1e-6, variance=1e8),
    dict(lengthscale=1e6, variance=1e8),
    dict(lengthscale=1e3, variance=1e16),  # Kuu numerically indefinite beyond any jitter
    dict(lengthscale=1e6, variance=1e20),
    dict(lengthscale=1e-6, variance=1e-300),
]


def _finite_or_value_error(fn):
    """Run fn(); it must return finite numbers or raise a ValueError that is not numpy's
    LinAlgError (LinAlgError subclasses ValueError, so it is excluded explicitly)."""
    try:
        out = fn()
    except ValueError as err:
        assert not isinstance(err, np.linalg.LinAlgError), f"unhandled LinAlgError: {err!r}"
        assert str(err), "the ValueError should say what went wrong"
        return None
    flat = out if isinstance(out, tuple) else (out,)
    for part in flat:
        values = part.values() if isinstance(part, dict) else [part]
        for v in values:
            assert np.all(np.isfinite(v)), out
    return out


@pytest.mark.parametrize("params", ABSURD, ids=lambda p: f"l{p['lengthscale']:g}-v{p['variance']:g}")
@pytest.mark.parametrize("approximation", APPROXIMATIONS + ("exact",))
@pytest.mark.parametrize("noise", [1e-6, 0.1])
def test_absurd_hyperparameters_never_raise_linalg_error(params, approximation, noise):
    X, y = data(N=15)
    X = np.vstack([X, X[:2]])  # duplicated inputs make it harder
    y = np.concatenate([y, y[:2]])
    kern = se(**params)
    if approximation == "exact":
        m = exact_model(X, y, kernel=kern, noise_variance=noise)
    else:
        m = sparse_model(X, y, Z=np.linspace(-2, 2, 6), approximation=approximation,
                         kernel=kern, noise_variance=noise)
    Xs = np.linspace(-2, 2, 3)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", JitterWarning)
        # each entry point on its own: value, value+gradient (a separate code path), predictions
        _finite_or_value_error(lambda: m.log_marginal_likelihood())
        _finite_or_value_error(lambda: m.log_marginal_likelihood(eval_gradient=True))
        _finite_or_value_error(lambda: m.objective_terms())
        pred = _finite_or_value_error(lambda: m.predict_f(Xs))
        if pred is not None:
            assert np.all(pred[1] >= 0)
        _finite_or_value_error(lambda: m.predict_y(Xs, full_cov=True))
        if approximation != "exact":
            _finite_or_value_error(lambda: m.upper_bound())
            _finite_or_value_error(lambda: m.upper_bound(eval_gradient=True))
            _finite_or_value_error(lambda: m.q_u())
            _finite_or_value_error(lambda: m.predict_components(Xs))


@pytest.mark.parametrize("approximation", APPROXIMATIONS)
def test_moderately_extreme_hyperparameters_evaluate_finitely(approximation):
    """Long lengthscale / tiny variance is well posed with the default jitter: it must give
    finite numbers, not an error."""
    X, y = data(N=15)
    m = sparse_model(X, y, Z=np.linspace(-2, 2, 6), approximation=approximation,
                     kernel=se(lengthscale=1e6, variance=1e-8))
    value, grads = m.log_marginal_likelihood(eval_gradient=True)
    assert np.isfinite(value) and all(np.all(np.isfinite(v)) for v in grads.values())
    assert np.isfinite(m.upper_bound())
    mean, var = m.predict_f(np.linspace(-2, 2, 3))
    assert np.all(np.isfinite(mean)) and np.all(np.isfinite(var))


# ---------------------------------------------------------------------------------------------
# Parameters / copies
# ---------------------------------------------------------------------------------------------


def test_parameters_roundtrip_and_copy_independence():
    X, y = data(D=2)
    m = sparse_model(X, y, kernel=se(lengthscale=[0.5, 2.0]))
    p = m.parameters
    assert set(p) == {"variance", "lengthscale", "noise_variance", "Z"}
    p["Z"][:] = 123.0  # parameters hands out copies
    assert not np.any(m.Z == 123.0)
    c = m.copy()
    c.set_parameters(**{"lengthscale": np.array([1.0, 1.0]), "noise_variance": 0.5, "Z": m.Z + 1})
    np.testing.assert_array_equal(m.kernel.lengthscale, [0.5, 2.0])
    assert m.noise_variance == 0.1
    np.testing.assert_array_equal(m.Z, X[:5])
    assert c.log_marginal_likelihood() != m.log_marginal_likelihood()
    m.set_parameters(**c.parameters)
    assert c.log_marginal_likelihood() == m.log_marginal_likelihood()


def test_exact_parameters_have_no_Z():
    X, y = data()
    assert set(exact_model(X, y).parameters) == {"variance", "lengthscale", "noise_variance"}


def test_tightened_upper_bound_stays_a_valid_bound_and_gets_tighter():
    ds = datasets.load("snelson100")
    k = kernels.SquaredExponential(variance=1.0, lengthscale=0.5)
    m = models.SparseGPR(ds.X, ds.y, kernel=k, Z=10, z_init="random", seed=1, approximation="fitc",
                         noise_variance=0.05)
    exact = models.ExactGPR(ds.X, ds.y, kernel=k.copy(), noise_variance=0.05).log_marginal_likelihood()
    Z_before = m.Z.copy()
    bound, Z = m.tightened_upper_bound(max_iter=50)
    assert exact <= bound < m.upper_bound()
    np.testing.assert_array_equal(m.Z, Z_before)  # the model is unchanged
    tight = models.SparseGPR(ds.X, ds.y, kernel=k.copy(), Z=Z, noise_variance=0.05).upper_bound()
    assert tight == pytest.approx(bound, rel=1e-10)


def test_linearized_models_are_part_of_the_public_facade():
    from gpexplorer.linearized import kitchen_sinks
    from gpexplorer.linearized import gp as linearized

    assert models.LinearizedGP is linearized.LinearizedGP
    assert models.LinearizedKitchenSinks is kitchen_sinks.LinearizedKitchenSinks
    with pytest.raises(AttributeError, match="no attribute 'Nope'"):
        models.Nope
