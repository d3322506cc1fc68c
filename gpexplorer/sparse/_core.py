"""Jitted matrix algebra of the collapsed sparse objectives (thesis eq. 2.12, 2.17, 2.37, 3.1).

See :mod:`gpexplorer.sparse.objectives` for the derivation; this module holds only the arithmetic, as
plain-array functions that numba compiles once (cache=True). Triangular solves and symmetric
products go to BLAS (dtrsm, dsyrk through :mod:`gpexplorer._blas`; gemm through np.dot), so
Kuu is never inverted explicitly: with clumped inducing inputs it is as ill-conditioned as the
jitter allows, and explicit inverses there cost digits of the objective.

Notation: L = chol(Kuu + jitter I), A = L^{-1} Kuf, B = I + A G^{-1} A^T, LB = chol(B),
W = dF/dC with C = Qff + G, P = Kuu^{-1} Kuf, alpha = C^{-1} y.
Cost per evaluation in units of M^2 N: VFE/DTC trsm 1 + syrk 1 + gemm 2; FITC trsm 2 +
syrk 2 + gemm 2.

Arguments and results are grouped in the named tuples below; the functions called from Python
also take plain tuples in the same field order (typed faster, see kernels._loops) and name
them on entry. Every [M, N] array an evaluation writes lives in :class:`Buffers`, which the
caller allocates once and reuses (a fresh [M, N] array per call costs page faults: a quarter
to a third of an evaluation), so these functions allocate only [M, M] and [N] arrays.
"""

import math
from collections import namedtuple

import numpy as np

from gpexplorer import _blas as blas
from gpexplorer.kernels import _loops as kl
from gpexplorer._jit import njit_cached

LOG_2PI = math.log(2.0 * math.pi)
DTC, VFE, FITC = 0, 1, 2
#: columns per block of FITC's scaled copies of A (its scratch is M * FITC_BLOCK floats)
FITC_BLOCK = 256

#: kernel matrices and targets: Kuu [M, M] (no jitter), Kuf [M, N], diag Kff [N], y [N]
Matrices = namedtuple("Matrices", "Kuu Kuf kdiag y")
#: noise variance s2, jitter added to diag(Kuu), approximation (DTC, VFE or FITC), gradients or not
Settings = namedtuple("Settings", "noise jitter approx grad")
#: work arrays, overwritten by every call: Xs [N, D] = X / l and Kuf [M, N] (fused path; else
#: [0, 0]); A [M, N] = L^{-1} Kuf; W [M, N] receives dF/dKuf (for DTC/VFE it may be A itself,
#: for FITC never); S [M * FITC_BLOCK] FITC's scratch (else [0])
Buffers = namedtuple("Buffers", "Xs Kuf A W S")
#: what predictions need: chol(Kuu + jitter I) [M, M], chol(B) [M, M], Kuu^{-1} mu [M], diag G [N]
Posterior = namedtuple("Posterior", "L LB weights g")
#: dF/dKuu [M, M]; dF/dKuf = dKuf - outer(a, b) with dKuf [M, N] (Buffers.W), a [M], b [N];
#: dF/d diag Kff [N]; dF/ds2. Arrays are empty without gradients.
MatrixGradients = namedtuple("MatrixGradients", "dKuu dKuf a b dKdiag dnoise")
#: terms [4] = constant, complexity, data fit, trace (eq. 3.1); Posterior; MatrixGradients
Collapsed = namedtuple("Collapsed", "terms posterior grads")
#: the fused path's inputs: X [N, D], y [N], Z [M, D]
Data = namedtuple("Data", "X y Z")
#: the fused path's result: terms [4] and dF/d(variance, lengthscale [D], alpha, noise, Z [M, D])
FusedGradients = namedtuple("FusedGradients", "terms variance lengthscale alpha noise Z")


@njit_cached
def _no_gradients():
    # fresh empty arrays: numba types module-level arrays as read-only, which would not
    # unify with the arrays of the gradient branch
    return MatrixGradients(np.empty((0, 0)), np.empty((0, 0)), np.empty(0), np.empty(0), np.empty(0), 0.0)


