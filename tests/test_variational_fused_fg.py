"""The fused FG path of the SAVIGP ELBO (gpexplorer/variational/fused_fg.py) against the plain
reference: every stationary kernel, the logit written into work arrays (tails included), the
lazily formed A^T, work arrays never leaking into results, jitter escalation, and which
configurations take the path."""

import warnings

import numpy as np
import pytest

from gpexplorer import kernels
from gpexplorer.inducing import InducingPoints, SumOfDeltas
from gpexplorer.likelihoods import BernoulliLogit, Poisson
from gpexplorer.linalg import JitterWarning
from gpexplorer.variational import SparseVariationalGP, fused_fg, marginals
from gpexplorer.variational.elbo import elbo, elbo_reference
from gpexplorer.variational.families import make_posterior
from gpexplorer.workspace import Workspace, borrow, give_back
from test_variational_speed_paths import RTOL, assert_same_elbo, rel

KERNELS = {
    "se": lambda: kernels.SquaredExponential(variance=1.3, lengthscale=0.4),
    "se_ard": lambda: kernels.SquaredExponential(variance=0.9, lengthscale=[0.3, 0.8]),
    "matern12": lambda: kernels.Matern12(variance=1.1, lengthscale=0.5),
    "matern32": lambda: kernels.Matern32(variance=0.7, lengthscale=[0.4, 0.6]),
    "matern52": lambda: kernels.Matern52(variance=1.2, lengthscale=0.45),
    "rq": lambda: kernels.RationalQuadratic(variance=1.0, lengthscale=0.5, alpha=1.7),
}


def problem(kernel, lik, N=50, M=8, seed=0, mean_scale=1.0):
    """q(u) on the prior's scale, as a fit leaves it: m = Lk v, S = (Lk W)(Lk W)^T with
    Lk = chol(Kuu), W lower triangular with diagonal in (0.3, 0.8). (A covariance far above the
    prior in Kuu's weak directions makes C = Kuu^-1 - Kuu^-1 S Kuu^-1 lose digits on every path.)"""
    rng = np.random.default_rng(seed)
    X = rng.uniform(size=(N, 2))
    Y = lik.sample(rng.normal(size=(N, 1)), rng)[:, 0]
    Z = InducingPoints(X[rng.choice(N, M, replace=False)] + 0.01)
    Lk = np.linalg.cholesky(kernel.K(Z.Z) + 1e-5 * np.eye(M))
    W = np.tril(rng.normal(scale=0.1, size=(M, M)), -1) + np.diag(rng.uniform(0.3, 0.8, M))
    post = make_posterior("fg", M, 1)
    post.set_moments([mean_scale * Lk @ rng.normal(size=M)], [Lk @ W])
    return X, Y, [kernel], [Z], post


@pytest.mark.parametrize("name", sorted(KERNELS))
@pytest.mark.parametrize("lik", [BernoulliLogit, lambda: Poisson(offset=-0.5)], ids=["logit", "poisson"])
def test_fused_elbo_equals_the_reference_for_every_stationary_kernel(name, lik):
    lik = lik()
    X, Y, ks, fs, post = problem(KERNELS[name](), lik)
    assert fused_fg.applies(ks, fs, post, "quadrature")
    kw = dict(estimator="quadrature", jitter=1e-5, eval_gradient=True)
    fast = elbo(X, Y, ks, fs, lik, post, workspace=Workspace(), **kw)
    assert_same_elbo(fast, elbo_reference(X, Y, ks, fs, lik, post, **kw))
    no_grad = elbo(X, Y, ks, fs, lik, post, estimator="quadrature", jitter=1e-5)
    assert no_grad.value == pytest.approx(fast.value, rel=1e-14) and no_grad.grads == {}


def test_logit_tails_keep_every_derivative_to_relative_precision():
    """Means of +-40 put every node deep in the tails, where expit(-z) ~ 1e-18: the work-array
    logit must keep those tiny slopes exact (not round them to 0)."""
    lik = BernoulliLogit()
    X, Y, ks, fs, post = problem(KERNELS["se"](), lik, mean_scale=40.0, seed=3)
    fast = elbo(X, Y, ks, fs, lik, post, jitter=1e-5, eval_gradient=True)
    ref = elbo_reference(X, Y, ks, fs, lik, post, jitter=1e-5, eval_gradient=True)
    b = fast.latents[0].mean[0]
    assert np.max(np.abs(b)) > 30.0
    tiny = np.abs(ref.estimate.dmean[0, :, 0]) < 1e-12
    assert tiny.any()  # the test reaches the tails
    for q in ("value", "dmean"):  # elementwise: every tiny slope kept, none rounded to 0
        got, want = getattr(fast.estimate, q), getattr(ref.estimate, q)
        np.testing.assert_allclose(got, want, rtol=1e-9, atol=0.0)
    # d/dvar sums w x g over nodes of both signs: where g ~ 1e-17 it cancels to rounding noise
    assert rel(fast.estimate.dvar, ref.estimate.dvar) < RTOL
    assert_same_elbo(fast, ref)


