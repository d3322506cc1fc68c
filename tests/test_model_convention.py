"""One convention for every model (issue 13, item 3): ExactGPR, SparseGPR, LinearizedGP (EGP/UGP)
and LinearizedKitchenSinks (EKS/UKS) expose ``parameters``, ``set_parameters``, ``parameter_specs``,
``set_bounds`` and ``fit(max_iter, fixed, restarts, seed, callback, ...)`` returning one FitResult
whose trace is a list of TraceEntry; the callback gets each TraceEntry and may stop the fit; the
bounds set on a model are the fit's box; the old fit keywords (max_evals, bounds=) are refused."""

import inspect
import warnings

import numpy as np
import pytest

from gpexplorer import kernels
from gpexplorer.models import ExactGPR, LinearizedGP, LinearizedKitchenSinks, SparseGPR
from gpexplorer.optimize import FitResult, TraceEntry

MODELS = ("exact", "sparse", "egp", "ugp", "eks")
COMMON_FIT = ("max_iter", "fixed", "restarts", "seed", "callback")


def _data(n=40, seed=0):
    rng = np.random.default_rng(seed)
    X = np.sort(rng.uniform(-3.0, 3.0, n))[:, None]
    f = np.sin(1.3 * X[:, 0])
    return X, f, rng


def make(kind, lengthscale=1.0):
    """A small model of each class."""
    X, f, rng = _data()
    kernel = kernels.Matern52(variance=1.0, lengthscale=lengthscale)
    if kind in ("exact", "sparse"):
        y = f + 0.1 * rng.standard_normal(len(f))
        if kind == "exact":
            return ExactGPR(X, y, kernel, noise_variance=0.5)
        return SparseGPR(X, y, kernel, Z=np.linspace(-2.5, 2.5, 6)[:, None], noise_variance=0.5)
    y = np.sin(f) + 0.1 * rng.standard_normal(len(f))
    if kind in ("egp", "ugp"):
        return LinearizedGP(X, y, forward="sin", linearization="taylor" if kind == "egp" else "unscented",
                            kernel=kernel, noise_variance=0.5)
    return LinearizedKitchenSinks(X, y, forward="sin", n_features=16, lengthscale=lengthscale, noise_variance=0.5)


def objective_now(model):
    """The model's current objective (-log marginal likelihood, -free energy or -bound)."""
    if isinstance(model, (ExactGPR, SparseGPR)):
        return -model.log_marginal_likelihood()
    return -model.free_energy()


def scalar(value):
    return float(np.ravel(value)[0])


def test_every_model_has_the_same_parameter_and_fit_signatures():
    signatures = {}
    for cls in (ExactGPR, SparseGPR, LinearizedGP, LinearizedKitchenSinks):
        fit = inspect.signature(cls.fit).parameters
        common = [(n, fit[n].default) for n in list(fit)[1:len(COMMON_FIT) + 1]]
        signatures[cls.__name__] = (common, str(inspect.signature(cls.set_parameters)),
                                    str(inspect.signature(cls.set_bounds)))
        for name in ("parameters", "parameter_specs"):
            assert isinstance(inspect.getattr_static(cls, name), property), (cls, name)
        assert callable(cls.assign_parameters)
    reference = signatures["ExactGPR"]
    assert [n for n, _ in reference[0]] == list(COMMON_FIT)
    assert reference[0] == [("max_iter", 200), ("fixed", ()), ("restarts", 0), ("seed", None), ("callback", None)]
    for name, signature in signatures.items():
        assert signature == reference, name


@pytest.mark.parametrize("kind", MODELS)
def test_specs_describe_every_parameter_and_set_parameters_round_trips(kind):
    m = make(kind)
    specs = m.parameter_specs
    assert set(specs) == set(m.parameters)
    assert all(isinstance(s, Parameter) and s.name == n for n, s in specs.items())
    other = make(kind, lengthscale=0.3)
    other.set_parameters(m.parameters)
    assert scalar(other.parameters["lengthscale"]) == 1.0
    other.set_parameters(lengthscale=0.7)
    assert scalar(other.parameters["lengthscale"]) == 0.7
    with pytest.raises(ValueError):
        other.set_parameters(lengthscale=-1.0)
    with pytest.raises(ValueError):
        m.set_bounds(no_such_parameter=(1.0, 2.0))


