"""Fastfood features (Le, Sarlos & Smola 2013): the jitted Walsh-Hadamard transform equals the dense
Hadamard matrix; the structured transform is S H G Pi H B / l and equals its dense frequencies;
the frequency rows are distributed as N(0, I / l^2) draws; the estimate converges to the RBF kernel
like plain random Fourier features; the lengthscale gradient (through the transposed transform)
matches finite differences; bad arguments are refused by name."""

import copy

import numpy as np
import pytest
from scipy.linalg import hadamard as dense_hadamard

from gpexplorer.random_features import basis
from gpexplorer.random_features.fastfood import FastfoodBasis
from gpexplorer.random_features.hadamard_loops import (fastfood_project, fastfood_project_transpose, hadamard,
                                                       hadamard_rows)

RNG = np.random.default_rng(5)
ARD5 = np.array([0.7, 1.0, 2.0, 0.5, 3.0])


# the transform ----------------------------------------------------------------------------------
@pytest.mark.parametrize("d", [1, 2, 4, 8, 16, 32, 64, 128, 1024])  # every mix of 8-point, radix-4, radix-2 passes
def test_hadamard_rows_against_the_dense_matrix(d):
    X = RNG.normal(size=(7, d))
    H = dense_hadamard(d).astype(float)
    assert np.allclose(hadamard_rows(X.copy()), X @ H, rtol=1e-12, atol=1e-12 * np.sqrt(d))
    assert np.allclose(hadamard(X[0].copy()), H @ X[0], rtol=1e-12, atol=1e-12 * np.sqrt(d))


def dense_fastfood(b, lengthscale):
    """V [m, d] built from the draws with dense matrices: blocks S H G Pi H B / l stacked, the
    input columns beyond d (the zero padding) dropped, the rows beyond m dropped."""
    st = b.structure
    dp = b.padded_dim
    H = dense_hadamard(dp).astype(float)
    inv_l = np.ones(dp)
    inv_l[:b.active_dim] = 1.0 / np.broadcast_to(lengthscale, (b.active_dim,))
    blocks = []
    for k in range(b.n_blocks):
        Pi = np.eye(dp)[st["permutations"][k]]  # (Pi u)_j = u[perm[j]]
        blocks.append(np.diag(st["scaling"][k]) @ H @ np.diag(st["gaussian"][k]) @ Pi @ H
                      @ np.diag(st["signs"][k] * inv_l))
    return np.vstack(blocks)[:b.n_frequencies, :b.active_dim]


@pytest.mark.parametrize("lengthscale", [1.3, ARD5], ids=["isotropic", "ard"])
def test_the_structured_transform_is_S_H_G_Pi_H_B(lengthscale):
    b = FastfoodBasis(7, 38, lengthscale=lengthscale, seed=3, columns=[0, 2, 3, 5, 6])  # d = 5 -> d' = 8
    assert (b.padded_dim, b.n_blocks, b.n_frequencies) == (8, 3, 19)  # the last block truncated
    W = dense_fastfood(b, lengthscale)
    assert np.allclose(b.frequencies, W, rtol=1e-12, atol=1e-12)
    st = b.structure
    assert set(np.unique(st["signs"])) == {-1.0, 1.0}
    assert all(sorted(p) == list(range(8)) for p in st["permutations"])
    # S scales each row of H G Pi H B (norm sqrt(d') ||G||) to norm s_i: s_i^2 = d' S_ii^2 ||G||^2
    s = st["scaling"] * np.sqrt(8) * np.linalg.norm(st["gaussian"], axis=1, keepdims=True)
    assert np.all(s > 0) and np.all(s < 8)


@pytest.mark.parametrize("lengthscale", [1.3, ARD5], ids=["isotropic", "ard"])
def test_features_equal_those_of_the_dense_frequencies(lengthscale):
    b = FastfoodBasis(5, 40, lengthscale=lengthscale, seed=1)  # d = 5 pads to 8; 20 frequencies in 3 blocks
    X = RNG.normal(size=(30, 5))
    W = b.frequencies
    assert W.shape == (20, 5) and b.padded_dim == 8 and b.n_blocks == 3
    Xp = np.hstack([X, np.zeros((30, 3))])  # zero-padded to d'
    Wp = np.hstack([W, RNG.normal(size=(20, 3))])  # what multiplies the padding never matters
    proj = Xp @ Wp.T
    assert np.allclose(b.projections(X), proj, rtol=1e-10, atol=1e-10)
    Phi = np.hstack([np.cos(proj), np.sin(proj)]) / np.sqrt(20)
    assert np.allclose(b(X), Phi, rtol=1e-10, atol=1e-10)
    assert np.allclose(b(np.asfortranarray(X)), Phi, rtol=1e-10, atol=1e-10)


