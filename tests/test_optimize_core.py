"""The optimiser core (gpexplorer.optimize): each strategy on problems with a known optimum
(a quadratic, Rosenbrock), the stop convention (on_iterate / callback returning True), cancel
(an Event or a callable, honoured between evaluations), fixed groups, restarts."""

import threading

import numpy as np
import pytest

from gpexplorer import kernels, models, optimize

INF = np.inf


def rosenbrock(x):
    a, b = x[0], x[1]
    F = (1 - a) ** 2 + 100 * (b - a * a) ** 2
    g = np.array([-2 * (1 - a) - 400 * a * (b - a * a), 200 * (b - a * a)])
    return F, g


def quadratic(center, scales):
    """F = 1/2 sum s_i (x_i - c_i)^2 + a coupling of the first two entries; minimum at c."""
    center, scales = np.asarray(center, float), np.asarray(scales, float)

    def fun(x):
        d = x - center
        F = 0.5 * float(np.sum(scales * d * d)) + 0.5 * (d[0] - d[1]) ** 2
        g = scales * d
        g[0] += d[0] - d[1]
        g[1] -= d[0] - d[1]
        return F, g
    return fun


def counting(fun):
    calls = []

    def wrapped(x):
        calls.append(np.array(x))
        return fun(x)
    return wrapped, calls


def box(n, lo=-INF, hi=INF):
    return np.full(n, lo, dtype=float), np.full(n, hi, dtype=float)


# --- joint L-BFGS-B ------------------------------------------------------------------------------
def test_lbfgsb_finds_the_rosenbrock_minimum():
    run = optimize.lbfgsb(rosenbrock, np.array([-1.2, 1.0]), *box(2), max_iter=500, gtol=1e-10, ftol=1e-15)
    assert run.success and not run.stopped and not run.cancelled
    np.testing.assert_allclose(run.x, [1.0, 1.0], atol=1e-5)
    assert run.message.startswith("CONVERGENCE")


def test_memory_is_l_bfgs_b_s_number_of_stored_corrections():
    """On a quadratic in 30 dimensions with condition number 10^4, a memory of 30 (the whole
    history) converges in far fewer iterations than 2; the default is scipy's 10, whichever way
    it is reached (no argument, None, or 10 itself)."""
    scales = np.logspace(0, 4, 30)
    fun = quadratic(np.ones(30), scales)
    runs = {m: optimize.lbfgsb(fun, np.zeros(30), *box(30), max_iter=5000, gtol=1e-9, ftol=1e-15, memory=m)
            for m in (None, 2, 10, 30)}
    assert all(r.success for r in runs.values())
    assert runs[30].n_iter < runs[2].n_iter / 2
    assert runs[None].n_iter == runs[10].n_iter == optimize.lbfgsb(fun, np.zeros(30), *box(30), max_iter=5000,
                                                                   gtol=1e-9, ftol=1e-15).n_iter
    for r in runs.values():
        np.testing.assert_allclose(r.x, np.ones(30), atol=1e-4)


def test_lbfgsb_respects_bounds():
    fun = quadratic([2.0, -3.0, 0.5], [1.0, 2.0, 3.0])
    lo, hi = np.array([-INF, -1.0, -INF]), np.array([1.0, INF, INF])
    run = optimize.lbfgsb(fun, np.zeros(3), lo, hi, max_iter=200)
    assert run.x[0] == pytest.approx(1.0) and run.x[1] == pytest.approx(-1.0)


def test_on_iterate_returning_true_stops_lbfgsb():
    seen = []

    def on_iterate(x, F):
        seen.append((x.copy(), F))
        return len(seen) == 3

    run = optimize.lbfgsb(rosenbrock, np.array([-1.2, 1.0]), *box(2), max_iter=500, on_iterate=on_iterate)
    assert run.stopped and run.n_iter == 3 and len(seen) == 3
    assert run.message == optimize.STOPPED_MESSAGE and not run.success
    assert seen[-1][1] == pytest.approx(rosenbrock(seen[-1][0])[0])


@pytest.mark.parametrize("kind", ["event", "callable"])
def test_cancel_ends_lbfgsb_between_evaluations(kind):
    event = threading.Event()
    fun, calls = counting(rosenbrock)

    def cancelling(x):
        out = fun(x)
        if len(calls) == 5:
            event.set()
        return out

    cancel = event if kind == "event" else event.is_set
    run = optimize.lbfgsb(cancelling, np.array([-1.2, 1.0]), *box(2), max_iter=500, cancel=cancel)
    assert run.cancelled and not run.success and run.message == optimize.CANCELLED_MESSAGE
    assert len(calls) == 5  # no evaluation once the cancel was set
    assert np.all(np.isfinite(run.x))


