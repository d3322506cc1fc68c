"""The UGP's fixed-point inner loop (gpexplorer.linearized.fixed_point), against plain numpy."""

import numpy as np
import pytest

from gpexplorer import kernels
from gpexplorer.experiments import linearized_papers as lx
from gpexplorer.datasets import toy_inversion
from gpexplorer.linearized.gp import LinearizedGP

KAPPA = 0.5


def _data(g, n=40, seed=3):
    rng = np.random.default_rng(seed)
    X = np.sort(rng.uniform(-3, 3, n))[:, None]
    f = np.sin(1.3 * X[:, 0]) * 1.2
    return X, g(f) + 0.1 * rng.standard_normal(n)


def _model(X, y, forward, **kw):
    return LinearizedGP(X, y, forward=forward, linearization="unscented", inner_loop="fixed-point",
                        kernel=kernels.SquaredExponential(variance=1.3, lengthscale=0.9), noise_variance=0.02,
                        kappa=KAPPA, **kw)


def _reference_statistical_linearisation(g, m, v):
    """Sigma points m, m +- sqrt((1 + kappa) v) with weights kappa/(1+kappa), 1/(2(1+kappa)) (eq. 21-26)."""
    d = np.sqrt((1 + KAPPA) * v)
    gm, gp, gn = g(m), g(m + d), g(m - d)
    y_bar = (KAPPA * gm + 0.5 * gp + 0.5 * gn) / (1 + KAPPA)
    a = (gp - gn) / (2 * d)
    return a, y_bar


def _reference_target(K, y, noise, a, y_bar, m):
    """Posterior of y ~ N(a f + b, noise I), b = y_bar - a m, f ~ N(0, K) (eq. 34-35)."""
    A = np.diag(a)
    G = noise * np.eye(len(y)) + A @ K @ A
    H = K @ A @ np.linalg.inv(G)
    return H @ (y - y_bar + a * m), K - H @ A @ K


def test_identity_model_is_exact_gp_regression():
    X, y = _data(lambda f: f)
    model = _model(X, y, "identity").fit_posterior()
    K = model.kernel.K(X)
    G = K + 0.02 * np.eye(len(y))
    mean = K @ np.linalg.solve(G, y)
    cov = K - K @ np.linalg.solve(G, K)
    _, logdet = np.linalg.slogdet(G)
    evidence = -0.5 * (y @ np.linalg.solve(G, y) + logdet + len(y) * np.log(2 * np.pi))
    assert model.converged and not model.diverged
    np.testing.assert_allclose(model.posterior_mean, mean, atol=1e-8)
    np.testing.assert_allclose(model.posterior_var, np.diag(cov), atol=1e-8)
    assert model.free_energy() == pytest.approx(evidence, abs=1e-6)


@pytest.mark.parametrize("forward, g", [("sin", np.sin), ("tanh2", lambda f: np.tanh(2 * f)),
                                        ("poly3", lambda f: f ** 3 + f ** 2 + f)])
def test_result_is_a_fixed_point_of_the_statistical_linearisation(forward, g):
    X, y = _data(g)
    model = _model(X, y, forward, tol=1e-9, max_iter=500).fit_posterior()
    assert model.converged and not model.diverged
    m, v = model.posterior_mean, model.posterior_var
    K = model.kernel.K(X)
    a, y_bar = _reference_statistical_linearisation(g, m, v)
    m_t, C_t = _reference_target(K, y, 0.02, a, y_bar, m)
    np.testing.assert_allclose(m_t, m, atol=1e-6)
    np.testing.assert_allclose(np.diag(C_t), v, atol=1e-6)
    # eq. 41 at the fixed point, where A m + b = y_bar. K is near-singular (SE kernel), so
    # log|C| - log|K| = -log|I + A K A / noise| and K^-1 m = A G^-1 (y - y_bar + a m) at the fixed point
    S = a / np.sqrt(0.02)
    _, logdet_W = np.linalg.slogdet(np.eye(len(y)) + S[:, None] * K * S[None, :])
    G = 0.02 * np.eye(len(y)) + a[:, None] * K * a[None, :]
    K_inv_m = a * np.linalg.solve(G, y - y_bar + a * m)
    r = y - y_bar
    F = -0.5 * (len(y) * np.log(2 * np.pi * 0.02) + logdet_W + m @ K_inv_m + r @ r / 0.02)
    assert model.free_energy() == pytest.approx(F, abs=1e-5)


def test_free_energy_is_smooth_where_the_map_search_stops_on_diverge():
    """EGP paper toy data, g = tanh(2f), fold 0, kernel variance on the log grid of
    tests/benchmarks/free_energy_profile.py: every fixed point is found and F is concave along the
    grid (the paper's MAP-monitored loop stops on 'diverge' at 8 of these 14 points and F jumps
    by up to 150 nats)."""
    data = toy_inversion("tanh2", seed=0)
    train, _ = lx.cv_folds(seed=0)[0]
    values = []
    for variance in np.geomspace(0.25, 3.2, 14):
        model = lx.make_model("UGP", data.X[train], data.y[train], "tanh2", inner_loop="fixed-point")
        model.set_parameters(**{"variance": variance, "lengthscale": 0.75, "noise_variance": 0.045})
        model.fit_posterior()
        assert model.converged and not model.diverged
        assert model.trace[0].status == "start" and all(r.status == "accepted" for r in model.trace[1:])
        values.append(model.free_energy())
    assert np.all(np.diff(values, 2) < 0.05), values
    assert 3 <= int(np.argmax(values)) <= 11, values


def test_overflowing_forward_model_gives_a_clear_error():
    X, y = _data(np.exp)
    model = LinearizedGP(X, y, forward="exp", linearization="unscented", inner_loop="fixed-point",
                         kernel=kernels.SquaredExponential(variance=1e6, lengthscale=1.0), noise_variance=0.02)
    with pytest.raises(ValueError, match="exp|finite|overflow"):
        model.fit_posterior()


def test_fit_and_warm_start_use_the_fixed_point():
    X, y = _data(np.sin)
    model = _model(X, y, "sin")
    model.fit(max_iter=30)
    assert model.converged and np.isfinite(model.free_energy())
    F = model.free_energy()
    model.fit_posterior(warm_start=True)
    assert model.free_energy() == pytest.approx(F, abs=1e-4)


def test_inner_loop_choices_are_checked():
    X, y = _data(np.sin)
    with pytest.raises(ValueError, match="inner_loop must be one of"):
        LinearizedGP(X, y, forward="sin", linearization="unscented", inner_loop="newton")
    with pytest.raises(ValueError, match="UGP"):
        LinearizedGP(X, y, forward="sin", linearization="taylor", inner_loop="fixed-point")
    assert LinearizedGP(X, y, forward="sin", linearization="unscented").inner_loop == "map-search"
