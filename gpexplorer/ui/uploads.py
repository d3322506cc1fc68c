"""CSV uploads shared by the labs: size and row limits checked before anything is plotted."""

from __future__ import annotations

from gpexplorer import datasets

MAX_UPLOAD_BYTES = 2_000_000


def read_upload(contents: bytes, filename: str, max_rows: int, min_rows: int):
    """Validate an uploaded CSV (size, rows, numbers) into a Dataset; ValueError explains why not.
    Each lab adds its own limits on top."""
    if contents is None or len(contents) == 0:
        raise ValueError(f"{filename} is empty")
    if len(contents) > MAX_UPLOAD_BYTES:
        raise ValueError(f"{filename} is {len(contents) / 1e6:.1f} MB; uploads are limited to "
                         f"{MAX_UPLOAD_BYTES / 1e6:.0f} MB")
    ds = datasets.from_csv(contents, max_bytes=MAX_UPLOAD_BYTES, max_rows=max_rows, name=filename)
    if ds.n < min_rows:
        raise ValueError(f"{filename} has {ds.n} data row(s); at least {min_rows} are needed")
    return ds
