"""Pathology detectors (gpexplorer.sparse.diagnostics) on hand-made and real configurations."""

import numpy as np
import pytest

from gpexplorer import datasets, kernels, models
from gpexplorer.sparse import diagnostics


def test_clumped_pairs_counts_near_duplicates_in_lengthscale_units():
    Z = np.array([[0.0], [0.001], [1.0], [1.0 + 1e-6], [3.0]])
    assert diagnostics.clumped_pairs(Z, lengthscale=1.0) == 2
    assert diagnostics.clumped_pairs(Z, lengthscale=1e-4) == 1  # 0.001 is 10 lengthscales here
    assert diagnostics.clumped_pairs(Z[:1], 1.0) == 0


def test_clumped_pairs_scales_each_dimension_by_its_lengthscale():
    Z = np.array([[0.0, 0.0], [0.0, 0.05]])
    assert diagnostics.clumped_pairs(Z, lengthscale=[1.0, 10.0]) == 1
    assert diagnostics.clumped_pairs(Z, lengthscale=[1.0, 1.0]) == 0


def test_min_scaled_distance():
    Z = np.array([[0.0], [0.5], [2.0]])
    assert diagnostics.min_scaled_distance(Z, 0.25) == pytest.approx(2.0)
    assert diagnostics.min_scaled_distance(Z[:1], 1.0) == float("inf")


def test_condition_number_of_kuu_grows_as_inducing_inputs_clump():
    k = kernels.SquaredExponential(lengthscale=1.0)
    spread = diagnostics.condition_number(k.K(np.array([[0.0], [2.0], [4.0]])))
    clumped = diagnostics.condition_number(k.K(np.array([[0.0], [1e-3], [4.0]])))
    assert np.isclose(spread, np.linalg.cond(k.K(np.array([[0.0], [2.0], [4.0]]))))
    assert clumped > 1e4 * spread
    assert diagnostics.condition_number(np.array([[1.0, 1.0], [1.0, 1.0]])) == float("inf")


def test_noise_collapse_and_upper_bound_flags():
    assert diagnostics.noise_collapsed(0.01, 0.08) and not diagnostics.noise_collapsed(0.07, 0.08)
    assert diagnostics.exceeds_upper_bound(-10.0, -12.0) and not diagnostics.exceeds_upper_bound(-12.0, -10.0)


def test_evidence_above_the_upper_bound_is_flagged_on_snelson100():
    """Thesis §3.2.6: a FITC evidence far above log p(y) is caught by a tight enough bound.

    At FITC's collapsed noise the exact evidence is well below FITC's; the upper bound with
    inducing inputs at every data point equals log p(y) (up to jitter), so the flag must fire."""
    ds = datasets.load("snelson100")
    k = kernels.SquaredExponential(variance=1.0, lengthscale=0.5)
    fitc = models.SparseGPR(ds.X, ds.y, kernel=k, Z=8, z_init="kmeans", seed=0, approximation="fitc",
                            noise_variance=0.09)
    fitc.fit(max_iter=1000)
    tight = models.SparseGPR(ds.X, ds.y, kernel=fitc.kernel.copy(), Z=ds.X, approximation="vfe",
                             noise_variance=fitc.noise_variance, jitter=1e-10)
    exact = models.ExactGPR(ds.X, ds.y, kernel=fitc.kernel.copy(), noise_variance=fitc.noise_variance)
    assert tight.upper_bound() == pytest.approx(exact.log_marginal_likelihood(), abs=1e-3)
    assert diagnostics.exceeds_upper_bound(fitc.log_marginal_likelihood(), tight.upper_bound())


def test_condition_number_is_finite_for_a_numerically_fine_kuu_with_its_jitter():
    """Issue 14 bug 3: 40 inducing inputs on [0, 6] with lengthscale 0.5 give a positive definite
    Kuu whose smallest computed eigenvalue round-off can make <= 0; the matrix factorised is
    Kuu + jitter I, whose condition number is finite."""
    k = kernels.SquaredExponential(lengthscale=0.5)
    Kuu = k.K(np.linspace(0.0, 6.0, 40)[:, None])
    assert np.linalg.eigvalsh(Kuu)[0] < 1e-10  # numerically singular without jitter
    cond = diagnostics.condition_number(Kuu, jitter=1e-6)
    assert np.isfinite(cond)
    assert cond == pytest.approx(np.linalg.cond(Kuu + 1e-6 * np.eye(40)), rel=1e-3)
    assert diagnostics.condition_number(np.array([[1.0, 1.0], [1.0, 1.0]]), jitter=1e-6) == pytest.approx(2e6 + 1)