@njit_cached
def _sum_log_diag(L):
    s = 0.0
    for i in range(L.shape[0]):
        s += math.log(L[i, i])
    return s


@njit_cached
def _sandwich(L, S):
    """L^{-T} S L^{-1} for lower-triangular L and symmetric S [M, M] (two triangular solves)."""
    Y = blas.solve_lower(L, S, True)  # L^{-T} S
    return blas.solve_lower(L, np.ascontiguousarray(Y.T), True).T  # (L^{-T} (L^{-T} S)^T)^T


@njit_cached
def _outer_self(v):
    """v v^T (np.outer's generic implementation costs about a second of compile time)."""
    n = v.shape[0]
    out = np.empty((n, n))
    for i in range(n):
        for j in range(n):
            out[i, j] = v[i] * v[j]
    return out


@njit_cached
def _factor_A(Kuu, Kuf, jitter, A):
    """L = chol(Kuu + jitter I) and A = L^{-1} Kuf written into the buffer A [M, N]."""
    L = np.linalg.cholesky(Kuu + jitter * np.eye(Kuu.shape[0]))
    M, N = Kuf.shape
    for m in range(M):  # a loop, not A[:, :] = Kuf: numba's broadcasting assignment compiles slowly
        for n in range(N):
            A[m, n] = Kuf[m, n]
    blas.solve_lower_inplace(L, A, False)
    return L


@njit_cached
def collapsed(mats, settings, buf):
    """DTC evidence (2.12), Titsias' collapsed bound (2.37) or FITC evidence (2.17): Collapsed."""
    mats, settings, buf = Matrices(*mats), Settings(*settings), Buffers(*buf)
    if settings.approx == FITC:
        return fitc(mats, settings, buf)
    return homoscedastic(mats, settings, buf)


@njit_cached
def homoscedastic(mats, settings, buf):
    """DTC evidence (2.12) or, for VFE, Titsias' collapsed bound (2.37): G = s2 I."""
    Kuu, Kuf, kdiag, y = mats.Kuu, mats.Kuf, mats.kdiag, mats.y
    noise = settings.noise
    M, N = Kuf.shape
    eye = np.eye(M)
    L = _factor_A(Kuu, Kuf, settings.jitter, buf.A)
    A = buf.A  # [M, N] = L^{-1} Kuf
    AAT = blas.syrk(A)
    LB = np.linalg.cholesky(eye + AAT / noise)
    c = blas.solve_lower_vec(LB, np.dot(A, y), False) / noise
    vfe = 1.0 if settings.approx == VFE else 0.0
    terms = np.empty(4)
    terms[0] = 0.5 * N * LOG_2PI
    terms[1] = _sum_log_diag(LB) + 0.5 * N * math.log(noise)
    terms[2] = 0.5 * (np.dot(y, y) / noise - np.dot(c, c))
    terms[3] = vfe * 0.5 * (np.sum(kdiag) - np.trace(AAT)) / noise
    v = blas.solve_lower_vec(LB, c, True)  # B^{-1} A y / s2
    post = Posterior(L, LB, blas.solve_lower_vec(L, v, True), np.full(N, noise))
    if not settings.grad:
        return Collapsed(terms, post, _no_gradients())
    alpha = (y - np.dot(A.T, v)) / noise  # C^{-1} y
    P_alpha = blas.solve_lower_vec(L, np.dot(A, alpha), True)  # Kuu^{-1} Kuf alpha
    LBinv = blas.solve_lower(LB, eye, False)
    Binv = np.dot(LBinv.T, LBinv)  # B is well conditioned (I + PSD): explicit inverse is fine
    # dF/dKuf = L^{-T} (B^{-1} - vfe I) L^{-1} Kuf / s2 - (P alpha) alpha^T; A is not read
    # again, so W may share its memory
    dKuf = buf.W
    np.dot(_sandwich(L, (Binv - vfe * eye) / noise), Kuf, dKuf)
    # dF/dKuu = -1/2 [L^{-T}((I - B^{-1}) - vfe (B - I)) L^{-1} - (P alpha)(P alpha)^T]
    dKuu = -0.5 * (_sandwich(L, (eye - Binv) - vfe * (AAT / noise)) - _outer_self(P_alpha))
    trace_Cinv = (N - M + np.trace(Binv)) / noise
    dnoise = 0.5 * (trace_Cinv - np.dot(alpha, alpha)) - vfe * terms[3] / noise
    grads = MatrixGradients(dKuu, dKuf, P_alpha, alpha, np.full(N, 0.5 * vfe / noise), dnoise)
    return Collapsed(terms, post, grads)


