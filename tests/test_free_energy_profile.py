"""gpexplorer.linearized.free_energy_profile: F (EGP eq. 41, EKS eq. 20) along one hyperparameter.

Limit cases against plain numpy: with g(f) = f the EGP's and UGP's F is the exact GP log marginal
likelihood at every grid point, and the kitchen sinks' bound that of Bayesian linear regression on
their features; failures are recorded per point; bad input is refused with a clear message."""

import numpy as np
import pytest
from scipy import stats

from gpexplorer import kernels
from gpexplorer.linearized.free_energy_profile import free_energy_profile, log_grid
from gpexplorer.linearized.kitchen_sinks import LinearizedKitchenSinks
from gpexplorer.linearized.gp import LinearizedGP


def _data(n=30, seed=3):
    rng = np.random.default_rng(seed)
    X = np.sort(rng.uniform(-3, 3, n))[:, None]
    return X, np.sin(1.3 * X[:, 0]) + 0.2 * rng.standard_normal(n)


def _gp(X, y, forward="identity", linearization="taylor", **params):
    p = {"variance": 0.7, "lengthscale": 0.8, "noise_variance": 0.05, **params}
    return LinearizedGP(X, y, forward=forward, linearization=linearization,
                        kernel=kernels.SquaredExponential(variance=p["variance"], lengthscale=p["lengthscale"]),
                        noise_variance=p["noise_variance"])


def _exact_log_evidence(X, y, variance, lengthscale, noise_variance):
    d = X[:, None, 0] - X[None, :, 0]
    K = variance * np.exp(-0.5 * d ** 2 / lengthscale ** 2)
    return stats.multivariate_normal(mean=np.zeros(len(y)), cov=K + noise_variance * np.eye(len(y))).logpdf(y)


@pytest.mark.parametrize("linearization", ["taylor", "unscented"])
@pytest.mark.parametrize("parameter", ["variance", "lengthscale", "noise_variance"])
def test_identity_profile_is_the_exact_log_marginal_likelihood(linearization, parameter):
    X, y = _data()
    values = log_grid(0.3, factor=5.0, points=7)
    profile = free_energy_profile(lambda v: _gp(X, y, linearization=linearization, **{parameter: v}), values)
    base = {"variance": 0.7, "lengthscale": 0.8, "noise_variance": 0.05}
    exact = [_exact_log_evidence(X, y, **dict(base, **{parameter: v})) for v in values]
    np.testing.assert_allclose(profile.free_energy, exact, rtol=1e-9, atol=1e-8)
    assert profile.status == ("converged",) * 7 and profile.errors == (None,) * 7
    assert np.all(np.isnan(profile.scores))  # no score asked for
    assert profile.best() == int(np.argmax(exact))


def test_kitchen_sinks_identity_profile_is_bayesian_linear_regression():
    X, y = _data()

    def make(w2):
        return LinearizedKitchenSinks(X, y, forward="identity", n_features=16, kernel="se", lengthscale=1.1,
                                      weight_variance=w2, noise_variance=0.05, seed=4)

    values = log_grid(0.5, factor=4.0, points=5)
    profile = free_energy_profile(make, values)
    Phi = make(1.0).features(X)  # the features do not depend on the weight variance
    exact = [stats.multivariate_normal(mean=np.zeros(len(y)), cov=w2 * Phi @ Phi.T + 0.05 * np.eye(len(y))).logpdf(y)
             for w2 in values]
    np.testing.assert_allclose(profile.free_energy, exact, rtol=1e-9, atol=1e-8)


def test_each_point_starts_from_the_prior_and_is_scored():
    """The profile at a value is what a model fitted from the prior at that value gives; the score
    sees that model."""
    X, y = _data()
    values = log_grid(0.6, factor=3.0, points=5)
    seen = []
    profile = free_energy_profile(lambda v: _gp(X, y, forward="tanh2", linearization="unscented", variance=v),
                                  values, score=lambda m: seen.append(m) or float(m.posterior_mean[0]),
                                  progress=lambda done, total: seen.append((done, total)))
    for i, v in enumerate(values):
        direct = _gp(X, y, forward="tanh2", linearization="unscented", variance=v).fit_posterior()
        assert profile.free_energy[i] == direct.free_energy()
        assert profile.scores[i] == direct.posterior_mean[0]
        assert profile.status[i] == ("diverged" if direct.diverged else "converged" if direct.converged
                                     else "max_iter")
    assert [s for s in seen if isinstance(s, tuple)] == [(i + 1, 5) for i in range(5)]


def test_failing_points_are_recorded_and_the_profile_goes_on():
    X, y = _data()

    def make(v):  # exp(f) overflows over a prior variance of 1e6 (the fixed-point UGP refuses it)
        return LinearizedGP(X, np.exp(y), forward="exp", linearization="unscented", inner_loop="fixed-point",
                            kernel=kernels.SquaredExponential(variance=v, lengthscale=1.0), noise_variance=0.02)

    profile = free_energy_profile(make, [0.5, 1e6, 0.6])
    assert profile.status[0] == profile.status[2] == "converged" and np.all(np.isfinite(profile.free_energy[::2]))
    assert profile.status[1] == "failed" and np.isnan(profile.free_energy[1]) and np.isnan(profile.scores[1])
    assert "exp" in profile.errors[1] or "finite" in profile.errors[1] or "overflow" in profile.errors[1]
    assert profile.best() in (0, 2)


def test_a_progress_callback_can_stop_the_profile():
    X, y = _data()

    def stop(done, total):
        if done == 2:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        free_energy_profile(lambda v: _gp(X, y, variance=v), [0.1, 0.2, 0.3], progress=stop)


def test_log_grid_is_centred_and_symmetric():
    grid = log_grid(0.04, factor=10.0, points=21)
    assert grid[10] == 0.04 and grid.size == 21
    np.testing.assert_allclose([grid[0], grid[-1]], [0.004, 0.4], rtol=1e-12)
    np.testing.assert_allclose(grid * grid[::-1], 0.04 ** 2, rtol=1e-12)


@pytest.mark.parametrize("values, message", [([], "non-empty"), ([[0.1, 0.2]], "1-D"),
                                             ([0.1, np.nan], "finite and positive"),
                                             ([0.1, -1.0], "finite and positive"), ([0.0], "finite and positive")])
def test_bad_values_are_refused(values, message):
    X, y = _data()
    with pytest.raises(ValueError, match=message):
        free_energy_profile(lambda v: _gp(X, y, variance=v), values)


@pytest.mark.parametrize("kwargs, message", [
    ({"centre": 0.0}, "centre"), ({"centre": np.inf}, "centre"), ({"centre": -1.0}, "centre"),
    ({"centre": 1.0, "factor": 1.0}, "factor"), ({"centre": 1.0, "factor": np.nan}, "factor"),
    ({"centre": 1.0, "points": 4}, "odd"), ({"centre": 1.0, "points": 1}, "odd"),
    ({"centre": 1.0, "points": True}, "odd")])
def test_bad_grids_are_refused(kwargs, message):
    with pytest.raises(ValueError, match=message):
        log_grid(**kwargs)
