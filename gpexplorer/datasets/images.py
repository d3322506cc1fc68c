"""Image data sets for the convolutional GPs (van der Wilk thesis ch. 5; issue 26): the rectangles,
MNIST 0-vs-1 and 10 classes, a Fashion-MNIST subset and a synthetic colour task.

Every loader returns images as float64 rows X [N, H*W*C] in [0, 1], flattened row-major with
channels last (pixel (i, j, c) is column (i*W + j)*C + c, the layout of
:mod:`gpexplorer.kernels.patch_layout`), labels y as float64 class numbers, and a test split.
``meta`` says the image shape, the class names, whether the images are ``synthetic`` and what
they stand in for (``substitute_for``): the thesis' full MNIST, Larochelle's rectangles and CIFAR-10
are not available offline. Files: ``assets/`` (see ``assets/PROVENANCE.md``).
"""

from __future__ import annotations

import gzip
import io
import zipfile
from pathlib import Path

import numpy as np

from gpexplorer.datasets.arrays import Dataset, data_file, from_arrays
from gpexplorer.datasets.tables import mnist5k

__all__ = ["FASHION_CLASSES", "FASHION_FILES", "FASHION_SUBSET_SEED", "rectangles", "mnist01", "mnist10",
           "fashion_mnist5k", "make_fashion_subset", "read_idx", "colour_patches"]

FASHION_CLASSES = ("T-shirt/top", "Trouser", "Pullover", "Dress", "Coat", "Sandal", "Shirt", "Sneaker", "Bag",
                   "Ankle boot")
#: the four IDX files of Debian's dataset-fashion-mnist package (under usr/share/datasets/fashion-mnist)
FASHION_FILES = {"train_images": "train-images-idx3-ubyte.gz", "train_labels": "train-labels-idx1-ubyte.gz",
                 "test_images": "t10k-images-idx3-ubyte.gz", "test_labels": "t10k-labels-idx1-ubyte.gz"}
FASHION_SUBSET_SEED = 26
_FASHION_DIR = Path("usr/share/datasets/fashion-mnist")
_IDX_TYPES = {0x08: np.uint8}


def _split_dataset(X, y, X_test, y_test, name, meta):
    return from_arrays(X, y, name=name, X_test=X_test, y_test=y_test, meta=meta)


# --------------------------------------------------------------------------------------------
# Rectangles
# --------------------------------------------------------------------------------------------

def rectangles() -> Dataset:
    """Synthetic rectangles (thesis §5.5.1, §5.6.1), 28 x 28 binary images: X [1200, 784] and
    X_test [2000, 784] in {0, 1}; y = 1 for a tall rectangle (height > width), 0 for a wide one.

    Each image is the one-pixel outline of an axis-aligned rectangle with sides 3-28 pixels and
    |height - width| >= 3. Generated in the style of Larochelle et al. (2007), whose set (1200 train
    / 50,000 test, minimum side 4: 35 unique 3x3 patches) is not available offline; this one holds
    45 unique 3x3 patches, the blank one included.
    """
    path = data_file("rectangles_28x28.npz")
    with np.load(path) as d:
        arrays = {k: d[k] for k in ("X_train", "y_train", "X_test", "y_test")}
    for split in ("train", "test"):
        X, y = arrays[f"X_{split}"], arrays[f"y_{split}"]
        if X.shape[1:] != (28, 28) or len(X) != len(y) or not (set(np.unique(X)) | set(np.unique(y))) <= {0, 1}:
            raise ValueError(f"{path.name}: X_{split} must be [N, 28, 28] and y_{split} [N], all values 0 or 1")
    return _split_dataset(arrays["X_train"].reshape(-1, 784), arrays["y_train"],
                          arrays["X_test"].reshape(-1, 784), arrays["y_test"], "rectangles",
                          {"provenance": "synthetic, in the style of Larochelle et al. (2007) 'rectangles' "
                                         "(assets/rectangles_28x28.npz, seed 20240101; see assets/PROVENANCE.md)",
                           "synthetic": True, "image_shape": (28, 28), "channels": 1, "classes": 2,
                           "class_names": ("wide", "tall"), "positive_class": "tall (height > width)",
                           "substitute_for": "Larochelle et al.'s 1200 / 50,000 rectangles (thesis §5.5.1)"})


# --------------------------------------------------------------------------------------------
# MNIST splits of assets/mnist_5k.npz
# --------------------------------------------------------------------------------------------

