"""One convention for every model (issue 13, item 3; issue 25, item 5): ExactGPR, SparseGPR,
LinearizedGP (EGP/UGP), LinearizedKitchenSinks (EKS/UKS) and SparseVariationalGP (SVGP) expose
``parameters``, ``set_parameters``, ``parameter_specs``, ``set_bounds`` and ``fit(max_iter, fixed,
restarts, seed, callback, ...)`` returning one FitResult whose trace is a list of TraceEntry; the
callback gets each TraceEntry and may stop the fit; the bounds set on a model are the fit's box;
the old fit keywords (max_evals, bounds=) are refused.

Issue 25, item 5: every model takes ``(X, Y, ...)`` with X [N, D] and Y [N, P] (a 1-D y accepted
where P = 1) and keeps ``model.X`` [N, D], ``model.Y`` [N, P]; ``predict_f(Xnew, full_cov=False)``;
a Monte Carlo sample count is spelled ``num_samples`` everywhere; ``objective()`` is the value
``fit`` minimises, the sign of ``FitResult.objective`` and ``TraceEntry.objective``:
-log_marginal_likelihood() (exact, SoR/DTC/FITC/VFE), -free_energy() (EGP/UGP/EKS/UKS), -elbo()
(SVGP); the named values keep their own (maximised) sign."""

import inspect
import warnings

import numpy as np
import pytest

from gpexplorer import kernels
from gpexplorer.models import ExactGPR, LinearizedGP, LinearizedKitchenSinks, SparseGPR
from gpexplorer.optimize import FitResult, TraceEntry
from gpexplorer.parameters import Parameter
from gpexplorer.variational.savigp import SparseVariationalGP

MODELS = ("exact", "sparse", "egp", "ugp", "eks", "svgp")
CLASSES = (ExactGPR, SparseGPR, LinearizedGP, LinearizedKitchenSinks, SparseVariationalGP)
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
    if kind == "svgp":
        y = f + 0.1 * rng.standard_normal(len(f))
        return SparseVariationalGP(X, y, kernel, np.linspace(-2.5, 2.5, 6)[:, None], "gaussian",
                                   likelihood_options={"variance": 0.5})
    y = np.sin(f) + 0.1 * rng.standard_normal(len(f))
    if kind in ("egp", "ugp"):
        return LinearizedGP(X, y, forward="sin", linearization="taylor" if kind == "egp" else "unscented",
                            kernel=kernel, noise_variance=0.5)
    return LinearizedKitchenSinks(X, y, forward="sin", n_features=16, lengthscale=lengthscale, noise_variance=0.5)


def objective_now(model):
    """The model's current objective (-log marginal likelihood, -free energy or -bound, -ELBO)."""
    if isinstance(model, (ExactGPR, SparseGPR)):
        return -model.log_marginal_likelihood()
    if isinstance(model, SparseVariationalGP):
        return -model.elbo()
    return -model.free_energy()


def lengthscale(kind):
    """The kernel lengthscale's name in ``parameters`` (SVGP prefixes its children)."""
    return "kernel0.lengthscale" if kind == "svgp" else "lengthscale"


def scalar(value):
    return float(np.ravel(value)[0])


def test_every_model_has_the_same_parameter_and_fit_signatures():
    signatures = {}
    for cls in CLASSES:
        fit = inspect.signature(cls.fit).parameters
        common = [(n, fit[n].default) for n in list(fit)[1:len(COMMON_FIT) + 1]]
        signatures[cls.__name__] = (common, str(inspect.signature(cls.set_parameters)),
                                    str(inspect.signature(cls.set_bounds)))
        for name in ("parameters", "parameter_specs"):
            assert isinstance(inspect.getattr_static(cls, name), property), (cls, name)
        assert not hasattr(cls, "assign_parameters")  # one spelling: set_parameters(**values), always checked
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
    other, name = make(kind, lengthscale=0.3), lengthscale(kind)
    other.set_parameters(**m.parameters)
    assert scalar(other.parameters[name]) == 1.0
    other.set_parameters(**{name: 0.7})
    assert scalar(other.parameters[name]) == 0.7
    with pytest.raises(ValueError):
        other.set_parameters(**{name: -1.0})
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
    name = lengthscale(kind)
    m = make(kind, lengthscale=2.2).set_bounds(**{name: (2.0, 2.5)})
    assert (m.parameter_specs[name].lower, m.parameter_specs[name].upper) == (2.0, 2.5)
    free = make(kind, lengthscale=2.2)
    result, free_result = m.fit(max_iter=60), free.fit(max_iter=60)
    learnt = [scalar(e.params[name]) for e in result.trace]
    assert all(2.0 * (1 - 1e-12) <= v <= 2.5 * (1 + 1e-12) for v in learnt)
    assert 2.0 * (1 - 1e-12) <= scalar(m.parameters[name]) <= 2.5 * (1 + 1e-12)
    assert not 2.0 <= scalar(free.parameters[name]) <= 2.5  # the box, not the data, held it
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


