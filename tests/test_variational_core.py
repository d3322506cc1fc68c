"""SAVIGP core (issue 16): posterior families, marginals, the ELBO and its gradients, checked
against finite differences, a dense O(N^3) numpy reference and the Gaussian-likelihood limits
(Titsias' collapsed bound, the exact marginal likelihood)."""

import numpy as np
import pytest
from scipy.stats import multivariate_normal

from gpexplorer import kernels
from gpexplorer.inducing import InducingPoints
from gpexplorer.sparse.regression import ExactGPR, SparseGPR
from gpexplorer.variational import FullGaussian, MixtureOfDiagonalGaussians, elbo
from gpexplorer.variational.families import make_posterior
from test_variational_likelihoods import (BernoulliLogitStandIn, GaussianStandIn, HeteroscedasticStandIn,
                                          data_for)

JITTER = 1e-6


def problem(Q, kind, lik, N=9, M=4, seed=0, D=1):
    rng = np.random.default_rng(seed)
    X = rng.uniform(-2, 2, size=(N, D))
    Y = data_for(lik, N, rng)
    ks = [kernels.SquaredExponential(variance=0.8 + 0.3 * j, lengthscale=0.9 + 0.2 * j) for j in range(Q)]
    feats = [InducingPoints(np.linspace(-2, 2, M)[:, None] + 0.2 * rng.standard_normal((M, D))) for _ in range(Q)]
    post = make_posterior(kind, M, Q)
    post.set_free(0.3 * rng.standard_normal(post.num_free))
    return X, Y, ks, feats, post


def value(X, Y, ks, feats, lik, post, **kw):
    return elbo(X, Y, ks, feats, lik, post, jitter=JITTER, **kw).value


def fd(f, x, h=1e-5):
    x = np.array(x, dtype=float)
    g = np.zeros(x.size)
    for i in range(x.size):
        e = np.zeros(x.size)
        e[i] = h
        g[i] = (f((x.ravel() + e).reshape(x.shape)) - f((x.ravel() - e).reshape(x.shape))) / (2 * h)
    return g.reshape(x.shape)


CASES = [(1, "fg", GaussianStandIn), (1, "mog2", GaussianStandIn), (1, "fg", BernoulliLogitStandIn),
         (1, "mog2", BernoulliLogitStandIn), (2, "fg", HeteroscedasticStandIn), (2, "mog2", HeteroscedasticStandIn),
         (2, "mog1", HeteroscedasticStandIn)]


@pytest.mark.parametrize("Q,kind,likcls", CASES, ids=lambda c: getattr(c, "__name__", str(c)))
def test_quadrature_elbo_gradient_matches_finite_differences(Q, kind, likcls):
    lik = likcls()
    X, Y, ks, feats, post = problem(Q, kind, lik)
    r = elbo(X, Y, ks, feats, lik, post, jitter=JITTER, eval_gradient=True)
    # posterior free vector
    x0 = post.free.copy()
    num = fd(lambda x: value(X, Y, ks, feats, lik, post.copy().set_free(x)), x0)
    np.testing.assert_allclose(r.grads["posterior"], num, rtol=1e-5, atol=1e-6)
    # kernel parameters and inducing inputs of every latent
    for j in range(Q):
        for name, v in ks[j].parameters.items():
            def f_k(t, j=j, name=name):
                kk = [k.copy() for k in ks]
                kk[j].set_parameters(**{name: float(t)})
                return value(X, Y, kk, feats, lik, post)
            np.testing.assert_allclose(r.grads["kernels"][j][name], fd(f_k, v), rtol=1e-5, atol=1e-6)

        def f_z(Z, j=j):
            ff = [f.copy() for f in feats]
            ff[j] = InducingPoints(Z)
            return value(X, Y, ks, ff, lik, post)
        np.testing.assert_allclose(r.grads["features"][j]["Z"], fd(f_z, feats[j].Z), rtol=1e-5, atol=1e-6)
    # likelihood parameters
    for name, v in lik.parameters.items():
        num = fd(lambda t: value(X, Y, ks, feats, likcls(**{name: float(t)}), post), v)
        np.testing.assert_allclose(r.grads["likelihood"][name], num, rtol=1e-5, atol=1e-6)
    assert set(r.grads["likelihood"]) == set(lik.parameters)


