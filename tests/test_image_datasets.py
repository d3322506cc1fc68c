"""Tests for gpexplorer.datasets.images: the convolutional GPs' image data sets (issue 26)."""

import gzip
import hashlib
import re
import time

import numpy as np
import pytest
from numpy.lib.stride_tricks import sliding_window_view

from gpexplorer.datasets import DATASETS, data_file, load, mnist5k
from gpexplorer.datasets.arrays import assets_dir
from gpexplorer.datasets.images import FASHION_CLASSES, FASHION_FILES, make_fashion_subset, read_idx

IMAGE_SETS = ("rectangles", "mnist01", "mnist10", "fashion_mnist5k", "colour_patches")


def _unique_patches(images):
    """The distinct 3x3 patches of binary images, each read as a 9-bit number."""
    windows = sliding_window_view(images.astype(np.int64), (3, 3), axis=(1, 2))
    return np.unique(windows.reshape(-1, 9) @ (1 << np.arange(9)))


def _hash(path):
    return hashlib.sha256(path.read_bytes()).hexdigest()


# ------------------------------------------------------------------------------- registry


@pytest.mark.parametrize("name", IMAGE_SETS)
def test_every_image_set_is_registered_with_its_shape_and_what_it_stands_for(name):
    start = time.perf_counter()
    ds = load(name)
    assert time.perf_counter() - start < 5.0
    assert name in DATASETS and ds.name == name
    H, W = ds.meta["image_shape"]
    assert ds.X.shape[1] == ds.X_test.shape[1] == H * W * ds.meta["channels"]
    assert 0.0 <= ds.X.min() and ds.X.max() <= 1.0 and 0.0 <= ds.X_test.min() and ds.X_test.max() <= 1.0
    assert isinstance(ds.meta["synthetic"], bool) and ds.meta["substitute_for"]
    assert len(ds.meta["class_names"]) == ds.meta["classes"]
    assert set(np.unique(ds.y)) == set(np.unique(ds.y_test)) == set(range(ds.meta["classes"]))
    assert ds.meta["synthetic"] == (name in ("rectangles", "colour_patches"))


# ------------------------------------------------------------------------------- rectangles


def test_rectangles_shapes_labels_and_the_45_unique_patches():
    ds = load("rectangles")
    assert ds.X.shape == (1200, 784) and ds.X_test.shape == (2000, 784)
    assert set(np.unique(ds.X)) == set(np.unique(ds.X_test)) == {0.0, 1.0}
    assert int(ds.y.sum()) == 542 and int(ds.y_test.sum()) == 996
    train, test = ds.X.reshape(-1, 28, 28), ds.X_test.reshape(-1, 28, 28)
    assert len(_unique_patches(train)) == len(_unique_patches(test)) == 45
    assert len(_unique_patches(np.concatenate([train, test]))) == 45
    for images, labels in ((train, ds.y), (test, ds.y_test)):
        height = np.array([np.ptp(np.flatnonzero(im.any(axis=1))) + 1 for im in images])
        width = np.array([np.ptp(np.flatnonzero(im.any(axis=0))) + 1 for im in images])
        np.testing.assert_array_equal(height > width, labels == 1)
        assert np.abs(height - width).min() >= 3 and min(height.min(), width.min()) == 3


# ------------------------------------------------------------------------------- MNIST splits


@pytest.mark.parametrize("name, digits, n_train, n_test", [("mnist01", (0, 1), 800, 200),
                                                           ("mnist10", tuple(range(10)), 4000, 1000)])
