"""Fuzzing the likelihoods (issue 24, "Also"): typed log likelihoods built as random whitelisted
expression trees in f and y, every registered likelihood's construction and parameters, count
data with extreme values. Every case ends in a ValueError/TypeError that names the expression or
the argument, or in finite numbers, in bounded time: never a crash, a hang or a NaN.

The quick profile (tests/fuzz/conftest.py) runs in well under a minute; ``GPX_FUZZ=full`` runs
many more examples. Nothing here can crash the interpreter (numpy and scipy only, no numba
kernels on these paths), so the cases run in-process; each is timed instead."""

from __future__ import annotations

import inspect
import time

import numpy as np
from hypothesis import assume, given
from hypothesis import strategies as st

from gpexplorer import kernels
from gpexplorer.likelihoods import LIKELIHOODS, MULTI_OUTPUT_LIKELIHOODS, get_likelihood
from gpexplorer.likelihoods.expressions import FUNCTIONS
from gpexplorer.likelihoods.pointwise_expression import ExpressionLikelihood
from gpexplorer.likelihoods.quadrature import expected_log_density
from gpexplorer.variational import SparseVariationalGP

SECONDS = 20.0  # the longest any one case may take (a hang fails, not stalls)
ONE_ARGUMENT = sorted(n for n, (_, arity) in FUNCTIONS.items() if arity == 1)
EXTREME_COUNTS = (0.0, 1.0, 1e3, 3e3, 1e5, 1e7, 1e9, 1e12, 1e13, 1e16, 1e300)


def _trees(leaves):
    def extend(sub):
        return st.one_of(
            st.tuples(st.sampled_from(ONE_ARGUMENT), sub).map(lambda t: f"{t[0]}({t[1]})"),
            st.tuples(sub, st.sampled_from(["+", "-", "*", "/"]), sub).map(lambda t: f"({t[0]} {t[1]} {t[2]})"),
            st.tuples(sub, st.sampled_from(["2", "3", "0.5", "-1"])).map(lambda t: f"({t[0]})^{t[1]}"),
            st.tuples(st.sampled_from(["minimum", "maximum"]), sub, sub).map(lambda t: f"{t[0]}({t[1]}, {t[2]})"),
            sub.map(lambda s: f"-({s})"))
    return st.recursive(leaves, extend, max_leaves=8)


LEAVES = st.sampled_from(["f", "y", "1", "2", "0.5", "pi", "3", "1e3"])
F_TREES = _trees(st.sampled_from(["f", "1", "2", "0.5", "pi"]))
#: random trees in f and y, and likelihood-shaped ones around a random g(f) (accepted more often)
TYPED = st.one_of(
    _trees(LEAVES),
    F_TREES.map(lambda g: f"-0.5*(y - {g})^2"),
    F_TREES.map(lambda g: f"y*({g}) - exp({g}) - gammaln(y + 1)"),
    F_TREES.map(lambda g: f"log_sigmoid((2*y - 1)*({g}))"),
)


@st.composite
def count_data(draw):
    """20 to 40 Poisson-like counts, often with one or two extreme values (or real/binary data)."""
    kind = draw(st.sampled_from(["counts", "counts", "real", "binary"]))
    n = draw(st.integers(20, 40))
    rng = np.random.default_rng(draw(st.integers(0, 2**16)))
    if kind == "real":
        y = rng.normal(scale=draw(st.sampled_from([0.1, 1.0, 100.0, 1e6])), size=n)
    elif kind == "binary":
        y = (rng.uniform(size=n) < 0.5).astype(float)
    else:
        y = rng.poisson(draw(st.sampled_from([0.5, 3.0, 50.0])), n).astype(float)
        for value in draw(st.lists(st.sampled_from(EXTREME_COUNTS), max_size=2)):
            y[draw(st.integers(0, n - 1))] = value
    return y


def _names_it(message, *names):
    return any(name and name in message for name in names)


def _finite(*arrays):
    return all(np.all(np.isfinite(np.asarray(a, dtype=float))) for a in arrays)


