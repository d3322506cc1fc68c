"""FG's packed factor: the lower triangle of L_j row by row with its diagonal as logs (the
free-vector block :class:`gpexplorer.variational.posterior.FullGaussian` keeps per latent), and
the positions the fast paths and the whitened coordinates index it by."""

from __future__ import annotations

import functools

import numpy as np


@functools.lru_cache(maxsize=64)
def tril_flat_positions(m):
    """Flat (row-major) positions of np.tril_indices(m) in an (m, m) array."""
    r, c = np.tril_indices(m)
    out = r * m + c
    out.flags.writeable = False
    return out


def diag_positions(m):
    """Positions of the diagonal within np.tril_indices(m) (row-major lower triangle)."""
    r = np.arange(m)
    return r * (r + 1) // 2 + r


def pack_factor(L):
    """The lower triangle of L row by row, its diagonal as logs (FG's factor block)."""
    m = L.shape[0]
    out = np.asarray(L, dtype=float).reshape(-1)[tril_flat_positions(m)].copy()
    out[diag_positions(m)] = np.log(out[diag_positions(m)])
    return out


def unpack_factor(block, m):
    """The (m, m) lower-triangular factor from :func:`pack_factor`'s block."""
    L = np.zeros((m, m))
    flat = L.reshape(-1)
    flat[tril_flat_positions(m)] = block
    d = np.arange(m) * (m + 1)
    flat[d] = np.exp(flat[d])
    return L


__all__ = ["diag_positions", "pack_factor", "tril_flat_positions", "unpack_factor"]