def test_mnist_splits_are_stratified_disjoint_and_rows_of_mnist5k(name, digits, n_train, n_test):
    ds, full = load(name), mnist5k()
    assert ds.X.shape == (n_train, 784) and ds.X_test.shape == (n_test, 784)
    np.testing.assert_array_equal(np.bincount(ds.y.astype(int)), [n_train // len(digits)] * len(digits))
    np.testing.assert_array_equal(np.bincount(ds.y_test.astype(int)), [n_test // len(digits)] * len(digits))
    train, test = ds.meta["train_index"], ds.meta["test_index"]
    assert not set(train) & set(test)
    assert set(train) | set(test) == set(np.flatnonzero(np.isin(full.y, digits)))
    np.testing.assert_array_equal(ds.X, full.X[train])
    np.testing.assert_array_equal(ds.y_test, full.y[test])
    assert ds.y[:50].std() > 0  # mixed order, not the file's class blocks


def test_mnist_splits_follow_their_seed_and_test_fraction():
    a, b, c = load("mnist01"), load("mnist01", seed=0), load("mnist01", seed=1)
    np.testing.assert_array_equal(a.X, b.X)
    np.testing.assert_array_equal(a.meta["test_index"], b.meta["test_index"])
    assert set(a.meta["test_index"]) != set(c.meta["test_index"])
    half = load("mnist10", test_fraction=0.5)
    assert len(half.y) == len(half.y_test) == 2500
    for bad in (0.0, 1.0, -0.1, "0.2", True, 0.0001):
        with pytest.raises(ValueError, match="test_fraction"):
            load("mnist01", test_fraction=bad)


# ------------------------------------------------------------------------------- Fashion-MNIST


def test_fashion_mnist5k_is_class_balanced_with_named_classes():
    ds = load("fashion_mnist5k")
    assert ds.X.shape == (4000, 784) and ds.X_test.shape == (1000, 784)
    np.testing.assert_array_equal(np.bincount(ds.y.astype(int)), [400] * 10)
    np.testing.assert_array_equal(np.bincount(ds.y_test.astype(int)), [100] * 10)
    assert ds.meta["class_names"] == FASHION_CLASSES and ds.meta["class_names"][9] == "Ankle boot"
    for index, total in ((ds.meta["train_index"], 60000), (ds.meta["test_index"], 10000)):
        assert np.all(np.diff(index) > 0) and 0 <= index.min() and index.max() < total
    assert 0.25 < ds.X.mean() < 0.33  # Fashion-MNIST's mean pixel is 0.286
    assert np.all(np.isclose(ds.X * 255.0, np.round(ds.X * 255.0)))


@pytest.mark.parametrize("name", ["rectangles_28x28.npz", "fashion_mnist_5k.npz"])
def test_shipped_assets_match_their_provenance_record(name):
    record = (assets_dir() / "PROVENANCE.md").read_text()
    row = re.search(rf"^\| {re.escape(name)} \|.*\| (\d+) \| ([0-9a-f]{{64}}) \|$", record, re.M)
    assert row, f"assets/PROVENANCE.md has no table row for {name}"
    path = data_file(name)
    assert path.stat().st_size == int(row.group(1)) and _hash(path) == row.group(2)


def _write_idx(path, array):
    header = bytes([0, 0, 0x08, array.ndim]) + b"".join(int(d).to_bytes(4, "big") for d in array.shape)
    with gzip.open(path, "wb") as fh:
        fh.write(header + array.astype(np.uint8).tobytes())


@pytest.fixture
def fake_package(tmp_path):
    """An unpacked stand-in for dataset-fashion-mnist: 10 classes, 6 train and 3 test images each."""
    folder = tmp_path / "deb" / "usr/share/datasets/fashion-mnist"
    folder.mkdir(parents=True)
    rng = np.random.default_rng(5)
    for split, n in (("train", 60), ("test", 30)):
        labels = rng.permutation(np.arange(n) % 10)
        images = rng.integers(0, 256, (n, 28, 28))
        images[:, 0, 0] = np.arange(n)  # each image names its own source row
        _write_idx(folder / FASHION_FILES[f"{split}_images"], images)
        _write_idx(folder / FASHION_FILES[f"{split}_labels"], labels)
    return tmp_path / "deb"


def test_make_fashion_subset_is_balanced_reproducible_and_indexes_its_source(fake_package, tmp_path):
    out1, out2 = tmp_path / "a.npz", tmp_path / "b.npz"
    arrays = make_fashion_subset(fake_package, out1, seed=3, per_class=(4, 2))
    make_fashion_subset(fake_package / "usr/share/datasets/fashion-mnist", out2, seed=3, per_class=(4, 2))
    assert out1.read_bytes() == out2.read_bytes()
    make_fashion_subset(fake_package, out2, seed=4, per_class=(4, 2))
    assert _hash(out1) != _hash(out2)
    folder = fake_package / "usr/share/datasets/fashion-mnist"
    with np.load(out1) as d:
        for split, n_per in (("train", 4), ("test", 2)):
            X, y, index = d[f"X_{split}"], d[f"y_{split}"], d[f"{split}_index"]
            assert X.dtype == y.dtype == np.uint8 and X.shape == (10 * n_per, 28, 28)
            np.testing.assert_array_equal(np.bincount(y), [n_per] * 10)
            np.testing.assert_array_equal(X[:, 0, 0], index)
            np.testing.assert_array_equal(y, read_idx(folder / FASHION_FILES[f"{split}_labels"])[index])
            np.testing.assert_array_equal(X, arrays[f"X_{split}"])


def test_make_fashion_subset_and_read_idx_reject_bad_input(fake_package, tmp_path):
    with pytest.raises(ValueError, match="source_dir .* lacks train-images"):
        make_fashion_subset(tmp_path / "empty", tmp_path / "x.npz")
    with pytest.raises(ValueError, match="per_class asks 7 train images of class 0; the file has 6"):
        make_fashion_subset(fake_package, tmp_path / "x.npz", per_class=(7, 1))
    bad = tmp_path / "bad.gz"
    with gzip.open(bad, "wb") as fh:
        fh.write(b"PK\x03\x04rest")
    with pytest.raises(ValueError, match="not an IDX file"):
        read_idx(bad)
    short = tmp_path / "short"
    short.write_bytes(bytes([0, 0, 8, 1]) + (5).to_bytes(4, "big") + b"abc")
    with pytest.raises(ValueError, match=r"header says \(5,\).*holds 3"):
        read_idx(short)


# ------------------------------------------------------------------------------- colour task


def test_colour_patches_shapes_balance_and_seeds():
    ds = load("colour_patches", n_train=60, n_test=40, size=12, seed=2)
    assert ds.X.shape == (60, 432) and ds.X_test.shape == (40, 432)
    assert ds.y.sum() == 30 and ds.y_test.sum() == 20
    again, other = load("colour_patches", n_train=60, n_test=40, size=12, seed=2), load("colour_patches", seed=3)
    np.testing.assert_array_equal(ds.X, again.X)
    assert not np.allclose(load("colour_patches").X, other.X)
    more = load("colour_patches", n_train=80, n_test=40, size=12, seed=2)
    np.testing.assert_array_equal(more.X_test, ds.X_test)  # the test set does not depend on n_train
    for kwargs, label in (({"n_train": 1}, "n_train"), ({"n_test": 2.5}, "n_test"), ({"size": 8}, "size")):
        with pytest.raises(ValueError, match=label):
            load("colour_patches", **kwargs)


def _channel_bags(images, colour):
    """Bags of binarised 3x3 patches: one bag of 27-bit colour patches, or one bag of 9-bit patches
    per channel; rows are images, columns are counts of each pattern."""
    on = sliding_window_view(images > 0.5, (3, 3), axis=(1, 2))  # [N, P, P, C, 3, 3]
    n = len(images)
    if colour:
        return [np.moveaxis(on, 3, -1).reshape(n, -1, 27) @ (1 << np.arange(27))]
    per_channel = np.moveaxis(on, 3, 1).reshape(n, 3, -1, 9) @ (1 << np.arange(9))
    return [per_channel[:, c] for c in range(3)]


def _bag_accuracy(train, y, test, y_test, colour):
    """Test accuracy of a ridge least-squares classifier on bag-of-patch counts."""
    columns, columns_test = [np.ones((len(train), 1))], [np.ones((len(test), 1))]
    for codes, codes_test in zip(_channel_bags(train, colour), _channel_bags(test, colour)):
        vocab = np.unique(codes)  # patterns unseen in training are dropped
        for c, out in ((codes, columns), (codes_test, columns_test)):
            pos = np.clip(np.searchsorted(vocab, c), 0, len(vocab) - 1)
            known = vocab[pos] == c
            rows = np.broadcast_to(np.arange(len(c))[:, None], c.shape)
            out.append(np.bincount(rows[known] * len(vocab) + pos[known],
                                   minlength=len(c) * len(vocab)).reshape(len(c), len(vocab)))
    A, A_test = np.hstack(columns).astype(float), np.hstack(columns_test).astype(float)
    w = np.linalg.solve(A.T @ A + 1e-3 * np.eye(A.shape[1]), A.T @ (2.0 * y - 1.0))
    return np.mean((A_test @ w > 0) == (y_test == 1))


def test_colour_patches_no_single_channel_carries_the_label_but_colour_patches_do():
    ds = load("colour_patches", n_train=2000, n_test=2000, seed=1)
    train, test = ds.X.reshape(-1, 10, 10, 3), ds.X_test.reshape(-1, 10, 10, 3)
    yellow = ((test[..., 0] > 0.5) & (test[..., 1] > 0.5)).any(axis=(1, 2))
    np.testing.assert_array_equal(yellow, ds.y_test == 1)  # channels last: column (i*W + j)*C + c
    for c in range(3):
        mean, on = train[..., c].mean(axis=(1, 2)), (train[..., c] > 0.5).sum(axis=(1, 2))
        for stat in (mean, on):
            a, b = stat[ds.y == 1], stat[ds.y == 0]
            assert abs(a.mean() - b.mean()) < 4.0 * np.sqrt(a.var() / len(a) + b.var() / len(b))
        np.testing.assert_allclose(np.bincount(on[ds.y == 1], minlength=13)[:13] / 1000,
                                   np.bincount(on[ds.y == 0], minlength=13)[:13] / 1000, atol=0.05)
    assert _bag_accuracy(train, ds.y, test, ds.y_test, colour=False) < 0.56
    assert _bag_accuracy(train, ds.y, test, ds.y_test, colour=True) > 0.9
    leaky, leaky_test = train.copy(), test.copy()  # control: blank class 0's green channel
    leaky[ds.y == 0, :, :, 1] = 0.1
    leaky_test[ds.y_test == 0, :, :, 1] = 0.1
    assert _bag_accuracy(leaky, ds.y, leaky_test, ds.y_test, colour=False) > 0.8
