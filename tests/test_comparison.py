"""gpexplorer.sparse.comparison: the side-by-side evaluation behind the sparse-regression lab."""

import numpy as np
import pytest

from gpexplorer import datasets, kernels, models
from gpexplorer.sparse.comparison import APPROXIMATIONS, ParameterSet, compare, default_grid, evaluate
from gpexplorer.sparse.joint_fit import fit_all


@pytest.fixture(scope="module")
def snelson():
    return datasets.load("snelson")


def _params(ds, M=12, seed=0, noise=0.09, lengthscale=0.5):
    Z = ds.X[np.random.default_rng(seed).choice(ds.n, M, replace=False)]
    return ParameterSet(kernels.SquaredExponential(1.0, lengthscale), noise, Z)


def test_values_match_the_models(snelson):
    p = _params(snelson)
    grid = default_grid(snelson.X, 50)
    c = compare(snelson, {a: p for a in APPROXIMATIONS}, grid)
    exact = models.ExactGPR(snelson.X, snelson.y, kernels.SquaredExponential(1.0, 0.5), noise_variance=0.09)
    for a, r in c.results.items():
        assert r.error is None
        assert r.exact_at_params == pytest.approx(exact.log_marginal_likelihood(), rel=1e-12)
        if a == "exact":
            ref = exact
        else:
            ref = models.SparseGPR(snelson.X, snelson.y, kernels.SquaredExponential(1.0, 0.5), Z=p.Z,
                                   approximation=a, noise_variance=0.09)
            assert r.upper_bound == pytest.approx(ref.upper_bound(), rel=1e-12)
        assert r.log_evidence == pytest.approx(ref.log_marginal_likelihood(), rel=1e-12)
        terms = ref.objective_terms()
        assert sum(r.terms.values()) == pytest.approx(-(sum(terms.values()) - terms["constant"]), rel=1e-12)
        mean, var = ref.predict_f(grid)
        np.testing.assert_allclose(r.mean, mean, rtol=1e-10)
        np.testing.assert_allclose(r.var_y, var + 0.09, rtol=1e-10)


def test_sandwich_holds_and_inducing_at_data_recovers_exact(snelson):
    sub = datasets.from_arrays(snelson.X[:60], snelson.y[:60])
    for seed in range(3):
        p = _params(sub, M=8, seed=seed, noise=0.05 + 0.05 * seed, lengthscale=0.3 + 0.4 * seed)
        r = compare(sub, {"vfe": p}, default_grid(sub.X, 5)).results["vfe"]
        assert r.log_evidence <= r.exact_at_params <= r.upper_bound
    full = ParameterSet(kernels.SquaredExponential(1.0, 0.5), 0.09, sub.X.copy())
    c = compare(sub, {a: full for a in APPROXIMATIONS}, default_grid(sub.X, 20))
    for a in ("dtc", "fitc", "vfe"):
        assert c.results[a].log_evidence == pytest.approx(c.results["exact"].log_evidence, abs=1e-3)
        np.testing.assert_allclose(c.results[a].mean, c.results["exact"].mean, atol=1e-3)  # jitter 1e-6


def test_clumped_inputs_and_escalated_jitter_get_badges(snelson):
    p = _params(snelson, M=6)
    p.Z[1] = p.Z[0]  # a duplicate: Kuu is singular without jitter
    p.Z[2] = p.Z[0] + 1e-9
    c = compare(snelson, {"fitc": p, "vfe": p}, default_grid(snelson.X, 10))
    kinds = {(b.kind, b.approximation) for b in c.badges}
    assert ("clumping", "fitc") in kinds and ("clumping", "vfe") in kinds
    assert "pair(s) of inducing inputs" in c.badges[0].message or any("pair(s)" in b.message for b in c.badges)


def test_a_numerical_failure_is_a_badge_not_an_exception(snelson):
    p = ParameterSet(kernels.SquaredExponential(1.0, 0.5), 0.09, np.array([[np.nan]]))
    c = compare(snelson, {"vfe": p}, default_grid(snelson.X, 10))
    assert c.results["vfe"].error and "NaN" in c.results["vfe"].error
    assert [b.kind for b in c.badges] == ["failure"]