def test_lbfgsb_on_a_subset_keeps_the_rest():
    fun = quadratic([1.0, 2.0, 3.0, 4.0], [1.0, 1.0, 1.0, 1.0])
    x0 = np.zeros(4)
    run = optimize.lbfgsb(fun, x0, *box(4), max_iter=100, idx=np.array([2, 3]))
    assert run.x[0] == 0.0 and run.x[1] == 0.0
    np.testing.assert_allclose(run.x[2:], [3.0, 4.0], atol=1e-6)


def test_cancel_rejects_what_is_not_callable():
    with pytest.raises(ValueError, match="cancel"):
        optimize.lbfgsb(rosenbrock, np.zeros(2), *box(2), max_iter=5, cancel=3)


# --- block-cyclic L-BFGS-B ----------------------------------------------------------------------
def test_block_cyclic_reaches_the_optimum_and_never_rises():
    center = np.array([1.0, -2.0, 0.5, 3.0])
    fun = quadratic(center, [1.0, 5.0, 0.5, 2.0])
    gains = []

    def after_round(gain, n_iter, messages):
        gains.append(gain)
        assert set(messages) == {"a", "b"}
        return False

    blocks = {"a": np.array([0, 2]), "b": np.array([1, 3])}
    run = optimize.block_cyclic(fun, np.zeros(4), *box(4), blocks, rounds=30, evals_per_block=5,
                                after_round=after_round)
    assert run.success and len(gains) == 30 and min(gains) >= 0.0
    np.testing.assert_allclose(run.x, center, atol=1e-4)
    assert run.message == "30 rounds over the blocks ['a', 'b']"


def test_block_cyclic_after_round_ends_the_rounds():
    fun = quadratic([1.0, 2.0], [1.0, 1.0])
    run = optimize.block_cyclic(fun, np.zeros(2), *box(2), {"a": np.array([0]), "b": np.array([1])}, rounds=50,
                                evals_per_block=3, after_round=lambda gain, n, m: gain < 1e-8)
    assert run.message.startswith("") and int(run.message.split()[0]) < 50


def test_block_cyclic_stop_and_cancel():
    fun = quadratic([1.0, 2.0, 3.0], [1.0, 2.0, 3.0])
    blocks = {"a": np.array([0]), "b": np.array([1, 2])}
    seen = []
    run = optimize.block_cyclic(fun, np.zeros(3), *box(3), blocks, rounds=10, evals_per_block=5,
                                on_iterate=lambda x, F: seen.append(F) or len(seen) == 2)
    assert run.stopped and len(seen) == 2
    event = threading.Event()
    event.set()
    run = optimize.block_cyclic(fun, np.zeros(3), *box(3), blocks, rounds=10, evals_per_block=5, cancel=event)
    assert run.cancelled and run.n_iter == 0


# --- Adam --------------------------------------------------------------------------------------
def test_adam_converges_on_a_noisy_quadratic():
    rng = np.random.default_rng(0)
    center = np.array([1.5, -0.5, 2.0])
    fun = quadratic(center, [1.0, 2.0, 0.5])
    run = optimize.adam(lambda x, t: fun(x)[1] + 0.01 * rng.standard_normal(3), np.zeros(3), *box(3), steps=3000,
                        learning_rate=0.01)
    assert run.success and run.n_iter == 3000
    np.testing.assert_allclose(run.x, center, atol=0.05)


def test_adam_on_step_stops_and_failures_end_the_run():
    fun = quadratic([1.0, 1.0], [1.0, 1.0])
    run = optimize.adam(lambda x, t: fun(x)[1], np.zeros(2), *box(2), steps=100, learning_rate=0.1,
                        on_step=lambda t, x: t == 7)
    assert run.stopped and run.n_iter == 7
    run = optimize.adam(lambda x, t: None, np.zeros(2), *box(2), steps=100, learning_rate=0.1, max_failures=4)
    assert not run.success and run.n_iter == 4 and np.all(run.x == 0.0)
    run = optimize.adam(lambda x, t: fun(x)[1], np.zeros(2), *box(2, hi=0.25), steps=500, learning_rate=0.1)
    np.testing.assert_allclose(run.x, [0.25, 0.25])  # clipped into the box


def test_adam_cancel():
    calls = []
    event = threading.Event()

    def gradient(x, t):
        calls.append(t)
        if t == 3:
            event.set()
        return np.ones_like(x)

    run = optimize.adam(gradient, np.zeros(2), *box(2), steps=100, learning_rate=0.1, cancel=event)
    assert run.cancelled and calls == [1, 2, 3] and run.n_iter == 3


# --- derivative-free ---------------------------------------------------------------------------
@pytest.mark.parametrize("method", ["powell", "nelder-mead"])
def test_derivative_free_finds_the_rosenbrock_minimum(method):
    run = optimize.derivative_free(lambda x: rosenbrock(x)[0], np.array([-1.2, 1.0]), *box(2, -5.0, 5.0),
                                   method=method, max_evals=20000, xtol=1e-10, ftol=1e-14, initial_step=0.5)
    np.testing.assert_allclose(run.x, [1.0, 1.0], atol=1e-4)


