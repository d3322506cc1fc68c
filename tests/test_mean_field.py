"""The mean-field q(u) over independent components (thesis §5.7.2, §5.8; gpexplorer.variational.mean_field):
the full Gaussian's ELBO at a block-diagonal S, the component-sum marginals of eq. 5.60 with S_ij = 0,
finite-difference gradients, the ordering against the full Gaussian's optimum and refusals (whitening:
tests/test_variational_whitening.py)."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import linalg as sla

import reference

from gpexplorer.inducing import Components, InducingPatches, InducingPoints
from gpexplorer.kernels import Convolutional, SquaredExponential, Sum
from gpexplorer.variational import natural_gradients
from gpexplorer.variational.fitting import batch_elbo
from gpexplorer.variational.mean_field import MeanFieldGaussian
from gpexplorer.variational.savigp import SparseVariationalGP

MC, MS = 4, 3  # inducing patches of the convolutional component, inducing points of the SE one


def _problem(seed=1):
    rng = np.random.default_rng(seed)
    X = rng.random((30, 20))
    y = (X[:, :5].sum(axis=1) > 2.5).astype(float)[:, None]
    conv = Convolutional(SquaredExponential(0.5, 1.0), (4, 5), (2, 2), weighted=True, scaling="mean")
    conv.set_parameters(weights=rng.uniform(0.5, 1.5, conv.layout.n_patches))
    se = SquaredExponential(0.3, 2.0)
    Zc, Zs = rng.random((MC, 4)), rng.random((MS, 20))
    return X, y, conv, se, Zc, Zs


def _model(posterior, problem=None, likelihood="bernoulli_probit"):
    X, y, conv, se, Zc, Zs = problem or _problem()
    feature = Components([InducingPatches(Zc.copy()), InducingPoints(Zs.copy())])
    return SparseVariationalGP(X, y, Sum(conv.copy(), se.copy()), feature, likelihood, posterior=posterior)


def _block_q(seed=2):
    """A random mean and block-diagonal lower-triangular factor over (MC, MS)."""
    rng = np.random.default_rng(seed)
    blocks = [np.tril(rng.normal(scale=0.3, size=(b, b)), -1) + np.diag(rng.uniform(0.4, 0.9, b)) for b in (MC, MS)]
    return rng.normal(size=MC + MS), sla.block_diag(*blocks)


def _fg_positions(M, r, c):
    """Index in FG's free vector (one latent) of L[r, c]: after the M means, row-major lower triangle."""
    return M + r * (r + 1) // 2 + c


def test_the_mean_field_elbo_is_the_full_gaussians_at_the_same_block_diagonal_q():
    mean, L = _block_q()
    mf, fg = _model("mean_field"), _model("fg")
    assert isinstance(mf.posterior, MeanFieldGaussian) and mf.posterior.block_sizes(0) == (MC, MS)
    M = MC + MS
    assert mf.posterior.num_free == M + MC * (MC + 1) // 2 + MS * (MS + 1) // 2 < fg.posterior.num_free
    mf.posterior.set_moments([mean], [L])
    fg.posterior.set_moments([mean], [L])
    np.testing.assert_array_equal(mf.posterior.factor(0), L)
    rows = np.arange(30)
    v_mf, g_mf = batch_elbo(mf, rows, None)
    v_fg, g_fg = batch_elbo(fg, rows, None)
    assert v_mf == pytest.approx(v_fg, rel=1e-12)
    for name in g_fg:
        if name != "posterior":
            np.testing.assert_allclose(g_mf[name], g_fg[name], rtol=1e-10, atol=1e-12, err_msg=name)
    # q's gradient: the means, then each block's triangle, equal FG's entries at the same L[r, c]
    gm, gf = g_mf["posterior"], g_fg["posterior"]
    np.testing.assert_allclose(gm[:M], gf[:M], rtol=1e-10, atol=1e-12)
    for o, b, sl in mf.posterior.triangles(0):
        r, c = np.tril_indices(b)
        np.testing.assert_allclose(gm[sl], gf[_fg_positions(M, r + o, c + o)], rtol=1e-10, atol=1e-12)


