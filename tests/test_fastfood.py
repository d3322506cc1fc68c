"""Fastfood features (Le et al. 2013): the structured transform equals its dense frequencies, the
frequency rows have Gaussian norms, the estimate converges to the RBF kernel, the lengthscale
gradient (through the transposed transform) matches finite differences, and the jitted
Walsh-Hadamard transform equals the dense Hadamard matrix."""

import numpy as np
import pytest
from scipy.linalg import hadamard

from gpexplorer.random_features import basis
from gpexplorer.random_features.fastfood import FastfoodBasis
from gpexplorer.random_features.hadamard_loops import hadamard_rows

RNG = np.random.default_rng(5)


@pytest.mark.parametrize("d", [1, 4, 16])
def test_hadamard_rows_against_the_dense_matrix(d):
    X = RNG.normal(size=(7, d))
    assert np.allclose(hadamard_rows(X.copy()), X @ hadamard(d))


@pytest.mark.parametrize("lengthscale", [1.3, np.array([0.7, 1.0, 2.0, 0.5, 3.0])], ids=["isotropic", "ard"])
def test_structured_features_equal_the_dense_frequencies(lengthscale):
    b = FastfoodBasis(5, 40, lengthscale=lengthscale, seed=1)  # d = 5 pads to 8; 20 frequencies in 3 blocks
    X = RNG.normal(size=(30, 5))
    W = b.frequencies
    assert W.shape == (20, 5) and b.padded_dim == 8 and b.n_blocks == 3
    proj = X @ W.T
    Phi = np.hstack([np.cos(proj), np.sin(proj)]) / np.sqrt(20)
    assert np.allclose(b(X), Phi, atol=1e-12)


def test_frequency_rows_have_gaussian_norms():
    """Each row is S H G Pi H B / l restricted to the d real inputs: E|w|^2 = d / l^2, and the
    squared norms over the padded d' coordinates are chi^2_{d'} (mean d', variance 2 d')."""
    b = FastfoodBasis(16, 2 * 4096, lengthscale=2.0, seed=0)
    sq = np.sum(b.frequencies ** 2, axis=1) * 4.0
    assert abs(sq.mean() - 16) < 4 * np.sqrt(32 / sq.size)
    assert abs(sq.var() / 32 - 1) < 0.15


@pytest.mark.parametrize("d", [10, 5])
def test_the_estimate_converges_to_the_rbf_kernel_as_plain_features_do(d):
    X = RNG.normal(size=(60, d))

    def error(name, n):
        errs = []
        for s in range(3):
            b = basis(name, d, n, lengthscale=np.linspace(1.0, 3.0, d), seed=s)
            K = b.kernel(X)
            errs.append(np.linalg.norm(b.kernel_approximation(X) - K) / np.linalg.norm(K))
        return np.mean(errs)

    coarse, fine = error("fastfood_rbf", 128), error("fastfood_rbf", 8192)
    assert fine < coarse / 4, (coarse, fine)
    assert fine < 1.3 * error("rbf", 8192)


@pytest.mark.parametrize("lengthscale", [1.3, np.array([0.7, 1.0, 2.0])], ids=["isotropic", "ard"])
def test_lengthscale_gradient_against_finite_differences(lengthscale):
    b = FastfoodBasis(4, 24, lengthscale=lengthscale, seed=2, columns=[0, 2, 3])
    X = RNG.normal(size=(20, 4))
    G = RNG.normal(size=(20, 24))
    grad = np.atleast_1d(b.vjp(X, G)["lengthscale"])
    v = np.atleast_1d(np.asarray(lengthscale, dtype=float))
    for i in range(v.size):
        up, down = v.copy(), v.copy()
        up[i] += 1e-6
        down[i] -= 1e-6
        shape = (lambda a: a) if v.size > 1 else (lambda a: float(a[0]))
        fd = (np.sum(G * b.set_parameters(lengthscale=shape(up))(X))
              - np.sum(G * b.set_parameters(lengthscale=shape(down))(X))) / 2e-6
        b.set_parameters(lengthscale=lengthscale)
        assert grad[i] == pytest.approx(fd, rel=1e-5, abs=1e-7)


def test_refusals():
    with pytest.raises(ValueError, match="even"):
        FastfoodBasis(3, 9)
    with pytest.raises(ValueError, match="lengthscale"):
        FastfoodBasis(3, 10, lengthscale=[1.0, 2.0])
    with pytest.raises(ValueError, match="n_features"):
        FastfoodBasis(3, 0)
