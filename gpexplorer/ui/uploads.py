"""CSV uploads shared by the labs: size and row limits checked before anything is plotted.

Every refusal is a ValueError that names the file (the labs show it under the upload and keep
the data they had): an empty file, one of blank space only, binary content (NUL bytes), text
that is not UTF-8, a header without rows, more than ``MAX_UPLOAD_BYTES`` (the browser refuses
those before sending, ``gpexplorer/ui/file_input.py``; this is the server's own check), too few
or too many rows, and values whose squares overflow double precision."""

from __future__ import annotations

from gpexplorer import datasets

MAX_UPLOAD_BYTES = 2_000_000
#: larger values are finite, but their squares (in every kernel and likelihood) overflow float64
MAX_MAGNITUDE = 1e100


def read_upload(contents: bytes, filename: str, max_rows: int, min_rows: int):
    """Validate an uploaded CSV (size, rows, numbers) into a Dataset; ValueError explains why not.
    Each lab adds its own limits on top."""
    if contents is None or len(contents) == 0:
        raise ValueError(f"{filename} is empty (0 bytes); a CSV needs a header row and data rows")
    if len(contents) > MAX_UPLOAD_BYTES:
        raise ValueError(f"{filename} is {len(contents) / 1e6:.1f} MB; uploads are limited to "
                         f"{MAX_UPLOAD_BYTES / 1e6:.0f} MB")
    if not contents.strip():
        raise ValueError(f"{filename} holds only blank space ({len(contents):,} bytes); a CSV needs a "
                         "header row and data rows")
    if b"\x00" in contents:
        raise ValueError(f"{filename} is not a text file (it holds NUL bytes); upload a CSV saved as text")
    try:
        ds = datasets.from_csv(contents, max_bytes=MAX_UPLOAD_BYTES, max_rows=max_rows, name=filename)
    except ValueError as err:
        raise ValueError(str(err) if str(err).startswith(filename) else f"{filename}: {err}") from None
    if ds.n < min_rows:
        raise ValueError(f"{filename} has {ds.n} data row(s); at least {min_rows} are needed")
    columns = [(name, ds.X[:, j]) for j, name in enumerate(ds.meta.get("x_columns") or
                                                        [f"x{j + 1}" for j in range(ds.input_dim)])]
    columns.append((ds.meta.get("y_column") or "y", ds.y))
    for name, values in columns:
        largest = float(abs(values).max())
        if largest > MAX_MAGNITUDE:
            raise ValueError(f"column {name} has values up to {largest:.0e}; they must be below "
                             f"{MAX_MAGNITUDE:.0e} in magnitude, since their squares would overflow double "
                             "precision (rescale the column, e.g. to standard units)")
    return ds
