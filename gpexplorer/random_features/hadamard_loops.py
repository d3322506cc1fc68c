"""Jitted leaves of the Fastfood features (:mod:`gpexplorer.random_features.fastfood`): the fast
Walsh-Hadamard transform of a contiguous vector in place, and the whole structured projection
V x = S H G Pi H (B / l) x of Le, Sarlos & Smola (2013, eq. 7-8) and its transpose, row by row,
without ever forming V.

H_d = [[H, H], [H, -H]] (unnormalised, H_1 = 1): log2 d passes of butterflies (a, b) -> (a + b,
a - b), O(d log d) per row against the O(d^2) of a dense product. One row (8 KB at d = 1024)
stays in L1 through every pass:

* the first three passes (h = 1, 2, 4) are one 8-point transform per group of 8 values, in
  registers (strides below the vector width cannot vectorise; fused, they cost one pass);
* the later passes go two at a time (radix 4: four quarter-blocks, read and written once per
  two passes), each block as contiguous slices so that numba's loops over them vectorise
  (indexed as ``v[j + h]`` the compiler cannot rule out aliasing and stays scalar);
* one radix-2 pass is left when log2(d / 8) is odd.

The block loop reads a row of X once per block, writes (B / l) x zero-padded to d' into a row
buffer, transforms it, gathers the permutation times G into a second buffer, transforms that and
writes S times the result into the block's columns of ``out``: no [N, d'] temporaries and no
fancy-indexed copies. The transposed chain (the lengthscale gradient) runs the same steps
backwards.

:func:`fastfood_features` goes one step further: it projects a chunk of rows into a buffer of
:data:`CHUNK_VALUES` values (in L2) and turns it into [cos, sin] / sqrt(m) there
(:func:`.trig_loops.cos_sin_columns`), so the [N, m] projections are never allocated, written and
read back (320 MB at N = 10,000, m = 4,000). A dense projection X W has to go through that
array: its GEMM writes it.

Measured (N = 2,000, d = 1,000 so d' = 1,024, one thread, 7 alternating calls, min; a shared
2-core Xeon under load 3.8) against the former code (a column-chunked transposed transform that
the compiler left scalar, numpy-level diagonals, a fancy-indexed permutation, [N, d'] temporaries):
the transform of [2000, 1024] 3.8 ms (was 9.9); projections 11 / 42 ms for 1 / 4 blocks (were
60 / 241); features 21 / 65 ms (were 74 / 291); ``vjp`` 51 / 165 ms (were 174 / 666).
Against dense features: tests/benchmarks/bench_fastfood.py.

``diagonals`` [n_blocks, 3, d'] holds per block the rows B / l (random signs over the ARD
lengthscales), G and S; ``perms`` [n_blocks, d'] the permutations (Pi u)_j = u_perms[j].

The module is public (not ``_loops``) so that ``fastfood`` may import it (tests/test_architecture.py).
"""

import numpy as np

from gpexplorer._jit import njit_kernel_loop
from gpexplorer.random_features.trig_loops import cos_sin_columns

#: values of the projection buffer of :func:`fastfood_features` (128 KB: a chunk of rows stays in L2)
CHUNK_VALUES = 16384


@njit_kernel_loop
def _eight_point(v):
    """The passes h = 1, 2, 4 of every group of 8 consecutive values (len(v) a multiple of 8)."""
    for i in range(0, v.shape[0], 8):
        a0, a1, a2, a3 = v[i], v[i + 1], v[i + 2], v[i + 3]
        a4, a5, a6, a7 = v[i + 4], v[i + 5], v[i + 6], v[i + 7]
        b0, b1, b2, b3 = a0 + a1, a0 - a1, a2 + a3, a2 - a3
        b4, b5, b6, b7 = a4 + a5, a4 - a5, a6 + a7, a6 - a7
        c0, c1, c2, c3 = b0 + b2, b1 + b3, b0 - b2, b1 - b3
        c4, c5, c6, c7 = b4 + b6, b5 + b7, b4 - b6, b5 - b7
        v[i], v[i + 1], v[i + 2], v[i + 3] = c0 + c4, c1 + c5, c2 + c6, c3 + c7
        v[i + 4], v[i + 5], v[i + 6], v[i + 7] = c0 - c4, c1 - c5, c2 - c6, c3 - c7


