"""Random-feature bases: each kernel's closed form (checked against an independent computation
and, in one dimension, against numerical quadrature of its spectral density), the estimate
converging to it like 1/sqrt(n), hyperparameter gradients against finite differences, the
corrected orthogonal features, concatenation, products and column subsets."""

import numpy as np
import pytest
from scipy import integrate, stats
from scipy.spatial.distance import cdist

from gpexplorer import kernels
from gpexplorer.random_features.catalogue import BASES, RANDOM_BASES, basis
from gpexplorer.random_features.spectral import orthogonal_draws, stationary_kernel

RNG = np.random.default_rng(7)
X3 = RNG.normal(size=(40, 3))
ARD = np.array([0.8, 1.5, 2.5])
OPTIONS = {"spectral_mixture": {"mean_frequency": np.array([0.4, -0.2, 0.1])}}


def _relative_error(name, n, seeds=(0, 1, 2), X=X3, lengthscale=ARD):
    errs = []
    for s in seeds:
        b = basis(name, X.shape[1], n, lengthscale=lengthscale, seed=s, **OPTIONS.get(name, {}))
        K = b.kernel(X)
        errs.append(np.linalg.norm(b.kernel_approximation(X) - K) / np.linalg.norm(K))
    return float(np.mean(errs))


@pytest.mark.parametrize("name", RANDOM_BASES)
def test_the_estimate_converges_to_the_closed_form_like_one_over_root_n(name):
    coarse, fine = _relative_error(name, 128), _relative_error(name, 8192)
    # 64 times the features: the error should fall about 8-fold; allow 4-fold
    assert fine < coarse / 4, (coarse, fine)
    assert fine < 0.05


def test_closed_forms_against_independent_formulas():
    A = X3 / ARD
    r_l2, r_l1 = cdist(A, A), cdist(A, A, "minkowski", p=1)
    assert np.allclose(stationary_kernel("laplace", X3, X3, ARD), np.exp(-r_l2))
    assert np.allclose(stationary_kernel("l1_laplace", X3, X3, ARD), np.exp(-r_l1))
    assert np.allclose(stationary_kernel("cauchy", X3, X3, ARD), 1 / (1 + r_l2 ** 2))
    assert np.allclose(stationary_kernel("rbf", X3, X3, ARD), np.exp(-0.5 * r_l2 ** 2))
    for name, cls in (("matern32", kernels.Matern32), ("matern52", kernels.Matern52)):
        ref = cls(variance=1.0, lengthscale=ARD).K(X3, X3)
        assert np.allclose(stationary_kernel(name, X3, X3, ARD), ref, atol=1e-12)
    mu = OPTIONS["spectral_mixture"]["mean_frequency"]
    tau = X3[:, None, :] - X3[None, :, :]
    assert np.allclose(stationary_kernel("spectral_mixture", X3, X3, ARD, mu),
                       np.exp(-0.5 * r_l2 ** 2) * np.cos(tau @ mu))


# one-dimensional spectral densities p(w) (unit lengthscale): k(t) = int p(w) cos(w t) dw
DENSITIES_1D = {
    "rbf": stats.norm().pdf,
    "laplace": stats.t(df=1).pdf,
    "l1_laplace": stats.t(df=1).pdf,
    "cauchy": stats.laplace().pdf,
    "matern32": stats.t(df=3).pdf,
    "matern52": stats.t(df=5).pdf,
}


@pytest.mark.parametrize("name", sorted(DENSITIES_1D))
def test_one_dimensional_closed_forms_against_quadrature_of_the_spectral_density(name):
    """k(t) = 2 int_0^inf p(w) cos(w t) dw by QUADPACK's Fourier-integral rule (QAWF)."""
    for t in (0.3, 1.0, 2.5):
        value, _ = integrate.quad(DENSITIES_1D[name], 0, np.inf, weight="cos", wvar=t)
        closed = stationary_kernel(name, np.array([[t]]), np.array([[0.0]]), 1.0)[0, 0]
        assert 2 * value == pytest.approx(closed, abs=1e-7), (name, t)


def test_the_one_dimensional_draws_follow_the_spectral_densities():
    """The draws' empirical characteristic function is the kernel (1e5 draws, 4 sd)."""
    from gpexplorer.random_features.spectral import spectral_draws
    for name in DENSITIES_1D:
        z = spectral_draws(name, 100_000, 1, np.random.default_rng(3))[:, 0]
        for t in (0.5, 1.5):
            est = np.cos(z * t)
            closed = stationary_kernel(name, np.array([[t]]), np.array([[0.0]]), 1.0)[0, 0]
            assert abs(est.mean() - closed) < 4 * est.std() / np.sqrt(z.size) + 1e-3, name