def test_the_lazy_a_transpose_and_the_general_backward_work_on_fused_marginals():
    lik = BernoulliLogit()
    X, Y, ks, fs, post = problem(KERNELS["matern32"](), lik, seed=5)
    lat = elbo(X, Y, ks, fs, lik, post, jitter=1e-5).latents[0]
    assert lat._At is None  # not formed by the fused path
    ref = marginals.forward_reference(lat.Kuu, lat.Kuf, lat.kdiag, post.means[0], lambda A: post.S_times(0, A), 1e-5)
    assert rel(lat.At, ref.At) < RTOL and rel(lat.var, ref.var) < RTOL and rel(lat.mean, ref.mean) < RTOL
    rng = np.random.default_rng(6)
    dmean, dvar = rng.normal(size=(2, 1, X.shape[0]))
    got = marginals.backward(lat, post.means[0], False, dmean, dvar)
    want = marginals.backward_reference(ref, post.means[0], False, dmean, dvar)
    for a, b in zip(got, want):
        assert rel(a, b) < RTOL


def test_results_never_refer_to_the_work_arrays():
    rng = np.random.default_rng(7)
    X = rng.uniform(size=(60, 2))
    Y = (rng.uniform(size=60) < 0.5).astype(float)
    m = SparseVariationalGP(X, Y, kernels.SquaredExponential(lengthscale=0.4), 9, "bernoulli_logit", jitter=1e-5)
    m.set_parameters(posterior=rng.normal(scale=0.2, size=m.posterior.num_free))
    first = m.evaluate(eval_gradient=True)
    kept = {"Kuf": first.latents[0].Kuf.copy(), "value": first.estimate.value.copy(),
            "dvar": first.estimate.dvar.copy(), "var": first.latents[0].var.copy()}
    assert m.workspace.nbytes > 0
    m.set_parameters(**{"kernel0.lengthscale": 0.9})
    second = m.evaluate(eval_gradient=True)
    assert not np.allclose(second.latents[0].Kuf, kept["Kuf"])
    assert np.array_equal(first.latents[0].Kuf, kept["Kuf"]) and np.array_equal(first.estimate.value, kept["value"])
    assert np.array_equal(first.estimate.dvar, kept["dvar"]) and np.array_equal(first.latents[0].var, kept["var"])


def test_a_busy_workspace_gives_the_same_result_from_fresh_arrays():
    lik = BernoulliLogit()
    X, Y, ks, fs, post = problem(KERNELS["se"](), lik, seed=8)
    ws = Workspace()
    free = elbo(X, Y, ks, fs, lik, post, jitter=1e-5, eval_gradient=True, workspace=ws)
    held = borrow(ws)  # as if another thread were evaluating
    try:
        busy = elbo(X, Y, ks, fs, lik, post, jitter=1e-5, eval_gradient=True, workspace=ws)
    finally:
        give_back(ws, held)
    assert_same_elbo(busy, free)


def test_coincident_inducing_points_escalate_the_jitter_like_the_reference():
    lik = BernoulliLogit()
    X, Y, ks, fs, post = problem(KERNELS["se"](), lik, seed=9)
    Z = fs[0].Z.copy()
    Z[1] = Z[0]
    fs = [InducingPoints(Z)]
    Lk = np.linalg.cholesky(ks[0].K(Z) + 1e-9 * np.eye(len(Z)))  # q(u) on the new prior's scale
    post.set_moments([0.5 * Lk @ np.random.default_rng(10).normal(size=len(Z))], [0.6 * Lk])
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        fast = elbo(X, Y, ks, fs, lik, post, jitter=0.0, eval_gradient=True)
    assert any(issubclass(w.category, JitterWarning) for w in caught)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", JitterWarning)
        ref = elbo_reference(X, Y, ks, fs, lik, post, jitter=0.0, eval_gradient=True)
    assert fast.jitter_used == ref.jitter_used and fast.jitter_used[0] > 0
    # Kuu + 1e-11 I of a duplicated point has cond ~ 1e11: both paths keep only a few digits
    assert np.isfinite(fast.value) and rel(fast.value, ref.value) < 1e-3


def test_only_the_one_latent_fg_points_stationary_quadrature_shape_takes_the_path():
    lik = BernoulliLogit()
    X, Y, ks, fs, post = problem(KERNELS["se"](), lik)
    assert fused_fg.applies(ks, fs, post, "quadrature")
    assert not fused_fg.applies(ks, fs, post, "reparam")
    assert not fused_fg.applies(ks, fs, make_posterior("mog1", 8, 1), "quadrature")
    assert not fused_fg.applies([kernels.Periodic()], fs, post, "quadrature")
    assert not fused_fg.applies(ks, [SumOfDeltas(fs[0].Z[:, None, :])], post, "quadrature")
    assert not fused_fg.applies(ks * 2, fs * 2, make_posterior("fg", [8, 8], 2), "quadrature")