def _stratified_split(y, test_fraction, seed):
    """Per class, a seeded random ``round(test_fraction * n_class)`` rows go to the test side; both
    sides come back in a seeded random order (the file is sorted by class)."""
    if isinstance(test_fraction, bool) or not isinstance(test_fraction, (int, float, np.floating)) \
            or not 0.0 < float(test_fraction) < 1.0:
        raise ValueError(f"test_fraction must be a number strictly between 0 and 1; got {test_fraction!r}")
    rng = np.random.default_rng(seed)
    train, test = [], []
    for c in np.unique(y):
        rows = rng.permutation(np.flatnonzero(y == c))
        n_test = int(round(float(test_fraction) * len(rows)))
        if not 0 < n_test < len(rows):
            raise ValueError(f"test_fraction={test_fraction} leaves class {c:g} ({len(rows)} images) with an "
                             "empty train or test side")
        test.append(rows[:n_test])
        train.append(rows[n_test:])
    return rng.permutation(np.concatenate(train)), rng.permutation(np.concatenate(test))


def _mnist_split(digits, seed, test_fraction, name):
    full = mnist5k()
    keep = np.flatnonzero(np.isin(full.y, digits))
    train, test = _stratified_split(full.y[keep], test_fraction, seed)
    train, test = keep[train], keep[test]
    return _split_dataset(full.X[train], full.y[train], full.X[test], full.y[test], name,
                          {"provenance": full.meta["provenance"] + f"; digits {list(digits)}, stratified "
                                         f"split numpy default_rng({seed}), test_fraction {test_fraction}",
                           "synthetic": False, "image_shape": (28, 28), "channels": 1, "classes": len(digits),
                           "class_names": tuple(str(d) for d in digits), "seed": seed,
                           "test_fraction": test_fraction, "train_index": train, "test_index": test,
                           "substitute_for": "the thesis' full MNIST (60,000 train / 10,000 test)"})


def mnist01(seed: int = 0, test_fraction: float = 0.2) -> Dataset:
    """MNIST zeros vs ones (thesis §5.5.2): the 1000 images of digits 0 and 1 in
    ``assets/mnist_5k.npz`` (500 each), pixels in [0, 1], y = the digit. A stratified split: per
    digit, ``round(test_fraction * 500)`` seeded random images are the test set (default 800 / 200).
    ``meta["train_index"]`` / ``["test_index"]`` are the rows of :func:`mnist5k`."""
    return _mnist_split((0, 1), seed, test_fraction, "mnist01")


def mnist10(seed: int = 0, test_fraction: float = 0.2) -> Dataset:
    """All 5000 images of ``assets/mnist_5k.npz`` (500 per digit; thesis §5.5.3 used all of MNIST),
    pixels in [0, 1], y = the digit, split as :func:`mnist01`: by default 4000 train (400 per digit)
    and 1000 test (100 per digit). :func:`mnist5k` is the same images unsplit, in file order."""
    return _mnist_split(tuple(range(10)), seed, test_fraction, "mnist10")


# --------------------------------------------------------------------------------------------
# Fashion-MNIST subset
# --------------------------------------------------------------------------------------------

def read_idx(path) -> np.ndarray:
    """Read an IDX file (LeCun's MNIST format, gzip-compressed when the name ends in ``.gz``) of
    unsigned bytes into an array of the shape its header gives."""
    path = Path(path)
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rb") as fh:
        raw = fh.read()
    if len(raw) < 4 or raw[:2] != b"\0\0" or raw[2] not in _IDX_TYPES:
        raise ValueError(f"{path.name} is not an IDX file of unsigned bytes (magic {raw[:4].hex()})")
    ndim = raw[3]
    dims = tuple(int.from_bytes(raw[4 + 4 * k:8 + 4 * k], "big") for k in range(ndim))
    start = 4 + 4 * ndim
    if len(raw) - start != int(np.prod(dims)):
        raise ValueError(f"{path.name}: the header says {dims} ({int(np.prod(dims))} values) but the file "
                         f"holds {len(raw) - start}")
    return np.frombuffer(raw, _IDX_TYPES[raw[2]], offset=start).reshape(dims)


def _write_npz(out, arrays):
    """``np.savez_compressed`` with fixed zip timestamps, so a rebuild gives the same bytes."""
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as zf:
        for key, value in arrays.items():
            member = io.BytesIO()
            np.lib.format.write_array(member, np.ascontiguousarray(value), allow_pickle=False)
            info = zipfile.ZipInfo(f"{key}.npy", date_time=(1980, 1, 1, 0, 0, 0))
            info.compress_type = zipfile.ZIP_DEFLATED
            zf.writestr(info, member.getvalue(), compresslevel=9)
    Path(out).write_bytes(buf.getvalue())


