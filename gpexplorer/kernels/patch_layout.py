"""Where the patches of an image are (thesis §5.3.1, §5.8): the index of every patch's pixels in
an image row, and the exact decomposition of a batch of images into unique patches (§5.4).

Images are rows of X [N, H*W*C], flattened row-major with channels last: pixel (i, j, c) is
column (i*W + j)*C + c. Patch positions q = a*Pw + b (a < Ph = H-h+1, b < Pw = W-w+1) are the
top-left corners in row-major order. Two patch kinds:

* single-channel patches (colour "none", the thesis' baseline, and "multi"): one per position and
  channel, index p = q*C + c, the vector holds pixels (a+di, b+dj, c) in row-major (di, dj) order,
  E = h*w values; ``group[p] = c``;
* colour patches ("patch", "additive"): one per position, the vector holds (a+di, b+dj, c) in
  row-major (di, dj, c) order, E = h*w*C values; ``group`` is all zeros.

With ``locations`` (the translation-insensitive kernel, TICK) a patch vector also holds its
position (row, column of its top-left pixel, in pixels) after its E pixel values: E + 2 values.

Unique patches (Lemmas 1-3): the patch vectors of a batch hashed by a random projection, sorted
once by numpy, and then checked for equality (a hash collision falls back to an exact sort of the
rows), so ``ids[n, p]`` indexes the rows of ``U`` exactly: ``U[ids] == patches``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

COLOURS = ("none", "patch", "multi", "additive")
#: most patch values (P x E) per image: the index alone is eight bytes a value
MAX_PATCH_VALUES = 25_000_000
#: largest number of patch values (N * P * E) extracted at once
CHUNK_VALUES = 4_000_000


def _shape2(name, value):
    try:
        a, b = (int(v) for v in value)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be a pair of positive integers (rows, columns); got {value!r}") from None
    if isinstance(value, (str, bytes)) or a < 1 or b < 1 or any(isinstance(v, bool) for v in value):
        raise ValueError(f"{name} must be a pair of positive integers (rows, columns); got {value!r}")
    return a, b


@dataclass(frozen=True)
class PatchLayout:
    """Patch geometry of H x W x C images with h x w patches (module docstring)."""

    image_shape: tuple
    patch_shape: tuple
    channels: int = 1
    colour: str = "none"
    locations: bool = False
    index: np.ndarray = field(init=False, repr=False, compare=False)  # [P, E] columns of an image row
    position: np.ndarray = field(init=False, repr=False, compare=False)  # [P, 2] (row, column) of a patch
    group: np.ndarray = field(init=False, repr=False, compare=False)  # [P] channel of a patch (multi)

    def __post_init__(self):
        H, W = _shape2("image_shape", self.image_shape)
        h, w = _shape2("patch_shape", self.patch_shape)
        C = self.channels
        if isinstance(C, bool) or not isinstance(C, (int, np.integer)) or C < 1:
            raise ValueError(f"channels must be a positive integer; got {C!r}")
        if h > H or w > W:
            raise ValueError(f"patch_shape {(h, w)} is larger than image_shape {(H, W)}")
        if self.colour not in COLOURS:
            raise ValueError(f"colour must be one of {COLOURS}; got {self.colour!r}")
        n_values = (H - h + 1) * (W - w + 1) * h * w * C
        if n_values > MAX_PATCH_VALUES:
            raise ValueError(f"image_shape {(H, W)} with {C} channel(s) and patch_shape {(h, w)} gives "
                             f"{n_values:.3g} patch values per image; at most {MAX_PATCH_VALUES:.0e} are supported")
        object.__setattr__(self, "image_shape", (H, W))
        object.__setattr__(self, "patch_shape", (h, w))
        object.__setattr__(self, "channels", int(C))
        a = np.arange(H - h + 1)[:, None, None, None]
        b = np.arange(W - w + 1)[None, :, None, None]
        di = np.arange(h)[None, None, :, None]
        dj = np.arange(w)[None, None, None, :]
        pixel = ((a + di) * W + (b + dj)).reshape((H - h + 1) * (W - w + 1), h * w)  # [Q, h*w]
        if self.single_channel:
            index = (pixel[:, None, :] * C + np.arange(C)[None, :, None]).reshape(-1, h * w)
            group = np.tile(np.arange(C), pixel.shape[0]) if self.colour == "multi" else np.zeros(len(index), int)
        else:
            index = (pixel[:, :, None] * C + np.arange(C)[None, None, :]).reshape(pixel.shape[0], h * w * C)
            group = np.zeros(len(index), int)
        object.__setattr__(self, "index", np.ascontiguousarray(index))
        object.__setattr__(self, "group", np.ascontiguousarray(group))
        corners = np.stack(np.meshgrid(np.arange(H - h + 1), np.arange(W - w + 1), indexing="ij"), -1).reshape(-1, 2)
        per_position = len(index) // len(corners)  # C single-channel patches per position, else 1
        object.__setattr__(self, "position", np.repeat(corners, per_position, axis=0).astype(float))
        object.__setattr__(self, "locations", bool(self.locations))

    @property
    def single_channel(self):
        return self.colour in ("none", "multi")

    @property
    def input_dim(self):
        return self.image_shape[0] * self.image_shape[1] * self.channels

    @property
    def n_patches(self):
        """P: the number of terms of f = sum_p w_p g(x^[p]) (positions x channels for single-channel)."""
        return self.index.shape[0]

    @property
    def pixel_dim(self):
        """The pixel values of a patch (what the base kernel sees)."""
        return self.index.shape[1]

    @property
    def patch_dim(self):
        """E: the length of a patch vector (what an inducing patch holds): its pixels, and with
        ``locations`` its (row, column) too."""
        return self.index.shape[1] + (2 if self.locations else 0)

    @property
    def n_groups(self):
        """C independent patch-response GPs for "multi", else one."""
        return self.channels if self.colour == "multi" else 1

    def check(self, X, name="X"):
        X = np.asarray(X, dtype=float)
        if X.ndim == 1:
            X = X[None, :]
        if X.ndim != 2 or X.shape[1] != self.input_dim:
            raise ValueError(f"{name} must hold one flattened {self.image_shape[0]}x{self.image_shape[1]}x"
                             f"{self.channels} image per row ({self.input_dim} columns); got shape {X.shape}")
        return np.ascontiguousarray(X)

    def patches(self, X):
        """[N, P, E] every patch of every image, in the module docstring's order."""
        pixels = self.check(X)[:, self.index]
        if not self.locations:
            return pixels
        where = np.broadcast_to(self.position, (pixels.shape[0],) + self.position.shape)
        return np.concatenate([pixels, where], axis=2)

    def chunks(self, N):
        """Slices of at most CHUNK_VALUES patch values each over N images."""
        step = max(1, CHUNK_VALUES // max(1, self.index.size))
        return [slice(i, min(N, i + step)) for i in range(0, N, step)]

    def scatter(self, dpatches, N):
        """d/dX [N, D] from d/dpatches [N, P, E]: each pixel collects the patches it sits in."""
        out = np.zeros((N, self.input_dim))
        dpatches = dpatches[..., :self.pixel_dim]  # a patch's position does not move with the image
        cols = np.broadcast_to(self.index, dpatches.shape)
        rows = np.broadcast_to(np.arange(N)[:, None, None], dpatches.shape)
        np.add.at(out, (rows.ravel(), cols.ravel()), dpatches.ravel())
        return out


#: largest table of patch codes (levels^E) indexed directly instead of sorted
CODE_TABLE = 1 << 22


def unique_patches(layout, X, levels=None):
    """(U [nU, E], ids [N, P]) with U[ids] == layout.patches(X) exactly (module docstring).

    With ``levels`` (the sorted distinct pixel values, few of them) every patch is coded as an
    integer in base len(levels), built from E gathers of the level indices rather than by
    extracting the [N, P, E] patches; the codes are then ranked by a direct table when
    levels^E is small (binary 3x3 patches: 512 codes) and by a sort otherwise."""
    X = layout.check(X)
    if layout.locations:
        raise ValueError("patches that carry their location are never equal across positions: no unique-patch path")
    L, E = (0 if levels is None else len(levels)), layout.patch_dim
    if L < 2 or E * np.log2(L) > 62:
        return _unique_by_hash(layout.patches(X))
    level = np.searchsorted(levels, X).astype(np.int64)  # [N, D] level index of every pixel
    codes = np.zeros((X.shape[0], layout.n_patches), dtype=np.int64)
    for e in range(E):
        codes *= L
        codes += level[:, layout.index[:, e]]
    if L ** E <= CODE_TABLE:
        present = np.zeros(L ** E, dtype=bool)
        present[codes.ravel()] = True
        keys = np.flatnonzero(present)
        rank = np.cumsum(present) - 1
        ids = rank[codes]
    else:
        keys, ids = np.unique(codes.ravel(), return_inverse=True)
        ids = ids.reshape(codes.shape)
    digits = (keys[:, None] // L ** np.arange(E - 1, -1, -1)[None, :]) % L
    return np.ascontiguousarray(np.asarray(levels, dtype=float)[digits]), ids


def _unique_by_hash(patches):
    N, P, E = patches.shape
    flat = patches.reshape(N * P, E)
    projection = np.random.default_rng(12345).uniform(0.5, 1.5, E) * (1.0 + np.arange(E))
    keys, first, ids = np.unique(flat @ projection, return_index=True, return_inverse=True)
    U = flat[first]
    if not np.array_equal(U[ids.ravel()], flat):  # two different patches share a key
        U, ids = np.unique(flat, axis=0, return_inverse=True)
    return np.ascontiguousarray(U), ids.reshape(N, P)
