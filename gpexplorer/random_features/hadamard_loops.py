"""Jitted leaf of the Fastfood features (:mod:`gpexplorer.random_features.fastfood`): the fast
Walsh-Hadamard transform of every row of a [N, d] array in place, d a power of two.

H_d = [[H, H], [H, -H]] (unnormalised, H_1 = 1): log2 d passes of butterflies (a, b) -> (a + b,
a - b), O(d log d) per row against the O(d^2) of a dense product. Rows go in chunks of
:data:`CHUNK`, transposed into a [d, CHUNK] buffer that stays in cache through every pass, so each
butterfly is a loop over CHUNK contiguous values, which the compiler vectorises at every stride h
(row by row, the passes with h = 1, 2 cannot be). The module is public (not ``_loops``) so that
``fastfood`` may import it (tests/test_architecture.py).
"""

import numpy as np

from gpexplorer._jit import njit_kernel_loop

#: rows transformed together (a [d, CHUNK] buffer: 128 KB at d = 1024)
CHUNK = 16


@njit_kernel_loop
def hadamard_rows(X):
    """X <- X H_d row by row, in place (H_d symmetric); returns X."""
    n, d = X.shape
    T = np.empty((d, CHUNK))
    for r0 in range(0, n, CHUNK):
        c = min(CHUNK, n - r0)
        for j in range(d):
            for k in range(c):
                T[j, k] = X[r0 + k, j]
        h = 1
        while h < d:
            for i in range(0, d, 2 * h):
                for j in range(i, i + h):
                    for k in range(c):
                        a = T[j, k]
                        b = T[j + h, k]
                        T[j, k] = a + b
                        T[j + h, k] = a - b
            h *= 2
        for j in range(d):
            for k in range(c):
                X[r0 + k, j] = T[j, k]
    return X
