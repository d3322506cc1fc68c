"""BLAS level-3 routines callable from numba: triangular solve (dtrsm) and rank-k update (dsyrk).

numba's ``np.dot`` reaches BLAS gemm, but triangular solves and symmetric products are what
keep the sparse objectives both accurate (no explicit inverses of an ill-conditioned Kuu) and
cheap (syrk is half a gemm). scipy ships the Fortran BLAS as ``scipy.linalg.cython_blas``;
its function addresses are registered as LLVM symbols and called as external functions.

Layout: numba arrays here are C-contiguous, which BLAS (column-major) sees transposed. For
X = L^{-1} B with L lower [M, M] and B [M, N] row-major, column-major BLAS sees B^T [N, M]
and L^T (upper), and X^T = B^T L^{-T} is a right-side solve with the upper matrix L^T.
"""

import llvmlite.binding as ll
import numpy as np
from numba import types
from numba.extending import get_cython_function_address

from gpexplorer._jit import njit_cached

# Compiled code refers to these by symbol name (not by address), so numba can cache it on
# disk; the names are bound to this process's scipy BLAS at import time.
for _name in ("dtrsm", "dsyrk"):
    ll.add_symbol(f"gpexplorer_{_name}", get_cython_function_address("scipy.linalg.cython_blas", _name))
_vp = types.voidptr
_dtrsm = types.ExternalFunction("gpexplorer_dtrsm", types.void(*([_vp] * 11)))
_dsyrk = types.ExternalFunction("gpexplorer_dsyrk", types.void(*([_vp] * 10)))

_R, _U, _N, _T = ord("R"), ord("U"), ord("N"), ord("T")


@njit_cached
def solve_lower(L, B, transpose):
    """L^{-1} B (or L^{-T} B when ``transpose``) for lower-triangular L [M, M], B [M, N].

    Returns a new C-contiguous [M, N] array; B is not modified.
    """
    return solve_lower_inplace(L, np.ascontiguousarray(B).copy(), transpose)


@njit_cached
def solve_lower_inplace(L, X, transpose):
    """Overwrite the C-contiguous [M, N] array X with L^{-1} X (or L^{-T} X) and return it."""
    M = L.shape[0]
    N = X.shape[1]
    if M == 0 or N == 0:
        return X
    Lc = np.ascontiguousarray(L)
    # Fortran passes every argument by reference: the characters, sizes and the scalar live in
    # three small arrays (slices of them are views, not new arrays)
    chars = np.array([_R, _U, _T if transpose else _N, _N], dtype=np.uint8)  # side, uplo, trans, diag
    sizes = np.array([N, M, M, N], dtype=np.int32)  # m, n, lda, ldb
    one = np.array([1.0])
    _dtrsm(chars[0:].ctypes, chars[1:].ctypes, chars[2:].ctypes, chars[3:].ctypes, sizes[0:].ctypes,
           sizes[1:].ctypes, one.ctypes, Lc.ctypes, sizes[2:].ctypes, X.ctypes, sizes[3:].ctypes)
    return X


@njit_cached
def solve_lower_vec(L, b, transpose):
    """L^{-1} b or L^{-T} b for a vector b [M]."""
    return solve_lower(L, b.reshape((b.shape[0], 1)), transpose)[:, 0].copy()


@njit_cached
def syrk(A):
    """A A^T for A [M, N] (C-contiguous), as a full symmetric [M, M] array."""
    M = A.shape[0]
    C = np.zeros((M, M))
    syrk_update(A, C, 1.0)
    mirror_lower(C)
    return C


@njit_cached
def syrk_update(A, C, alpha):
    """C += alpha A A^T on the lower triangle of C [M, M] (C-contiguous) for A [M, K]; the
    upper triangle is not touched (see mirror_lower). Accumulating blocks of columns this way
    keeps a scaled copy of A to one block's size."""
    M, K = A.shape
    if M == 0 or K == 0:
        return C
    Ac = np.ascontiguousarray(A)
    chars = np.array([_U, _T], dtype=np.uint8)  # uplo, trans
    sizes = np.array([M, K, K, M], dtype=np.int32)  # n, k, lda, ldc
    scalars = np.array([alpha, 1.0])  # alpha, beta
    # column-major upper triangle == row-major lower triangle
    _dsyrk(chars[0:].ctypes, chars[1:].ctypes, sizes[0:].ctypes, sizes[1:].ctypes, scalars[0:].ctypes, Ac.ctypes,
           sizes[2:].ctypes, scalars[1:].ctypes, C.ctypes, sizes[3:].ctypes)
    return C


@njit_cached
def mirror_lower(C):
    """Copy the lower triangle of the square C onto its upper triangle, in place."""
    for i in range(C.shape[0]):
        for j in range(i + 1, C.shape[0]):
            C[i, j] = C[j, i]
    return C
