"""Generic checks over the registries: every kernel x every inducing feature.

The case lists are built from ``gpexplorer.kernels.KERNELS`` (plus an ARD kernel, a Sum and a
Product) and ``gpexplorer.inducing.FEATURES`` (plus the test-only features of
``features_for_tests.TEST_FEATURES``), so a new registry entry is checked without editing this
file: kernels are built with their defaults, then given distinct values (``cls()`` must work),
features as ``cls(locations)`` from [M, D] locations (``FEATURE_BUILDERS`` overrides that for
features whose other arguments are worth setting). tests/test_architecture.py asserts these
lists equal the registries.

For every (kernel, feature) pair:
* Kuu [M, M] is symmetric positive semi-definite, Kuf is [M, N], and the joint covariance of
  (u, f(X)) [[Kuu, Kuf], [Kfu, Kff]] is positive semi-definite (true of any inducing variables);
* ``covariances.gradients`` contracts dL/dKuu, dL/dKuf into gradients of every kernel and
  feature parameter that match finite differences of L = <W1, Kuu> + <W2, Kuf>, with the
  rank-one form of dL/dKuf and the precomputed Kuu/Kuf giving the same answer;
* a SparseGPR of every approximation has a finite objective, the same value with and without
  its gradient, and a gradient (kernel, noise and feature parameters) that matches finite
  differences.
"""

from __future__ import annotations

import numpy as np
import pytest

import reference
from features_for_tests import TEST_FEATURES, OffsetInducingPoints, ScaledPoints, ShiftedPoints
from gpexplorer import covariances
from gpexplorer.inducing import FEATURES, Frequency, InducingPatches, Multiscale, SumOfDeltas, TimeFrequency
from gpexplorer.kernels import KERNELS, Convolutional, Product, Sum
from gpexplorer.sparse.regression import SparseGPR

D = 3
APPROXIMATIONS = ("sor", "dtc", "fitc", "vfe")


# ---------------------------------------------------------------------------------------------
# Cases, from the registries
# ---------------------------------------------------------------------------------------------


#: kernels on images (``input_shape`` set) built for the D = 3 inputs here: 1 x 3 "images", 1 x 2 patches
IMAGE_KERNELS = {Convolutional: lambda: Convolutional(image_shape=(1, D), patch_shape=(1, 2), weighted=True)}


def registry_kernel(name):
    """KERNELS[name] built with its defaults (or for D-column images), then given distinct values."""
    cls = KERNELS[name]
    kernel = IMAGE_KERNELS[cls]() if cls.input_shape is not None else cls()
    kernel.set_parameters(**{n: 0.9 + 0.35 * i for i, n in enumerate(kernel.param_names)})
    return kernel


EXTRA_KERNELS = {
    "se-ard": lambda: KERNELS["se"](variance=1.1, lengthscale=np.array([0.8, 1.3, 1.7])),
    "sum": lambda: Sum(KERNELS["matern52"](1.0, 1.2), KERNELS["linear"](0.3)),
    "product": lambda: Product(KERNELS["rq"](1.1, 1.4, 0.8), KERNELS["periodic"](1.0, 1.5, 2.9)),
}
KERNEL_CASES = {**{name: (lambda name=name: registry_kernel(name)) for name in KERNELS}, **EXTRA_KERNELS}

#: every feature type the generic checks run over: the package's registry and the test-only ones
FEATURE_TYPES = {**FEATURES, **{f"test:{k}": v for k, v in TEST_FEATURES.items()}}

OFFSET = np.array([0.3, -0.45, 0.2])
#: builders taking locations [M, D] for features whose other arguments are worth a non-default value
DELTA_PATTERN = np.array([-0.3, 0.1, 0.2])[:, None] * np.array([1.0, -0.5, 0.8])  # [C, D], zero mean over C
FEATURE_BUILDERS = {
    SumOfDeltas: lambda L: SumOfDeltas(L[:, None, :] + DELTA_PATTERN[None], np.tile([1.0, 0.5, -0.7], (len(L), 1))),
    Multiscale: lambda L: Multiscale(L, np.linspace(0.3, 0.6, L.size).reshape(L.shape)),
    Frequency: lambda L: Frequency(L, np.linspace(-1.0, 2.0, len(L)), np.array([1.4, 0.9, 1.2])),
    TimeFrequency: lambda L: TimeFrequency(L, 0.8 * np.roll(L, 1, axis=0), np.linspace(0.3, 2.5, len(L)),
                                           np.array([0.6, 0.9, 0.5])),
    ShiftedPoints: lambda L: ShiftedPoints(L - OFFSET, OFFSET),
    OffsetInducingPoints: lambda L: OffsetInducingPoints(L - OFFSET, OFFSET),
    ScaledPoints: lambda L: ScaledPoints(L / 1.3, 1.3),
    InducingPatches: lambda L: InducingPatches(L[:, :2]),  # patch space: the image kernels' 1 x 2 patches
}


