"""Every fast path of the SAVIGP ELBO (issue 16, performance) against the plain path it replaces:
values and gradients to 1e-10 relative, for several likelihoods, FG and MoG posteriors, Q = 1
and 2, and every estimator. A fast path that drifts from the reference fails here."""

import math

import numpy as np
import pytest

from gpexplorer import kernels
from gpexplorer.inducing import InducingPoints
from gpexplorer.likelihoods import (BernoulliLogit, BernoulliProbit, Gaussian, Poisson, Softmax, WarpedGaussian,
                                    get_likelihood)
from gpexplorer.likelihoods.quadrature import product_rule
from gpexplorer.variational import estimators, marginals
from gpexplorer.variational.elbo import elbo, elbo_reference
from gpexplorer.variational.families import make_posterior
from gpexplorer.variational.posterior import FullGaussian

RTOL = 1e-10
LIKELIHOODS = {
    "gaussian": lambda: Gaussian(variance=0.7),
    "bernoulli_logit": BernoulliLogit,
    "bernoulli_probit": BernoulliProbit,
    "poisson": lambda: Poisson(offset=math.log(191 / 811), binsize=1.5),
    "softmax2": lambda: Softmax(2),  # Q = 2
    "warped_gaussian": lambda: WarpedGaussian(variance=0.3, a=(0.8, 0.5, 1.2), b=(1.5, 0.7, 2.0), c=(-0.5, 0.3, 1.0)),
}
ESTIMATORS = [("quadrature", False), ("reparam", False), ("score", False), ("score", True)]


def rel(a, b):
    """max |a - b| / max |b| (0 when both vanish)."""
    a, b = np.ravel(np.asarray(a, dtype=float)), np.ravel(np.asarray(b, dtype=float))
    assert a.shape == b.shape
    scale = np.max(np.abs(b)) if b.size else 0.0
    return float(np.max(np.abs(a - b)) / scale) if scale > 0 else float(np.max(np.abs(a), initial=0.0))


def observations(lik, N, rng):
    return lik.sample(rng.normal(size=(N, lik.n_latent)), rng)[:, 0]


# the likelihood's fused terms ------------------------------------------------------------------
@pytest.mark.parametrize("name", sorted(LIKELIHOODS))
def test_log_density_terms_equal_the_checked_methods(name):
    lik = LIKELIHOODS[name]()
    rng = np.random.default_rng(0)
    N = 9
    Y = observations(lik, N, rng)
    F = rng.normal(scale=2.0, size=(5, N, lik.n_latent))
    F[0, :3] = [[40.0], [-40.0], [-700.0]][:3] if lik.n_latent == 1 else F[0, :3]  # the tails
    y = lik.validate(Y)[:, 0]
    lp, g, dp = lik.log_density_terms(F, y)
    assert rel(lp, lik.log_density(F, Y)) < RTOL
    assert rel(g, lik.dlog_density_df(F, Y)) < RTOL
    ref = lik.dlog_density_dparams(F, Y)
    assert set(dp) == set(ref)
    for n in ref:
        assert rel(dp[n], ref[n]) < RTOL
    lp2, g2, dp2 = lik.log_density_terms(F, y, slope=False, params=False)
    assert g2 is None and dp2 == {} and rel(lp2, lp) == 0.0


def test_bernoulli_logit_terms_stay_finite_and_exact_in_the_tails():
    lik = BernoulliLogit()
    z = np.array([-800.0, -40.0, -1e-3, 0.0, 1e-3, 40.0, 800.0])
    lp, g, _ = lik.log_density_terms(z[:, None], np.ones(z.size))
    from scipy import special
    np.testing.assert_allclose(lp, special.log_expit(z), rtol=1e-15, atol=0)
    np.testing.assert_allclose(g[:, 0], special.expit(-z), rtol=1e-15, atol=0)


def test_bernoulli_labels_keep_both_conventions_and_errors():
    lik = BernoulliLogit()
    np.testing.assert_array_equal(lik.validate([0, 1, 1]), [[0.0], [1.0], [1.0]])
    np.testing.assert_array_equal(lik.validate([-1, 1, 1]), [[0.0], [1.0], [1.0]])
    with pytest.raises(ValueError, match="labels"):
        lik.validate([0, 2])


