"""Tests for gpexplorer.datasets: registry entries, array/CSV validation."""

import numpy as np
import pytest
import scipy.linalg
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from gpexplorer.datasets import DATASETS, Dataset, from_arrays, from_csv, load


# ------------------------------------------------------------------------------- registry


@pytest.mark.parametrize("name", sorted(DATASETS))
def test_registry_entry_shapes_and_dtypes(name):
    ds = load(name)
    assert isinstance(ds, Dataset)
    assert ds.name == name
    assert ds.X.ndim == 2 and ds.y.ndim == 1
    assert ds.X.shape[0] == ds.y.shape[0] >= 2
    assert ds.X.dtype == np.float64 and ds.y.dtype == np.float64
    assert ds.input_dim == ds.X.shape[1]
    assert np.all(np.isfinite(ds.X)) and np.all(np.isfinite(ds.y))
    assert (ds.X_test is None) == (ds.y_test is None)
    if ds.X_test is not None:
        assert ds.X_test.dtype == np.float64 and ds.y_test.dtype == np.float64
        assert ds.X_test.shape == (ds.y_test.shape[0], ds.input_dim)
    assert isinstance(ds.meta, dict) and "provenance" in ds.meta


def test_load_unknown_name_lists_valid_names():
    with pytest.raises(ValueError, match=r"unknown dataset 'nope'.*mcycle.*snelson"):
        load("nope")


def test_snelson_values():
    ds = load("snelson")
    assert ds.X.shape == (200, 1) and ds.y.shape == (200,)
    assert ds.X[0, 0] == pytest.approx(5.7007757)
    assert ds.X.min() == pytest.approx(0.0592, abs=1e-4)
    assert ds.X.max() == pytest.approx(5.9658, abs=1e-4)
    assert ds.y.min() == pytest.approx(-2.152, abs=1e-3)
    assert ds.y.max() == pytest.approx(1.247, abs=1e-3)
    assert "GPflux" in ds.meta["provenance"]


def test_snelson100_is_deterministic_subset():
    full, sub, again = load("snelson"), load("snelson100"), load("snelson100")
    assert sub.X.shape == (100, 1) and sub.y.shape == (100,)
    rows_full = {(x, y) for x, y in zip(full.X[:, 0], full.y)}
    rows_sub = list(zip(sub.X[:, 0], sub.y))
    assert len(set(rows_sub)) == 100
    assert set(rows_sub) <= rows_full
    np.testing.assert_array_equal(sub.X, again.X)
    np.testing.assert_array_equal(sub.y, again.y)
    idx = np.sort(np.random.default_rng(0).choice(200, 100, replace=False))
    np.testing.assert_array_equal(sub.X, full.X[idx])


def test_mcycle():
    ds = load("mcycle")
    assert ds.X.shape == (133, 1) and ds.y.shape == (133,)
    assert ds.X[0, 0] == pytest.approx(2.4)
    assert ds.meta["heteroscedastic"] is True and ds.meta["standardized"] is False
    z = load("mcycle", standardize=True)
    assert z.X.mean() == pytest.approx(0, abs=1e-12) and z.X.std() == pytest.approx(1)
    assert z.y.mean() == pytest.approx(0, abs=1e-12) and z.y.std() == pytest.approx(1)
    np.testing.assert_allclose(z.y * z.meta["y_scale"] + z.meta["y_mean"], ds.y, atol=1e-12)
    np.testing.assert_allclose(z.X * z.meta["x_scale"] + z.meta["x_mean"], ds.X, atol=1e-12)


def test_synthetic1d_reproducible_and_seeded():
    a, b, c = load("synthetic1d"), load("synthetic1d", seed=0), load("synthetic1d", seed=1)
    np.testing.assert_array_equal(a.X, b.X)
    np.testing.assert_array_equal(a.y, b.y)
    np.testing.assert_array_equal(a.y_test, b.y_test)
    assert not np.allclose(a.X, c.X)
    assert a.X.shape == (200, 1) and a.X_test.shape == (500, 1)
    assert 0 <= a.X.min() and a.X.max() <= 6
    np.testing.assert_allclose(a.X_test[:, 0], np.linspace(0, 6, 500))
    x = a.X_test[:, 0]
    np.testing.assert_allclose(a.meta["f_test"], np.sin(3 * x) + 0.3 * np.cos(7 * x))
    resid = a.y_test - a.meta["f_test"]
    assert 0.06 < resid.var() < 0.12  # noise_variance 0.09


def _se_log_marginal(X, y, lengthscale, sf2, noise):
    d2 = np.sum((X[:, None, :] - X[None, :, :]) ** 2, axis=-1)
    K = sf2 * np.exp(-0.5 * d2 / lengthscale**2) + noise * np.eye(len(y))
    L = scipy.linalg.cholesky(K, lower=True)
    alpha = scipy.linalg.cho_solve((L, True), y)
    return -0.5 * y @ alpha - np.sum(np.log(np.diag(L))) - 0.5 * len(y) * np.log(2 * np.pi)