def test_the_transposed_transform_is_the_adjoint():
    b = FastfoodBasis(6, 2 * 21, lengthscale=np.linspace(0.5, 2.0, 6), seed=4)  # d' = 8, 3 blocks, truncated
    X, A = RNG.normal(size=(9, 6)), RNG.normal(size=(9, 21))
    diagonals = np.stack([np.stack([s * np.r_[1 / np.linspace(0.5, 2.0, 6), 1, 1], g, c])
                          for s, g, c in zip(b.structure["signs"], b.structure["gaussian"], b.structure["scaling"])])
    perms = b.structure["permutations"]
    VX = fastfood_project(X, diagonals, perms, np.empty((9, 21)))
    AV = fastfood_project_transpose(A, diagonals, perms, np.empty((9, 6)))
    assert np.allclose(VX, X @ b.frequencies.T, rtol=1e-12, atol=1e-12)
    assert np.allclose(AV, A @ b.frequencies, rtol=1e-12, atol=1e-12)


# the distribution of the frequencies ---------------------------------------------------------------
def test_frequency_rows_have_gaussian_norms_when_d_is_a_power_of_two():
    """With d = d' every row of H G Pi H B has norm sqrt(d') ||G|| exactly, so the rows of
    V = S H G Pi H B / l have norms s_i / l, s_i ~ chi_{d'}: l^2 |w|^2 has mean d', variance 2 d'."""
    b = FastfoodBasis(16, 2 * 4096, lengthscale=2.0, seed=0)
    sq = np.sum(b.frequencies ** 2, axis=1) * 4.0
    assert abs(sq.mean() - 16) < 4 * np.sqrt(32 / sq.size)
    assert abs(sq.var() / 32 - 1) < 0.15


def test_frequency_rows_behave_as_gaussian_draws_on_padded_ard_inputs():
    """d = 5 padded to d' = 8 with ARD lengthscales: z = w * l (per column) has E z z^T = I (each
    coordinate has variance 1 whatever the padding: a scaling by sqrt(d) instead of sqrt(d') would
    give 8/5), Gaussian fourth moments (3) and squared norms with mean d = 5 and variance 2 d = 10."""
    b = FastfoodBasis(5, 2 * 8192, lengthscale=ARD5, seed=0)
    Z = b.frequencies * ARD5
    second = Z.T @ Z / Z.shape[0]
    assert np.allclose(np.diag(second), 1.0, atol=0.07), np.diag(second)
    assert np.abs(second - np.diag(np.diag(second))).max() < 0.06
    assert np.allclose(np.mean(Z ** 4, axis=0), 3.0, atol=0.4)
    sq = np.sum(Z ** 2, axis=1)
    assert abs(sq.mean() - 5) < 0.2 and abs(sq.var() / 10 - 1) < 0.15


@pytest.mark.parametrize("lengthscale", ["isotropic", "ard"])
@pytest.mark.parametrize("d", [10, 5])
def test_the_estimate_converges_to_the_rbf_kernel_as_plain_features_do(d, lengthscale):
    """Relative Frobenius error over 3 seeds: 16 times the columns divide it by about 4
    (measured 3.97 to 4.36 over these four cases), and at 4,096 columns it is within 12 % of
    dense random Fourier features'; a kernel other than exp(-r^2 / 2) would leave an error floor."""
    X = RNG.normal(size=(60, d))
    ls = 1.7 if lengthscale == "isotropic" else np.linspace(1.0, 3.0, d)

    def error(name, n):
        errs = []
        for s in range(3):
            b = basis(name, d, n, lengthscale=ls, seed=s)
            K = b.kernel(X)
            errs.append(np.linalg.norm(b.kernel_approximation(X) - K) / np.linalg.norm(K))
        return np.mean(errs)

    coarse, fine = error("fastfood_rbf", 256), error("fastfood_rbf", 4096)
    assert fine < coarse / 2.5, (coarse, fine)
    assert fine < 1.35 * error("rbf", 4096), fine