def test_orthogonal_features_scale_each_frequency_not_each_input():
    """Report fig. 1's set-up: 10-D inputs, 1,500 frequencies, lengthscale 3. Scaling the rows
    (frequency vectors) beats plain features; revrand's column scaling is worse than both."""
    X = np.random.default_rng(0).normal(size=(300, 10))
    K = stationary_kernel("rbf", X, X, 3.0)

    def err(Z):
        W = Z.T / 3.0
        P = np.hstack([np.cos(X @ W), np.sin(X @ W)]) / np.sqrt(Z.shape[0])
        return np.linalg.norm(P @ P.T - K) / np.linalg.norm(K)

    seeds = range(4)
    plain = np.mean([err(np.random.default_rng(s).standard_normal((1500, 10))) for s in seeds])
    rows = np.mean([err(orthogonal_draws(1500, 10, np.random.default_rng(s))) for s in seeds])
    cols = np.mean([err(orthogonal_draws(1500, 10, np.random.default_rng(s), scale_rows=False)) for s in seeds])
    assert rows < 0.75 * plain and cols > 1.5 * plain, (plain, rows, cols)
    b = basis("orthogonal_rbf", 10, 3000, lengthscale=3.0, seed=0)
    norms = np.linalg.norm(b.base_frequencies, axis=1)
    assert abs(np.mean(norms ** 2) - 10) < 0.5  # chi_10 norms: E|z|^2 = d


def _fd_check(b, X, G, rel=1e-5):
    grads = b.vjp(X, G)
    assert set(grads) == set(b.parameters)
    for name, value in b.parameters.items():
        v = np.atleast_1d(np.asarray(value, dtype=float))
        for i in range(v.size):
            h = 1e-6 * max(1.0, abs(v[i]))
            up, down = v.copy(), v.copy()
            up[i] += h
            down[i] -= h
            shape = (lambda a: a) if np.ndim(value) else (lambda a: float(a[0]))
            fp = np.sum(G * b.set_parameters(**{name: shape(up)})(X))
            fm = np.sum(G * b.set_parameters(**{name: shape(down)})(X))
            b.set_parameters(**{name: value})
            fd = (fp - fm) / (2 * h)
            assert np.ravel(grads[name])[i] == pytest.approx(fd, rel=rel, abs=1e-6), (name, i)


@pytest.mark.parametrize("name", [n for n in RANDOM_BASES if n != "fastfood_rbf"])
@pytest.mark.parametrize("lengthscale", [1.3, ARD], ids=["isotropic", "ard"])
def test_hyperparameter_gradients_against_finite_differences(name, lengthscale):
    b = basis(name, 3, 24, lengthscale=lengthscale, seed=1, **OPTIONS.get(name, {}))
    _fd_check(b, X3, np.random.default_rng(2).normal(size=(40, 24)))


def test_isotropic_gradient_uses_every_input_column():
    """revrand's isotropic gradient read X[:, 0] only; here it is the sum over columns."""
    b = basis("rbf", 3, 24, lengthscale=1.3, seed=1)
    G = np.random.default_rng(2).normal(size=(40, 24))
    full = b.vjp(X3, G)["lengthscale"]
    first_column_only = basis("rbf", 3, 24, lengthscale=[1.3, 1.3, 1.3], seed=1).vjp(X3, G)["lengthscale"][0]
    assert abs(full - first_column_only) > 1e-3 * abs(full)
    _fd_check(b, X3, G)


