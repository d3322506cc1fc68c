"""gpexplorer.sparse.studies: thesis fig. 3.2 (one extra inducing input) and fig. 3.5-3.7 (sweeps over M)."""

import warnings

import numpy as np
import pytest

from gpexplorer import datasets, kernels, models
from gpexplorer.sparse import objectives as sparse
from gpexplorer.sparse import studies
from gpexplorer.inducing.placement import initial_inducing_inputs
from gpexplorer.linalg import CholeskyError

NOISE = 0.09


@pytest.fixture(scope="module")
def snelson():
    return datasets.load("snelson")


def _kernel():
    return kernels.SquaredExponential(variance=1.0, lengthscale=0.5)


def _brute_force(X, y, kernel, Z, z, approximation, noise=NOISE):
    """F terms with z appended to Z, from a freshly built model (the definition, no bordering)."""
    m = models.SparseGPR(X, y, kernel=kernel.copy(), Z=np.vstack([Z, z]), approximation=approximation,
                         noise_variance=noise)
    return m.objective_terms()


# --- add_one_inducing_curve (fig. 3.2) -------------------------------------------------------------

@pytest.mark.parametrize("approximation", sparse.APPROXIMATIONS)
def test_add_one_matches_brute_force(snelson, approximation):
    Z = initial_inducing_inputs(snelson.X, 10, "random", 0)
    # inside and outside the data, on top of an existing inducing input, on a data point
    cands = np.array([[-1.5], [0.3], [1.7], [2.95], [4.4], [6.8], [Z[3, 0]], [snelson.X[17, 0]]])
    k = _kernel()
    r = studies.add_one_inducing_curve(snelson.X, snelson.y, k, NOISE, Z, approximation, cands)
    base_model = models.SparseGPR(snelson.X, snelson.y, kernel=k.copy(), Z=Z, approximation=approximation,
                                  noise_variance=NOISE)
    base = base_model.objective_terms()
    for t in ("constant", *studies.TERMS):
        assert r["base"][t] == pytest.approx(-base[t], rel=1e-12)
    assert r["base"]["total"] == pytest.approx(base_model.log_marginal_likelihood(), rel=1e-12)
    assert r["candidates"].shape == (len(cands), 1)
    for i, z in enumerate(cands):
        bf = _brute_force(snelson.X, snelson.y, k, Z, z, approximation)
        for t in studies.TERMS:
            # the L-term with z* added, and its change, both as in the brute force
            assert -(r["base"][t] + r["delta"][t][i]) == pytest.approx(bf[t], rel=1e-8, abs=1e-10), (t, z)
            assert r["delta"][t][i] == pytest.approx(base[t] - bf[t], rel=1e-8, abs=1e-9), (t, z)
        assert r["delta"]["total"][i] == pytest.approx(sum(base.values()) - sum(bf.values()), rel=1e-8, abs=1e-9)
    total = r["delta"]["complexity"] + r["delta"]["data_fit"] + r["delta"]["trace"]
    np.testing.assert_allclose(r["delta"]["total"], total, rtol=1e-12, atol=1e-12)
    if approximation != "vfe":
        assert np.all(r["delta"]["trace"] == 0.0)


@pytest.mark.parametrize("approximation", ["fitc", "vfe"])
def test_add_one_matches_brute_force_in_2d(approximation):
    rng = np.random.default_rng(1)
    X = rng.uniform(-2, 2, size=(60, 2))
    y = np.sin(X[:, 0]) * np.cos(X[:, 1]) + 0.1 * rng.standard_normal(60)
    k = kernels.SquaredExponential(variance=1.3, lengthscale=np.array([0.7, 1.1]))
    Z = X[:6] + 0.05
    cands = rng.uniform(-2.5, 2.5, size=(5, 2))
    r = studies.add_one_inducing_curve(X, y, k, 0.02, Z, approximation, cands)
    base = models.SparseGPR(X, y, kernel=k.copy(), Z=Z, approximation=approximation, noise_variance=0.02)
    F0 = sum(base.objective_terms().values())
    for i, z in enumerate(cands):
        F1 = sum(_brute_force(X, y, k, Z, z[None, :], approximation, noise=0.02).values())
        assert r["delta"]["total"][i] == pytest.approx(F0 - F1, rel=1e-8, abs=1e-9)