def test_the_exact_kernel_is_the_rbf_kernel():
    b = FastfoodBasis(3, 10, lengthscale=[1.0, 2.0, 0.5])
    X, X2 = RNG.normal(size=(4, 3)), RNG.normal(size=(6, 3))
    r2 = (((X[:, None, :] - X2[None, :, :]) / np.array([1.0, 2.0, 0.5])) ** 2).sum(-1)
    assert np.allclose(b.kernel(X, X2), np.exp(-0.5 * r2))


# the gradient ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("lengthscale", [1.3, np.array([0.7, 1.0, 2.0])], ids=["isotropic", "ard"])
def test_lengthscale_gradient_against_finite_differences(lengthscale):
    b = FastfoodBasis(5, 22, lengthscale=lengthscale, seed=2, columns=[0, 2, 3])  # d' = 4: 3 blocks, truncated
    X = RNG.normal(size=(20, 5))
    G = RNG.normal(size=(20, 22))
    grad = b.vjp(X, G)["lengthscale"]
    assert isinstance(grad, float) if np.ndim(lengthscale) == 0 else grad.shape == (3,)
    with_phi = b.vjp(X, G, Phi=b(X))["lengthscale"]
    assert np.allclose(with_phi, grad, rtol=1e-12)
    grad, v = np.atleast_1d(grad), np.atleast_1d(np.asarray(lengthscale, dtype=float))
    for i in range(v.size):
        up, down = v.copy(), v.copy()
        up[i] += 1e-6
        down[i] -= 1e-6
        shape = (lambda a: a) if v.size > 1 else (lambda a: float(a[0]))
        fd = (np.sum(G * b.set_parameters(lengthscale=shape(up))(X))
              - np.sum(G * b.set_parameters(lengthscale=shape(down))(X))) / 2e-6
        b.set_parameters(lengthscale=lengthscale)
        assert grad[i] == pytest.approx(fd, rel=1e-5, abs=1e-7)


def test_draws_are_fixed_by_the_seed_and_survive_copies():
    a, b = FastfoodBasis(5, 40, seed=7), FastfoodBasis(5, 40, seed=7)
    assert np.array_equal(a.frequencies, b.frequencies)
    assert not np.allclose(a.frequencies, FastfoodBasis(5, 40, seed=8).frequencies)
    c = copy.deepcopy(a).set_parameters(lengthscale=2.0)
    assert np.allclose(c.frequencies, a.frequencies / 2.0) and np.allclose(a.frequencies, b.frequencies)


# refusals -------------------------------------------------------------------------------------------
def test_refusals():
    with pytest.raises(ValueError, match="n_features must be even"):
        FastfoodBasis(3, 9)
    for bad in (0, 1, -4, 2.5):
        with pytest.raises(ValueError, match="n_features"):
            FastfoodBasis(3, bad)
    with pytest.raises(ValueError, match="lengthscale must be a scalar or have 3 entries"):
        FastfoodBasis(3, 10, lengthscale=[1.0, 2.0])
    with pytest.raises(ValueError, match="lengthscale must be a scalar or have 2 entries"):
        FastfoodBasis(3, 10, lengthscale=[1.0, 2.0, 3.0], columns=[0, 2])
    with pytest.raises(ValueError, match="lengthscale"):
        FastfoodBasis(3, 10, lengthscale=-1.0)
    b = FastfoodBasis(3, 10, lengthscale=[1.0, 2.0, 3.0])
    with pytest.raises(ValueError, match="lengthscale must have shape"):
        b.set_parameters(lengthscale=[1.0, 2.0])
    with pytest.raises(ValueError, match="X must have shape"):
        b(np.ones((4, 2)))
    with pytest.raises(ValueError, match="dPhi must have shape"):
        b.vjp(np.ones((4, 3)), np.ones((4, 9)))


def test_threaded_rows_equal_one_pass(monkeypatch):
    """Fastfood features split over threads by rows (large outputs), into a strided block too, equal
    the single pass."""
    from gpexplorer.random_features import trig_loops
    b = basis("fastfood_rbf", 20, 64, lengthscale=2.0, seed=3)
    X = np.random.default_rng(4).normal(size=(257, 20))
    one = b(X)
    monkeypatch.setattr(trig_loops, "THREADED_PAIRS", 64)
    assert np.array_equal(b(X), one)
    wide = np.zeros((257, 66))
    b(X, out=wide[:, 1:65])
    assert np.array_equal(wide[:, 1:65], one) and not wide[:, 0].any() and not wide[:, 65].any()