def test_thesis4d():
    ds = load("thesis4d")
    assert ds.X.shape == (1024, 4) and ds.y.shape == (1024,)
    assert ds.X_test.shape == (1024, 4) and ds.y_test.shape == (1024,)
    assert 0.5 < np.var(ds.y) < 1.6
    hyp = ds.meta["true_hyperparameters"]
    assert hyp == {"lengthscale": 1.5, "signal_variance": 1.0, "noise_variance": 0.01}
    assert abs(ds.X.mean()) < 0.1 and 0.9 < ds.X.std() < 1.1
    good = _se_log_marginal(ds.X, ds.y, 1.5, 1.0, 0.01)
    wrong = _se_log_marginal(ds.X, ds.y, 0.15, 1.0, 0.01)
    assert good - wrong > 500
    again = load("thesis4d", seed=0)
    np.testing.assert_array_equal(again.y, ds.y)
    assert not np.allclose(load("thesis4d", seed=1).y, ds.y)


# ------------------------------------------------------------------------------- from_arrays


def test_from_arrays_accepts_1d_x_and_column_y():
    ds = from_arrays([1, 2, 3], [[1.0], [2.0], [3.0]], name="t")
    assert ds.X.shape == (3, 1) and ds.y.shape == (3,)
    assert ds.X.dtype == np.float64 and ds.name == "t" and ds.input_dim == 1


@pytest.mark.parametrize(
    "X, y, pattern",
    [
        ([["a", "b"], ["c", "d"]], [1, 2], r"X contains non-numeric"),
        ([1, 2, 3], ["1", "x", "3"], r"y contains non-numeric"),
        ([1.0, np.nan, 3.0], [1, 2, 3], r"X contains 1 NaN and 0 infinite"),
        ([1.0, 2.0, 3.0], [np.inf, -np.inf, np.nan], r"y contains 1 NaN and 2 infinite"),
        (np.zeros((0, 2)), np.zeros(0), r"empty"),
        ([1, 2, 3], [1, 2], r"length mismatch: X has 3 rows but y has 2"),
        (np.zeros((3, 2, 2)), np.zeros(3), r"1-D or 2-D.*3 dimensions"),
        ([[1.0, 2.0]], [1.0], r"at least 2 rows"),
        ([1, 2, 3], np.zeros((3, 2)), r"y must be 1-D"),
    ],
)
def test_from_arrays_errors(X, y, pattern):
    with pytest.raises(ValueError, match=pattern):
        from_arrays(X, y)


def test_from_arrays_test_split_validation():
    with pytest.raises(ValueError, match="together"):
        from_arrays([1, 2], [1, 2], X_test=[1, 2])
    with pytest.raises(ValueError, match="X_test has 2 columns but X has 1"):
        from_arrays([1, 2], [1, 2], X_test=[[1, 2]], y_test=[1])
    with pytest.raises(ValueError, match="y_test contains 1 NaN"):
        from_arrays([1, 2], [1, 2], X_test=[1], y_test=[np.nan])


@settings(max_examples=50, deadline=None)
@given(hnp.arrays(np.float64, st.tuples(st.integers(2, 30), st.integers(1, 4)),
                  elements=st.floats(-1e6, 1e6)))
def test_from_arrays_roundtrip(a):
    ds = from_arrays(a[:, :-1] if a.shape[1] > 1 else a[:, 0], a[:, -1])
    assert ds.X.shape == (a.shape[0], max(a.shape[1] - 1, 1))
    np.testing.assert_array_equal(ds.y, a[:, -1])


# ------------------------------------------------------------------------------- from_csv


def test_from_csv_defaults_and_sources(tmp_path):
    text = "a,b,target\n1,2,3\n4,5,6\n7,8,9\n"
    path = tmp_path / "data.csv"
    path.write_text(text)
    for src in (text, text.encode(), path, str(path)):
        ds = from_csv(src)
        np.testing.assert_array_equal(ds.X, [[1, 2], [4, 5], [7, 8]])
        np.testing.assert_array_equal(ds.y, [3, 6, 9])
        assert ds.meta["x_columns"] == ["a", "b"] and ds.meta["y_column"] == "target"
    assert from_csv(path).name == "data" and from_csv(text, name="mine").name == "mine"


def test_from_csv_column_selection_ignores_unused_columns():
    text = "id,x,y,z\nr1,1,10,100\nr2,2,20,200\n"
    ds = from_csv(text, x_columns=["x"], y_column="z")
    np.testing.assert_array_equal(ds.X[:, 0], [1, 2])
    np.testing.assert_array_equal(ds.y, [100, 200])