# issue 25, item 5 ----------------------------------------------------------------------------

def test_every_model_takes_X_and_Y_and_predict_f_with_full_cov():
    for cls in CLASSES:
        assert list(inspect.signature(cls.__init__).parameters)[:3] == ["self", "X", "Y"], cls.__name__
        predict_f = inspect.signature(cls.predict_f).parameters
        assert list(predict_f)[1:3] == ["Xnew", "full_cov"] and predict_f["full_cov"].default is False, cls.__name__
        assert callable(cls.objective), cls.__name__


def test_one_spelling_of_the_monte_carlo_sample_count():
    """``num_samples``, never n_samples, nsamples, n_mc or samples=, in any signature of the package."""
    import ast
    import pathlib

    import gpexplorer

    others = {"n_samples", "nsamples", "n_mc", "mc_samples", "samples", "num_draws"}
    found = []
    for path in pathlib.Path(gpexplorer.__file__).parent.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                a = node.args
                found += [f"{path.name}:{node.lineno} {node.name}({p.arg})"
                          for p in a.posonlyargs + a.args + a.kwonlyargs if p.arg in others]
    assert not found, found


@pytest.mark.parametrize("kind", MODELS)
def test_X_is_n_by_d_and_Y_n_by_p_and_a_column_equals_a_vector(kind):
    m = make(kind)
    N = m.X.shape[0]
    assert m.X.shape == (N, 1) and m.Y.shape == (N, 1)
    args, options = _rest(kind, m)
    as_column, as_vector = type(m)(m.X, m.Y, *args, **options), type(m)(m.X, m.Y[:, 0], *args, **options)
    assert as_column.objective() == pytest.approx(as_vector.objective(), rel=1e-12)
    assert as_column.Y.shape == as_vector.Y.shape == (N, 1)


def _rest(kind, m):
    """The constructor arguments after (X, Y) that rebuild ``m`` (see make)."""
    if kind == "exact":
        return (m.kernel,), {"noise_variance": 0.5}
    if kind == "sparse":
        return (m.kernel, m.Z), {"noise_variance": 0.5}
    if kind in ("egp", "ugp"):
        return (), {"forward": "sin", "linearization": m.linearization_method, "kernel": m.kernel,
                    "noise_variance": 0.5}
    if kind == "eks":
        return (), {"forward": "sin", "n_features": 16, "lengthscale": 1.0, "noise_variance": 0.5}
    return (m.kernels[0], m.features[0].Z, "gaussian"), {"likelihood_options": {"variance": 0.5}}


@pytest.mark.parametrize("kind", MODELS)
def test_objective_is_what_fit_minimises_and_full_cov_agrees_with_the_marginals(kind):
    m = make(kind)
    assert m.objective() == pytest.approx(objective_now(m), rel=1e-12)  # -log p(y), -F, -ELBO
    result = m.fit(max_iter=10)
    assert m.objective() == pytest.approx(result.objective, rel=1e-9, abs=1e-9)
    Xnew = np.linspace(-3.5, 3.5, 9)[:, None]
    mean, var = m.predict_f(Xnew)
    full_mean, cov = m.predict_f(Xnew, full_cov=True)
    np.testing.assert_allclose(full_mean, mean, rtol=1e-12, atol=1e-12)
    diagonal = np.diagonal(cov, axis1=-2, axis2=-1)  # [N*] or [Q, N*]
    np.testing.assert_allclose(diagonal.T if cov.ndim == 3 else diagonal, var, rtol=1e-8, atol=1e-10)
    np.testing.assert_allclose(cov, np.swapaxes(cov, -1, -2), rtol=1e-10, atol=1e-12)


def test_the_mixture_full_covariance_matches_its_marginals():
    X, f, rng = _data()
    m = SparseVariationalGP(X, f + 0.1 * rng.standard_normal(len(f)), kernels.Matern52(), 6, "gaussian",
                            posterior="mog2")
    Xnew = np.linspace(-3.5, 3.5, 9)[:, None]
    (mean, var), (full_mean, cov) = m.predict_f(Xnew), m.predict_f(Xnew, full_cov=True)
    np.testing.assert_allclose(full_mean, mean, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(np.diagonal(cov, axis1=-2, axis2=-1).T, var, rtol=1e-8, atol=1e-10)