def test_vfe_never_gets_worse_and_fitc_can(snelson):
    """Remark 3: VFE's bound cannot decrease wherever z* goes; FITC's evidence can (Remark 4)."""
    k = _kernel()
    Z = initial_inducing_inputs(snelson.X, 7, "kmeans", 0)
    cands = np.concatenate([np.linspace(-1.0, 7.0, 400), Z[:, 0], snelson.X[::10, 0]])
    vfe = studies.add_one_inducing_curve(snelson.X, snelson.y, k, NOISE, Z, "vfe", cands)
    assert np.all(np.isfinite(vfe["delta"]["total"]))
    assert vfe["delta"]["total"].min() >= -1e-6
    assert vfe["delta"]["trace"].min() >= 0.0  # the trace term always improves
    assert vfe["delta"]["complexity"].max() <= 1e-9  # an extra eigenvalue of Qff costs complexity
    # spikes: on top of an existing inducing input almost nothing changes
    on_z = vfe["delta"]["total"][400:407]
    assert np.all(np.abs(on_z) < 1e-3 * vfe["delta"]["total"].max())
    fitc = studies.add_one_inducing_curve(snelson.X, snelson.y, k, 0.03, Z, "fitc", cands)
    assert fitc["delta"]["total"].min() < -1e-3


def test_add_one_accepts_1d_candidates_and_stays_quiet(snelson):
    Z = initial_inducing_inputs(snelson.X, 5, "even")
    k = _kernel()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        a = studies.add_one_inducing_curve(snelson.X, snelson.y, k, NOISE, Z, "fitc", np.r_[Z[:, 0], 2.0], jitter=0.0)
    b = studies.add_one_inducing_curve(snelson.X, snelson.y, k, NOISE, Z, "fitc", np.r_[Z[:, 0], 2.0][:, None],
                                       jitter=0.0)
    np.testing.assert_array_equal(a["delta"]["total"], b["delta"]["total"])
    assert np.all(np.isfinite(a["delta"]["total"]))


def test_add_one_fallback_agrees_and_failures_give_nan(snelson, monkeypatch):
    Z = initial_inducing_inputs(snelson.X, 6, "kmeans", 0)
    cands = np.linspace(0.0, 6.0, 7)
    args = (snelson.X, snelson.y, _kernel(), NOISE, Z, "fitc", cands)
    fast = studies.add_one_inducing_curve(*args)

    def broken(*a, **kw):
        raise np.linalg.LinAlgError("forced")

    monkeypatch.setattr(studies, "_bordered_F_terms", broken)
    slow = studies.add_one_inducing_curve(*args)  # every candidate via sparse.collapsed_objective
    for t in (*studies.TERMS, "total"):
        np.testing.assert_allclose(slow["delta"][t], fast["delta"][t], rtol=1e-8, atol=1e-9)

    real = sparse.collapsed_objective
    calls = []

    def fails_after_base(*a, **kw):
        calls.append(1)
        if len(calls) > 1:
            raise CholeskyError("forced")
        return real(*a, **kw)

    monkeypatch.setattr(studies.sparse, "collapsed_objective", fails_after_base)
    nan = studies.add_one_inducing_curve(*args)
    assert all(np.all(np.isnan(nan["delta"][t])) for t in nan["delta"])
    assert np.isfinite(nan["base"]["total"])


@pytest.mark.parametrize("change, match", [
    (dict(approximation="titsias"), "approximation"),
    (dict(candidates=np.zeros((0, 1))), "candidates is empty"),
    (dict(candidates=np.zeros((4, 2))), "candidates must have shape"),
    (dict(candidates=[0.0, np.nan]), "NaN"),
    (dict(Z=np.zeros((3, 2))), "Z must have shape"),
    (dict(noise_variance=0.0), "noise_variance"),
    (dict(kernel="se"), "kernel"),
    (dict(y=np.zeros(5)), "rows"),
    (dict(jitter=-1.0), "jitter"),
])
def test_add_one_validation(snelson, change, match):
    kw = dict(X=snelson.X, y=snelson.y, kernel=_kernel(), noise_variance=NOISE, Z=np.linspace(0, 6, 4),
              approximation="vfe", candidates=np.linspace(0, 6, 3))
    kw.update(change)
    with pytest.raises(ValueError, match=match):
        studies.add_one_inducing_curve(**kw)


