"""Multiscale inducing features (MSIF, thesis eq. 4.5 and 4.8).

* Kuf and Kuu against numerical quadrature of eq. 4.3-4.4 (scipy.integrate), 1-D and 2-D, several
  random draws, 1e-8 relative; and against a plain numpy reference written entry by entry;
* the limit delta -> 0 is inducing points (Kuu, Kuf and every approximation's objective);
* Kuu and the joint covariance of (u, f) positive semi-definite for random draws (hypothesis);
* the gradient contraction (with the rank-one form of dL/dKuf) and every approximation's
  objective and the upper bound against finite differences w.r.t. mu, delta, the kernel's
  parameters and the noise, 1-D and 2-D ARD;
* VFE <= exact log marginal likelihood <= upper bound (hypothesis, 1-D and 2-D ARD);
* fit, predict, q(u), from_model across approximations, the generic (not fused) path, the compiled
  Kuf and contraction against numpy far from the origin, from_data, variants, bad input.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st
from scipy import integrate

import reference
from gpexplorer import covariances, inducing
from gpexplorer.inducing import Multiscale
from gpexplorer.kernels import SquaredExponential
from gpexplorer.sparse.regression import ExactGPR, SparseGPR

APPROXIMATIONS = ("sor", "dtc", "fitc", "vfe")
KERNELS = {1: lambda: SquaredExponential(1.3, 0.8), "2-iso": lambda: SquaredExponential(0.9, 1.1),
           2: lambda: SquaredExponential(1.1, np.array([0.7, 1.4]))}


# --- plain references ------------------------------------------------------------------------

def se(x, y, variance, ls):
    return variance * np.exp(-0.5 * np.sum((np.asarray(x) - np.asarray(y)) ** 2 / np.asarray(ls) ** 2))


def window(x, mu, delta):
    """v(x; z) of eq. 4.5: a normalised Gaussian bump."""
    x, mu, delta = (np.atleast_1d(np.asarray(a, dtype=float)) for a in (x, mu, delta))
    return np.prod(np.exp(-0.5 * (x - mu) ** 2 / delta ** 2) / np.sqrt(2 * np.pi * delta ** 2))


def ref_kuf(x, mu, delta, variance, ls):
    ls2, s = np.asarray(ls) ** 2, np.asarray(ls) ** 2 + np.asarray(delta) ** 2
    return variance * np.prod(np.sqrt(ls2 / s)) * np.exp(-0.5 * np.sum((np.asarray(x) - mu) ** 2 / s))


def ref_kuu(mu1, d1, mu2, d2, variance, ls):
    S = np.asarray(ls) ** 2 + np.asarray(d1) ** 2 + np.asarray(d2) ** 2
    return variance * np.prod(np.sqrt(np.asarray(ls) ** 2 / S)) * np.exp(-0.5 * np.sum((mu1 - mu2) ** 2 / S))


def random_feature(rng, M, D):
    return Multiscale(rng.uniform(-1.5, 1.5, (M, D)), rng.uniform(0.2, 0.9, (M, D)))


# --- closed forms against quadrature -----------------------------------------------------------

@pytest.mark.parametrize("D", [1, 2])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_kuf_and_kuu_match_quadrature_of_eq_4_3_and_4_4(D, seed):
    rng = np.random.default_rng(seed)
    f = random_feature(rng, 2, D)
    variance, ls = rng.uniform(0.5, 2.0), rng.uniform(0.5, 1.5, D)
    k = SquaredExponential(variance, ls if D > 1 else float(ls[0]))
    x = rng.uniform(-1, 1, D)
    Kuf, Kuu = covariances.Kuf(f, k, x[None, :]), covariances.Kuu(f, k)
    opts = {"epsabs": 1e-14, "epsrel": 1e-12}
    if D == 1:
        kuf = integrate.quad(lambda t: se([t], x, variance, ls) * window(t, f.mu[0], f.delta[0]), -12, 12, **opts)[0]
        kuu = integrate.dblquad(lambda t, s: se([t], [s], variance, ls) * window(t, f.mu[0], f.delta[0])
                                * window(s, f.mu[1], f.delta[1]), -10, 10, -10, 10, **opts)[0]
    else:  # the SE kernel and the windows factorise over dimensions
        kuf = variance * np.prod([integrate.quad(lambda t, d=d: se([t], [x[d]], 1.0, [ls[d]])
                                                 * window(t, f.mu[0, d], f.delta[0, d]), -12, 12, **opts)[0]
                                  for d in range(D)])
        kuu = variance * np.prod([integrate.dblquad(lambda t, s, d=d: se([t], [s], 1.0, [ls[d]])
                                                    * window(t, f.mu[0, d], f.delta[0, d])
                                                    * window(s, f.mu[1, d], f.delta[1, d]), -10, 10, -10, 10,
                                                    **opts)[0] for d in range(D)])
    assert Kuf[0, 0] == pytest.approx(kuf, rel=1e-8)
    assert Kuu[0, 1] == pytest.approx(kuu, rel=1e-8)
    assert Kuf[0, 0] == pytest.approx(ref_kuf(x, f.mu[0], f.delta[0], variance, ls), rel=1e-12)
    assert Kuu[0, 1] == pytest.approx(ref_kuu(f.mu[0], f.delta[0], f.mu[1], f.delta[1], variance, ls), rel=1e-12)
    assert Kuu[1, 1] == pytest.approx(ref_kuu(f.mu[1], f.delta[1], f.mu[1], f.delta[1], variance, ls), rel=1e-12)


@pytest.mark.parametrize("approximation", APPROXIMATIONS)
def test_vanishing_widths_are_inducing_points(approximation):
    rng = np.random.default_rng(3)
    X = rng.uniform(-2, 2, (30, 2))
    y = np.sin(X.sum(axis=1)) + 0.1 * rng.normal(size=30)
    Z = rng.uniform(-1.5, 1.5, (5, 2))
    k = KERNELS[2]()
    narrow = Multiscale(Z, 1e-7)
    np.testing.assert_allclose(covariances.Kuu(narrow, k), k.K(Z), rtol=1e-10)
    np.testing.assert_allclose(covariances.Kuf(narrow, k, X), k.K(Z, X), rtol=1e-10)
    a = SparseGPR(X, y, k, Z=narrow, approximation=approximation, noise_variance=0.1)
    b = SparseGPR(X, y, k.copy(), Z=Z, approximation=approximation, noise_variance=0.1)
    assert a.log_marginal_likelihood() == pytest.approx(b.log_marginal_likelihood(), rel=1e-8)
    assert a.upper_bound() == pytest.approx(b.upper_bound(), rel=1e-8)
    np.testing.assert_allclose(a.predict_f(X[:4])[0], b.predict_f(X[:4])[0], rtol=1e-7, atol=1e-10)


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 2 ** 31 - 1), M=st.integers(1, 8), D=st.integers(1, 3))
def test_kuu_and_the_joint_covariance_are_psd(seed, M, D):
    rng = np.random.default_rng(seed)
    f = Multiscale(rng.uniform(-2, 2, (M, D)), rng.uniform(0.01, 2.0, (M, D)))
    k = SquaredExponential(rng.uniform(0.3, 2.0), rng.uniform(0.2, 2.0, D) if D > 1 else rng.uniform(0.2, 2.0))
    X = rng.uniform(-2, 2, (6, D))
    Kuu, Kuf = covariances.Kuu(f, k), covariances.Kuf(f, k, X)
    np.testing.assert_allclose(Kuu, Kuu.T, rtol=1e-12, atol=1e-14)
    joint = np.block([[Kuu, Kuf], [Kuf.T, k.K(X)]])
    assert np.linalg.eigvalsh(joint).min() > -1e-9 * np.abs(joint).max()
    np.linalg.cholesky(Kuu + 1e-9 * np.eye(M) * k.variance)


# --- gradients ---------------------------------------------------------------------------------

@pytest.mark.parametrize("kkey", [1, "2-iso", 2])
def test_gradient_contraction_matches_finite_differences(kkey):
    D = 2 if kkey == "2-iso" else kkey
    kernel, rng = KERNELS[kkey](), np.random.default_rng(7)
    feature = random_feature(rng, 4, D)
    X = rng.uniform(-2.5, 2.5, (15, D))
    W1, W2 = rng.normal(size=(4, 4)), rng.normal(size=(4, 15))  # W1 not symmetric: the general case

    def L(k, f):
        return float(np.sum(W1 * covariances.Kuu(f, k)) + np.sum(W2 * covariances.Kuf(f, k, X)))

    g_kernel, g_feature = covariances.gradients(feature, kernel, X, W1, W2)
    grads = {**g_kernel, **g_feature}
    for name, value in {**kernel.parameters, **feature.parameters}.items():
        assert np.shape(grads[name]) == np.shape(value), name

        def at(v, name=name):
            k, f = kernel.copy(), feature.copy()
            (f if name in f.param_names else k).set_parameters(**{name: v if np.ndim(value) else float(v)})
            return L(k, f)

        reference.check_grad_close(grads[name], reference.numerical_grad(at, value), rtol=1e-6, atol=1e-8)
    a, b = rng.normal(size=4), rng.normal(size=15)
    full = covariances.gradients(feature, kernel, X, W1, W2 - np.outer(a, b))
    pre = {"Kuu": covariances.Kuu(feature, kernel), "Kuf": covariances.Kuf(feature, kernel, X)}
    for kw in ({"rank_one": (a, b)}, {"rank_one": (a, b), **pre}):
        part = covariances.gradients(feature, kernel, X, W1, W2, **kw)
        for got, want in zip(part, full):
            for n in want:
                np.testing.assert_allclose(got[n], want[n], rtol=1e-10, atol=1e-12, err_msg=n)


@pytest.mark.parametrize("kkey", [1, 2])
@pytest.mark.parametrize("objective", APPROXIMATIONS + ("upper",))
def test_objective_gradients_match_finite_differences(kkey, objective):
    rng = np.random.default_rng(1)
    X = rng.uniform(-2.5, 2.5, (25, kkey))
    y = np.sin(2 * X.sum(axis=1)) + 0.2 * rng.normal(size=25)
    m = SparseGPR(X, y, KERNELS[kkey](), Z=random_feature(np.random.default_rng(2), 4, kkey),
                  approximation="vfe" if objective == "upper" else objective, noise_variance=0.15, jitter=1e-8)

    def value(model):
        return model.upper_bound() if objective == "upper" else model.log_marginal_likelihood()

    v, grads = m.upper_bound(eval_gradient=True) if objective == "upper" else m.log_marginal_likelihood(True)
    assert v == pytest.approx(value(m), rel=1e-12) and set(grads) == set(m.parameters)
    for name, x in m.parameters.items():
        def at(val, name=name, x=x):
            probe = m.copy()
            probe.set_parameters(**{name: val if np.ndim(x) else float(val)})
            return value(probe)

        reference.check_grad_close(grads[name], reference.numerical_grad(at, x), rtol=2e-5, atol=1e-6)


@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 2 ** 31 - 1), M=st.integers(1, 6), D=st.integers(1, 2), noise=st.floats(0.05, 1.0),
       ls=st.floats(0.3, 2.0))
def test_vfe_below_exact_below_upper_bound(seed, M, D, noise, ls):
    rng = np.random.default_rng(seed)
    X = rng.uniform(-3, 3, (30, D))
    y = np.sin(2 * X.sum(axis=1)) + 0.3 * rng.normal(size=30)
    kernel = SquaredExponential(rng.uniform(0.5, 2), ls if D == 1 else ls * rng.uniform(0.5, 1.5, D))
    f = Multiscale(rng.uniform(-3, 3, (M, D)), rng.uniform(0.01, 2.0, (M, D)))
    m = SparseGPR(X, y, kernel, Z=f, approximation="vfe", noise_variance=noise, jitter=1e-10)
    exact = ExactGPR(X, y, kernel.copy(), noise_variance=noise).log_marginal_likelihood()
    tol = 1e-7 * max(1.0, abs(exact))
    assert m.log_marginal_likelihood() <= exact + tol <= m.upper_bound() + 2 * tol


# --- end to end, variants, bad input -----------------------------------------------------------

def test_fit_moves_centres_and_widths_and_predicts():
    rng = np.random.default_rng(0)
    X = rng.uniform(0, 6, (120, 1))
    y = np.sin(X[:, 0]) + 0.1 * rng.normal(size=120)
    k = SquaredExponential(1.0, 0.8)
    start = Multiscale.from_data(X, 6, k, seed=0)
    np.testing.assert_allclose(start.delta, 0.4)
    m = SparseGPR(X, y, k, Z=start.copy(), approximation="vfe", noise_variance=0.05)
    before = m.log_marginal_likelihood()
    m.fit(max_iter=60)
    assert m.log_marginal_likelihood() > before
    assert not np.allclose(m.inducing.delta, start.delta) and not np.allclose(m.inducing.mu, start.mu)
    mean, var = m.predict_y(X[:5])
    assert np.all(np.isfinite(mean)) and np.all(var > 0)
    for approximation in APPROXIMATIONS:  # from_model carries the feature across approximations
        other = SparseGPR.from_model(m, approximation)
        assert isinstance(other.inducing, Multiscale) and other.inducing is not m.inducing
        np.testing.assert_array_equal(other.inducing.delta, m.inducing.delta)
        q_mu, q_sigma = other.q_u()
        assert q_mu.shape == (6,) and q_sigma.shape == (6, 6) and np.all(np.isfinite(other.predict_f(X[:5])[0]))


def test_the_generic_path_evaluates_multiscale_models():
    """The fused objective is keyed by inducing points: a multiscale model goes through
    gpexplorer.covariances, with the same value as its gradient-free objective."""
    from gpexplorer.sparse.fused import FUSED_OBJECTIVES

    assert FUSED_OBJECTIVES.find(Multiscale, SquaredExponential) is None
    rng = np.random.default_rng(4)
    X = rng.uniform(-2, 2, (40, 1))
    y = np.cos(2 * X[:, 0])
    m = SparseGPR(X, y, KERNELS[1](), Z=random_feature(rng, 5, 1), approximation="vfe", noise_variance=0.1)
    F, grads, _ = m.objective_and_gradient()
    assert F == pytest.approx(-m.log_marginal_likelihood(), rel=1e-12) and set(grads) >= {"mu", "delta"}


@pytest.mark.parametrize("D", [1, 3])
def test_compiled_kuf_and_contraction_against_numpy_far_from_the_origin(D):
    """The compiled Kuf and centred moments (covariances.multiscale_loops) against numpy, with the
    data far from the origin, where uncentred moments would cancel."""
    rng = np.random.default_rng(5)
    X = 1e3 + rng.uniform(-3, 3, (37, D))  # N not a multiple of the four partial sums
    f = Multiscale(1e3 + rng.uniform(-2, 2, (4, D)), rng.uniform(0.1, 1.0, (4, D)))
    k = SquaredExponential(1.7, rng.uniform(0.5, 1.5, D) if D > 1 else 0.9)
    ls = np.broadcast_to(k.lengthscale, (D,))
    K = np.array([[ref_kuf(x, mu, d, k.variance, ls) for x in X] for mu, d in zip(f.mu, f.delta)])
    np.testing.assert_allclose(covariances.Kuf(f, k, X), K, rtol=1e-12)
    W, a, b = rng.normal(size=K.shape), rng.normal(size=4), rng.normal(size=37)
    from gpexplorer.covariances.multiscale_loops import kuf_moments

    for rank_one, weight in ((None, W), ((a, b), W - np.outer(a, b))):
        g0, g1, g2 = kuf_moments(X, f.mu, W, K, rank_one)
        t = X[None, :, :] - f.mu[:, None, :]  # [M, N, D]
        w = (weight * K)[:, :, None]
        np.testing.assert_allclose(g0, (weight * K).sum(axis=1), rtol=1e-11, atol=1e-14)
        np.testing.assert_allclose(g1, (w * t).sum(axis=1), rtol=1e-11, atol=1e-14)
        np.testing.assert_allclose(g2, (w * t ** 2).sum(axis=1), rtol=1e-11, atol=1e-14)


def test_from_data_takes_a_lengthscale_or_a_kernel():
    rng = np.random.default_rng(6)
    X = rng.uniform(0, 5, (200, 2))
    ls = np.array([0.6, 1.2])
    f = Multiscale.from_data(X, 7, ls, rng=np.random.default_rng(0), fraction=0.25)
    assert f.mu.shape == (7, 2) and np.all(f.delta == 0.25 * ls)
    assert np.all((f.mu >= 0) & (f.mu <= 5))  # k-means centres lie in the data's hull
    g = Multiscale.from_data(X, 7, SquaredExponential(1.0, ls), rng=0, fraction=0.25)
    h = Multiscale.from_data(X, 7, ls, seed=0, fraction=0.25)
    np.testing.assert_array_equal(g.mu, h.mu)
    np.testing.assert_array_equal(g.delta, h.delta)
    assert np.all(Multiscale.from_data(X[:, 0], 3, 0.8, rng=1).delta == 0.4)  # default: half a lengthscale
    for bad, message in ((np.array([1.0, 2.0, 3.0]), "lengthscale"), (-1.0, "lengthscale"), (np.nan, "lengthscale")):
        with pytest.raises(ValueError, match=message):
            Multiscale.from_data(X, 3, bad, rng=0)
    with pytest.raises(ValueError, match="fraction"):
        Multiscale.from_data(X, 3, ls, rng=0, fraction=0.0)
    with pytest.raises(ValueError, match="positive integer"):
        Multiscale.from_data(X, 0, ls, rng=0)


def test_variants():
    f = Multiscale(np.array([[0.0], [1.0]]), np.array([0.2, 0.4]))
    assert f.delta.shape == (2, 1) and len(f) == 2 and f.locations is f.mu
    g = f.at_locations(np.array([[3.0]]))
    assert g.delta[0, 0] == pytest.approx(0.3)
    both = f.concatenate(g)
    assert len(both) == 3 and both.delta[2, 0] == pytest.approx(0.3)
    moved = f.moved(1, [2.5])
    assert moved.mu[1, 0] == 2.5 and moved.delta[1, 0] == 0.4 and f.mu[1, 0] == 1.0
    assert set(f.restart_from(np.arange(10.0)[:, None], np.random.default_rng(0))) == {"mu"}
    assert "multiscale" in inducing.FEATURES and inducing.FEATURES["multiscale"] is Multiscale


@pytest.mark.parametrize("args, message", [
    ((np.zeros((2, 1)), -0.1), "positive"),
    ((np.zeros((2, 1)), np.ones((3, 2))), "shape"),
    ((np.array([[np.nan]]), 0.3), "NaN"),
    ((np.zeros((0, 1)), 0.3), "non-empty"),
])
def test_bad_input_is_refused_with_a_clear_message(args, message):
    with pytest.raises(ValueError, match=message):
        Multiscale(*args)


def test_bad_updates_and_inputs_are_refused():
    f = Multiscale(np.zeros((2, 2)), 0.5)
    with pytest.raises(ValueError, match="positive"):
        f.set_parameters(delta=np.array([[0.5, 0.5], [0.0, 0.5]]))
    with pytest.raises(ValueError, match="NaN"):
        f.set_parameters(mu=np.array([[0.0, np.nan], [0.0, 0.0]]))
    with pytest.raises(ValueError, match="shape"):
        f.set_parameters(mu=np.zeros((3, 2)))
    with pytest.raises(ValueError, match="dimension"):
        covariances.Kuf(f, SquaredExponential(), np.zeros((4, 3)))
    with pytest.raises(ValueError, match="Multiscale"):
        f.concatenate(inducing.InducingPoints(np.zeros((1, 2))))