def make_fashion_subset(source_dir, out, seed: int = FASHION_SUBSET_SEED, per_class: tuple = (400, 100)) -> dict:
    """Write ``assets/fashion_mnist_5k.npz`` from Debian's ``dataset-fashion-mnist`` package.

    ``source_dir``: the directory the .deb was unpacked into (``dpkg-deb -x <deb> <source_dir>``)
    or the folder holding the four IDX files themselves (:data:`FASHION_FILES`). With
    ``rng = numpy.random.default_rng(seed)``, for each class 0-9 in turn ``rng.choice`` draws
    ``per_class[0]`` training-file indices without replacement, then likewise ``per_class[1]``
    test-file indices; each side is sorted by index. ``out`` gets X_train / X_test uint8
    [N, 28, 28], y_train / y_test uint8 and train_index / test_index (rows of the source files),
    deflated with fixed zip timestamps so the same inputs give the same bytes. Returns those arrays.
    """
    base = Path(source_dir)
    if (base / _FASHION_DIR).is_dir():
        base = base / _FASHION_DIR
    missing = [f for f in FASHION_FILES.values() if not (base / f).is_file()]
    if missing:
        raise ValueError(f"source_dir {source_dir} lacks {', '.join(missing)} (unpack dataset-fashion-mnist "
                         "with dpkg-deb -x and pass that directory)")
    raw = {key: read_idx(base / name) for key, name in FASHION_FILES.items()}
    rng = np.random.default_rng(seed)
    arrays = {}
    for split, n_per in zip(("train", "test"), per_class):
        X, y = raw[f"{split}_images"], raw[f"{split}_labels"]
        if X.shape[1:] != (28, 28) or len(X) != len(y):
            raise ValueError(f"source_dir {source_dir}: {split} images {X.shape} do not match labels {y.shape}")
        chosen = []
        for c in range(len(FASHION_CLASSES)):
            rows = np.flatnonzero(y == c)
            if len(rows) < n_per:
                raise ValueError(f"per_class asks {n_per} {split} images of class {c}; the file has {len(rows)}")
            chosen.append(rng.choice(rows, n_per, replace=False))
        index = np.sort(np.concatenate(chosen))
        arrays.update({f"X_{split}": X[index], f"y_{split}": y[index], f"{split}_index": index.astype(np.int32)})
    _write_npz(out, arrays)
    return arrays


def fashion_mnist5k() -> Dataset:
    """5,000 Fashion-MNIST images (Xiao et al. 2017; Zalando, MIT): 4000 train (400 per class) and
    1000 test (100 per class), drawn by :func:`make_fashion_subset` from the package's training and
    test files; pixels in [0, 1], y = the class number (``meta["class_names"]``)."""
    path = data_file("fashion_mnist_5k.npz")
    with np.load(path) as d:
        arrays = {k: d[k] for k in ("X_train", "y_train", "X_test", "y_test", "train_index", "test_index")}
    for split in ("train", "test"):
        X, y = arrays[f"X_{split}"], arrays[f"y_{split}"]
        if X.shape[1:] != (28, 28) or len(X) != len(y) or y.max() >= len(FASHION_CLASSES):
            raise ValueError(f"{path.name}: X_{split} must be [N, 28, 28] and y_{split} [N] with classes 0-9")
    return _split_dataset(arrays["X_train"].reshape(-1, 784) / 255.0, arrays["y_train"],
                          arrays["X_test"].reshape(-1, 784) / 255.0, arrays["y_test"], "fashion_mnist5k",
                          {"provenance": "Fashion-MNIST (Xiao, Rasul & Vollgraf 2017; Zalando SE, MIT) from Debian's "
                                         "dataset-fashion-mnist 0.0~git20200523.55506a9-1; class-balanced subset "
                                         f"(seed {FASHION_SUBSET_SEED}), see assets/PROVENANCE.md",
                           "synthetic": False, "image_shape": (28, 28), "channels": 1, "classes": 10,
                           "class_names": FASHION_CLASSES, "train_index": arrays["train_index"],
                           "test_index": arrays["test_index"],
                           "substitute_for": "a harder 10-class grey-scale task than MNIST at the same size"})


# --------------------------------------------------------------------------------------------
# Synthetic colour task
# --------------------------------------------------------------------------------------------