@pytest.mark.parametrize(
    "text, kwargs, pattern",
    [
        ("1,2\n3,4\n5,6\n", {}, r"missing header row"),
        ("", {}, r"CSV is empty"),
        ("x,y\n1,2\n3,4\n", {"y_column": "w"}, r"y column 'w' not found; available columns: x, y"),
        ("x,y\n1,2\n3,4\n", {"x_columns": ["q"]}, r"'q' not found; available columns: x, y"),
        ("x,y\n1,2\n3,hello\n", {}, r"non-numeric value 'hello' in column 'y', data row 2"),
        ("x,y\n1,2\n" + "z" * 50 + ",4\n", {}, r"non-numeric value 'z{20}\.\.\.' in column 'x'"),
        ("x,y\n1,2\n3,nan\n", {}, r"non-finite value 'nan'.*column 'y', data row 2"),
        ("x,y\n1,2\ninf,4\n", {}, r"non-finite value 'inf'.*column 'x'"),
        ("x,y\n1,2\n,4\n", {}, r"empty cell in column 'x', data row 2"),
        ("x,y\n1,2\n", {}, r"single data row"),
        ("x,y\n", {}, r"no data rows"),
        ("x\n1\n2\n", {}, r"at least 2 columns"),
        ("x,y\n1,2\n3,4,5\n", {}, r"ragged rows: data row 2.*3 fields but the header has 2"),
        ("x,y\n1,2\n3\n", {}, r"ragged rows: data row 2.*1 fields"),
        ("x,x\n1,2\n3,4\n", {}, r"duplicate column"),
    ],
)
def test_from_csv_errors(text, kwargs, pattern):
    with pytest.raises(ValueError, match=pattern):
        from_csv(text, **kwargs)


def test_from_csv_byte_limit(tmp_path):
    text = "x,y\n" + "1,2\n" * 100
    with pytest.raises(ValueError, match=r"upload is 404 bytes; the limit is 100 bytes"):
        from_csv(text, max_bytes=100)
    path = tmp_path / "big.csv"
    path.write_text(text)
    with pytest.raises(ValueError, match=r"upload is 404 bytes"):
        from_csv(path, max_bytes=100)


def test_from_csv_row_limit_small():
    text = "x,y\n" + "1,2\n" * 11
    with pytest.raises(ValueError, match=r"more than 10 data rows; the row limit is 10"):
        from_csv(text, max_rows=10)
    assert from_csv("x,y\n" + "1,2\n" * 10, max_rows=10).X.shape == (10, 1)


def test_from_csv_million_rows_rejected_by_row_limit():
    data = b"x,y\n" + b"1,2\n" * 1_000_000  # 4 MB: under the byte limit, over the row limit
    with pytest.raises(ValueError, match=r"row limit is 100,000"):
        from_csv(data)


def test_from_csv_bom_and_blank_lines():
    data = "\ufeffx,y\r\n1,2\r\n\r\n3,4\r\n".encode()
    ds = from_csv(data)
    assert ds.meta["columns"] == ["x", "y"]
    np.testing.assert_array_equal(ds.y, [2, 4])


def test_from_csv_not_utf8():
    with pytest.raises(ValueError, match="not UTF-8"):
        from_csv(b"x,y\n1,\xff\n2,3\n")


@settings(max_examples=40, deadline=None)
@given(hnp.arrays(np.float64, st.tuples(st.integers(2, 20), st.integers(2, 4)),
                  elements=st.floats(allow_nan=False, allow_infinity=False)))
def test_from_csv_roundtrip(a):
    header = ",".join(f"c{j}" for j in range(a.shape[1]))
    body = "\n".join(",".join(repr(float(v)) for v in row) for row in a)
    ds = from_csv(header + "\n" + body + "\n")
    np.testing.assert_array_equal(ds.X, a[:, :-1])
    np.testing.assert_array_equal(ds.y, a[:, -1])


# ------------------------------------------------------------------------------- papers' data


def test_coal_mining_binnings_count_every_event():
    paper, page = load("coal_mining"), load("coal_mining", n_bins=100, span=(1851.0, 1963.0))
    assert paper.X.shape == (811, 1) and paper.y.sum() == 191 == page.y.sum()
    assert paper.meta["bin_days"] == pytest.approx(50.0)
    assert paper.meta["offset"] == pytest.approx(np.log(191 / 811))
    assert page.X[0, 0] == pytest.approx(1851.0 + 0.5 * 1.12) and page.meta["bin_years"] == pytest.approx(1.12)
    with pytest.raises(ValueError, match="span"):
        load("coal_mining", span=(1963.0, 1851.0))


def test_breast_cancer_and_toy_inversion():
    cancer = load("breast_cancer")
    assert cancer.X.shape == (569, 30) and set(cancer.y.tolist()) == {0.0, 1.0} and len(cancer.meta["features"]) == 30
    toy = load("toy_inversion", forward="tanh2", n_points=50, seed=1)
    assert toy.X.shape == (50, 1) and toy.f.shape == (50,) and toy.forward == "tanh2"
    np.testing.assert_array_equal(toy.y, load("toy_inversion", forward="tanh2", n_points=50, seed=1).y)


def test_a_missing_data_file_names_where_it_belongs(monkeypatch, tmp_path):
    from gpexplorer.datasets import arrays

    monkeypatch.setenv("GPEXPLORER_ASSETS", str(tmp_path))
    monkeypatch.setattr(arrays, "SHARED_DATASETS", tmp_path / "nowhere")
    with pytest.raises(ValueError, match="snelson1d.csv is missing"):
        load("snelson")