def test_its_marginals_are_the_sums_of_the_components_own_eq_5_60_with_no_cross_covariance():
    problem = _problem()
    X, y, conv, se, Zc, Zs = problem
    mean, L = _block_q(seed=4)
    mf = _model("mean_field", problem)
    mf.posterior.set_moments([mean], [L])
    Xt = np.random.default_rng(9).random((6, 20))
    mu, var = mf.predict_f(Xt)
    parts = []
    for kernel, feature, m, Lb in ((conv, InducingPatches(Zc), mean[:MC], L[:MC, :MC]),
                                   (se, InducingPoints(Zs), mean[MC:], L[MC:, MC:])):
        one = SparseVariationalGP(X, y, kernel.copy(), feature, "bernoulli_probit", posterior="fg")
        one.posterior.set_moments([m], [Lb])
        parts.append(one.predict_f(Xt))
    np.testing.assert_allclose(mu, parts[0][0] + parts[1][0], rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(var, parts[0][1] + parts[1][1], rtol=1e-9, atol=1e-12)


def test_every_gradient_of_the_mean_field_elbo_matches_finite_differences():
    m = _model("mean_field")
    mean, L = _block_q(seed=5)
    m.posterior.set_moments([mean], [L])
    rows = np.arange(30)
    _, g = batch_elbo(m, rows, None)
    free0 = m.posterior.free.copy()
    np.testing.assert_allclose(g["posterior"], reference.numerical_grad(
        lambda free: batch_elbo(m.set_parameters(posterior=free), rows, None)[0], free0), rtol=1e-5, atol=1e-6)
    m.set_parameters(posterior=free0)
    for name in ("kernel0.0.base.lengthscale", "kernel0.1.variance", "kernel0.0.weights", "feature0.0.Z"):
        value = m.parameters[name]
        fd = reference.numerical_grad(lambda v, name=name: batch_elbo(m.set_parameters(**{name: v}), rows, None)[0],
                                      value)
        m.set_parameters(**{name: value})
        np.testing.assert_allclose(g[name], fd, rtol=1e-5, atol=1e-6, err_msg=name)


def test_at_fixed_hyperparameters_the_mean_field_optimum_is_below_the_full_gaussians():
    """The mean-field family is FG restricted to a block-diagonal S: its best ELBO cannot exceed FG's,
    and here (components that explain the same labels) it is strictly lower."""
    out = {}
    for kind in ("mean_field", "fg"):
        m = _model(kind)
        m.fit(max_iter=500, fixed=("kernel", "inducing"), method="lbfgs")
        out[kind] = m.elbo()
    assert out["mean_field"] <= out["fg"] + 1e-6
    assert out["fg"] - out["mean_field"] > 1e-4


def test_the_mean_field_model_fits_jointly_from_the_default_start():
    m = _model("mean_field")
    start = m.elbo()
    m.fit(max_iter=60)
    assert m.fit_result is not None and m.elbo() > start + 1.0
    assert np.allclose(np.triu(m.posterior.factor(0)[:MC, MC:], 0), 0.0)  # still block-diagonal


def test_refusals_name_what_is_needed():
    X, y, conv, se, Zc, Zs = _problem()
    with pytest.raises(ValueError, match="independent components"):
        SparseVariationalGP(X, y, se, Zs, "bernoulli_probit", posterior="mean_field")
    m = _model("mean_field")
    assert "mean-field" in natural_gradients.supports(m)
    with pytest.raises(ValueError, match="entries outside them"):
        m.posterior.set_moments([np.zeros(MC + MS)], [np.tril(np.ones((MC + MS, MC + MS)))])
    with pytest.raises(ValueError, match="at least two blocks"):
        MeanFieldGaussian(5, blocks=[(5,)])
    with pytest.raises(ValueError, match="summing"):
        MeanFieldGaussian(5, blocks=[(2, 2)])


def test_a_multi_channel_convolutional_kernel_factorises_over_its_channels():
    rng = np.random.default_rng(3)
    X = rng.random((12, 40))
    y = (X[:, ::2].sum(axis=1) > 10).astype(float)[:, None]
    k = Convolutional(SquaredExponential(), (4, 5), (2, 2), channels=2, colour="multi")
    m = SparseVariationalGP(X, y, k, InducingPatches(rng.random((3, 4)), channels=2), "bernoulli_probit",
                            posterior="mean_field")
    assert m.posterior.block_sizes(0) == (3, 3)
    start = m.elbo()
    m.fit(max_iter=30, method="lbfgs")
    assert m.elbo() > start