_RED, _GREEN, _YELLOW, _BLUE = (0,), (1,), (0, 1), (2,)
_SQUARE, _CELL = 2, 3  # 2x2 squares, each in its own 3x3 cell of the image's grid
_EXTRA = 3  # red-only and green-only distractors: 0-2 extra of each, uniformly


def _colour_images(n, size, rng):
    """``n`` images [n, size, size, 3] and balanced labels (see :func:`colour_patches`)."""
    cells = size // _CELL
    y = rng.permutation(np.arange(n) % 2)
    images = rng.uniform(0.0, 0.25, (n, size, size, 3))
    for k in range(n):
        m_red, m_green, m_blue = rng.integers(0, _EXTRA), rng.integers(0, _EXTRA), rng.integers(0, 2)
        if y[k]:
            roles = [_YELLOW] + [_RED] * m_red + [_GREEN] * m_green + [_BLUE] * m_blue
        else:
            roles = [_RED] * (m_red + 1) + [_GREEN] * (m_green + 1) + [_BLUE] * m_blue
        slots = rng.permutation(cells * cells)[:len(roles)]
        shift = rng.integers(0, size - cells * _CELL + 1, 2)
        for slot, channels in zip(slots, roles):
            i, j = np.array(divmod(slot, cells)) * _CELL + shift + rng.integers(0, _CELL - _SQUARE + 1, 2)
            on = rng.uniform(0.75, 1.0, (_SQUARE, _SQUARE, len(channels)))
            images[k][i:i + _SQUARE, j:j + _SQUARE, list(channels)] = on
    return images, y


def colour_patches(n_train: int = 500, n_test: int = 500, size: int = 10, seed: int = 0) -> Dataset:
    """Seeded RGB images [N, size*size*3] (channels last) whose label is a colour conjunction.

    Background pixels are U(0, 0.25) in every channel; 2x2 squares sit in distinct cells of a 3x3-pixel
    grid (shifted as a whole and jittered per square by a pixel) and have their "on" channels
    U(0.75, 1). A class-1 image holds one yellow square (red AND green on); a class-0 image holds
    one red-only and one green-only square instead. Both classes add 0-2 further red-only and 0-2
    green-only distractors and 0-1 blue-only, drawn alike; labels are exactly balanced.

    Why only a colour-patch kernel separates it: every square that is on in the red channel is
    a red or yellow one, and both classes have the same number (1 + extra red) of them in
    uniformly random distinct cells; likewise green. So each channel alone has the same
    distribution in both classes: no per-channel statistic carries label information. Every model
    additive over channels, f(x) = sum_c F_c(x_c) -- the baseline (channels' patches treated
    separately, thesis §5.8), the multi-channel kernel (eq. 5.61-5.62) and the additive
    colour-patch kernel (eq. 5.63-5.64) -- therefore has the same mean E[f | y] in both classes,
    so no threshold on f separates them; the translation-invariant sums see the same bags of
    per-channel patches in both and stay near chance (a linear classifier on per-channel patch
    counts scores about 51%, tests/test_image_datasets.py). A colour-patch kernel (g on the whole h x w x 3 patch) can: a patch with red
    and green both on occurs in class-1 images only, so f = sum_p g(x^[p]) with g responding to it
    classifies every image. Stands in for the thesis' CIFAR-10 (§5.8.1), not available offline.
    """
    for label, value, low in (("n_train", n_train, 2), ("n_test", n_test, 2), ("size", size, 9)):
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < low:
            raise ValueError(f"{label} must be an integer >= {low}; got {value!r}")
    parts = [_colour_images(int(n), int(size), np.random.default_rng((int(seed), 0xC010, side)))
             for side, n in enumerate((n_train, n_test))]
    (X, y), (X_test, y_test) = [(imgs.reshape(len(imgs), -1), labels) for imgs, labels in parts]
    return _split_dataset(X, y, X_test, y_test, "colour_patches",
                          {"provenance": f"synthetic, numpy default_rng(({int(seed)}, 0xC010, 0 train / 1 test))",
                           "synthetic": True, "image_shape": (int(size), int(size)), "channels": 3,
                           "layout": "row-major, channels last: column (i*W + j)*C + c", "classes": 2,
                           "class_names": ("no yellow square", "a yellow square"),
                           "positive_class": "a square with red and green both on", "seed": seed,
                           "substitute_for": "CIFAR-10 in the thesis' colour-kernel comparison (§5.8.1)"})
