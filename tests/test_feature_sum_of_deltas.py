"""Sums of deltas as inducing features (thesis eq. 4.14-4.19), with any kernel.

* Kuf and Kuu against a plain double-loop reference for several kernels, 1-D and 2-D ARD;
* C = 1 is inducing points (covariances, objective and its gradient w.r.t. Z);
* the fixed first weight: rescaling a member's weights leaves every approximation unchanged;
* Kuu positive semi-definite and VFE <= exact <= upper bound for random draws (hypothesis);
* finite-difference gradients of every approximation and the upper bound (Z, w, kernel, noise)
  in 1-D and 2-D ARD (the generic registry tests add every registered kernel in 3-D);
* fit and predict, the variants the labs use, bad input.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import reference
from gpexplorer import covariances
from gpexplorer.inducing import SumOfDeltas
from gpexplorer.kernels import Matern32, Periodic, SquaredExponential
from gpexplorer.sparse.regression import ExactGPR, SparseGPR

APPROXIMATIONS = ("sor", "dtc", "fitc", "vfe")
KERNELS = {"se": lambda D: SquaredExponential(1.2, 0.8 if D == 1 else np.array([0.7, 1.3])),
           "matern32": lambda D: Matern32(0.9, 1.1), "periodic": lambda D: Periodic(1.0, 0.9, 2.5)}


def random_feature(rng, M, C, D):
    return SumOfDeltas(rng.uniform(-2, 2, (M, C, D)), np.hstack([np.ones((M, 1)), rng.uniform(-1.5, 1.5, (M, C - 1))]))


def data(D, N=25, seed=1):
    rng = np.random.default_rng(seed)
    X = rng.uniform(-2.5, 2.5, (N, D))
    return X, np.sin(2 * X.sum(axis=1)) + 0.2 * rng.normal(size=N)


@pytest.mark.parametrize("kname, D", [("se", 1), ("se", 2), ("matern32", 1), ("matern32", 2), ("periodic", 1)])
def test_covariances_match_a_double_loop(kname, D):
    rng = np.random.default_rng(0)
    f, k = random_feature(rng, 3, 4, D), KERNELS[kname](D)
    X = rng.uniform(-2, 2, (5, D))
    w, Z = f.weights, f.Z
    Kuu = np.array([[sum(w[i, c] * w[j, d] * k.K(Z[i, c][None], Z[j, d][None])[0, 0] for c in range(4) for d in range(4))
                     for j in range(3)] for i in range(3)])
    Kuf = np.array([[sum(w[m, c] * k.K(Z[m, c][None], X[n][None])[0, 0] for c in range(4)) for n in range(5)]
                    for m in range(3)])
    np.testing.assert_allclose(covariances.Kuu(f, k), Kuu, rtol=1e-12)
    np.testing.assert_allclose(covariances.Kuf(f, k, X), Kuf, rtol=1e-12)


@pytest.mark.parametrize("approximation", APPROXIMATIONS)
def test_one_delta_per_member_is_an_inducing_point(approximation):
    X, y = data(2)
    Z = np.random.default_rng(2).uniform(-2, 2, (5, 2))
    k = KERNELS["se"](2)
    a = SparseGPR(X, y, k, Z=SumOfDeltas(Z[:, None, :]), approximation=approximation, noise_variance=0.2)
    b = SparseGPR(X, y, k.copy(), Z=Z, approximation=approximation, noise_variance=0.2)
    (va, ga), (vb, gb) = a.log_marginal_likelihood(True), b.log_marginal_likelihood(True)
    assert va == pytest.approx(vb, rel=1e-12)
    np.testing.assert_allclose(ga["Z"][:, 0, :], gb["Z"], rtol=1e-9, atol=1e-12)
    assert a.inducing.parameter_names == ("Z",)


@pytest.mark.parametrize("approximation", APPROXIMATIONS)
def test_rescaling_a_members_weights_changes_nothing(approximation):
    """Why w_m1 is fixed: u_m -> c u_m leaves Q_ff = Kfu Kuu^-1 Kuf, hence every objective, unchanged."""
    X, y = data(1)
    f = random_feature(np.random.default_rng(4), 3, 3, 1)
    scaled = f.weights.copy()
    scaled[1] *= -2.5
    g = SumOfDeltas(f.Z, scaled)
    np.testing.assert_allclose(g.w, f.w)  # normalised to the same free weights
    k = KERNELS["se"](1)
    Kuu, Kuf = covariances.Kuu(f, k), covariances.Kuf(f, k, X)
    s = np.diag([1.0, -2.5, 1.0])
    assert SparseGPR(X, y, k, Z=f, approximation=approximation, noise_variance=0.2).log_marginal_likelihood() == \
        pytest.approx(SparseGPR(X, y, k, Z=g, approximation=approximation, noise_variance=0.2).log_marginal_likelihood())
    Qff = Kuf.T @ np.linalg.solve(Kuu, Kuf)
    np.testing.assert_allclose((s @ Kuf).T @ np.linalg.solve(s @ Kuu @ s, s @ Kuf), Qff, rtol=1e-8, atol=1e-10)


@pytest.mark.parametrize("D", [1, 2])
@pytest.mark.parametrize("objective", APPROXIMATIONS + ("upper",))
def test_objective_gradients_match_finite_differences(D, objective):
    X, y = data(D)
    m = SparseGPR(X, y, KERNELS["se"](D), Z=random_feature(np.random.default_rng(2), 3, 3, D),
                  approximation="vfe" if objective == "upper" else objective, noise_variance=0.15, jitter=1e-8)

    def value(model):
        return model.upper_bound() if objective == "upper" else model.log_marginal_likelihood()

    v, grads = m.upper_bound(eval_gradient=True) if objective == "upper" else m.log_marginal_likelihood(True)
    assert set(grads) == set(m.parameters) and "w" in grads
    for name, x in m.parameters.items():
        def at(val, name=name, x=x):
            probe = m.copy()
            probe.set_parameters(**{name: val if np.ndim(x) else float(val)})
            return value(probe)

        reference.check_grad_close(grads[name], reference.numerical_grad(at, x), rtol=2e-5, atol=1e-6)


@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 2 ** 31 - 1), M=st.integers(1, 5), C=st.integers(1, 4), noise=st.floats(0.05, 1.0))
def test_psd_and_vfe_below_exact_below_upper_bound(seed, M, C, noise):
    rng = np.random.default_rng(seed)
    X = rng.uniform(-3, 3, (30, 1))
    y = np.sin(2 * X[:, 0]) + 0.3 * rng.normal(size=30)
    kernel = SquaredExponential(rng.uniform(0.5, 2), rng.uniform(0.3, 2.0))
    f = SumOfDeltas(rng.uniform(-3, 3, (M, C, 1)), np.hstack([np.ones((M, 1)), rng.normal(size=(M, C - 1))]))
    Kuu = covariances.Kuu(f, kernel)
    assert np.linalg.eigvalsh(Kuu).min() > -1e-9 * np.abs(Kuu).max()
    m = SparseGPR(X, y, kernel, Z=f, approximation="vfe", noise_variance=noise, jitter=1e-10)
    exact = ExactGPR(X, y, kernel.copy(), noise_variance=noise).log_marginal_likelihood()
    tol = 1e-6 * max(1.0, abs(exact))
    assert m.log_marginal_likelihood() <= exact + tol <= m.upper_bound() + 2 * tol


def test_fit_predict_and_the_variants_the_labs_use():
    rng = np.random.default_rng(0)
    X = rng.uniform(0, 6, (100, 1))
    y = np.sin(X[:, 0]) + 0.1 * rng.normal(size=100)
    k = SquaredExponential(1.0, 0.8)
    f = SumOfDeltas.from_data(X, 5, k, C=3, seed=0)
    assert f.Z.shape == (5, 3, 1) and f.C == 3
    np.testing.assert_allclose(f.Z[:, 2, 0] - f.Z[:, 0, 0], 0.8)  # +-half a lengthscale
    m = SparseGPR(X, y, k, Z=f.copy(), approximation="vfe", noise_variance=0.05)
    before = m.log_marginal_likelihood()
    m.fit(max_iter=40)
    assert m.log_marginal_likelihood() > before and not np.allclose(m.inducing.w, f.w)
    assert np.all(np.isfinite(m.predict_y(X[:4])[0]))
    moved = f.moved(1, [3.3])
    assert moved.locations[1, 0] == pytest.approx(3.3)
    np.testing.assert_allclose(moved.Z[1] - moved.locations[1], f.Z[1] - f.locations[1], atol=1e-12)
    more = f.concatenate(f.at_locations(np.array([[0.5]])))
    assert len(more) == 6 and more.locations[5, 0] == pytest.approx(0.5)
    assert set(f.restart_from(X, rng)) == {"Z"}


@pytest.mark.parametrize("args, message", [
    ((np.zeros((2, 3, 1)), np.zeros((2, 3))), "first weight must be non-zero"),
    ((np.zeros((2, 3, 1)), np.ones((2, 2))), "shape"),
    ((np.full((1, 2, 1), np.nan),), "NaN"),
    ((np.zeros((0, 2, 1)),), "non-empty"),
])
def test_bad_input_is_refused_with_a_clear_message(args, message):
    with pytest.raises(ValueError, match=message):
        SumOfDeltas(*args)


def test_remembered_kernel_matrices_follow_every_change():
    """The objective's k(Z, X) is reused by the gradient contraction; any change must recompute."""
    rng = np.random.default_rng(5)
    f, k = random_feature(rng, 3, 4, 1), SquaredExponential(1.0, 0.7)
    X = rng.uniform(-2, 2, (6, 1))
    first = covariances.Kuf(f, k, X).copy()
    X[0, 0] += 0.5  # same array, same address, new values
    assert not np.allclose(covariances.Kuf(f, k, X), first)
    k.set_params(lengthscale=0.9)
    g = f.copy().set_params(Z=f.Z + 0.1)
    for feature, kernel in ((f, k), (g, k)):
        fresh = SumOfDeltas(feature.Z.copy(), feature.weights)  # nothing remembered
        np.testing.assert_allclose(covariances.Kuf(feature, kernel, X), covariances.Kuf(fresh, kernel, X), rtol=1e-14)
        np.testing.assert_allclose(covariances.Kuu(feature, kernel), covariances.Kuu(fresh, kernel), rtol=1e-14)
