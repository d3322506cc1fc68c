"""numba leaf of the EGP/UGP inner loop (:mod:`gpexplorer.linearized.gp`).

:func:`lower_W` forms W = I + diag(s) K diag(s) -- the symmetric form of Lambda + A K A in EGP
paper eq. 34 -- as the lower triangle of a Fortran-ordered array, so that LAPACK's dpotrf
factorises it in place. numpy needs an N x N temporary, two passes and a transposing copy inside
the f2py wrapper; at N = 200 building and factorising W took 190-245 us that way against
137-141 us with this loop (same session, one BLAS thread). Only the lower triangle is written
(the rest is zero): dpotrf, dtrtrs and dtrsv with lower=1 never read it.
"""

import numpy as np

from gpexplorer._jit import njit_cached


@njit_cached
def lower_W(K, s):
    """Lower triangle of I + diag(s) K diag(s) for symmetric K [N, N] and s [N], Fortran order."""
    n = K.shape[0]
    out = np.zeros((n, n)).T  # a Fortran-ordered view: column j is contiguous
    for j in range(n):
        sj = s[j]
        out[j, j] = 1.0 + sj * K[j, j] * sj
        for i in range(j + 1, n):
            out[i, j] = s[i] * K[j, i] * sj  # K[j, i] == K[i, j], read along K's rows
    return out
