"""The translation-insensitive convolutional kernel (TICK, Dutordoir et al. 2020; issue 26's "weighting by
patch location"): values against explicit loops, gradients against finite differences, the limits
(a long location lengthscale gives the invariant kernel, a short one pairs only patches at the same
place), inducing locations from the images, refusals, and a model that learns."""

from __future__ import annotations

import numpy as np
import pytest

import reference_convolutional as ref
from gpexplorer import covariances, datasets
from gpexplorer.inducing import InducingPatches
from gpexplorer.kernels import Convolutional, Matern32, SquaredExponential
from gpexplorer.variational.savigp import SparseVariationalGP
from test_convolutional_gradients import _assert_gradients_match_finite_differences

SHAPE, PATCH = (4, 5), (2, 3)


def _positions(image_shape, patch_shape, channels, colour):
    """(row, column) of each patch, in the reference's patch order (single-channel: C per position)."""
    (H, W), (h, w) = image_shape, patch_shape
    per = channels if colour == "none" else 1
    return np.array([(a, b) for a in range(H - h + 1) for b in range(W - w + 1) for _ in range(per)], dtype=float)


def _se(a, b, variance, lengthscale):
    return variance * np.exp(-0.5 * np.sum((np.asarray(a) - np.asarray(b)) ** 2) / lengthscale ** 2)


def tick_K(X1, X2, variance, ls, loc_ls, weights, channels=1, colour="none", scaling="sum"):
    """s^2 sum_p sum_q w_p w_q k(x^[p], x'^[q]) exp(-|a_p - a_q|^2 / 2 l_loc^2), by loops."""
    pos = _positions(SHAPE, PATCH, channels, colour)
    s = 1.0 if scaling == "sum" else 1.0 / len(pos)
    out = np.zeros((len(X1), len(X2)))
    for i, x in enumerate(X1):
        A = ref.extract_patches(x, SHAPE, PATCH, channels, colour)
        for j, x2 in enumerate(X2):
            B = ref.extract_patches(x2, SHAPE, PATCH, channels, colour)
            for p in range(len(A)):
                for q in range(len(B)):
                    out[i, j] += (weights[p] * weights[q] * _se(A[p], B[q], variance, ls)
                                  * _se(pos[p], pos[q], 1.0, loc_ls))
    return s * s * out


def tick_Kuf(Z, X, variance, ls, loc_ls, weights, channels=1, colour="none", scaling="sum"):
    """s sum_p w_p k(z, x^[p]) exp(-|a_z - a_p|^2 / 2 l_loc^2), Z = [pixels, row, column], by loops."""
    pos = _positions(SHAPE, PATCH, channels, colour)
    s = 1.0 if scaling == "sum" else 1.0 / len(pos)
    out = np.zeros((len(Z), len(X)))
    for m, z in enumerate(Z):
        for n, x in enumerate(X):
            A = ref.extract_patches(x, SHAPE, PATCH, channels, colour)
            for p in range(len(A)):
                out[m, n] += weights[p] * _se(z[:-2], A[p], variance, ls) * _se(z[-2:], pos[p], 1.0, loc_ls)
    return s * out


def _kernel(colour="none", C=1, weighted=True, scaling="sum", loc=1.7, seed=0):
    k = Convolutional(SquaredExponential(1.3, 0.9), SHAPE, PATCH, channels=C, colour=colour, weighted=weighted,
                      scaling=scaling, location_lengthscale=loc)
    if weighted:
        k.set_parameters(weights=np.random.default_rng(seed).normal(size=k.layout.n_patches))
    return k


def _problem(C=1, seed=1, N=4, M=3):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(N, 20 * C))
    X[0] = 0.0
    X[1, :10 * C] = 0.0  # blank patches at several places: never merged across positions
    return X, rng


CASES = [("none", 1, "sum"), ("none", 1, "mean"), ("patch", 2, "sum")]