# the estimators ---------------------------------------------------------------------------------
@pytest.mark.parametrize("name", sorted(LIKELIHOODS))
@pytest.mark.parametrize("method,cv", ESTIMATORS)
def test_fast_estimates_equal_the_plain_path(name, method, cv):
    lik = LIKELIHOODS[name]()
    rng = np.random.default_rng(1)
    K, N, Q = 2, 11, lik.n_latent
    b = rng.normal(size=(K, N, Q))
    var = rng.uniform(0.1, 1.5, size=(K, N, Q))
    Y = observations(lik, N, rng)
    kw = dict(num_samples=257, seed=3, control_variate=cv, n_points=7)
    fast = estimators.estimate(lik, b, var, Y, method, **kw)
    ref = estimators.estimate_reference(lik, b, var, Y, method, **kw)
    for n in ("value", "dmean", "dvar"):
        assert rel(getattr(fast, n), getattr(ref, n)) < RTOL, n
    assert set(fast.dparams) == set(ref.dparams)
    for n in ref.dparams:
        assert fast.dparams[n].shape == ref.dparams[n].shape
        assert rel(fast.dparams[n], ref.dparams[n]) < RTOL, n
    for n in ref.report:  # Monte Carlo variances: one-pass sums against numpy's two-pass var
        assert rel(fast.report[n], ref.report[n]) < 1e-8, n
    assert fast.num_samples == ref.num_samples and fast.method == ref.method


def test_fast_score_path_blocks_over_the_samples():
    lik = BernoulliLogit()
    rng = np.random.default_rng(2)
    N = 50
    b, var = rng.normal(size=(1, N, 1)), rng.uniform(0.2, 1.0, size=(1, N, 1))
    Y = observations(lik, N, rng)
    eps = estimators.draw_eps(3000, N, 1, seed=5)  # 150 000 values: several blocks
    assert eps.size > estimators.FAST_BLOCK
    for method in ("score", "reparam"):
        fast = estimators.estimate(lik, b, var, Y, method, eps=eps)
        ref = estimators.estimate_reference(lik, b, var, Y, method, eps=eps)
        for n in ("value", "dmean", "dvar"):
            assert rel(getattr(fast, n), getattr(ref, n)) < RTOL


def test_fast_path_refuses_non_finite_samples_like_the_plain_path():
    lik = BernoulliLogit()
    b, var, Y = np.zeros((1, 4, 1)), np.ones((1, 4, 1)), np.array([0.0, 1.0, 1.0, 0.0])
    eps = np.ones((3, 4, 1))
    eps[1, 2, 0] = np.nan
    for method in ("reparam", "score"):
        with pytest.raises(ValueError, match="NaN or inf"):
            estimators.estimate(lik, b, var, Y, method, eps=eps)


def test_a_subclass_overriding_the_public_methods_takes_the_plain_path():
    class Tempered(BernoulliLogit):
        def log_density(self, F, Y):
            return 0.5 * super().log_density(F, Y)

    rng = np.random.default_rng(3)
    b, var = rng.normal(size=(1, 5, 1)), rng.uniform(0.2, 1.0, size=(1, 5, 1))
    Y = np.array([0.0, 1.0, 1.0, 0.0, 1.0])
    assert estimators._fast_terms(Tempered()) is None
    half = estimators.estimate(Tempered(), b, var, Y).value
    np.testing.assert_allclose(half, 0.5 * estimators.estimate(BernoulliLogit(), b, var, Y).value, rtol=1e-14)


def test_quadrature_rule_is_cached_but_handed_out_as_copies():
    nodes, w = product_rule(5, 2)
    nodes[:] = 0.0
    w[:] = 0.0
    again, w2 = product_rule(5, 2)
    assert np.all(w2 > 0) and np.any(again != 0)
    with pytest.raises(ValueError):
        product_rule(2.5, 1)
    with pytest.raises(ValueError):
        product_rule(True, 1)


# the marginals and the whole ELBO ---------------------------------------------------------------
def problem(lik, kind, seed=0, N=30, M=6):
    rng = np.random.default_rng(seed)
    Q = lik.n_latent
    X = rng.uniform(size=(N, 2))
    Y = observations(lik, N, rng)
    ks = [kernels.SquaredExponential(variance=1.2, lengthscale=0.35) for _ in range(Q)]  # cond(Kuu) ~ 1e2
    fs = [InducingPoints(X[rng.choice(N, M, replace=False)] + 0.01) for _ in range(Q)]
    post = make_posterior(kind, M, Q)
    post.set_free(rng.normal(scale=0.3, size=post.num_free))
    return X, Y, ks, fs, post


def assert_same_elbo(a, r):
    assert rel(a.value, r.value) < RTOL
    for t in r.terms:
        assert abs(a.terms[t] - r.terms[t]) <= RTOL * max(1.0, abs(r.terms[t])), t
    g, h = a.grads, r.grads
    assert rel(g["posterior"], h["posterior"]) < RTOL
    for j in range(len(h["kernels"])):
        for n in h["kernels"][j]:
            assert rel(g["kernels"][j][n], h["kernels"][j][n]) < RTOL, n
        for n in h["features"][j]:
            assert rel(g["features"][j][n], h["features"][j][n]) < RTOL, n
    for n in h["likelihood"]:
        assert rel(g["likelihood"][n], h["likelihood"][n]) < RTOL, n