def test_noise_collapse_badge_needs_fitted_noise(snelson):
    p = _params(snelson)
    c = compare(snelson, {"fitc": p}, default_grid(snelson.X, 10), fitted_noise={"exact": 0.08, "fitc": 0.01})
    assert any(b.kind == "noise-collapse" and b.approximation == "fitc" for b in c.badges)
    c = compare(snelson, {"fitc": p}, default_grid(snelson.X, 10), fitted_noise={"exact": 0.08, "fitc": 0.07})
    assert not any(b.kind == "noise-collapse" for b in c.badges)
    assert not any(b.kind == "noise-collapse" for b in compare(snelson, {"fitc": p}, default_grid(snelson.X, 10)).badges)


def test_fitc_above_its_upper_bound_is_flagged():
    """Thesis §3.2.6 on Snelson-100: FITC's fitted evidence above a tight upper bound."""
    ds = datasets.load("snelson100")
    start = ParameterSet(kernels.SquaredExponential(1.0, 0.5), 0.09, ds.X[::12].copy())
    fits = fit_all(ds, start, ["fitc"], max_iter=1000)
    fitc = fits["fitc"].final
    tight = ParameterSet(fitc.kernel, fitc.noise_variance, ds.X.copy())  # upper bound tight at Z = X
    r = evaluate(ds, "vfe", tight, default_grid(ds.X, 5))
    fitc_r = evaluate(ds, "fitc", fitc, default_grid(ds.X, 5))
    assert fitc_r.log_evidence > r.upper_bound  # the premise: FITC overestimates here
    fitc_r.upper_bound = r.upper_bound
    from gpexplorer.sparse.comparison import badges

    flagged = badges({"fitc": fitc_r})
    assert [b.kind for b in flagged if b.kind == "above-upper-bound"] == ["above-upper-bound"]
    fitc_r.log_evidence = r.upper_bound - 1.0
    assert not [b for b in badges({"fitc": fitc_r}) if b.kind == "above-upper-bound"]


def test_samples_have_the_predictive_mean_and_spread(snelson):
    p = _params(snelson)
    grid = default_grid(snelson.X, 30)
    r = evaluate(snelson, "vfe", p, grid, num_samples=4000, seed=1)
    assert r.samples.shape == (4000, 30)
    np.testing.assert_allclose(r.samples.mean(0), r.mean, atol=0.05)
    np.testing.assert_allclose(r.samples.var(0), r.var_f, rtol=0.15, atol=1e-3)


def test_unknown_approximation_is_rejected(snelson):
    with pytest.raises(ValueError, match="unknown approximation"):
        compare(snelson, {"nystrom": _params(snelson)}, default_grid(snelson.X, 5))


def test_many_inducing_inputs_get_a_badge_that_says_what_is_wrong(snelson):
    """Issue 14 bug 3: at M = 40 on Snelson the badge read "0 pair(s) closer than 0.01
    lengthscales; cond(Kuu) = inf". A numerically fine Kuu (12 inputs) gets a finite condition
    number and no badge; 40 evenly spaced inputs (Kuu numerically singular) are called
    ill-conditioned, with the jitter and a finite condition number, and never "0 pair(s)"."""
    fine_Z = np.linspace(float(snelson.X.min()), float(snelson.X.max()), 12)
    fine = compare(snelson, {"vfe": ParameterSet(kernels.SquaredExponential(1.0, 0.5), 0.09, fine_Z)},
                   default_grid(snelson.X, 10))
    assert np.isfinite(fine.results["vfe"].condition_number) and fine.results["vfe"].condition_number < 1e6
    assert not [b for b in fine.badges if b.approximation == "vfe"]
    Z = np.linspace(float(snelson.X.min()), float(snelson.X.max()), 40)
    dense = compare(snelson, {a: ParameterSet(kernels.SquaredExponential(1.0, 0.5), 0.09, Z) for a in ("fitc", "vfe")},
                    default_grid(snelson.X, 10))
    for name in ("fitc", "vfe"):
        assert np.isfinite(dense.results[name].condition_number)
        text = " ".join(b.message for b in dense.badges if b.approximation == name)
        assert "ill-conditioned" in text and "jitter 1e-06" in text, text
        assert "0 pair(s)" not in text and "= inf" not in text