@pytest.mark.parametrize("method", ["cobyla", "cobyqa"])
def test_trust_region_derivative_free_on_a_quadratic(method):
    fun = quadratic([0.5, -1.0], [1.0, 3.0])
    run = optimize.derivative_free(lambda x: fun(x)[0], np.zeros(2), *box(2, -4.0, 4.0), method=method,
                                   max_evals=500, xtol=1e-8, initial_step=0.5)
    np.testing.assert_allclose(run.x, [0.5, -1.0], atol=1e-4)


def test_derivative_free_cancel_and_unknown_method():
    calls = []

    def cancel():
        return len(calls) >= 4

    run = optimize.derivative_free(lambda x: calls.append(1) or rosenbrock(x)[0], np.zeros(2), *box(2, -5.0, 5.0),
                                   method="nelder-mead", max_evals=1000, xtol=1e-8, cancel=cancel)
    assert run.cancelled and len(calls) == 4
    with pytest.raises(ValueError, match="method"):
        optimize.derivative_free(lambda x: 0.0, np.zeros(2), *box(2), method="bfgs", max_evals=5, xtol=1e-3)


# --- restarts ----------------------------------------------------------------------------------
def test_best_of_starts_keeps_the_best_and_stops_after_a_stopped_run():
    drawn = []

    def starts():
        for s in (3.0, 1.0, 2.0, 0.5):
            drawn.append(s)
            yield s

    best, runs = optimize.best_of_starts(lambda s: {"objective": s, "n_iter": 1, "message": ""}, starts())
    assert best["objective"] == 0.5 and best["start"] == 3 and [r["start"] for r in runs] == [0, 1, 2, 3]
    drawn.clear()
    best, runs = optimize.best_of_starts(lambda s: {"objective": s, "n_iter": 1, "message": "", "stopped": s < 2},
                                         starts())
    assert len(runs) == 2 and drawn == [3.0, 1.0] and best["objective"] == 1.0  # later starts never drawn
    assert optimize.summaries(runs) == [{"start": 0, "objective": 3.0, "n_iter": 1, "message": ""},
                                        {"start": 1, "objective": 1.0, "n_iter": 1, "message": ""}]


def test_perturb_log_moves_only_log_entries_within_the_box():
    rng = np.random.default_rng(1)
    x = np.array([0.0, 0.0, 5.0])
    moved = optimize.perturb_log(x, np.full(3, -0.1), np.full(3, 0.1), rng, np.array([True, False, True]))
    assert moved[1] == 0.0 and abs(moved[0]) <= 0.1 and moved[2] == 0.1


# --- the model fit: fixed groups, callback stop, cancel, restarts ------------------------------
def sparse_model():
    rng = np.random.default_rng(0)
    X = np.sort(rng.uniform(0, 6, size=(50, 1)), axis=0)
    y = np.sin(X[:, 0]) + 0.2 * rng.standard_normal(50)
    return models.SparseGPR(X, y, kernels.SquaredExponential(), Z=np.linspace(0, 6, 5)[:, None],
                            approximation="vfe", noise_variance=0.5)


@pytest.mark.parametrize("group", ["kernel", "inducing", "noise_variance"])
def test_fixed_groups_stay_where_they_are(group):
    m = sparse_model()
    before = m.parameters
    res = m.fit(max_iter=30, fixed=(group,))
    frozen = optimize.expand_fixed(m, (group,))
    assert frozen and res.objective < res.trace[0].objective
    for name in frozen:
        np.testing.assert_array_equal(m.parameters[name], before[name])
    moved = set(before) - frozen
    assert any(not np.array_equal(m.parameters[n], before[n]) for n in moved)


def test_a_callback_stop_ends_the_fit_and_its_restarts():
    m = sparse_model()
    res = m.fit(max_iter=50, restarts=3, seed=0, callback=lambda e: e.iteration >= 2)
    assert len(res.restarts) == 1 and res.n_iter == 2 and len(res.trace) == 3
    assert res.message == optimize.STOPPED_MESSAGE and not res.success


def test_cancel_ends_a_model_fit_at_its_best_point():
    m = sparse_model()
    start = -m.log_marginal_likelihood()
    event = threading.Event()
    seen = []

    def callback(entry):
        seen.append(entry)
        if len(seen) == 4:
            event.set()

    res = m.fit(max_iter=100, restarts=2, seed=0, callback=callback, cancel=event)
    assert res.details == {"cancelled": True} and res.message == optimize.CANCELLED_MESSAGE
    assert len(res.restarts) == 1 and len(res.trace) == 5
    assert res.objective <= start
    assert -m.log_marginal_likelihood() == pytest.approx(min(e.objective for e in res.trace), rel=1e-12)