def make_feature(name, locations):
    cls = FEATURE_TYPES[name]
    feature = FEATURE_BUILDERS.get(cls, cls)(locations)
    if cls.draggable:  # features that live in input space sit at the locations given
        np.testing.assert_allclose(feature.locations, locations, rtol=1e-12, atol=1e-12)
    return feature


def needs_images(feature_name):
    """Whether the feature pairs only with kernels on images (inducing patches)."""
    return covariances.Kuu.find(FEATURE_TYPES[feature_name], KERNELS["se"]) is None


def problem(N=20, M=5, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.uniform(-2.5, 2.5, size=(N, D))
    y = np.sin(X.sum(axis=1)) + 0.2 * rng.normal(size=N)
    locations = rng.uniform(-1.5, 1.5, size=(M, D))
    return X, y, locations


def supported(kernel_name, feature_name):
    """Whether the pair has covariances registered (inter-domain features with closed forms for
    the squared-exponential kernel only, thesis ch. 4, register that kernel alone)."""
    return covariances.Kuu.find(FEATURE_TYPES[feature_name], type(KERNEL_CASES[kernel_name]())) is not None


ALL_PAIRS = [(k, f) for k in KERNEL_CASES for f in FEATURE_TYPES]
PAIRS = [(k, f) for k, f in ALL_PAIRS if supported(k, f)]


def test_cases_cover_the_registries():
    assert set(KERNELS) <= set(KERNEL_CASES)
    assert set(FEATURES.values()) <= set(FEATURE_TYPES.values())
    assert {type(KERNEL_CASES[n]()) for n in ("sum", "product")} == {Sum, Product}
    for f in FEATURE_TYPES:  # every feature runs at least with the SE kernel, isotropic and ARD
        if needs_images(f):  # ... or, for inducing patches, with the convolutional kernel
            assert ("convolutional", f) in PAIRS, f
        else:
            assert ("se", f) in PAIRS and ("se-ard", f) in PAIRS, f


@pytest.mark.parametrize("kernel_name, feature_name", [p for p in ALL_PAIRS if p not in PAIRS])
def test_an_unsupported_pair_says_so(kernel_name, feature_name):
    X, y, locations = problem()
    feature = make_feature(feature_name, locations)
    with pytest.raises(NotImplementedError, match="register one in gpexplorer.covariances"):
        covariances.Kuu(feature, KERNEL_CASES[kernel_name]())


# ---------------------------------------------------------------------------------------------
# Covariances
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("kernel_name,feature_name", PAIRS)
def test_covariances_shapes_symmetry_and_joint_psd(kernel_name, feature_name):
    X, _, locations = problem()
    kernel, feature = KERNEL_CASES[kernel_name](), make_feature(feature_name, locations)
    Kuu = covariances.Kuu(feature, kernel)
    Kuf = covariances.Kuf(feature, kernel, X)
    M, N = len(feature), X.shape[0]
    assert Kuu.shape == (M, M) and Kuf.shape == (M, N)
    assert np.all(np.isfinite(Kuu)) and np.all(np.isfinite(Kuf))
    np.testing.assert_allclose(Kuu, Kuu.T, rtol=1e-12, atol=1e-14)
    scale = np.abs(Kuu).max()
    assert np.linalg.eigvalsh(Kuu).min() >= -1e-10 * scale
    joint = np.block([[Kuu, Kuf], [Kuf.T, kernel.K(X)]])
    assert np.linalg.eigvalsh(0.5 * (joint + joint.T)).min() >= -1e-9 * np.abs(joint).max()


def _feature_params(feature):
    return {n: np.asarray(v, dtype=float) for n, v in feature.parameters.items()}


def _set(kernel, feature, name, value):
    if name in feature.param_names:
        feature.set_parameters(**{name: value if np.ndim(value) else float(value)})
    else:
        kernel.set_parameters(**{name: value if np.ndim(value) else float(value)})


@pytest.mark.parametrize("kernel_name,feature_name", PAIRS)
def test_gradient_contraction_matches_finite_differences(kernel_name, feature_name):
    X, _, locations = problem()
    kernel, feature = KERNEL_CASES[kernel_name](), make_feature(feature_name, locations)
    M, N = len(feature), X.shape[0]
    rng = np.random.default_rng(7)
    W1 = rng.normal(size=(M, M))
    W1 = W1 + W1.T  # dL/dKuu of a real objective is symmetric
    W2 = rng.normal(size=(M, N))

    def L(k, f):
        return float(np.sum(W1 * covariances.Kuu(f, k)) + np.sum(W2 * covariances.Kuf(f, k, X)))

    g_kernel, g_feature = covariances.gradients(feature, kernel, X, W1, W2)
    assert set(g_kernel) == set(kernel.param_names)
    assert set(g_feature) == set(feature.param_names)
    values = {**kernel.parameters, **_feature_params(feature)}
    grads = {**g_kernel, **g_feature}
    for name, value in values.items():
        assert np.shape(grads[name]) == np.shape(value), name

        def at(v, name=name):
            k, f = kernel.copy(), feature.copy()
            _set(k, f, name, v)
            return L(k, f)

        reference.check_grad_close(grads[name], reference.numerical_grad(at, value), rtol=1e-5, atol=1e-6)

    # the same contraction from precomputed matrices and from dL/dKuf = W2 - a b^T in rank-one form
    a, b = rng.normal(size=M), rng.normal(size=N)
    full = covariances.gradients(feature, kernel, X, W1, W2 - np.outer(a, b))
    precomputed = {"Kuu": covariances.Kuu(feature, kernel), "Kuf": covariances.Kuf(feature, kernel, X)}
    for kw in ({"rank_one": (a, b)}, {"rank_one": (a, b), **precomputed}):
        part = covariances.gradients(feature, kernel, X, W1, W2, **kw)
        for got, want in zip(part, full):
            assert set(got) == set(want)
            for n in want:
                np.testing.assert_allclose(got[n], want[n], rtol=1e-10, atol=1e-12, err_msg=f"{n} with {sorted(kw)}")


@pytest.mark.parametrize("kernel_name,feature_name", PAIRS)
def test_a_kuu_only_contraction_runs_on_no_rows(kernel_name, feature_name):
    """A contraction of dL/dKuu alone on no data rows (an empty batch) gives what a zero dL/dKuf
    on all rows gives, for every pair (empty X once made NaN means and failed reshapes)."""
    X, _, locations = problem()
    kernel, feature = KERNEL_CASES[kernel_name](), make_feature(feature_name, locations)
    M = len(feature)
    W1 = np.random.default_rng(3).normal(size=(M, M))
    W1 = W1 + W1.T
    Kuu, Kuf = covariances.Kuu(feature, kernel), covariances.Kuf(feature, kernel, X)
    want = covariances.gradients(feature, kernel, X, W1, np.zeros((M, len(X))), Kuu=Kuu, Kuf=Kuf)
    got = covariances.gradients(feature, kernel, X[:0], W1, np.zeros((M, 0)), Kuu=Kuu, Kuf=Kuf[:, :0])
    for g, w in zip(got, want):
        assert set(g) == set(w)
        for n in w:
            np.testing.assert_allclose(g[n], w[n], rtol=1e-12, atol=1e-12, err_msg=n)


# ---------------------------------------------------------------------------------------------
# The sparse objective
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("approximation", APPROXIMATIONS)
@pytest.mark.parametrize("kernel_name,feature_name", PAIRS)
def test_sparse_objective_and_its_gradient(kernel_name, feature_name, approximation):
    X, y, locations = problem(M=3)  # M = D: the linear kernel's Kuu is full rank
    m = SparseGPR(X, y, KERNEL_CASES[kernel_name](), Z=make_feature(feature_name, locations),
                  approximation=approximation, noise_variance=0.2, jitter=1e-6)
    value = m.log_marginal_likelihood()
    assert np.isfinite(value) and np.isfinite(m.upper_bound())
    v, grads = m.log_marginal_likelihood(eval_gradient=True)
    assert v == pytest.approx(value, rel=1e-10)  # the gradient path (fused or generic) agrees
    assert set(grads) == set(m.parameters)
    for name, x in m.parameters.items():
        def at(val, name=name):
            probe = m.copy()
            probe.set_parameters(**{name: val if np.ndim(x) else float(val)})
            return probe.log_marginal_likelihood()

        reference.check_grad_close(grads[name], reference.numerical_grad(at, x), rtol=3e-5, atol=1e-6)