@njit_kernel_loop
def _radix4(v, h):
    """The passes h and 2h at once: blocks of 4h as four contiguous quarters."""
    for i in range(0, v.shape[0], 4 * h):
        q0, q1 = v[i:i + h], v[i + h:i + 2 * h]
        q2, q3 = v[i + 2 * h:i + 3 * h], v[i + 3 * h:i + 4 * h]
        for k in range(h):
            a0, a1, a2, a3 = q0[k], q1[k], q2[k], q3[k]
            b0, b1, b2, b3 = a0 + a1, a0 - a1, a2 + a3, a2 - a3
            q0[k], q1[k], q2[k], q3[k] = b0 + b2, b1 + b3, b0 - b2, b1 - b3


@njit_kernel_loop
def _radix2(v, h):
    """One pass h: blocks of 2h as two contiguous halves."""
    for i in range(0, v.shape[0], 2 * h):
        lo, hi = v[i:i + h], v[i + h:i + 2 * h]
        for k in range(h):
            a, b = lo[k], hi[k]
            lo[k], hi[k] = a + b, a - b


@njit_kernel_loop
def hadamard(v):
    """v <- H_d v in place for a contiguous vector of length d, a power of two; returns v."""
    d = v.shape[0]
    h = 1
    if d >= 8:
        _eight_point(v)
        h = 8
    while 4 * h <= d:
        _radix4(v, h)
        h *= 4
    while h < d:
        _radix2(v, h)
        h *= 2
    return v


@njit_kernel_loop
def hadamard_rows(X):
    """X <- X H_d row by row, in place (H_d symmetric; X C-contiguous [N, d]); returns X."""
    for r in range(X.shape[0]):
        hadamard(X[r])
    return X


@njit_kernel_loop
def fastfood_project(X, diagonals, perms, out):
    """out [N, m] <- the first m entries of (V_1 x, V_2 x, ...) per row x of X [N, d], block b's
    V_b = S_b H G_b Pi_b H (B_b / l) on x zero-padded to d' (module docstring); returns out."""
    n, d = X.shape
    n_blocks, _, dp = diagonals.shape
    m = out.shape[1]
    u = np.empty(dp)
    w = np.empty(dp)
    for r in range(n):
        x, o = X[r], out[r]
        for b in range(n_blocks):
            pre, g, s, p = diagonals[b, 0], diagonals[b, 1], diagonals[b, 2], perms[b]
            for j in range(d):
                u[j] = x[j] * pre[j]
            for j in range(d, dp):
                u[j] = 0.0
            hadamard(u)
            for j in range(dp):
                w[j] = u[p[j]] * g[j]
            hadamard(w)
            c0 = b * dp
            for j in range(min(m - c0, dp)):
                o[c0 + j] = w[j] * s[j]
    return out


@njit_kernel_loop
def fastfood_features(X, diagonals, perms, out, scale):
    """out [N, 2m] <- scale [cos P, sin P] with P the projections of :func:`fastfood_project`,
    a chunk of rows at a time (module docstring); returns out."""
    n = X.shape[0]
    m = out.shape[1] // 2
    rows = max(1, min(n, CHUNK_VALUES // m))
    P = np.empty((rows, m))
    for r0 in range(0, n, rows):
        r1 = min(n, r0 + rows)
        fastfood_project(X[r0:r1], diagonals, perms, P[:r1 - r0])
        cos_sin_columns(P[:r1 - r0], out[r0:r1], scale)
    return out


@njit_kernel_loop
def fastfood_project_transpose(A, diagonals, perms, out):
    """out [N, d] <- the rows a [m] of A times (V_1; V_2; ...) restricted to the first m rows:
    sum_b (B_b / l) H Pi_b^T G_b H S_b a_b per row (the chain of :func:`fastfood_project`
    backwards; H symmetric); returns out."""
    n, d = out.shape
    n_blocks, _, dp = diagonals.shape
    m = A.shape[1]
    u = np.empty(dp)
    w = np.empty(dp)
    for r in range(n):
        a, o = A[r], out[r]
        for j in range(d):
            o[j] = 0.0
        for b in range(n_blocks):
            pre, g, s, p = diagonals[b, 0], diagonals[b, 1], diagonals[b, 2], perms[b]
            c0 = b * dp
            c = min(m - c0, dp)
            for j in range(c):
                u[j] = a[c0 + j] * s[j]
            for j in range(c, dp):
                u[j] = 0.0
            hadamard(u)
            for j in range(dp):
                w[p[j]] = u[j] * g[j]
            hadamard(w)
            for j in range(d):
                o[j] += w[j] * pre[j]
    return out