def test_concatenation_products_and_columns():
    rbf = basis("rbf", 3, 400, lengthscale=[1.0, 2.0], seed=0, columns=[0, 2])
    lap = basis("matern32", 3, 400, lengthscale=0.7, seed=1, columns=[1])
    lin = basis("linear", 3, columns=[1, 2])
    cat = rbf + lap + lin
    assert cat.n_features == 400 + 400 + 2 and len(cat.blocks) == 3
    assert sorted(cat.parameters) == ["0.lengthscale", "1.lengthscale"]
    assert np.allclose(cat(X3), np.hstack([rbf(X3), lap(X3), X3[:, [1, 2]]]))
    assert np.allclose(cat.kernel(X3), rbf.kernel(X3) + lap.kernel(X3) + X3[:, [1, 2]] @ X3[:, [1, 2]].T)
    assert np.allclose(rbf.kernel(X3), stationary_kernel("rbf", X3[:, [0, 2]], X3[:, [0, 2]], np.array([1.0, 2.0])))
    G = np.random.default_rng(0).normal(size=(40, cat.n_features))
    small = basis("rbf", 3, 6, lengthscale=[1.0, 2.0], columns=[0, 2]) + basis("cauchy", 3, 4, lengthscale=0.7)
    _fd_check(small, X3, np.random.default_rng(0).normal(size=(40, 10)))
    assert set(cat.vjp(X3, G)) == {"0.lengthscale", "1.lengthscale"}
    prod = basis("rbf", 3, 8, lengthscale=1.2, seed=3) * basis("laplace", 3, 6, lengthscale=[1, 2, 3], seed=4)
    assert prod.n_features == 48
    _fd_check(prod, X3, np.random.default_rng(1).normal(size=(40, 48)))
    big = basis("rbf", 3, 2000, lengthscale=1.2, seed=3) * basis("matern52", 3, 2000, lengthscale=2.0, seed=4)
    P1, P2 = big.parts[0](X3), big.parts[1](X3)
    assert np.allclose((P1 @ P1.T) * (P2 @ P2.T), big.kernel_approximation(X3))
    exact = big.kernel(X3)
    assert np.linalg.norm((P1 @ P1.T) * (P2 @ P2.T) - exact) / np.linalg.norm(exact) < 0.05
    assert np.allclose(basis("bias", 3)(X3), 1.0) and basis("bias", 3).kernel(X3).shape == (40, 40)


@pytest.mark.parametrize("make", [lambda: basis("rbf", 3, 40, lengthscale=[1.0, 2.0, 0.5]),
                                  lambda: basis("fastfood_rbf", 3, 40, lengthscale=0.8),
                                  lambda: basis("rbf", 3, 20, columns=[0, 2]) + basis("linear", 3) + basis("bias", 3),
                                  lambda: basis("cauchy", 3, 6, lengthscale=0.7) * basis("linear", 3)])
def test_features_written_into_a_given_buffer(make):
    """``b(X, out=buf)`` fills buf (a block of rows streamed through one buffer) with what ``b(X)``
    returns, and refuses a buffer of the wrong shape, type or dtype."""
    b = make()
    buf = np.full((40, b.n_features), np.nan)
    assert b(X3, out=buf) is buf and np.array_equal(buf, b(X3))
    stream = np.empty((10, b.n_features))
    assert np.array_equal(np.vstack([b(X3[i:i + 10], out=stream).copy() for i in range(0, 40, 10)]), b(X3))
    for bad in (np.empty((40, b.n_features + 1)), np.empty((40, b.n_features), dtype=np.float32), [[0.0]]):
        with pytest.raises(ValueError, match="out must be a writable float64 array"):
            b(X3, out=bad)


def test_registry_and_refusals():
    assert {"rbf", "laplace", "l1_laplace", "cauchy", "matern32", "matern52", "orthogonal_rbf", "fastfood_rbf",
            "spectral_mixture", "linear", "bias"} <= set(BASES)
    with pytest.raises(ValueError, match="even"):
        basis("rbf", 3, 7)
    with pytest.raises(ValueError, match="unknown basis"):
        basis("rbff", 3)
    with pytest.raises(ValueError, match="lengthscale"):
        basis("rbf", 3, 10, lengthscale=[1.0, 2.0])
    with pytest.raises(ValueError, match="columns"):
        basis("rbf", 3, 10, columns=[0, 3])
    with pytest.raises(ValueError, match="same inputs"):
        basis("rbf", 3, 10) + basis("rbf", 2, 10)
    with pytest.raises(ValueError, match=r"shape \(N, 3\)"):
        basis("rbf", 3, 10)(np.zeros((5, 2)))
    with pytest.raises(ValueError, match="NaN"):
        basis("rbf", 3, 10)(np.full((5, 3), np.nan))
    with pytest.raises(ValueError, match="lengthscale must lie"):
        basis("rbf", 3, 10).set_parameters(lengthscale=-1.0)
    with pytest.raises(ValueError, match="no parameter"):
        basis("rbf", 3, 10).set_parameters(variance=1.0)
