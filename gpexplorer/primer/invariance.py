"""Invariance and the evidence (van der Wilk thesis §5.1.2, fig. 5.5 and eq. 5.2) on small images.

A toy where the truth is translation invariant: each image is blank but for one 2 x 2 stamp, one
of a few kinds, at a random place; y depends on the kind only (plus noise). A kernel on raw pixels
(SE) sees the same stamp at two places as two distant inputs, so a point says little about the
next one; the convolutional kernel (a sum of a patch kernel over every patch, eq. 5.13) is
invariant to where a stamp sits, so after one image of each kind it predicts the rest tightly.
Written as sequential prediction (eq. 5.2), the invariant model's terms log p(y_n | y_<n) rise as
data arrive while the SE model's stay near the prior's: the cumulative log evidence of each model,
point by point, is what :func:`evidence_as_data_arrive` returns.
"""

from __future__ import annotations

import numpy as np

from gpexplorer import validation
from gpexplorer.kernels import Convolutional, Linear, SquaredExponential
from gpexplorer.primer.evidence import sequential_evidence

__all__ = ["stamped_images", "invariance_kernels", "evidence_as_data_arrive", "STAMPS"]

#: the stamp kinds (2 x 2 pixel patterns) and the value y each kind carries
STAMPS = (np.array([[1.0, 1.0], [1.0, 1.0]]), np.array([[1.0, 0.0], [0.0, 1.0]]), np.array([[0.0, 1.0], [1.0, 1.0]]))
STAMP_VALUES = (1.0, -1.0, 0.3)


def stamped_images(n, size=6, noise_sd=0.05, seed=0):
    """(X [n, size * size], y [n], kinds [n]): images with one stamp at a random place inside a
    one-pixel margin, so that every place gives the stamp the same nine overlapping patches."""
    n = validation.count("n", n, minimum=1, maximum=2000)
    size = validation.count("size", size, minimum=4, maximum=16)
    rng = np.random.default_rng(validation.seed(seed))
    kinds = rng.integers(len(STAMPS), size=n)
    X = np.zeros((n, size, size))
    for i, k in enumerate(kinds):
        r, c = rng.integers(1, size - 2, size=2)  # inside a one-pixel margin: all 9 overlapping patches exist
        X[i, r:r + 2, c:c + 2] = STAMPS[k]
    y = np.array(STAMP_VALUES)[kinds] + noise_sd * rng.standard_normal(n)
    return X.reshape(n, -1), y, kinds


def invariance_kernels(size=6):
    """{"convolutional": the translation-invariant kernel on 2 x 2 patches, "se": SE on the pixels}
    with hyperparameters set by hand for the toy. The patch kernel is linear x SE, so blank patches
    (all zero) add nothing: with a stationary patch kernel every pair of blank patches would add the
    same constant, and the images' ~25 blank patches would swamp the one stamp."""
    patch = Linear(variance=0.1) * SquaredExponential(variance=1.0, lengthscale=1.0)
    conv = Convolutional(patch, image_shape=(size, size), patch_shape=(2, 2))
    return {"convolutional": conv, "se": SquaredExponential(variance=1.0, lengthscale=2.0)}


def evidence_as_data_arrive(kernels, X, y, noise_variance):
    """{name: (terms [N], cumulative [N])}: log p(y_n | y_<n) in data order and its running sum,
    whose last entry is log p(y) under that kernel (eq. 5.2)."""
    out = {}
    for name, kernel in kernels.items():
        seq = sequential_evidence(kernel, X, y, noise_variance)
        out[name] = (seq.terms, np.cumsum(seq.terms))
    return out