@pytest.mark.parametrize("kind", MODELS)
def test_fit_returns_one_fit_result_with_a_trace_of_entries(kind):
    m = make(kind)
    before = objective_now(m)
    result = m.fit(max_iter=40)
    assert isinstance(result, FitResult) and m.fit_result is result
    assert result.trace and all(isinstance(e, TraceEntry) for e in result.trace)
    assert all(set(e.params) == set(m.parameters) for e in result.trace)
    assert result.objective == pytest.approx(min(e.objective for e in result.trace))
    assert result.objective == pytest.approx(objective_now(m), rel=1e-9, abs=1e-9)  # left at the best
    assert result.objective < before
    assert len(result.restarts) == 1 and result.restarts[0]["start"] == 0


@pytest.mark.parametrize("kind", MODELS)
def test_the_callback_gets_trace_entries_and_can_stop_the_fit(kind):
    seen = []

    def stop_at_two(entry):
        seen.append(entry)
        return len(seen) == 2

    result = make(kind).fit(max_iter=100, callback=stop_at_two)
    assert len(seen) == 2 and all(isinstance(e, TraceEntry) for e in seen)
    assert result.trace[-2:] == seen  # nothing was evaluated after the stop
    assert seen[0].iteration < seen[1].iteration


@pytest.mark.parametrize("kind", MODELS)
def test_set_bounds_is_the_box_of_the_fit(kind):
    """Free, the lengthscale leaves [2, 2.5] (each model's optimum lies outside); boxed, it stays."""
    m = make(kind, lengthscale=2.2).set_bounds(lengthscale=(2.0, 2.5))
    assert (m.parameter_specs["lengthscale"].lower, m.parameter_specs["lengthscale"].upper) == (2.0, 2.5)
    free = make(kind, lengthscale=2.2)
    result, free_result = m.fit(max_iter=60), free.fit(max_iter=60)
    learnt = [scalar(e.params["lengthscale"]) for e in result.trace]
    assert all(2.0 * (1 - 1e-12) <= v <= 2.5 * (1 + 1e-12) for v in learnt)
    assert 2.0 * (1 - 1e-12) <= scalar(m.parameters["lengthscale"]) <= 2.5 * (1 + 1e-12)
    assert not 2.0 <= scalar(free.parameters["lengthscale"]) <= 2.5  # the box, not the data, held it
    assert free_result.objective < result.objective


@pytest.mark.parametrize("kind", ["egp", "eks"])
def test_fit_takes_max_iter_and_the_models_box_only(kind):
    old_name = "max_evals" if kind == "egp" else "max_evaluations"
    for old in ({old_name: 5}, {"bounds": {"lengthscale": (2.0, 2.5)}}):  # removed after their release
        with pytest.raises(TypeError):
            make(kind).fit(**old)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        make(kind).fit(max_iter=3)


@pytest.mark.parametrize("kind", MODELS)
def test_restarts_keep_the_best_start(kind):
    plain = make(kind, lengthscale=2.2).fit(max_iter=15)
    m = make(kind, lengthscale=2.2)
    result = m.fit(max_iter=15, restarts=2, seed=3)
    assert [r["start"] for r in result.restarts] == [0, 1, 2]
    assert result.restarts[0]["objective"] == pytest.approx(plain.objective, rel=1e-9)  # start 0: the plain fit
    assert result.objective == min(r["objective"] for r in result.restarts) <= plain.objective
    assert result.objective == pytest.approx(objective_now(m), rel=1e-9, abs=1e-9)
    assert result.objective == pytest.approx(min(e.objective for e in result.trace))
    again = make(kind, lengthscale=2.2).fit(max_iter=15, restarts=2, seed=3)
    assert [r["objective"] for r in again.restarts] == pytest.approx([r["objective"] for r in result.restarts])