@given(text=TYPED, Y=count_data())
def test_a_typed_likelihood_is_refused_by_name_or_gives_finite_numbers(text, Y):
    t0 = time.perf_counter()
    try:
        lik = ExpressionLikelihood(text)
        lik.validate(Y)
    except (ValueError, TypeError) as err:
        message = str(err)
        # the parser names the offending piece in quotes; the checks name the expression (or the count)
        assert _names_it(message, "log p(y | f)", "'", "a count of"), message
        return
    X = np.linspace(0.0, 1.0, Y.size)[:, None]
    F = np.linspace(-8.0, 8.0, 17)[:, None, None] + np.zeros((1, Y.size, 1))
    assert _finite(lik.log_density(F, Y), lik.dlog_density_df(F, Y)), text
    model = SparseVariationalGP(X, Y, kernels.SquaredExponential(), 3, lik, estimator="quadrature")
    value, grads = model.elbo(eval_gradient=True)
    assert np.isfinite(value) and all(_finite(g) for g in grads.values()), (text, value)
    try:
        mean, var = model.predict_y(X[:6])
    except ValueError as err:
        assert text in str(err), str(err)
    else:
        assert _finite(mean, var), text
    assert time.perf_counter() - t0 < SECONDS


HOSTILE = st.one_of(
    st.floats(allow_nan=True, allow_infinity=True), st.sampled_from([0.0, -1.0, 1e-300, 1e-12, 1e12, 1e300]),
    st.integers(-10, 10**6), st.booleans(), st.none(), st.text(max_size=4),
    st.lists(st.floats(-1e3, 1e3), min_size=0, max_size=4))
REGISTERED = {**LIKELIHOODS, **MULTI_OUTPUT_LIKELIHOODS}


@given(data=st.data(), name=st.sampled_from(sorted(REGISTERED)))
def test_every_registered_likelihood_refuses_bad_options_and_parameters_by_name(data, name):
    t0 = time.perf_counter()
    accepted = list(inspect.signature(REGISTERED[name]).parameters)
    options = data.draw(st.dictionaries(st.sampled_from(accepted), HOSTILE, max_size=2), label="options") if accepted else {}
    try:
        lik = get_likelihood(name, **options)
    except (ValueError, TypeError) as err:
        assert _names_it(str(err), name, *options), str(err)
        return
    for pname in data.draw(st.lists(st.sampled_from(sorted(lik.param_layout) or ["nothing"]), max_size=2)):
        value = data.draw(HOSTILE, label=pname)
        try:
            lik.set_parameters(**{pname: value})
        except (ValueError, TypeError) as err:
            assert _names_it(str(err), pname), str(err)
    rng = np.random.default_rng(data.draw(st.integers(0, 1000)))
    scale = data.draw(st.sampled_from([0.1, 1.0, 3.0]))
    F = scale * rng.standard_normal((25, lik.n_latent))
    try:
        Y = lik.sample(F, rng)
    except ValueError as err:
        assert _names_it(str(err), name, *options), str(err)
        return
    Y = Y[..., 0] if lik.n_outputs == 1 else Y
    assume(_finite(Y))
    values = lik.log_density(F[None], Y)
    assert _finite(values, lik.dlog_density_df(F[None], Y)), (lik, values)
    mean, var = lik.conditional_moments(F[None])
    assert _finite(mean, var), lik
    if lik.n_latent <= 3:
        ell = expected_log_density(lik, F, np.full(F.shape, 0.3), Y, n_points=5)
        assert _finite(ell.value, ell.dmean, ell.dvar, *ell.dparams.values()), lik
    assert time.perf_counter() - t0 < SECONDS


@given(Y=count_data(), posterior=st.sampled_from(["fg", "mog2"]))
def test_extreme_counts_give_finite_predictions_or_a_message_in_bounded_time(Y, posterior):
    t0 = time.perf_counter()
    X = np.linspace(0.0, 5.0, Y.size)[:, None]
    try:
        model = SparseVariationalGP(X, Y, kernels.SquaredExponential(), 4, "expression", posterior=posterior,
                                    likelihood_options={"text": "y*f - exp(f) - gammaln(y + 1)"})
    except ValueError as err:
        assert _names_it(str(err), "a count of", "log p(y | f)"), str(err)
        return
    free = np.random.default_rng(0).normal(scale=0.5, size=model.posterior.num_free)
    model.set_parameters(posterior=free)
    mean, var = model.predict_y(np.linspace(-1.0, 6.0, 50)[:, None])
    assert _finite(mean, var) and np.all(var >= 0)
    assert np.isfinite(model.elbo())
    assert time.perf_counter() - t0 < SECONDS