@pytest.mark.parametrize("colour,C,scaling", CASES)
def test_values_match_the_loops(colour, C, scaling):
    k = _kernel(colour, C, scaling=scaling)
    X, rng = _problem(C)
    E = k.layout.pixel_dim
    assert k.layout.patch_dim == E + 2
    Z = np.hstack([rng.normal(size=(3, E)), rng.uniform(0, 3, size=(3, 2))])
    f = InducingPatches(Z)
    w = k.parameters["weights"]
    args = (1.3, 0.9, 1.7, w, C, colour, scaling)
    np.testing.assert_allclose(k.K(X), tick_K(X, X, *args), rtol=1e-12, atol=1e-13)
    np.testing.assert_allclose(k.Kdiag(X), np.diag(tick_K(X, X, *args)), rtol=1e-12, atol=1e-13)
    np.testing.assert_allclose(covariances.Kuf(f, k, X), tick_Kuf(Z, X, *args), rtol=1e-12, atol=1e-13)
    Kuu = np.array([[_se(a[:-2], b[:-2], 1.3, 0.9) * _se(a[-2:], b[-2:], 1.0, 1.7) for b in Z] for a in Z])
    np.testing.assert_allclose(covariances.Kuu(f, k), Kuu, rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("colour,C,scaling", CASES)
def test_every_gradient_matches_finite_differences(colour, C, scaling):
    k = _kernel(colour, C, scaling=scaling)
    X, rng = _problem(C)
    E = k.layout.pixel_dim
    f = InducingPatches(np.hstack([rng.normal(size=(3, E)), rng.uniform(0, 3, size=(3, 2))]))
    W1 = rng.normal(size=(3, 3))
    W1 = W1 + W1.T
    W2, v = rng.normal(size=(3, X.shape[0])), rng.normal(size=X.shape[0])
    assert k._route(X) == "se" and "location_lengthscale" in k.parameters
    _assert_gradients_match_finite_differences(k, f, X, W1, W2, v)
    k.K(X)  # and the full K's gradient in X (a patch's position does not move with the image)
    dK = rng.normal(size=(X.shape[0], X.shape[0]))
    got = k.grad_params_and_X(dK, X)[1]
    h = 1e-6
    fd = np.zeros_like(X)
    for idx in np.ndindex(*X.shape):
        up, down = X.copy(), X.copy()
        up[idx] += h
        down[idx] -= h
        fd[idx] = (np.sum(dK * k.K(up)) - np.sum(dK * k.K(down))) / (2 * h)
    np.testing.assert_allclose(got, fd, rtol=1e-6, atol=1e-6)


def test_a_long_location_lengthscale_gives_the_invariant_kernel_and_a_short_one_pairs_places():
    X, rng = _problem()
    far = _kernel(loc=1e8)
    w = far.parameters["weights"]
    plain = Convolutional(SquaredExponential(1.3, 0.9), SHAPE, PATCH, weighted=True, weights=w, unique_patches=False)
    Zp = rng.normal(size=(3, 6))
    f = InducingPatches(np.hstack([Zp, rng.uniform(0, 3, size=(3, 2))]))
    np.testing.assert_allclose(far.K(X), plain.K(X), rtol=1e-12)
    np.testing.assert_allclose(far.Kdiag(X), plain.Kdiag(X), rtol=1e-12)
    np.testing.assert_allclose(covariances.Kuf(f, far, X), covariances.Kuf(InducingPatches(Zp), plain, X), rtol=1e-12)
    near = _kernel(loc=1e-2)
    same_place = np.array([[sum(w[p] ** 2 * _se(a, b, 1.3, 0.9) for p, (a, b) in enumerate(
        zip(ref.extract_patches(x1, SHAPE, PATCH), ref.extract_patches(x2, SHAPE, PATCH)))) for x2 in X] for x1 in X])
    np.testing.assert_allclose(near.K(X), same_place, rtol=1e-12, atol=1e-13)


def test_inducing_patches_from_images_carry_a_grid_position_and_refusals_name_the_reason():
    X = datasets.load("rectangles").X[:40]
    k = Convolutional(SquaredExponential(), (28, 28), (3, 3), location_lengthscale=4.0)
    for init in ("random", "unique", "uniform", "kmeans"):
        Z = InducingPatches.from_images(X, k, 8, init, seed=1).Z
        assert Z.shape == (8, 11)
        assert np.all((Z[:, 9:] >= 0) & (Z[:, 9:] <= 25)) and np.all(Z[:, 9:] == np.round(Z[:, 9:]))
    assert k._route(X) == "se"  # binary images, but patches at different places are different
    with pytest.raises(ValueError, match="SquaredExponential base"):
        Convolutional(Matern32(), SHAPE, PATCH, location_lengthscale=1.0)
    with pytest.raises(ValueError, match="one patch group"):
        Convolutional(SquaredExponential(), SHAPE, PATCH, channels=2, colour="multi", location_lengthscale=1.0)
    with pytest.raises(ValueError, match="unique_patches=True"):
        Convolutional(SquaredExponential(), SHAPE, PATCH, unique_patches=True, location_lengthscale=1.0)
    with pytest.raises(ValueError, match="location_lengthscale"):
        Convolutional(SquaredExponential(), SHAPE, PATCH, location_lengthscale=-1.0)


def _blob_images(n, rng, side=8):
    """side x side images with one 2 x 2 blob at a random place; y = 1 when it sits in the top half."""
    X = np.zeros((n, side, side))
    rows, cols = rng.integers(0, side - 1, n), rng.integers(0, side - 1, n)
    for i, (r, c) in enumerate(zip(rows, cols)):
        X[i, r:r + 2, c:c + 2] = 1.0
    return X.reshape(n, -1), (rows + 1 < side // 2).astype(float)[:, None]


def test_where_a_patch_is_matters_to_the_tick_model_and_not_to_the_invariant_one():
    """The label is the blob's place, which a translation-invariant kernel sees only through the edge
    effect (a blob near the border lies in fewer patches): measured 17 % test error against 0 % for
    the location-aware kernel, which learns the task."""
    rng = np.random.default_rng(0)
    X, y = _blob_images(240, rng)
    Xt, yt = _blob_images(400, rng)
    errors = {}
    for name, loc in (("invariant", None), ("tick", 2.0)):
        k = Convolutional(SquaredExponential(1.0, 1.0), (8, 8), (3, 3), scaling="mean", location_lengthscale=loc)
        m = SparseVariationalGP(X, y, k, InducingPatches.from_images(X, k, 12, "random", seed=0), "bernoulli_probit")
        m.fit(max_iter=40)
        errors[name] = m.error_rate(Xt, yt)
    assert errors["tick"] < 0.03 and errors["invariant"] > errors["tick"] + 0.1, errors