# dense O(N^3) reference ----------------------------------------------------------------------

def dense_reference(X, Y, ks, feats, s2, post):
    """ELBO by full matrices for a Gaussian likelihood y ~ N(f, s2) (Q = 1): b, Sigma_k, ell in
    closed form, cross by direct solves, entropy exact (K = 1) or eq. 19 on the stacked u."""
    k, Z = ks[0], feats[0].Z
    Kuu = k.K(Z) + JITTER * np.eye(len(Z))
    Kuf, Kff = k.K(Z, X), k.K(X)
    A = np.linalg.solve(Kuu, Kuf).T
    pi, m = post.pi, post.means[0]
    y = Y[:, 0]
    ell, cross = 0.0, 0.0
    out = {"b": [], "var": []}
    for kk in range(post.K):
        S = post.covariance(kk, 0)
        b = A @ m[kk]
        Sig = Kff - A @ Kuf + A @ S @ A.T
        out["b"].append(b)
        out["var"].append(np.diag(Sig))
        ell += pi[kk] * np.sum(-0.5 * np.log(2 * np.pi * s2) - ((y - b) ** 2 + np.diag(Sig)) / (2 * s2))
        cross += pi[kk] * (multivariate_normal(np.zeros(len(Z)), Kuu).logpdf(m[kk])
                           - 0.5 * np.trace(np.linalg.solve(Kuu, S)))
    if post.K == 1:
        ent = 0.5 * np.linalg.slogdet(2 * np.pi * np.e * post.covariance(0, 0))[1]
    else:
        ent = -sum(pi[a] * np.log(sum(pi[c] * multivariate_normal(m[c], post.covariance(a, 0) + post.covariance(c, 0))
                                      .pdf(m[a]) for c in range(post.K))) for a in range(post.K))
    out["value"] = ell + ent + cross
    return out


@pytest.mark.parametrize("kind", ["fg", "mog1", "mog2", ("mog", 3)])
def test_elbo_matches_dense_reference(kind):
    lik = GaussianStandIn(variance=0.4)
    X, Y, ks, feats, post = problem(1, kind, lik, N=12, M=5, seed=3)
    r = elbo(X, Y, ks, feats, lik, post, jitter=JITTER)
    ref = dense_reference(X, Y, ks, feats, 0.4, post)
    np.testing.assert_allclose(r.latents[0].mean, np.array(ref["b"]), rtol=1e-9, atol=1e-10)
    np.testing.assert_allclose(r.latents[0].var, np.array(ref["var"]), rtol=1e-8, atol=1e-10)
    np.testing.assert_allclose(r.value, ref["value"], rtol=1e-9)
    assert r.entropy_kind == ("exact" if post.K == 1 else "jensen")


def test_two_latent_marginals_match_dense_matrices():
    lik = HeteroscedasticStandIn()
    X, Y, ks, feats, post = problem(2, "fg", lik, N=10, M=4, seed=5)
    r = elbo(X, Y, ks, feats, lik, post, jitter=JITTER)
    for j in range(2):
        k, Z = ks[j], feats[j].Z
        Kuu = k.K(Z) + JITTER * np.eye(len(Z))
        A = np.linalg.solve(Kuu, k.K(Z, X)).T
        Sig = k.K(X) - A @ k.K(Z, X) + A @ post.covariance(0, j) @ A.T
        np.testing.assert_allclose(r.estimate.value.shape, (1, 10))
        np.testing.assert_allclose(r.latents[j].mean[0], A @ post.means[j][0], rtol=1e-9, atol=1e-10)
        np.testing.assert_allclose(r.latents[j].var[0], np.diag(Sig), rtol=1e-8, atol=1e-10)


# the Gaussian-likelihood limits --------------------------------------------------------------

def optimal_fg(X, y, k, Z, s2, jitter=JITTER):
    """q(u) optimum: S = (Kuu^-1 + s2^-1 Kuu^-1 Kuf Kfu Kuu^-1)^-1, m = s2^-1 S Kuu^-1 Kuf y."""
    Kuu = k.K(Z) + jitter * np.eye(len(Z))
    Kuf = k.K(Z, X)
    Sigma = np.linalg.inv(Kuu + Kuf @ Kuf.T / s2)
    S = Kuu @ Sigma @ Kuu
    m = Kuu @ Sigma @ Kuf @ y / s2
    post = FullGaussian(len(Z))
    post.set_moments([m], [0.5 * (S + S.T)])
    return post