@njit_cached
def _scaled_syrk(A, scale, C, S, signed):
    """C += A diag(scale)^2 A^T (lower triangle), a block of columns at a time through the
    scratch S. With ``signed``, columns whose ``scale`` is not positive enter with a minus sign
    (scale = -sqrt|w| for a negative weight w)."""
    M, N = A.shape
    block = max(1, S.shape[0] // max(M, 1))
    order = np.empty(block, dtype=np.int64)  # a block's columns: positive scale from the front
    for j0 in range(0, N, block):
        j1 = min(N, j0 + block)
        if not signed:
            P = S[: M * (j1 - j0)].reshape((M, j1 - j0))
            for m in range(M):
                for i in range(j1 - j0):
                    P[m, i] = A[m, j0 + i] * scale[j0 + i]
            blas.syrk_update(P, C, 1.0)
            continue
        n_pos, back = 0, j1 - j0
        for j in range(j0, j1):
            if scale[j] > 0.0:
                order[n_pos] = j
                n_pos += 1
            else:
                back -= 1
                order[back] = j
        n_neg = j1 - j0 - n_pos
        Apos = S[: M * n_pos].reshape((M, n_pos))
        Aneg = S[M * n_pos: M * (j1 - j0)].reshape((M, n_neg))
        for m in range(M):  # gathers without branches
            for i in range(n_pos):
                Apos[m, i] = A[m, order[i]] * scale[order[i]]
            for i in range(n_neg):
                Aneg[m, i] = A[m, order[n_pos + i]] * scale[order[n_pos + i]]
        blas.syrk_update(Apos, C, 1.0)
        blas.syrk_update(Aneg, C, -1.0)
    return blas.mirror_lower(C)


@njit_cached
def fitc(mats, settings, buf):
    """FITC evidence (2.17), G = diag[Kff - Qff] + s2 I. Same result layout as homoscedastic;
    its gradients' ``dKdiag`` is diag W on the entries where Kff - Qff was not clipped."""
    Kuu, Kuf, kdiag, y = mats.Kuu, mats.Kuf, mats.kdiag, mats.y
    noise = settings.noise
    M, N = Kuf.shape
    eye = np.eye(M)
    L = _factor_A(Kuu, Kuf, settings.jitter, buf.A)
    A = buf.A  # [M, N] = L^{-1} Kuf; all loops below run along its C-contiguous rows
    q = np.zeros(N)  # diag(Qff)
    for m in range(M):
        for n in range(N):
            q[n] += A[m, n] * A[m, n]
    # round-off can push diag(Qff) above diag(Kff): clip, and that entry is then constant
    active = np.empty(N, dtype=np.bool_)
    g = np.empty(N)
    for n in range(N):  # loops rather than np.where: a faster first compile
        active[n] = kdiag[n] > q[n]
        g[n] = (kdiag[n] - q[n] if active[n] else 0.0) + noise
    LB = np.linalg.cholesky(_scaled_syrk(A, 1.0 / np.sqrt(g), eye.copy(), buf.S, False))  # B = I + A G^-1 A^T
    c = blas.solve_lower_vec(LB, np.dot(A, y / g), False)
    terms = np.empty(4)
    terms[0] = 0.5 * N * LOG_2PI
    terms[1] = _sum_log_diag(LB) + 0.5 * np.sum(np.log(g))
    terms[2] = 0.5 * (np.sum(y * y / g) - np.dot(c, c))
    terms[3] = 0.0
    v = blas.solve_lower_vec(LB, c, True)
    post = Posterior(L, LB, blas.solve_lower_vec(L, v, True), g)
    if not settings.grad:
        return Collapsed(terms, post, _no_gradients())
    alpha = (y - np.dot(A.T, v)) / g
    LBinv = blas.solve_lower(LB, eye, False)
    Binv = np.dot(LBinv.T, LBinv)
    U = buf.W
    np.dot(Binv, A, U)  # [M, N] = B^{-1} A
    AU = np.zeros(N)  # diag(A^T B^{-1} A)
    for m in range(M):
        for n in range(N):
            AU[n] += A[m, n] * U[m, n]
    w_full = 0.5 * (1.0 / g - AU / (g * g) - alpha * alpha)  # diag W = 1/2 (diag C^{-1} - alpha^2)
    dnoise = np.sum(w_full)  # dg/ds2 = 1 for every entry, clipped or not: dF/ds2 = tr(W)
    w = np.zeros(N)  # clipped entries no longer depend on Kff or Qff
    signed_root = np.empty(N)  # sqrt|w| with the sign of w, for A diag(w) A^T below
    for n in range(N):
        if active[n]:
            w[n] = w_full[n]
        signed_root[n] = math.sqrt(abs(w[n])) if w[n] > 0.0 else -math.sqrt(abs(w[n]))
    # W_Q = W - diag(w): dF/dKuf = L^{-T} [B^{-1} A G^{-1} - 2 A diag(w)] - (P alpha) alpha^T
    inv_g = 1.0 / g
    for m in range(M):
        for n in range(N):
            U[m, n] = U[m, n] * inv_g[n] - 2.0 * w[n] * A[m, n]
    blas.solve_lower_inplace(L, U, True)
    P_alpha = blas.solve_lower_vec(L, np.dot(A, alpha), True)
    # A diag(w) A^T: the columns with w > 0 add, those with w <= 0 subtract
    AwA = _scaled_syrk(A, signed_root, np.zeros((M, M)), buf.S, True)
    # dF/dKuu = -1/2 [L^{-T}(I - B^{-1} - 2 A diag(w) A^T)L^{-1} - (P alpha)(P alpha)^T]
    dKuu = -0.5 * (_sandwich(L, eye - Binv - 2.0 * AwA) - _outer_self(P_alpha))
    return Collapsed(terms, post, MatrixGradients(dKuu, U, P_alpha, alpha, w, dnoise))


@njit_cached
def fused_stationary(kern, data, settings, buf, kuf_ready):
    """Objective (eq. 3.1) and every gradient for a stationary kernel (kernels._loops.StationaryParams)
    with inducing points, in one compiled call: FusedGradients, the lengthscale gradient per
    dimension (summed by the caller when isotropic). Unless ``kuf_ready`` (the caller has
    written X / l into buf.Xs and K(Z, X) into buf.Kuf), both are computed here.
    """
    kern, data, settings, buf = kl.StationaryParams(*kern), Data(*data), Settings(*settings), Buffers(*buf)
    X, Z = data.X, data.Z
    Zs = Z / kern.lengthscale
    Xs, Kuf = buf.Xs, buf.Kuf
    if not kuf_ready:
        for n in range(X.shape[0]):
            for d in range(X.shape[1]):
                Xs[n, d] = X[n, d] / kern.lengthscale[d]
        kl.fill_stationary_K(kern, Zs, Xs, Kuf)
    Kuu = kl.stationary_K_symmetric(kern.kind, Zs, kern.variance, kern.alpha)
    kdiag = np.full(X.shape[0], kern.variance)
    out = collapsed(Matrices(Kuu, Kuf, kdiag, data.y), settings, buf)
    gr = out.grads
    uu = kl.stationary_contract(kern, Zs, Zs, Kuu, kl.PairWeights(gr.dKuu, np.empty(0), np.empty(0)), True)
    uf = kl.stationary_contract(kern, Zs, Xs, Kuf, kl.PairWeights(gr.dKuf, gr.a, gr.b), False)
    return FusedGradients(out.terms, uu.variance + uf.variance + np.sum(gr.dKdiag), uu.lengthscale + uf.lengthscale,
                          uu.extra + uf.extra, gr.dnoise, uu.dX1 + uu.dX2 + uf.dX1)
