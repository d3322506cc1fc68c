"""Jitted leaf of the random Fourier features: [cos P, sin P] * scale in one pass.

numpy's float64 ``cos`` and ``sin`` call the scalar C library here (~37 ns a value on this
machine); a feature matrix of 10^6 x 2,000 spends nearly all its time there. This loop reduces
x to r in [-pi/4, pi/4] with the two-part Cody-Waite constants of fdlibm (k pi/2 exact for
|k| < 2^20), evaluates the Cephes minimax polynomials for sin r and cos r (the same ones as the
C library, error under 1 ulp on that interval) and picks the quadrant with selects, so the loop
has no branch and vectorises: ~2 ns a cos/sin pair, within 2.3e-16 of numpy's values for
|x| < 10^6 (tests/test_random_feature_trig.py). Larger |x| (rare: projections of inputs that
were not standardised) are recomputed with the C library after the pass.

``projected_cos_sin`` forms each row's projections x^T W in a scratch row (inputs four at a time)
and passes it straight to the same cos/sin pass, so few-input features never write the [N, m]
projections out; ``fourier_features`` splits large outputs over one thread per core.

The module is public (not ``_loops``) so that the basis modules may import it
(tests/test_architecture.py).
"""

import math
import os
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from gpexplorer._jit import njit_kernel_loop

#: |x| at and beyond which the C library computes cos x and sin x (k pi/2 is no longer exact)
REDUCTION_LIMIT = 1e6


@njit_kernel_loop
def _cos_sin_row(row, oc, osn, scale):
    """oc = scale cos(row), osn = scale sin(row) for one row of projections."""
    big = False
    for j in range(row.shape[0]):
        x = row[j]
        big |= abs(x) >= REDUCTION_LIMIT
        k = np.floor(x * 0.63661977236758134308 + 0.5)  # nearest multiple of pi/2
        r = (x - k * 1.57079632673412561417e+00) - k * 6.07710050650619224932e-11
        z = r * r
        s = r + r * z * (-1.66666666666666307295e-1 + z * (8.33333333332211858878e-3 + z * (
            -1.98412698295895385996e-4 + z * (2.75573136213857245213e-6 + z * (
                -2.50507477628578072866e-8 + z * 1.58962301576546568060e-10)))))
        c = 1.0 - 0.5 * z + z * z * (4.16666666666665929218e-2 + z * (-1.38888888888730564116e-3 + z * (
            2.48015872888517045348e-5 + z * (-2.75573141792967388112e-7 + z * (
                2.08757008419747316778e-9 + z * -1.13585365213876817300e-11)))))
        q = np.int64(k) & 3
        swap = (q & 1) == 1
        a = s if swap else c
        b = c if swap else s
        oc[j] = a * (-scale if (q == 1 or q == 2) else scale)
        osn[j] = b * (-scale if q >= 2 else scale)
    if big:
        for j in range(row.shape[0]):
            x = row[j]
            if abs(x) >= REDUCTION_LIMIT:
                oc[j] = math.cos(x) * scale
                osn[j] = math.sin(x) * scale


@njit_kernel_loop
def cos_sin_columns(P, out, scale):
    """out[:, :m] = scale cos P, out[:, m:] = scale sin P for P [N, m] (out [N, 2m]); returns out."""
    m = P.shape[1]
    for i in range(P.shape[0]):
        _cos_sin_row(P[i], out[i, :m], out[i, m:], scale)
    return out


@njit_kernel_loop
def projected_cos_sin(X, W, out, scale):
    """out[i] = scale [cos(x_i^T W), sin(x_i^T W)] for X [N, d], W [d, m]: the projection of one
    row at a time (a scratch row in cache), so the [N, m] projections are never written out."""
    d, m = W.shape
    proj = np.empty(m)
    for i in range(X.shape[0]):
        proj[:] = 0.0
        k = 0
        while k + 4 <= d:  # four inputs a pass: one load and store of proj per four products
            x0, x1, x2, x3 = X[i, k], X[i, k + 1], X[i, k + 2], X[i, k + 3]
            for j in range(m):
                proj[j] += x0 * W[k, j] + x1 * W[k + 1, j] + x2 * W[k + 2, j] + x3 * W[k + 3, j]
            k += 4
        if k + 2 <= d:
            x0, x1 = X[i, k], X[i, k + 1]
            for j in range(m):
                proj[j] += x0 * W[k, j] + x1 * W[k + 1, j]
            k += 2
        if k < d:
            x0 = X[i, k]
            for j in range(m):
                proj[j] += x0 * W[k, j]
        _cos_sin_row(proj, out[i, :m], out[i, m:], scale)
    return out


#: inputs at and below which the projection is formed row by row inside the loop (above: one GEMM)
FUSED_MAX_INPUTS = 32
#: cos/sin pairs from which the rows are split over the process's cores (each thread ~2 ms or more)
THREADED_PAIRS = 1 << 20
#: rows of the scratch block a strided output is written through
SCRATCH_ROWS = 64


def fill_rows(out, pairs, rows):
    """Fill ``out`` [N, ...] by ``rows(target, a, b)`` (a jitted loop that releases the GIL, writing
    rows a..b of the output into the C-contiguous ``target`` [b - a, ...]): in one call below
    :data:`THREADED_PAIRS` cos/sin pairs, else over one contiguous range of rows per core in threads.
    The loops see C-contiguous arrays only (one compiled specialisation each), so a strided ``out``
    (a block of a concatenation's features) is written through a scratch block of
    :data:`SCRATCH_ROWS` rows that stays in cache (a whole-size scratch array costs its page faults
    and a second pass: 2 ms of 2.2 for Boston's 404 x 813 features). Returns out."""
    n = out.shape[0]
    workers = 1 if pairs < THREADED_PAIRS else min(len(os.sched_getaffinity(0)), pairs // THREADED_PAIRS, n)
    edges = [n * i // workers for i in range(workers + 1)]
    if out.flags.c_contiguous:
        def part(a, b):
            rows(out[a:b], a, b)
    else:
        def part(a, b):
            scratch = np.empty((min(SCRATCH_ROWS, b - a),) + out.shape[1:])
            for c in range(a, b, SCRATCH_ROWS):
                d = min(c + SCRATCH_ROWS, b)
                rows(scratch[:d - c], c, d)
                out[c:d] = scratch[:d - c]
    if workers <= 1:
        part(0, n)
    else:
        with ThreadPoolExecutor(workers) as pool:
            list(pool.map(part, edges[:-1], edges[1:]))
    return out


def fourier_features(X, W, out, scale):
    """out = scale [cos(X W), sin(X W)] for X [N, d], W [d, m], out [N, 2m]; returns out.

    Large outputs are written by one thread per core over row ranges (the loops release the GIL):
    the cos/sin pass and its writes, not the projection, are most of the time at 10^6 x 2,000.
    Few inputs use the fused loop; many use one GEMM for the projections first (:func:`fill_rows`
    for the threads and the layout)."""
    X = np.ascontiguousarray(X, dtype=np.float64)
    fused = W.shape[0] <= FUSED_MAX_INPUTS
    P = None if fused else np.ascontiguousarray(X @ W)

    def rows(target, a, b):
        if fused:
            projected_cos_sin(X[a:b], W, target, scale)
        else:
            cos_sin_columns(P[a:b], target, scale)

    return fill_rows(out, X.shape[0] * W.shape[1], rows)