# --- m_sweep (fig. 3.5-3.7) -------------------------------------------------------------------------

@pytest.fixture(scope="module")
def sweep(snelson):
    calls = []
    out = studies.m_sweep(snelson, _kernel(), NOISE, Ms=(3, 6), max_iter=30,
                          progress=lambda f, msg: calls.append((f, msg)))
    return out, calls


def test_sweep_rows_and_progress(sweep):
    out, calls = sweep
    assert not out["cancelled"] and out["metric_split"] == "train"
    assert [(r["M"], r["approximation"]) for r in out["rows"]] == [(3, "fitc"), (3, "vfe"), (6, "fitc"), (6, "vfe")]
    fractions = [f for f, _ in calls]
    assert len(fractions) == 5 and fractions[-1] == 1.0 and np.all(np.diff(fractions) > 0)
    for r in out["rows"]:
        assert r["locations"].shape == (r["M"], 1) and r["iterations"] <= 30 and r["seconds"] > 0
        assert r["jitter_used"] >= 1e-6 and isinstance(r["clumped_pairs"], int)
        assert np.isfinite([r["nlpd"], r["smse"], r["upper_bound"]]).all()


def test_sweep_numbers_are_the_models(snelson, sweep):
    out, _ = sweep
    ex = out["exact"]
    for r in out["rows"]:
        kernel = kernels.SquaredExponential(**r["kernel_params"])
        m = models.SparseGPR(snelson.X, snelson.y, kernel=kernel, Z=r["inducing"], approximation=r["approximation"],
                             noise_variance=r["noise_variance"])
        assert r["log_marginal_likelihood"] == pytest.approx(m.log_marginal_likelihood(), rel=1e-10)
        exact_here = models.ExactGPR(snelson.X, snelson.y, kernel=kernel.copy(), noise_variance=r["noise_variance"])
        if r["approximation"] == "vfe":  # a lower bound on log p(y), below Titsias' upper bound
            assert r["log_marginal_likelihood"] <= exact_here.log_marginal_likelihood() + 1e-8
            assert r["log_marginal_likelihood"] <= r["upper_bound"]
            assert r["log_marginal_likelihood"] <= ex["log_marginal_likelihood"] + 1e-6
        assert r["upper_bound"] >= exact_here.log_marginal_likelihood() - 1e-6
    vfe = [r["log_marginal_likelihood"] for r in out["rows"] if r["approximation"] == "vfe"]
    assert vfe[1] > vfe[0]  # more inducing inputs, better bound (fig. 3.5)
    assert ex["log_marginal_likelihood"] == pytest.approx(-55.90, abs=0.05)  # README's exact optimum
    assert 0.05 < ex["noise_variance"] < 0.12


def test_sweep_cancel_between_fits(snelson):
    state = {"progress": 0}

    def progress(f, msg):
        state["progress"] += 1

    out = studies.m_sweep(snelson, _kernel(), NOISE, Ms=(3, 6), max_iter=30, progress=progress,
                          cancelled=lambda: state["progress"] >= 2)  # after the exact GP and one row
    assert out["cancelled"] and len(out["rows"]) == 1 and out["exact"] is not None


def test_sweep_cancel_inside_a_fit(snelson):
    state = {"exact_done": False, "after": 0}

    def cancelled():
        if state["exact_done"]:
            state["after"] += 1
        return state["after"] >= 3  # 1: the check before the first sparse fit; 2, 3: its iterations

    out = studies.m_sweep(snelson, _kernel(), NOISE, Ms=(20,), max_iter=1000, cancelled=cancelled,
                          progress=lambda f, msg: state.update(exact_done=True))
    assert out["cancelled"] and out["rows"] == [] and out["exact"] is not None
    assert state["after"] == 3  # stopped on the spot: not asked again


def test_sweep_cancelled_before_anything(snelson):
    out = studies.m_sweep(snelson, _kernel(), NOISE, Ms=(3,), cancelled=lambda: True,
                          progress=lambda f, m: pytest.fail("no fit completed"))
    assert out == {"rows": [], "exact": None, "metric_split": "train", "cancelled": True}


