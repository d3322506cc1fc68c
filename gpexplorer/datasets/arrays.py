"""The ``Dataset`` container and validated construction from arrays (messages meant for the
person who supplied the data)."""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

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


#: where the project's shared data collection keeps the originals of ``assets/``
SHARED_DATASETS = Path("/work/shared/datasets")


def data_file(name: str) -> Path:
    """``assets/<name>``, else the shared collection's copy (with a note on stderr), else a
    ValueError saying where the file belongs."""
    path = assets_dir() / name
    if path.is_file():
        return path
    shared = SHARED_DATASETS / name
    if shared.is_file():
        print(f"note: {path} is missing; reading {shared} instead (copy it into assets/, see assets/PROVENANCE.md)",
              file=sys.stderr, flush=True)
        return shared
    raise ValueError(f"data file {name} is missing: put it in {path.parent} (copied from {SHARED_DATASETS}, "
                     "see assets/PROVENANCE.md; or set GPEXPLORER_ASSETS to the directory holding it)")


# --------------------------------------------------------------------------------------------
# Validation of user arrays
# --------------------------------------------------------------------------------------------

def to_float(a, label: str) -> np.ndarray:
    try:
        arr = np.array(a, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{label} contains non-numeric data ({type(exc).__name__}: "
                         f"{str(exc)[:60]})") from None
    return arr


def check_xy(X, y, label_x: str, label_y: str, min_rows: int) -> tuple[np.ndarray, np.ndarray]:
    X = to_float(X, label_x)
    y = to_float(y, label_y)
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
    X, y = check_xy(X, y, "X", "y", min_rows=2)
    if (X_test is None) != (y_test is None):
        raise ValueError("X_test and y_test must be given together (one of them is None)")
    if X_test is not None:
        X_test, y_test = check_xy(X_test, y_test, "X_test", "y_test", min_rows=1)
        if X_test.shape[1] != X.shape[1]:
            raise ValueError(f"X_test has {X_test.shape[1]} columns but X has {X.shape[1]}")
    return Dataset(X=X, y=y, X_test=X_test, y_test=y_test, name=str(name),
                   meta=dict(meta or {}))
