"""Quantiles of the mixture q(f*) (gpexplorer/variational/prediction.py): one component gives the
Gaussian's quantiles, a mixture's quantiles solve its CDF (checked against scipy's brentq), a
two-peaked mixture's band is not the moment-matched one; the model and the black-box page use them."""

import numpy as np
import pytest
from scipy import optimize, special, stats

from gpexplorer import kernels
from gpexplorer.variational import SparseVariationalGP
from gpexplorer.variational.prediction import mixture_quantiles


def test_one_component_gives_the_gaussian_quantiles():
    means = np.array([[0.3, -1.0, 2.0]])
    var = np.array([[0.5, 2.0, 1e-4]])
    q = mixture_quantiles([1.0], means, var, (0.025, 0.5, 0.95))
    want = stats.norm.ppf([0.025, 0.5, 0.95])[None, :] * np.sqrt(var[0])[:, None] + means[0][:, None]
    np.testing.assert_allclose(q, want, rtol=1e-12, atol=1e-12)


def test_mixture_quantiles_solve_the_mixture_cdf():
    rng = np.random.default_rng(0)
    pi = np.array([0.3, 0.7])
    means = rng.normal(scale=2.0, size=(2, 6))
    var = rng.uniform(0.05, 1.0, size=(2, 6))
    probs = (0.05, 0.5, 0.95)
    q = mixture_quantiles(pi, means, var, probs)
    for n in range(6):
        cdf = lambda f: float(np.sum(pi * special.ndtr((f - means[:, n]) / np.sqrt(var[:, n]))))  # noqa: E731
        for i, p in enumerate(probs):
            root = optimize.brentq(lambda f: cdf(f) - p, -30, 30, xtol=1e-14)
            assert q[n, i] == pytest.approx(root, abs=1e-10)


def test_a_two_peaked_mixture_is_not_its_moment_matched_gaussian():
    pi, means, var = np.array([0.5, 0.5]), np.array([[-3.0], [3.0]]), np.array([[0.1], [0.1]])
    lower, upper = mixture_quantiles(pi, means, var, (0.025, 0.975))[0]
    sd_matched = np.sqrt(0.1 + 9.0)
    assert upper < 1.96 * sd_matched - 0.5 and lower > -1.96 * sd_matched + 0.5
    assert upper == pytest.approx(3.0 + np.sqrt(0.1) * stats.norm.ppf(0.95), abs=1e-6)  # 97.5 % of the mixture


def test_the_model_gives_quantiles_per_latent_and_refuses_bad_probabilities():
    rng = np.random.default_rng(1)
    X = rng.uniform(-2, 2, (30, 1))
    Y = (rng.uniform(size=30) < 0.5).astype(float)
    m = SparseVariationalGP(X, Y, kernels.SquaredExponential(), 5, "bernoulli_logit", posterior="mog2")
    m.fit(max_iter=2, method="block-lbfgs", evals_per_block=5)
    grid = np.linspace(-2, 2, 7)[:, None]
    q = m.predict_f_quantiles(grid, (0.025, 0.5, 0.975))
    assert q.shape == (7, 1, 3) and np.all(np.diff(q, axis=2) > 0)
    pi, means, var = m.predict_components(grid)
    np.testing.assert_allclose(q[:, 0, :], mixture_quantiles(pi, means[:, :, 0], var[:, :, 0], (0.025, 0.5, 0.975)))
    with pytest.raises(ValueError, match="probabilities"):
        m.predict_f_quantiles(grid, (0.0, 0.5))
