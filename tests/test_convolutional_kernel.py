"""The convolutional kernels (thesis ch. 5, eq. 5.11-5.16, 5.45-5.47, 5.61-5.64) against the
plain-loop reference ``tests/reference_convolutional.py``, their limits, their structure and their
input checks.

Images are 5 x 4 and patches 2 x 3 (neither square, so a transposed index shows), with C = 1
or 3 channels; every colour variant, both scalings, with and without weights, on SE (isotropic
and ARD) and Matern 3/2 base kernels, to 1e-12 relative; weights have both signs. Low-level
(binary, 3-level) images run the same comparison through the exact unique-patch path, and each
quantity is recomputed after every kind of change, so that no cached value is served stale. The
first block tests the reference alone, so that a mistake in it shows without the implementation.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest

import reference as dense
import reference_convolutional as ref
from gpexplorer import covariances
from gpexplorer.inducing import InducingPatches
from gpexplorer.kernels import Convolutional, Linear, Matern32, SquaredExponential

IMAGE, PATCH = (5, 4), (2, 3)  # H, W and h, w
POSITIONS = (5 - 2 + 1) * (4 - 3 + 1)  # 8
N, N2, M = 4, 3, 3
RTOL = 1e-12


def assert_close(got, expected, what, rtol=RTOL):
    got = np.asarray(got, dtype=float)
    assert got.shape == expected.shape, f"{what}: shape {got.shape}, expected {expected.shape}"
    atol = rtol * max(np.abs(expected).max(), 1e-300)
    np.testing.assert_allclose(got, expected, rtol=rtol, atol=atol, err_msg=what)


def images(rng, n, channels, image=IMAGE, levels=None):
    """Pixels U(0, 1), or (``levels``) quantised to that many values in [0, 1]."""
    U = rng.uniform(0.0, 1.0, (n, image[0] * image[1] * channels))
    return U if levels is None else np.floor(U * levels) / (levels - 1)


def signed_weights(rng, P):
    """Patch weights of both signs (the thesis does not constrain them), away from zero."""
    return rng.uniform(0.3, 1.7, P) * rng.choice([-1.0, 1.0], P)


def sliced_patches(x, channels, colour, image=IMAGE, patch=PATCH):
    """The patches of one image by reshaping to (H, W, C) and slicing (not the reference's loops)."""
    (H, W), (h, w) = image, patch
    img = x.reshape(H, W, channels)
    out = []
    for a, b in itertools.product(range(H - h + 1), range(W - w + 1)):
        block = img[a:a + h, b:b + w, :]
        if colour in ("none", "multi"):
            out.extend(block[:, :, c].ravel() for c in range(channels))
        else:
            out.append(block.ravel())
    return np.array(out)


# ---------------------------------------------------------------------------------------------
# The reference alone
# ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("colour", ref.COLOURS)
@pytest.mark.parametrize("channels", [1, 3])
def test_reference_patches_are_the_contracts_slices(colour, channels):
    x = images(np.random.default_rng(0), 1, channels)[0]
    got = ref.extract_patches(x, IMAGE, PATCH, channels, colour)
    P = ref.n_patches(IMAGE, PATCH, channels, colour)
    assert got.shape == (P, ref.patch_dim(PATCH, channels, colour))
    assert P == POSITIONS * (channels if colour in ("none", "multi") else 1)
    np.testing.assert_array_equal(got, sliced_patches(x, channels, colour))
    # the first patch's first pixels, by the contract's column formula (i W + j) C + c
    if colour in ("none", "multi"):
        assert got[channels - 1, 1] == x[(0 * 4 + 1) * channels + channels - 1]
    else:
        assert got[0, channels] == x[(0 * 4 + 1) * channels + 0]


@pytest.mark.parametrize("colour", ref.COLOURS)
@pytest.mark.parametrize("scaling", ref.SCALINGS)
def test_reference_K_is_the_weighted_selection_of_all_patch_covariances(colour, scaling):
    """K = s^2 A K_pp A^T with A [N, N P] holding each image's weights (a matrix form of eq. 5.46),
    and Kuf = s K_zp A^T, against the reference's loops."""
    rng, C = np.random.default_rng(1), 3
    X, Z = images(rng, N, C), rng.uniform(size=(M, ref.patch_dim(PATCH, C, colour)))
    P = ref.n_patches(IMAGE, PATCH, C, colour)
    w, cw = signed_weights(rng, P), rng.uniform(0.5, 1.5, C)

    def k(A, B):
        return dense.se(A, B, variance=1.3, lengthscale=0.8)

    opts = dict(image_shape=IMAGE, patch_shape=PATCH, channels=C, colour=colour, scaling=scaling, weights=w,
                channel_weights=cw)
    patches = np.vstack([sliced_patches(x, C, colour) for x in X])  # [N P, E]
    kpp = ref.patch_kernel(patches, patches, k, colour=colour, channels=C, channel_weights=cw)
    kzp = ref.patch_kernel(Z, patches, k, colour=colour, channels=C, channel_weights=cw)
    s = 1.0 if scaling == "sum" else 1.0 / P
    channel = np.tile(np.arange(P) % C, N)
    if colour == "multi":  # independent g_c: A has one row per (image, channel)
        A = np.zeros((N, C, N * P))
        for n in range(N):
            A[n, channel[n * P:(n + 1) * P], np.arange(n * P, (n + 1) * P)] = w
        K = s * s * sum(A[:, c] @ kpp @ A[:, c].T for c in range(C))
        Kuf = s * np.vstack([kzp @ A[:, c].T for c in range(C)])
    else:
        A = np.kron(np.eye(N), w[None, :])
        K, Kuf = s * s * A @ kpp @ A.T, s * kzp @ A.T
    assert_close(ref.conv_K(X, None, k, **opts), K, "reference K")
    assert_close(ref.conv_Kdiag(X, k, **opts), np.diag(K), "reference Kdiag")
    assert_close(ref.conv_Kuf(Z, X, k, **opts), Kuf, "reference Kuf")


def test_reference_limits():
    rng = np.random.default_rng(2)
    X, X2 = images(rng, N, 1), images(rng, N2, 1)
    v, w = 0.7, rng.uniform(0.3, 1.7, 20)

    def lin(A, B):
        return dense.linear(A, B, variance=v)

    one = dict(image_shape=IMAGE, patch_shape=(1, 1), weights=w)
    # 1 x 1 patches on a linear k: g(a) = beta a, so f(x) = beta w.x: a linear kernel on w.x
    assert_close(ref.conv_K(X, X2, lin, **one), v * np.outer(X @ w, X2 @ w), "linear limit")
    assert_close(ref.conv_K(X, X2, lin, scaling="mean", **one), v * np.outer(X @ w, X2 @ w) / 400, "mean")

    def se(A, B):
        return dense.se(A, B, variance=1.2, lengthscale=2.0)

    whole = dict(image_shape=IMAGE, patch_shape=IMAGE)
    assert_close(ref.conv_K(X, X2, se, **whole), se(X, X2), "whole-image patch")
    X3 = images(rng, N, 3)
    assert_close(ref.conv_K(X3, None, se, channels=3, colour="patch", **whole), se(X3, X3), "whole RGB patch")
    # with C = 1 every colour variant is the plain kernel (additive: times cw^2)
    base = ref.conv_K(X, X2, se, image_shape=IMAGE, patch_shape=PATCH)
    for colour, factor in [("patch", 1.0), ("multi", 1.0), ("additive", 0.25)]:
        got = ref.conv_K(X, X2, se, image_shape=IMAGE, patch_shape=PATCH, colour=colour, channel_weights=[0.5])
        assert_close(got, factor * base, f"C = 1, {colour}")


# ---------------------------------------------------------------------------------------------
# The implementation against the reference
# ---------------------------------------------------------------------------------------------
BASES = ("se", "se-ard", "matern32")
QUANTITIES = ("K", "K(X, X2)", "Kdiag", "Kuf", "Kuu")


def make_case(colour, scaling, weighted, channels, base_name, seed=0, *, image=IMAGE, patch=PATCH, levels=None,
              **options):
    """Implementation, reference options and data for one variant (``options``: more constructor
    arguments; ``levels``: low-level images)."""
    rng = np.random.default_rng(seed)
    C = channels
    E = ref.patch_dim(patch, C, colour)
    E_base = E // C if colour == "additive" else E
    if base_name == "se":
        base = SquaredExponential(variance=1.3, lengthscale=0.9)
    elif base_name == "se-ard":
        base = SquaredExponential(variance=0.7, lengthscale=rng.uniform(0.5, 1.5, E_base))
    elif base_name == "matern32":
        base = Matern32(variance=1.1, lengthscale=1.2)
    else:
        base = base_name
    P = ref.n_patches(image, patch, C, colour)
    w = signed_weights(rng, P) if weighted else None
    cw = rng.uniform(0.5, 1.5, C) if colour == "additive" else None
    kernel = Convolutional(base.copy(), image_shape=image, patch_shape=patch, channels=C, weighted=weighted,
                           colour=colour, scaling=scaling, channel_weights=cw, **options)
    if weighted:
        kernel.set_parameters(weights=w)
    Z = rng.uniform(0.0, 1.0, (M, E))
    feature = InducingPatches(Z, channels=C) if colour == "multi" else InducingPatches(Z)
    opts = dict(image_shape=image, patch_shape=patch, channels=C, colour=colour, scaling=scaling, weights=w,
                channel_weights=cw)
    return dict(kernel=kernel, base=base, opts=opts, feature=feature, Z=Z, P=P, w=w,
                X=images(rng, N, C, image, levels), X2=images(rng, N2, C, image, levels))


def implemented(case, quantity):
    kernel, X, X2, feature = case["kernel"], case["X"], case["X2"], case["feature"]
    return {"K": lambda: kernel.K(X), "K(X, X2)": lambda: kernel.K(X, X2), "Kdiag": lambda: kernel.Kdiag(X),
            "Kuf": lambda: covariances.Kuf(feature, kernel, X),
            "Kuu": lambda: covariances.Kuu(feature, kernel)}[quantity]()


def expected(case, quantity):
    base, X, X2, Z, opts = case["base"], case["X"], case["X2"], case["Z"], case["opts"]
    if quantity == "Kuu":
        return ref.conv_Kuu(Z, base, channels=opts["channels"], colour=opts["colour"],
                            channel_weights=opts["channel_weights"])
    return {"K": lambda: ref.conv_K(X, None, base, **opts), "K(X, X2)": lambda: ref.conv_K(X, X2, base, **opts),
            "Kdiag": lambda: ref.conv_Kdiag(X, base, **opts),
            "Kuf": lambda: ref.conv_Kuf(Z, X, base, **opts)}[quantity]()


@pytest.mark.parametrize("base_name", BASES)
@pytest.mark.parametrize("channels", [1, 3])
@pytest.mark.parametrize("weighted", [False, True], ids=["unweighted", "weighted"])
@pytest.mark.parametrize("scaling", ref.SCALINGS)
@pytest.mark.parametrize("colour", ref.COLOURS)
@pytest.mark.parametrize("quantity", QUANTITIES)
def test_matches_the_reference(quantity, colour, scaling, weighted, channels, base_name):
    case = make_case(colour, scaling, weighted, channels, base_name)
    what = f"{quantity}, colour={colour}, scaling={scaling}, weighted={weighted}, C={channels}, base={base_name}"
    assert_close(implemented(case, quantity), expected(case, quantity), what)


@pytest.mark.parametrize("route, base_name", [("unique", "se"), ("unique", "matern32"), ("auto", "se")])
@pytest.mark.parametrize("channels", [1, 3])
@pytest.mark.parametrize("weighted", [False, True], ids=["unweighted", "weighted"])
@pytest.mark.parametrize("colour", ref.COLOURS)
def test_low_level_images_match_the_reference(colour, weighted, channels, base_name, route):
    """Binary images (the exact unique-patch path, forced, or chosen by "auto" on 7 x 6 images
    with few distinct patches) and 3-level ones, all four quantities."""
    for levels in (2, 3):
        if route == "unique":
            case = make_case(colour, "mean", weighted, channels, base_name, seed=9, levels=levels,
                             unique_patches=True)
        else:
            case = make_case(colour, "mean", weighted, channels, base_name, seed=9, levels=levels, image=(7, 6))
            sparse = np.random.default_rng(9).uniform(size=case["X"].shape) < 0.1
            case["X"] = case["X"] * sparse
            case["X2"] = case["X"][::-1][:N2].copy()
        for quantity in QUANTITIES:
            what = f"{quantity}, {route} route, levels={levels}, colour={colour}, weighted={weighted}, " \
                   f"C={channels}, base={base_name}"
            assert_close(implemented(case, quantity), expected(case, quantity), what)


@pytest.mark.parametrize("levels", [None, 2], ids=["continuous", "binary"])
@pytest.mark.parametrize("colour", ref.COLOURS)
def test_changed_parameters_inputs_and_patches_are_not_served_stale(colour, levels):
    """Every quantity after each change (weights, base parameters by set_parameters and by
    assign_unchecked, channel weights, X edited in place, one inducing patch moved, Z edited in
    place) equals the reference with the new values."""
    case = make_case(colour, "sum", True, 3, "se-ard", seed=10, levels=levels)
    kernel, opts, feature = case["kernel"], case["opts"], case["feature"]
    rng = np.random.default_rng(10)

    def check(step):
        for quantity in QUANTITIES:
            assert_close(implemented(case, quantity), expected(case, quantity), f"{quantity} after {step}, {colour}")

    check("construction")
    opts["weights"] = signed_weights(rng, case["P"])
    kernel.set_parameters(weights=opts["weights"])
    check("set_parameters(weights)")
    ell = case["base"].lengthscale
    case["base"].set_parameters(lengthscale=ell * 1.3)
    kernel.set_parameters(**{"base.lengthscale": ell * 1.3})
    check("set_parameters(base.lengthscale)")
    case["base"].set_parameters(variance=0.4)
    kernel.assign_unchecked({"base.variance": 0.4})
    check("assign_unchecked(base.variance)")
    if colour == "additive":
        opts["channel_weights"] = rng.uniform(0.5, 1.5, 3)
        kernel.set_parameters(channel_weights=opts["channel_weights"])
        check("set_parameters(channel_weights)")
    case["X"][1] = images(rng, 1, 3, levels=levels)[0]
    check("X[1] edited in place")
    Z = case["Z"].copy()
    Z[1] += 0.25
    case["Z"] = feature.Z = Z
    check("feature.Z replaced with one patch moved")
    feature.Z[2] -= 0.25
    check("feature.Z edited in place")


# ---------------------------------------------------------------------------------------------
# Limits
# ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("scaling", ref.SCALINGS)
def test_one_pixel_patches_on_a_linear_kernel_are_a_linear_kernel_on_the_weighted_sum(scaling):
    """g(a) = beta a with var(beta) = v, so f(x) = s beta sum_d w_d x_d: K = s^2 v (w.x)(w.x'),
    Kuf = s v z (w.x), Kuu = v z z'. (Not sum_d w_d^2 v x_d x'_d: one g serves every patch, so
    the cross terms p != p' stay.)"""
    v = 0.7
    case = make_case("none", scaling, True, 1, Linear(variance=v), seed=3, patch=(1, 1))
    X, X2, Z, w, s = case["X"], case["X2"], case["Z"], case["w"], 1.0 if scaling == "sum" else 1.0 / 20
    kernel, feature = case["kernel"], case["feature"]
    assert case["P"] == 20
    assert_close(kernel.K(X, X2), s * s * v * np.outer(X @ w, X2 @ w), "K")
    assert_close(kernel.Kdiag(X), s * s * v * (X @ w) ** 2, "Kdiag")
    assert_close(covariances.Kuf(feature, kernel, X), s * v * np.outer(Z[:, 0], X @ w), "Kuf")
    assert_close(covariances.Kuu(feature, kernel), v * np.outer(Z[:, 0], Z[:, 0]), "Kuu")


@pytest.mark.parametrize("colour, channels", [("none", 1), ("patch", 3), ("patch", 1)])
@pytest.mark.parametrize("weighted", [False, True], ids=["unweighted", "weighted"])
def test_a_patch_the_size_of_the_image_is_the_base_kernel_on_the_image(colour, channels, weighted):
    case = make_case(colour, "mean", weighted, channels, "se-ard", seed=4, patch=IMAGE)
    assert case["P"] == 1
    kernel, base, X, X2, Z = case["kernel"], case["base"], case["X"], case["X2"], case["Z"]
    w = case["w"][0] if weighted else 1.0
    assert_close(kernel.K(X, X2), w * w * base.K(X, X2), "K")
    assert_close(kernel.Kdiag(X), w * w * base.Kdiag(X), "Kdiag")
    assert_close(covariances.Kuf(case["feature"], kernel, X), w * base.K(Z, X), "Kuf")
    assert_close(covariances.Kuu(case["feature"], kernel), base.K(Z), "Kuu")


@pytest.mark.parametrize("colour", ref.COLOURS)
def test_mean_scaling_is_the_sum_divided_by_P_and_P_squared(colour):
    got = {}
    for scaling in ref.SCALINGS:
        case = make_case(colour, scaling, True, 3, "se", seed=5)
        got[scaling] = {q: implemented(case, q) for q in QUANTITIES}
    P = case["P"]
    for q, power in [("K", 2), ("K(X, X2)", 2), ("Kdiag", 2), ("Kuf", 1), ("Kuu", 0)]:
        assert_close(got["mean"][q] * P ** power, got["sum"][q], f"{q}, {colour}")


# ---------------------------------------------------------------------------------------------
# Structure
# ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("colour", ref.COLOURS)
@pytest.mark.parametrize("base_name", ["se", "matern32"])
def test_K_is_symmetric_psd_and_its_diagonal_is_Kdiag(colour, base_name):
    case = make_case(colour, "sum", True, 3, base_name, seed=6)
    kernel, X = case["kernel"], images(np.random.default_rng(6), 7, 3)
    K = kernel.K(X)
    np.testing.assert_allclose(K, K.T, rtol=1e-13, atol=0)  # the summation order may differ by an ulp
    assert np.linalg.eigvalsh(K).min() > -1e-10 * np.abs(K).max()
    assert_close(kernel.Kdiag(X), np.diag(K), f"Kdiag vs diag(K), {colour}")
    assert_close(kernel.K(X, X), K, f"K(X, X) vs K(X), {colour}")


@pytest.mark.parametrize("channels", [1, 3])
def test_a_Kuf_column_is_the_sum_over_that_images_patches(channels):
    """Z = patches cut from image 0 by slicing: Kuf[m, 0] = sum_p k(z_m, x_0^[p]) >= k(z_m, z_m)."""
    case = make_case("patch", "sum", False, channels, "se", seed=7)
    kernel, base, X = case["kernel"], case["base"], case["X"]
    patches = sliced_patches(X[0], channels, "patch")
    Z = patches[[0, 3, 7]]
    Kuf = covariances.Kuf(InducingPatches(Z), kernel, X)
    assert_close(Kuf[:, 0], base.K(Z, patches).sum(axis=1), "Kuf column 0")
    assert np.all(Kuf[:, 0] >= base.variance)


@pytest.mark.parametrize("colour", ref.COLOURS)
def test_all_training_patches_as_Z_recover_K_exactly(colour):
    """Lemma 3: with Z = every patch of every image, f(X) is a linear map of u, so
    Kfu Kuu^-1 Kuf = K; with fewer patches K - Kfu Kuu^-1 Kuf stays PSD."""
    C, image, patch = 2, (4, 3), (2, 2)
    case = make_case(colour, "mean", True, C, SquaredExponential(variance=1.0, lengthscale=0.5), seed=8,
                     image=image, patch=patch)
    kernel, X = case["kernel"], case["X"][:2]
    Z = np.vstack([sliced_patches(x, C, colour, image, patch) for x in X])
    for Zs, exact in [(Z, True), (Z[::3], False)]:
        feature = InducingPatches(Zs, channels=C) if colour == "multi" else InducingPatches(Zs)
        Kuf, Kuu = covariances.Kuf(feature, kernel, X), covariances.Kuu(feature, kernel)
        Q, K = Kuf.T @ np.linalg.solve(Kuu, Kuf), kernel.K(X)
        if exact:
            assert_close(Q, K, f"Qff vs K, {colour}", rtol=1e-7)
        else:
            assert np.linalg.eigvalsh(K - Q).min() > -1e-10 * np.abs(K).max()


# ---------------------------------------------------------------------------------------------
# Bad input
# ---------------------------------------------------------------------------------------------
def conv(**changes):
    args = dict(image_shape=IMAGE, patch_shape=PATCH, channels=1, weighted=True, colour="none", scaling="sum")
    args.update(changes)
    return Convolutional(SquaredExponential(), **args)


def test_inputs_with_the_wrong_number_of_columns_are_refused():
    kernel, good = conv(channels=3), np.ones((2, 60))
    for bad in (np.ones((2, 20)), np.ones((2, 61))):
        with pytest.raises(ValueError, match=r"\bX\b"):
            kernel.K(bad)
        with pytest.raises(ValueError, match=r"\bX\b"):
            kernel.Kdiag(bad)
        with pytest.raises(ValueError, match=r"\bX2?\b"):
            kernel.K(good, bad)
        with pytest.raises(ValueError, match=r"\bX\b"):
            covariances.Kuf(InducingPatches(np.ones((M, 6))), kernel, bad)


@pytest.mark.parametrize("changes, name", [
    (dict(patch_shape=(6, 2)), "patch_shape"),
    (dict(patch_shape=(2, 5)), "patch_shape"),
    (dict(colour="rgb"), "colour"),
    (dict(scaling="max"), "scaling"),
    (dict(weights=np.ones(POSITIONS + 1)), "weights"),
    (dict(weights=np.ones(POSITIONS - 1)), "weights"),
    (dict(weights=np.r_[np.ones(POSITIONS - 1), np.nan]), "weights"),
    (dict(colour="additive", channels=3, channel_weights=np.ones(2)), "channel_weights"),
    (dict(colour="additive", channels=3, channel_weights=[1.0, np.nan, 1.0]), "channel_weights"),
])
def test_bad_arguments_are_refused_by_name(changes, name):
    with pytest.raises(ValueError, match=rf"\b{name}\b"):
        conv(**changes)


@pytest.mark.parametrize("weights", [np.ones(POSITIONS + 1), np.ones((POSITIONS, 1)),
                                     np.r_[np.nan, np.ones(POSITIONS - 1)]])
def test_bad_weights_are_refused_by_set_parameters(weights):
    kernel = conv()
    with pytest.raises(ValueError, match=r"\bweights\b"):
        kernel.set_parameters(weights=weights)