@pytest.mark.parametrize("kind", ["fg", "mog1", "mog2"])
@pytest.mark.parametrize("name", ["bernoulli_logit", "poisson", "gaussian", "softmax2", "warped_gaussian"])
def test_fast_elbo_equals_the_reference_elbo(kind, name):
    lik = LIKELIHOODS[name]()
    X, Y, ks, fs, post = problem(lik, kind)
    for estimator in ("quadrature", "reparam", "score"):
        kw = dict(estimator=estimator, num_samples=40, seed=1, jitter=1e-5, eval_gradient=True,
                  n_points=8 if lik.n_latent == 2 else None)
        assert_same_elbo(elbo(X, Y, ks, fs, lik, post, **kw), elbo_reference(X, Y, ks, fs, lik, post, **kw))


@pytest.mark.parametrize("kind", ["fg", "mog1", "mog2"])
def test_fast_marginals_and_backward_equal_the_cholesky_solve_versions(kind):
    lik = Softmax(2)
    X, Y, ks, fs, post = problem(lik, kind, seed=4, N=25, M=7)
    rng = np.random.default_rng(5)
    for j in range(post.Q):
        fast = marginals.forward(ks[j], fs[j], X, post, j, 1e-5)
        Kuu, Kuf, kdiag = marginals.covariance_blocks(ks[j], fs[j], X)
        ref = marginals.forward_reference(Kuu, Kuf, kdiag, post.means[j], lambda A: post.S_times(j, A), 1e-5)
        generic = marginals.forward_blocks(Kuu, Kuf, kdiag, post.means[j], lambda A: post.S_times(j, A), 1e-5)
        for lat in (fast, generic):
            for n in ("At", "mean", "var", "L"):
                assert rel(getattr(lat, n), getattr(ref, n)) < RTOL, n
            assert rel(lat.AS, ref.AS) < RTOL  # formed on demand on the fast path
        dmean, dvar = rng.normal(size=(2, post.K, X.shape[0]))
        for lat in (fast, generic):
            out = marginals.backward(lat, post.means[j], post.diagonal, dmean, dvar)
            want = marginals.backward_reference(ref, post.means[j], post.diagonal, dmean, dvar)
            for a, b in zip(out, want):
                assert a.shape == b.shape and rel(a, b) < RTOL


def test_cross_term_with_given_inverses_equals_its_own_inversion():
    lik = BernoulliLogit()
    X, Y, ks, fs, post = problem(lik, "fg", seed=6)
    lat = marginals.forward(ks[0], fs[0], X, post, 0, 1e-5)
    a = post.cross_term([lat.L], [lat.Kinv])
    b = post.cross_term([lat.L])
    assert abs(a[0] - b[0]) < 1e-12 * abs(b[0]) and rel(a[1], b[1]) < RTOL and rel(a[2][0], b[2][0]) < RTOL


def test_the_cached_factor_follows_every_change_of_the_free_vector():
    post = FullGaussian(4)
    rng = np.random.default_rng(7)
    post.set_free(rng.normal(size=post.num_free))
    L1 = post.factor(0)
    post.free[5] += 1.0  # in place, as initialise_from_prior and set_moments write
    L2 = post.factor(0)
    assert not np.allclose(L1, L2)
    twin = post.copy()
    twin.set_free(rng.normal(size=post.num_free))
    assert np.allclose(post.factor(0), L2) and not np.allclose(twin.factor(0), L2)
    L2[0, 0] = 123.0  # a copy: the cache is untouched
    assert post.factor(0)[0, 0] != 123.0
    S = post.covariance(0, 0)
    np.testing.assert_allclose(S, post.factor(0) @ post.factor(0).T)


def test_the_model_evaluates_the_same_elbo_by_both_paths():
    from gpexplorer.variational import SparseVariationalGP
    rng = np.random.default_rng(8)
    X = rng.uniform(size=(40, 2))
    Y = (rng.uniform(size=40) < 0.5).astype(float)
    m = SparseVariationalGP(X, Y, kernels.SquaredExponential(lengthscale=0.4), 8, get_likelihood("bernoulli_logit"),
                            posterior="fg", jitter=1e-5)
    m.set_parameters(posterior=rng.normal(scale=0.2, size=m.posterior.num_free))
    r = m.evaluate(eval_gradient=True)
    ref = elbo_reference(m.X, m.Y, m.kernels, m.features, m.likelihood, m.posterior, jitter=m.jitter,
                         eval_gradient=True)
    assert_same_elbo(r, ref)
