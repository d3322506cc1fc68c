"""Fitting (L-BFGS-B over log-hyperparameters, noise and Z), traces, restarts, from_model and
inducing-input initialisation."""

from __future__ import annotations

import numpy as np
import pytest

from gpexplorer import kernels, models
from gpexplorer.inducing import placement as inducing

APPROXIMATIONS = ("sor", "dtc", "fitc", "vfe")


def data(N=40, D=1, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.uniform(-3.0, 3.0, size=(N, D))
    y = np.sin(1.5 * X[:, 0]) + 0.5 * np.cos(X.sum(axis=1)) + 0.15 * rng.normal(size=N)
    return X, y


def model(approximation="vfe", N=40, M=6, D=1, seed=0, **kw):
    X, y = data(N, D, seed)
    Z = np.linspace(-2.0, 2.0, M)[:, None] if D == 1 else X[:M].copy()
    kern = kw.pop("kernel", kernels.SquaredExponential(variance=0.5, lengthscale=2.0))
    return models.SparseGPR(X, y, kern, Z=Z, approximation=approximation,
                            noise_variance=kw.pop("noise_variance", 0.5), **kw)


def _same_params(a, b):
    assert set(a) == set(b)
    for k in a:
        np.testing.assert_array_equal(np.asarray(a[k]), np.asarray(b[k]), err_msg=k)


# ---------------------------------------------------------------------------------------------
# Basic behaviour
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("approximation", APPROXIMATIONS)
def test_fit_increases_objective(approximation):
    m = model(approximation)
    before = m.log_marginal_likelihood()
    res = m.fit(max_iter=60)
    after = m.log_marginal_likelihood()
    assert after > before + 1.0, (before, after)
    assert after == pytest.approx(-res.objective, rel=1e-10)
    assert res.log_marginal_likelihood == pytest.approx(after, rel=1e-10)
    assert m.fit_result is res


def test_exact_fit_increases_objective():
    X, y = data()
    m = models.ExactGPR(X, y, kernels.Matern52(variance=0.5, lengthscale=2.0), noise_variance=0.5)
    before = m.log_marginal_likelihood()
    res = m.fit(max_iter=60)
    assert m.log_marginal_likelihood() > before + 1.0
    assert m.log_marginal_likelihood() == pytest.approx(-res.objective, rel=1e-10)
    assert set(res.trace[-1].params) == {"variance", "lengthscale", "noise_variance"}


def test_fit_reaches_a_stationary_point():
    m = model("vfe", M=5)
    m.fit(max_iter=500)
    _, grads = m.log_marginal_likelihood(eval_gradient=True)
    p = m.parameters
    # gradient in the optimiser's coordinates (log for positive parameters) is ~0
    for k in ("variance", "lengthscale", "noise_variance"):
        assert abs(grads[k] * p[k]) < 1e-2, (k, grads[k] * p[k])
    assert np.max(np.abs(grads["Z"])) < 1e-2


def test_fixed_Z_leaves_Z_unchanged():
    m = model()
    Z0 = m.Z.copy()
    p0 = m.parameters
    m.fit(max_iter=40, fixed=("Z",))
    np.testing.assert_array_equal(m.Z, Z0)
    assert m.kernel.lengthscale != p0["lengthscale"]
    assert m.noise_variance != p0["noise_variance"]


def test_fixed_accepts_a_single_string():
    m = model()
    Z0 = m.Z.copy()
    m.fit(max_iter=20, fixed="Z")
    np.testing.assert_array_equal(m.Z, Z0)


def test_fixed_noise_leaves_noise_unchanged():
    m = model()
    m.fit(max_iter=40, fixed=("noise_variance",))
    assert m.noise_variance == 0.5
    assert m.kernel.lengthscale != 2.0


def test_fixed_kernel_leaves_kernel_unchanged():
    m = model(kernel=kernels.SquaredExponential(variance=0.7, lengthscale=[1.5]))
    Z0 = m.Z.copy()
    m.fit(max_iter=40, fixed=("kernel",))
    assert m.kernel.variance == 0.7
    np.testing.assert_array_equal(m.kernel.lengthscale, [1.5])
    assert m.noise_variance != 0.5
    assert not np.array_equal(m.Z, Z0)


def test_fixed_kernel_with_sum_kernel_and_single_parameter():
    k = kernels.SquaredExponential(variance=0.5, lengthscale=2.0) + kernels.Linear(variance=0.1)
    m = model(kernel=k)
    m.fit(max_iter=30, fixed=("kernel",))
    assert m.kernel.parameters == {"0.variance": 0.5, "0.lengthscale": 2.0, "1.variance": 0.1}
    m2 = model(kernel=k.copy())
    m2.fit(max_iter=30, fixed=("1.variance", "Z"))
    assert m2.kernel.parameters["1.variance"] == 0.1
    assert m2.kernel.parameters["0.lengthscale"] != 2.0


def test_everything_fixed_is_a_no_op():
    m = model()
    p0 = m.parameters
    res = m.fit(max_iter=20, fixed=("kernel", "noise_variance", "Z"))
    _same_params(m.parameters, p0)
    assert len(res.trace) == 1
    assert res.objective == pytest.approx(-m.log_marginal_likelihood(), rel=1e-12)


@pytest.mark.parametrize("bad", ["z", "noise", "lengthscales", "0.variance"])
def test_unknown_fixed_name_raises(bad):
    m = model()
    p0 = m.parameters
    with pytest.raises(ValueError, match=f"cannot fix '{bad}'"):
        m.fit(max_iter=5, fixed=(bad,))
    _same_params(m.parameters, p0)


def test_negative_max_iter_raises():
    with pytest.raises(ValueError, match="max_iter"):
        model().fit(max_iter=-1)


def test_max_iter_zero_keeps_start():
    m = model()
    p0 = m.parameters
    res = m.fit(max_iter=0)
    _same_params(m.parameters, p0)
    assert len(res.trace) == 1 and res.n_iter == 0


def test_max_iter_is_respected():
    m = model()
    res = m.fit(max_iter=3)
    assert res.n_iter <= 3
    assert len(res.trace) <= 4


# ---------------------------------------------------------------------------------------------
# Trace
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("approximation", ["fitc", "vfe"])
def test_trace_is_consistent(approximation):
    m = model(approximation)
    start = m.copy()
    res = m.fit(max_iter=25)
    trace = res.trace
    assert len(trace) == res.n_iter + 1
    assert [e.iteration for e in trace] == list(range(len(trace)))
    # the first entry is the starting point
    _same_params(trace[0].params, start.parameters)
    assert trace[0].objective == pytest.approx(-start.log_marginal_likelihood(), rel=1e-12)
    # every entry replays: same objective and terms when the model is evaluated at its params
    replay = start.copy()
    for e in trace:
        replay.set_parameters(**e.params)
        assert e.objective == pytest.approx(-replay.log_marginal_likelihood(), rel=1e-10, abs=1e-10)
        assert e.log_marginal_likelihood == -e.objective
        terms = replay.objective_terms()
        assert set(e.terms) == set(terms)
        for k in terms:
            assert e.terms[k] == pytest.approx(terms[k], rel=1e-10, abs=1e-10)
        assert sum(e.terms.values()) == pytest.approx(e.objective, rel=1e-10, abs=1e-10)
    # recorded params are snapshots: later iterations did not overwrite earlier ones
    assert not np.array_equal(trace[0].params["Z"], trace[-1].params["Z"])
    # the result is the best entry of the trace, and the model is left there
    best = min(e.objective for e in trace)
    assert res.objective == pytest.approx(best, rel=1e-12, abs=1e-12)
    assert -m.log_marginal_likelihood() == pytest.approx(best, rel=1e-12, abs=1e-12)
    # L-BFGS-B makes progress from the start
    assert best < trace[0].objective


def test_trace_entries_are_not_aliased_to_the_model():
    m = model()
    res = m.fit(max_iter=10)
    Zlast = res.trace[-1].params["Z"].copy()
    m.Z[:] = 99.0  # mutate the model in place
    np.testing.assert_array_equal(res.trace[-1].params["Z"], Zlast)


def test_callback_receives_every_entry():
    seen = []
    m = model()
    res = m.fit(max_iter=15, callback=lambda e: seen.append(e) and False)
    assert [e.iteration for e in seen] == list(range(1, len(res.trace)))
    assert all(a is b for a, b in zip(seen, res.trace[1:]))


def test_callback_returning_true_stops_after_first_iteration():
    calls = []

    def stop(entry):
        calls.append(entry)
        return True

    m = model()
    start = m.log_marginal_likelihood()
    res = m.fit(max_iter=100, callback=stop)
    assert len(calls) == 1
    assert calls[0].iteration == 1
    assert len(res.trace) == 2
    # the model is left at the better of the two recorded points
    assert m.log_marginal_likelihood() >= start
    assert -m.log_marginal_likelihood() == pytest.approx(min(e.objective for e in res.trace), rel=1e-12)


# ---------------------------------------------------------------------------------------------
# Restarts
# ---------------------------------------------------------------------------------------------


def test_restarts_are_recorded_and_reproducible():
    base = model("vfe", M=5)
    a, b = base.copy(), base.copy()
    ra = a.fit(max_iter=30, restarts=2, seed=123)
    rb = b.fit(max_iter=30, restarts=2, seed=123)
    assert len(ra.restarts) == 3
    assert [r["start"] for r in ra.restarts] == [0, 1, 2]
    for r in ra.restarts:
        assert set(r) >= {"start", "objective", "n_iter", "message"}
        assert np.isfinite(r["objective"])
    # the best start is kept
    assert ra.objective == pytest.approx(min(r["objective"] for r in ra.restarts), rel=1e-12)
    assert -a.log_marginal_likelihood() == pytest.approx(ra.objective, rel=1e-12)
    # same seed, same everything
    assert [r["objective"] for r in ra.restarts] == [r["objective"] for r in rb.restarts]
    _same_params(a.parameters, b.parameters)
    # the restarts really start somewhere else
    objs = [r["objective"] for r in ra.restarts]
    assert len(set(objs)) > 1


def test_restart_start_zero_matches_plain_fit():
    base = model("vfe", M=5)
    plain = base.copy().fit(max_iter=30)
    with_restarts = base.copy().fit(max_iter=30, restarts=1, seed=0)
    assert with_restarts.restarts[0]["objective"] == pytest.approx(plain.objective, rel=1e-12)


def test_different_seeds_give_different_restarts():
    base = model("vfe", M=5)
    ra = base.copy().fit(max_iter=10, restarts=1, seed=1)
    rb = base.copy().fit(max_iter=10, restarts=1, seed=2)
    assert ra.restarts[1]["objective"] != rb.restarts[1]["objective"]


def test_fit_does_not_touch_global_random_state():
    state = np.random.get_state()
    model().fit(max_iter=5, restarts=1, seed=3)
    models.SparseGPR(*data(), kernels.SquaredExponential(), Z=5, z_init="kmeans", seed=1)
    after = np.random.get_state()
    assert state[0] == after[0]
    np.testing.assert_array_equal(state[1], after[1])
    assert state[2:] == after[2:]


# ---------------------------------------------------------------------------------------------
# from_model
# ---------------------------------------------------------------------------------------------


def test_from_model_copies_parameters_and_Z():
    fitc = model("fitc", M=6)
    fitc.fit(max_iter=60)
    vfe = models.SparseGPR.from_model(fitc, "vfe")
    assert vfe.approximation == "vfe"
    _same_params(vfe.parameters, fitc.parameters)
    assert vfe.jitter == fitc.jitter
    # VFE at the FITC optimum equals a freshly built VFE model at those parameters
    fresh = models.SparseGPR(fitc.X, fitc.y, kernels.SquaredExponential(), Z=fitc.Z.copy(),
                             approximation="vfe", noise_variance=1.0)
    fresh.set_parameters(**fitc.parameters)
    assert vfe.log_marginal_likelihood() == pytest.approx(fresh.log_marginal_likelihood(), rel=1e-12)
    # ...and it is a lower bound on the FITC objective there
    assert vfe.log_marginal_likelihood() <= fitc.log_marginal_likelihood()
    # the copies are independent
    assert vfe.kernel is not fitc.kernel
    assert not np.shares_memory(vfe.Z, fitc.Z)
    vfe.Z[0, 0] += 1.0
    vfe.kernel.set_parameters(variance=3.0)
    assert fitc.Z[0, 0] != vfe.Z[0, 0]
    assert fitc.kernel.variance != 3.0


def test_from_model_overrides():
    fitc = model("fitc")
    other = models.SparseGPR.from_model(fitc, "dtc", noise_variance=0.25, jitter=1e-8)
    assert other.approximation == "dtc"
    assert other.noise_variance == 0.25 and other.jitter == 1e-8
    np.testing.assert_array_equal(other.Z, fitc.Z)


def test_vfe_initialised_at_fitc_then_fit_improves_bound():
    fitc = model("fitc", M=5)
    fitc.fit(max_iter=40)
    vfe = models.SparseGPR.from_model(fitc, "vfe")
    start = vfe.log_marginal_likelihood()
    res = vfe.fit(max_iter=40)
    assert res.trace[0].objective == pytest.approx(-start, rel=1e-12)
    assert vfe.log_marginal_likelihood() >= start


# ---------------------------------------------------------------------------------------------
# Inducing-input initialisation
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("method", ["even", "random", "kmeans"])
@pytest.mark.parametrize("D", [1, 2])
@pytest.mark.parametrize("M", [1, 7])
def test_inducing_initialisation_shapes_and_determinism(method, D, M):
    X, y = data(N=30, D=D, seed=4)
    m1 = models.SparseGPR(X, y, kernels.SquaredExponential(), Z=M, z_init=method, seed=7)
    m2 = models.SparseGPR(X, y, kernels.SquaredExponential(), Z=M, z_init=method, seed=7)
    assert m1.Z.shape == (M, D)
    assert m1.Z.dtype == np.float64
    np.testing.assert_array_equal(m1.Z, m2.Z)
    assert np.all(np.isfinite(m1.Z))
    # every initialisation stays within the data's bounding box
    assert np.all(m1.Z >= X.min(axis=0) - 1e-12) and np.all(m1.Z <= X.max(axis=0) + 1e-12)
    assert np.isfinite(m1.log_marginal_likelihood())
    Z = inducing.initial_inducing_inputs(X, M, method, seed=7)
    np.testing.assert_array_equal(Z, m1.Z)


@pytest.mark.parametrize("method", ["random", "kmeans"])
def test_random_initialisations_depend_on_seed(method):
    X, _ = data(N=50, D=2, seed=5)
    a = inducing.initial_inducing_inputs(X, 8, method, seed=1)
    b = inducing.initial_inducing_inputs(X, 8, method, seed=2)
    assert not np.array_equal(a, b)


def test_seed_may_be_a_generator():
    X, _ = data(N=30, seed=6)
    a = inducing.initial_inducing_inputs(X, 5, "random", seed=np.random.default_rng(3))
    b = inducing.initial_inducing_inputs(X, 5, "random", seed=np.random.default_rng(3))
    np.testing.assert_array_equal(a, b)


def test_even_initialisation_1d_is_evenly_spaced_over_the_data_range():
    X, _ = data(N=30, seed=8)
    Z = inducing.initial_inducing_inputs(X, 6, "even")
    np.testing.assert_allclose(Z[:, 0], np.linspace(X.min(), X.max(), 6), rtol=1e-12)


def test_random_initialisation_is_a_subset_of_distinct_training_inputs():
    X, _ = data(N=30, D=2, seed=9)
    Z = inducing.initial_inducing_inputs(X, 10, "random", seed=0)
    rows = {tuple(r) for r in X}
    assert all(tuple(z) in rows for z in Z)
    assert len({tuple(z) for z in Z}) == 10


@pytest.mark.parametrize("method", ["random", "kmeans"])
def test_more_inducing_inputs_than_data(method):
    X, y = data(N=6, D=2, seed=10)
    m = models.SparseGPR(X, y, kernels.SquaredExponential(), Z=10, z_init=method, seed=0,
                         noise_variance=0.1)
    assert m.Z.shape == (10, 2)
    # all training inputs are used, the extras lie within the data's box
    rows = {tuple(z) for z in m.Z}
    assert all(tuple(x) in rows for x in X)
    assert np.all(m.Z >= X.min(axis=0)) and np.all(m.Z <= X.max(axis=0))
    value = m.log_marginal_likelihood()
    exact = models.ExactGPR(X, y, kernels.SquaredExponential(), noise_variance=0.1).log_marginal_likelihood()
    assert np.isfinite(value) and value <= exact + 1e-7 * abs(exact)


def test_kmeans_centres_are_near_the_clusters():
    rng = np.random.default_rng(12)
    centres = np.array([[-5.0, 0.0], [0.0, 5.0], [5.0, 0.0]])
    X = np.vstack([c + 0.1 * rng.normal(size=(20, 2)) for c in centres])
    Z = inducing.initial_inducing_inputs(X, 3, "kmeans", seed=0)
    d = np.sqrt(((Z[:, None, :] - centres[None]) ** 2).sum(-1))
    assert np.all(d.min(axis=0) < 0.2), Z


def test_bad_number_of_inducing_inputs_raises():
    X, _ = data()
    for bad in (0, -3, 2.5):
        with pytest.raises(ValueError, match="positive integer"):
            inducing.initial_inducing_inputs(X, bad, "random")