def test_sweep_uses_the_test_split():
    ds = datasets.load("thesis4d", n_train=80, n_test=40)
    train_only = datasets.from_arrays(ds.X, ds.y)
    k = kernels.SquaredExponential(variance=1.0, lengthscale=1.0)
    a = studies.m_sweep(ds, k, 0.05, Ms=(8,), approximations=("vfe",), max_iter=20)
    b = studies.m_sweep(train_only, k, 0.05, Ms=(8,), approximations="vfe", max_iter=20)
    assert (a["metric_split"], b["metric_split"]) == ("test", "train")
    assert a["rows"][0]["log_marginal_likelihood"] == pytest.approx(b["rows"][0]["log_marginal_likelihood"])
    assert a["rows"][0]["smse"] != pytest.approx(b["rows"][0]["smse"], rel=1e-3)
    r = a["rows"][0]
    m = models.SparseGPR(ds.X, ds.y, kernel=kernels.SquaredExponential(**r["kernel_params"]), Z=r["inducing"],
                         approximation="vfe", noise_variance=r["noise_variance"])
    mean, _ = m.predict_y(ds.X_test)
    assert r["smse"] == pytest.approx(np.mean((ds.y_test - mean) ** 2) / np.var(ds.y_test), rel=1e-10)


@pytest.mark.parametrize("change, match", [
    (dict(Ms=()), "Ms is empty"),
    (dict(Ms=(0,)), "integer >= 1"),
    (dict(Ms=(2.5,)), "integer >= 1"),
    (dict(Ms=(True,)), "integer >= 1"),
    (dict(Ms=(201,)), "exceeds"),
    (dict(approximations=("fitc", "pitc")), "approximations"),
    (dict(dataset=np.zeros(3)), "Dataset"),
    (dict(noise_variance=-1.0), "noise_variance"),
    (dict(z_init="grid"), "z_init"),
])
def test_sweep_validation(snelson, change, match):
    kw = dict(dataset=snelson, kernel=_kernel(), noise_variance=NOISE, Ms=(3,), max_iter=1)
    kw.update(change)
    with pytest.raises(ValueError, match=match):
        studies.m_sweep(**kw)


def test_add_one_uses_the_jitter_the_base_needed(snelson):
    """Kuu numerically singular at jitter 0: the base escalates, the bordered factor must match it."""
    k = kernels.SquaredExponential(variance=1.0, lengthscale=10.0)
    Z = np.linspace(0.0, 6.0, 40)[:, None]
    cands = np.array([[-1.0], [1.1], [4.5]])
    r = studies.add_one_inducing_curve(snelson.X, snelson.y, k, NOISE, Z, "vfe", cands, jitter=0.0)
    assert r["jitter_used"] > 0.0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        m0 = models.SparseGPR(snelson.X, snelson.y, kernel=k.copy(), Z=Z, approximation="vfe", noise_variance=NOISE,
                              jitter=0.0)
        F0 = -m0.log_marginal_likelihood()
        for i, z in enumerate(cands):
            m = models.SparseGPR(snelson.X, snelson.y, kernel=k.copy(), Z=np.vstack([Z, z]), approximation="vfe",
                                 noise_variance=NOISE, jitter=0.0)
            assert r["delta"]["total"][i] == pytest.approx(F0 + m.log_marginal_likelihood(), abs=1e-9)


def test_sweep_can_tighten_the_upper_bound_of_non_vfe_rows(snelson):
    out = studies.m_sweep(snelson, kernels.SquaredExponential(1.0, 0.5), 0.09, [4], max_iter=20,
                          tighten_upper_bound=30)
    rows = {r["approximation"]: r for r in out["rows"]}
    assert "upper_bound_tightened" not in rows["vfe"]
    fitc = rows["fitc"]
    exact = models.ExactGPR(snelson.X, snelson.y, kernels.SquaredExponential(**fitc["kernel_params"]),
                            noise_variance=fitc["noise_variance"]).log_marginal_likelihood()
    assert exact <= fitc["upper_bound_tightened"] < fitc["upper_bound"]
