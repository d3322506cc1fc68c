"""``gpexplorer warmup``: compile the numba kernels a first page needs and cache them on disk."""

from __future__ import annotations


def main() -> None:
    """Placeholder until the warm-up set is measured (issue 14 item 1)."""
    raise NotImplementedError