def test_gaussian_fg_optimum_equals_titsias_bound_and_is_stationary():
    rng = np.random.default_rng(7)
    N, M, s2 = 40, 7, 0.1
    X = np.sort(rng.uniform(-3, 3, size=(N, 1)), axis=0)
    y = np.sin(2 * X[:, 0]) + np.sqrt(s2) * rng.standard_normal(N)
    Z = np.linspace(-2.5, 2.5, M)[:, None]
    k = kernels.SquaredExponential(variance=1.3, lengthscale=0.7)
    post = optimal_fg(X, y, k, Z, s2)
    lik = GaussianStandIn(variance=s2)
    r = elbo(X, y[:, None], [k], [InducingPoints(Z)], lik, post, jitter=JITTER, eval_gradient=True)
    titsias = SparseGPR(X, y, kernel=k, Z=Z, approximation="vfe", noise_variance=s2, jitter=JITTER)
    assert r.entropy_kind == "exact"
    assert abs(r.value - titsias.log_marginal_likelihood()) < 1e-6
    assert np.max(np.abs(r.grads["posterior"])) < 1e-5
    # and it is a maximum: any perturbation of q lowers the ELBO
    for seed in range(3):
        moved = post.copy().set_free(post.free + 1e-2 * np.random.default_rng(seed).standard_normal(post.num_free))
        assert elbo(X, y[:, None], [k], [InducingPoints(Z)], lik, moved, jitter=JITTER).value < r.value
    # the hyperparameter gradients there equal those of the collapsed bound (envelope theorem)
    _, g_titsias = titsias.log_marginal_likelihood(eval_gradient=True)
    for name in ("variance", "lengthscale"):
        np.testing.assert_allclose(r.grads["kernels"][0][name], g_titsias[name], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(r.grads["features"][0]["Z"], g_titsias["Z"], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(r.grads["likelihood"]["variance"], g_titsias["noise_variance"], rtol=1e-5, atol=1e-6)


def test_jensen_entropy_would_break_the_titsias_limit_by_the_stated_constant():
    """For K = 1 the bound (19) is looser than the exact entropy by (M/2) log(e/2) per latent."""
    post = MixtureOfDiagonalGaussians(6, 2, K=1)
    post.set_free(np.random.default_rng(0).standard_normal(post.num_free))
    exact, _ = post.entropy()
    jensen, _ = post.jensen_entropy()
    assert np.isclose(exact - jensen, 2 * 6 / 2 * np.log(np.e / 2))


def test_z_equal_x_fg_optimum_equals_exact_marginal_likelihood():
    """M = N, Z = X: the optimal q(u) is the exact posterior of f (S = K - K (K + s2 I)^-1 K,
    m = K (K + s2 I)^-1 y, the well-conditioned form of the optimum above) and the ELBO is
    log p(y)."""
    rng = np.random.default_rng(11)
    N, s2 = 15, 0.2
    X = rng.uniform(-2, 2, size=(N, 1))
    y = np.cos(X[:, 0]) + np.sqrt(s2) * rng.standard_normal(N)
    k = kernels.SquaredExponential(variance=1.0, lengthscale=0.5)
    jitter = 1e-9
    K = k.K(X) + jitter * np.eye(N)
    C = np.linalg.solve(K + s2 * np.eye(N), np.column_stack([K, y]))
    S = K - K @ C[:, :N]
    post = FullGaussian(N).set_moments([K @ C[:, N]], [0.5 * (S + S.T)])
    lik = GaussianStandIn(variance=s2)
    r = elbo(X, y[:, None], [k], [InducingPoints(X)], lik, post, jitter=jitter)
    exact = ExactGPR(X, y, kernel=k, noise_variance=s2).log_marginal_likelihood()
    assert r.entropy_kind == "exact"
    assert abs(r.value - exact) < 1e-6
    # (stationarity is checked at M < N above: with M = N, Kuu^-1 of condition ~1e9 makes the
    # posterior gradient a difference of large numbers)


def test_mog_with_one_component_equals_fg_with_diagonal_covariance():
    lik = BernoulliLogitStandIn()
    X, Y, ks, feats, _ = problem(2, "fg", lik, N=8, M=3, seed=2)
    lik2 = HeteroscedasticStandIn()
    rng = np.random.default_rng(4)
    means = [rng.normal(size=3), rng.normal(size=3)]
    variances = [rng.uniform(0.2, 2, size=3), rng.uniform(0.2, 2, size=3)]
    fg = FullGaussian(3, 2).set_moments(means, [np.diag(np.sqrt(v)) for v in variances])
    mog = MixtureOfDiagonalGaussians(3, 2, K=1).set_moments([m[None] for m in means], [v[None] for v in variances])
    a = elbo(X, Y, ks, feats, lik2, fg, jitter=JITTER, eval_gradient=True)
    b = elbo(X, Y, ks, feats, lik2, mog, jitter=JITTER, eval_gradient=True)
    assert np.isclose(a.value, b.value, rtol=1e-12)
    for key in ("ell", "entropy", "cross"):
        assert np.isclose(a.terms[key], b.terms[key], rtol=1e-12)
    for j in range(2):
        for name in ks[j].parameters:
            np.testing.assert_allclose(a.grads["kernels"][j][name], b.grads["kernels"][j][name], rtol=1e-10)
        np.testing.assert_allclose(a.grads["features"][j]["Z"], b.grads["features"][j]["Z"], rtol=1e-10, atol=1e-12)
        # d/dm agrees; the FG log-diagonal gradient is twice the MoG log-variance gradient
        np.testing.assert_allclose(a.grads["posterior"][fg_slice_mean(fg, j)], b.grads["posterior"][mog.slices(0, j)[0]],
                                   rtol=1e-10, atol=1e-12)


def fg_slice_mean(post, j):
    start = sum(m + m * (m + 1) // 2 for m in post.sizes[:j])
    return slice(start, start + post.sizes[j])


@pytest.mark.parametrize("K", [1, 2, 5])
def test_mixture_weights_stay_on_the_simplex_for_any_free_vector(K):
    rng = np.random.default_rng(K)
    post = MixtureOfDiagonalGaussians(3, 2, K=K)
    for scale in (1.0, 50.0, 700.0, 1e6):
        post.set_free(scale * rng.standard_normal(post.num_free))
        pi = post.pi
        assert pi.shape == (K,) and np.all(pi >= 0) and np.isclose(pi.sum(), 1.0)
        assert np.all(np.isfinite(post.log_pi)) or K == 1


def test_free_vector_round_trip_and_validation():
    post = FullGaussian([2, 3])
    L = [np.array([[1.0, 0], [0.5, 2.0]]), np.array([[0.3, 0, 0], [0.1, 0.4, 0], [-1, 2, 0.5]])]
    post.set_moments([np.ones(2), np.arange(3.0)], L)
    np.testing.assert_allclose(post.factor(1), L[1])
    np.testing.assert_allclose(post.covariance(0, 0), L[0] @ L[0].T)
    with pytest.raises(ValueError, match="different numbers"):
        post.mean_array()
    assert MixtureOfDiagonalGaussians(4, 3, K=2).mean_array().shape == (2, 3, 4)
    again = FullGaussian([2, 3]).set_free(post.free)
    np.testing.assert_allclose(again.means[1][0], np.arange(3.0))
    with pytest.raises(ValueError, match="entries"):
        post.set_free(np.zeros(3))
    with pytest.raises(ValueError, match="NaN"):
        post.set_free(np.full(post.num_free, np.nan))
    with pytest.raises(ValueError, match="positive integer"):
        MixtureOfDiagonalGaussians(3, K=0)
    with pytest.raises(ValueError, match="posterior must be"):
        make_posterior("nonsense", 3)


def test_elbo_rejects_mismatched_inputs():
    lik = HeteroscedasticStandIn()
    X, Y, ks, feats, post = problem(2, "fg", lik)
    with pytest.raises(ValueError, match="latent"):
        elbo(X, Y, ks, feats, GaussianStandIn(), post)
    with pytest.raises(ValueError, match="once per latent"):
        elbo(X, Y, ks[:1], feats, lik, post)
    with pytest.raises(ValueError, match="rows"):
        elbo(X[:-1], Y, ks, feats, lik, post)
