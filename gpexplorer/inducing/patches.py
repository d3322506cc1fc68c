"""Inducing patches (thesis §5.3.2, eq. 5.14): u_m = g(z_m), observations of the patch-response
GP of a convolutional kernel (:class:`gpexplorer.kernels.Convolutional`) at patches z_m [E]. They
live in patch space, not in image space, so a lab shows them as tiles rather than dragging them.
For the multi-channel kernel (eq. 5.62) every z_m carries one inducing variable per channel
(``channels=C``: C x M variables, block c for g_c).

Initialisations (:meth:`InducingPatches.from_images`): ``"unique"`` (a random choice among the
distinct patches of the training images; all of them when M >= U, which Theorem 1 shows is
optimal), ``"random"`` (distinct patches of random training images at random positions), ``"uniform"``
(U(lo, hi) over the pixel range: the thesis' rectangles set-up, Z ~ U(0, 1)) and ``"kmeans"``
(k-means centres of a sample of training patches).
"""

from __future__ import annotations

import numpy as np

from gpexplorer.inducing.base import InducingFeature
from gpexplorer.inducing.placement import kmeans
from gpexplorer.kernels.patch_layout import PatchLayout, unique_patches
from gpexplorer.parameters import Parameter

__all__ = ["InducingPatches", "PATCH_INITIALISATIONS"]

PATCH_INITIALISATIONS = ("unique", "random", "uniform", "kmeans")
#: most patch values (images x P x E) read when looking for unique patches or a k-means sample
SAMPLE_VALUES = 8_000_000


def _pixels_only(layout):
    """The layout without patch locations (the unique patches of the pixel values)."""
    if not layout.locations:
        return layout
    return PatchLayout(layout.image_shape, layout.patch_shape, layout.channels, layout.colour)


class InducingPatches(InducingFeature):
    """M inducing patches Z [M, E] (moved freely by the optimisers); ``channels`` inducing
    variables per patch for the multi-channel kernel."""

    name, label = "patches", "Inducing patches"
    param_names = ("Z",)
    draggable = False

    def __init__(self, Z, channels=1):
        Z = self._checked("Z", Z)
        if Z.ndim != 2 or Z.shape[0] == 0 or Z.shape[1] == 0:
            raise ValueError(f"InducingPatches.Z must be a non-empty (M, E) array of patch vectors; got shape {Z.shape}")
        if isinstance(channels, bool) or not isinstance(channels, (int, np.integer)) or channels < 1:
            raise ValueError(f"InducingPatches.channels must be a positive integer; got {channels!r}")
        self.Z, self.channels = Z, int(channels)

    @property
    def parameter_specs(self):
        return {"Z": Parameter.real("Z")}

    @property
    def locations(self):
        return self.Z

    def __len__(self):
        return self.channels * self.Z.shape[0]

    @property
    def patch_dim(self):
        return self.Z.shape[1]

    def check_input_dim(self, D):
        """Patches live in patch space: the kernel checks Z against its patch size (Kuu, Kuf)."""

    def check_kernel(self, kernel):
        layout = kernel.layout
        if self.patch_dim != layout.patch_dim:
            raise ValueError(f"the inducing patches hold {self.patch_dim} values but the kernel's "
                             f"{layout.patch_shape[0]}x{layout.patch_shape[1]} patches have {layout.patch_dim}")
        if self.channels != layout.n_groups:
            raise ValueError(f"the kernel (colour={layout.colour!r}) needs InducingPatches(Z, channels="
                             f"{layout.n_groups}); got channels={self.channels}")

    # initialisation ----------------------------------------------------------------------------
    @classmethod
    def from_images(cls, X, kernel, M, init="unique", seed=0):
        """M inducing patches for ``kernel`` (a Convolutional) from training images X (module docstring)."""
        if init not in PATCH_INITIALISATIONS:
            raise ValueError(f"init must be one of {PATCH_INITIALISATIONS}; got {init!r}")
        if isinstance(M, bool) or not isinstance(M, (int, np.integer)) or M < 1:
            raise ValueError(f"M must be a positive integer; got {M!r}")
        layout = kernel.layout
        X = layout.check(X)
        rng = np.random.default_rng(seed)
        sample = X[rng.permutation(X.shape[0])[: max(1, SAMPLE_VALUES // layout.index.size)]]
        E = layout.pixel_dim
        where = None  # the patch positions of the chosen patches, where known (TICK's inducing locations)
        if init == "uniform":
            Z = rng.uniform(X.min(), X.max(), size=(M, E))
        elif init == "random":  # distinct patches (MNIST's many blank ones would make Kuu singular)
            draws = 4 * M + 64
            rows, cols = rng.integers(0, sample.shape[0], draws), rng.integers(0, layout.n_patches, draws)
            candidates = sample[rows[:, None], layout.index[cols]]
            _, first = np.unique(candidates, axis=0, return_index=True)
            Z, where = candidates[np.sort(first)[:M]], cols[np.sort(first)[:M]]
            if len(Z) < M:  # few distinct patches (binary images): the rest of the unique ones, then extras
                U, _ = unique_patches(_pixels_only(layout), sample)
                rest = U[[i for i in rng.permutation(len(U)) if not np.any(np.all(U[i] == Z, axis=1))]]
                Z = np.vstack([Z, rest[:M - len(Z)]])
                Z = np.vstack([Z, rng.uniform(X.min(), X.max(), size=(M - len(Z), E))])
        elif init == "kmeans":
            patches = sample[:, layout.index].reshape(-1, E)
            Z = kmeans(patches[rng.permutation(len(patches))[:20_000]], M, rng)
        else:
            U, _ = unique_patches(_pixels_only(layout), sample)
            Z = U[rng.permutation(len(U))[:M]]
            if M > len(U):  # Theorem 1: U patches suffice; the rest are uniform extras
                Z = np.vstack([Z, rng.uniform(X.min(), X.max(), size=(M - len(U), E))])
        if layout.locations:  # a position per inducing patch: its own where known, else drawn
            drawn = rng.integers(0, layout.n_patches, M)
            if where is not None:
                drawn[:len(where)] = where
            Z = np.hstack([Z, layout.position[drawn]])
        return cls(Z, channels=layout.n_groups)

    # variants ----------------------------------------------------------------------------------
    def restart_from(self, X, rng):
        """New patches uniform over the range of the current ones (the feature does not know the images)."""
        lo, hi = float(self.Z.min()), float(self.Z.max())
        return {"Z": rng.uniform(lo, hi if hi > lo else lo + 1.0, size=self.Z.shape)}

    def at_locations(self, locations):
        return InducingPatches(np.asarray(locations, dtype=float).reshape(-1, self.patch_dim), self.channels)

    def concatenate(self, other):
        if not isinstance(other, InducingPatches) or other.channels != self.channels:
            raise ValueError("can only concatenate InducingPatches with InducingPatches of the same channels")
        return InducingPatches(np.vstack([self.Z, other.Z]), self.channels)

    def __repr__(self):
        return f"InducingPatches(M={self.Z.shape[0]}, E={self.patch_dim}, channels={self.channels})"
