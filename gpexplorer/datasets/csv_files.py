"""Reading a user's CSV file into a :class:`gpexplorer.datasets.arrays.Dataset`, with a message
naming the first bad cell, row limits and size limits."""

from __future__ import annotations

import csv
import io
import math
import os
from pathlib import Path

import numpy as np

from gpexplorer.datasets.arrays import Dataset, from_arrays

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
