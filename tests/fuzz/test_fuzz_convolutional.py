"""Property-based fuzzing of the convolutional kernel and inducing patches at the model boundary
(issue 26; the conventions of test_fuzz_models.py): hostile constructor arguments, images at
absurd scales or with NaN, inducing patches of the wrong size, absurd hyperparameters. Each case
must raise a ValueError / TypeError naming an argument, or give finite results."""

import numpy as np
from hypothesis import given
from hypothesis import strategies as st
from test_fuzz_models import ARGS, check

from gpexplorer.inducing import InducingPatches
from gpexplorer.kernels import Convolutional, SquaredExponential
from gpexplorer.variational.savigp import SparseVariationalGP

NAMES = ARGS + ("image_shape", "patch_shape", "channels", "colour", "scaling", "weights", "channel_weights",
                "base", "InducingPatches", "Convolutional", "M", "init", "patches", "images", "unique_patches")


@given(image_shape=st.sampled_from([(4, 5), (0, 3), (3,), ("a", 2), (2.5, 3), (True, 4), (10 ** 6, 10 ** 6)]),
       patch_shape=st.sampled_from([(2, 3), (5, 5), (0, 1), (1, 1), None]),
       channels=st.sampled_from([1, 3, 0, -1, True, 2.5]),
       colour=st.sampled_from(["none", "patch", "multi", "additive", "x"]),
       scaling=st.sampled_from(["sum", "mean", "avg"]), weighted=st.booleans(),
       weights=st.sampled_from([None, "ok", "short", "nan", 1e300]))
def test_fuzz_convolutional_construction(image_shape, patch_shape, channels, colour, scaling, weighted, weights):
    def build():
        k = Convolutional(SquaredExponential(), image_shape=image_shape, patch_shape=patch_shape, channels=channels,
                          weighted=weighted, colour=colour, scaling=scaling)
        if weights is not None:
            P = k.layout.n_patches
            value = {"ok": np.linspace(-1, 1, P), "short": np.ones(max(1, P - 1)),
                     "nan": np.full(P, np.nan)}.get(weights, weights)
            k.set_parameters(weights=value)
        X = np.random.default_rng(0).random((3, k.layout.input_dim))
        return k.Kdiag(X)

    check(NAMES, build)


@given(scale=st.sampled_from([1.0, 1e-300, 1e100, 1e200]), special=st.sampled_from([None, np.nan, np.inf]),
       N=st.integers(1, 8), columns=st.sampled_from([20, 19, 0]),
       Z=st.sampled_from([3, 0, "nan", "wide", 10 ** 7, "unique", "kmeans"]),
       variance=st.sampled_from([1.0, 1e-200, 1e200]), lengthscale=st.sampled_from([1.0, 1e-200, 1e200]),
       colour=st.sampled_from(["none", "multi", "additive"]), data_seed=st.integers(0, 2))
def test_fuzz_convolutional_model(scale, special, N, columns, Z, variance, lengthscale, colour, data_seed):
    rng = np.random.default_rng(data_seed)
    C = 2 if colour != "none" else 1
    X = rng.integers(0, 2, size=(N, columns * C)).astype(float) * scale
    if special is not None and X.size:
        X.flat[0] = special
    y = (np.arange(N) % 2).astype(float)[:, None]
    k = check(NAMES, lambda: Convolutional(SquaredExponential(variance, lengthscale), (4, 5), (2, 3), channels=C,
                                           colour=colour, scaling="mean"))
    if k is None:
        return
    G = k.layout.n_groups

    def feature():
        if Z in ("unique", "kmeans"):
            return InducingPatches.from_images(X, k, 3, Z, seed=0)
        if Z == "nan":
            return InducingPatches(np.full((3, k.layout.patch_dim), np.nan), channels=G)
        if Z == "wide":
            return InducingPatches(np.zeros((3, k.layout.patch_dim + 1)), channels=G)
        if Z == 10 ** 7:
            return InducingPatches(np.zeros((Z, 1)), channels=G)
        return InducingPatches(rng.random((Z, k.layout.patch_dim)) if Z else np.zeros((0, 6)), channels=G)

    f = check(NAMES, feature)
    if f is None:
        return
    m = check(NAMES, lambda: SparseVariationalGP(X, y, k, f, "bernoulli_probit"))
    if m is None:
        return
    check(NAMES, lambda: m.elbo(eval_gradient=True)[0])
    check(NAMES, lambda: m.fit(max_iter=2).objective)
    check(NAMES, lambda: m.predict_y(X[:2]))
