"""The sums over patches a convolutional kernel needs, by three exact routes (thesis §5.3-5.4, §5.10).

With patch kernel k (the base kernel, or the additive colour kernel), effective weights
w_p = scale * weight_p and groups (channels of the multi-channel kernel; one group otherwise):

    Kuf[g*M + m, n] = sum_{p in g} w_p k(z_m, x_n^[p])                       (eq. 5.15, 5.47, 5.62)
    Kdiag[n]        = sum_g sum_{p, q in g} w_p w_q k(x_n^[p], x_n^[q])       (eq. 5.13, 5.46)

* ``se``: a squared-exponential patch kernel: every squared distance from one GEMM of augmented
  patches (eq. 5.67), exponentials by numpy's SIMD exp, the sums over patches by BLAS;
* ``unique``: the exact unique-patch path (Lemmas 1-3): with the batch's unique patches U and
  s_gn[a] = sum_{p in g: x_n^[p] = U_a} w_p, Kuf_g = K_ZU S_g^T and Kdiag_n = sum_g s_gn^T K_UU s_gn;
  any patch kernel, and cheap whenever the images hold few distinct patches (binary images);
* ``generic``: any patch kernel, by its own K and gradient contractions on the patches.

Each gradient function returns (patch-kernel gradients {name: value}, dw [P] with respect to the
effective weights, and dZ [M, E] where inducing patches move).
"""

from __future__ import annotations

import numpy as np

from gpexplorer.parameters import sum_gradients


# ---------------------------------------------------------------------------------------------
# squared-exponential patch kernel: every distance from one GEMM, numpy's SIMD exp, BLAS sums
# ---------------------------------------------------------------------------------------------
#: largest number of kernel values (images x P x M, or images x P^2) held at once
BLOCK_VALUES = 2_000_000


def _scaled(pk, values, E):
    ls = np.broadcast_to(np.asarray(pk.lengthscale, dtype=float), (E,))
    return np.ascontiguousarray(values / ls), ls


def _blocks(N, per_image):
    step = max(1, BLOCK_VALUES // max(1, per_image))
    return [slice(i, min(N, i + step)) for i in range(0, N, step)]


def _members(layout, g):
    """Group g's patches as a slice (a multi-channel kernel's channel c holds p = q*C + c)."""
    G = layout.n_groups
    return slice(g, None, G) if G > 1 else slice(None)


def _augmented(x, left):
    """[x, 1, -|x|^2/2] (left) or [x, -|x|^2/2, 1]: their products are -|x - x'|^2 / 2 (eq. 5.67)."""
    half = -0.5 * np.einsum("...e,...e->...", x, x)[..., None]
    ones = np.ones_like(half)
    return np.concatenate([x, ones, half] if left else [x, half, ones], axis=-1)


def _se(A):
    """exp(min(A, 0)) in place: phi from the exponents -r2/2 (a rounding-negative r2 clipped)."""
    np.minimum(A, 0.0, out=A)
    return np.exp(A, out=A)


def _lengthscale_gradient(pk, dl):
    return float(dl.sum()) if np.ndim(pk.lengthscale) == 0 else dl


def _cross_phi(conv, Za, X, rows):
    """(scaled patches [n, P, E], phi [n, P, M] = exp(-|x_p - z_m|^2 / 2)) for the images X[rows]."""
    layout, pk = conv.layout, conv.patch_kernel
    Xs = _scaled(pk, layout.patches(X[rows]), layout.patch_dim)[0]
    n, P, E = Xs.shape
    return Xs, _se((_augmented(Xs, True).reshape(n * P, E + 2) @ Za.T).reshape(n, P, -1))


def se_cross(conv, Z, X):
    layout, pk, w = conv.layout, conv.patch_kernel, conv.effective_weights
    M = Z.shape[0]
    Za = _augmented(_scaled(pk, Z, layout.patch_dim)[0], False)
    out = np.empty((layout.n_groups * M, X.shape[0]))
    for rows in _blocks(X.shape[0], layout.n_patches * M):
        _, phi = _cross_phi(conv, Za, X, rows)
        for g in range(layout.n_groups):
            sl = _members(layout, g)
            out[g * M:(g + 1) * M, rows] = pk.variance * np.matmul(w[sl], phi[:, sl]).T
    return out


def se_cross_gradients(conv, Z, X, W):
    """With G_npm = W_mn w_p dk/dr2 = -W_mn w_p k_npm / 2 (never formed): dZs = -2 sum G (x - z),
    dl_e = -2 sum G (x_e - z_e)^2 / l_e; every sum a GEMM or GEMV over the block."""
    layout, pk, w = conv.layout, conv.patch_kernel, conv.effective_weights
    E, M, var = layout.patch_dim, Z.shape[0], pk.variance
    Zs, ls = _scaled(pk, Z, E)
    Za = _augmented(Zs, False)
    dw, dvar = np.zeros(layout.n_patches), 0.0
    GtX, gsum, x2 = np.zeros((M, E)), np.zeros(M), np.zeros(E)
    for rows in _blocks(X.shape[0], layout.n_patches * M):
        Xs, phi = _cross_phi(conv, Za, X, rows)
        for g in range(layout.n_groups):
            sl = _members(layout, g)
            KW = phi[:, sl]
            KW *= W[g * M:(g + 1) * M, rows].T[:, None, :]  # phi_npm W_mn, in place (groups are disjoint)
            wg, x = w[sl], Xs[:, sl]
            s_np = KW.sum(axis=2)
            dw[sl] += var * s_np.sum(axis=0)
            dvar += wg @ s_np.sum(axis=0)
            gsum += -0.5 * var * np.matmul(wg, KW).sum(axis=0)
            x2 += -0.5 * var * np.einsum("p,np,npe->e", wg, s_np, x * x)
            n, Pg = s_np.shape
            GtX += -0.5 * var * (KW.reshape(n * Pg, M).T @ (x * wg[:, None]).reshape(n * Pg, E))
    T = x2 - 2.0 * np.einsum("me,me->e", Zs, GtX) + gsum @ (Zs * Zs)
    dZs = -2.0 * (GtX - gsum[:, None] * Zs)
    return {"variance": float(dvar), "lengthscale": _lengthscale_gradient(pk, -2.0 * T / ls)}, dw, dZs / ls


def _pair_blocks(conv, X):
    """Per block of images and group: (rows, group slice, scaled patches x [n, Pg, E], weights,
    lengthscales, phi [n, Pg, Pg] = exp(-|x_p - x_q|^2 / 2)): one batched GEMM of the augmented
    patches and numpy's exp over all P^2 pairs, which beats a compiled loop over the P^2/2 pairs
    of one triangle (the compiled scalar exp costs about five times numpy's SIMD one)."""
    layout, pk = conv.layout, conv.patch_kernel
    for g in range(layout.n_groups):
        sl = _members(layout, g)
        Pg = len(range(layout.n_patches)[sl])
        for rows in _blocks(X.shape[0], Pg * Pg):
            x, ls = _scaled(pk, layout.patches(X[rows])[:, sl], layout.patch_dim)
            phi = _se(np.matmul(_augmented(x, True), _augmented(x, False).transpose(0, 2, 1)))
            yield rows, sl, x, conv.effective_weights[sl], ls, phi


def se_diag(conv, X):
    """Kdiag_n = variance w^T Phi_n w per group (eq. 5.46)."""
    out = np.zeros(X.shape[0])
    for rows, _, _, w, _, phi in _pair_blocks(conv, X):
        out[rows] += np.matmul(phi, w) @ w
    return conv.patch_kernel.variance * out


def se_diag_gradients(conv, X, v):
    """With u = Phi w: dKdiag/dvariance = w^T u, dKdiag/dw = 2 variance u, and dKdiag/dl_e =
    variance / l_e sum_pq w_p w_q phi_pq (x_pe - x_qe)^2 = variance / l_e (2 sum_p w_p u_p x_pe^2 -
    2 sum_p w_p x_pe [Phi (w x)]_pe)."""
    pk = conv.patch_kernel
    v = np.asarray(v, dtype=float)
    dvar, T, dw, ls = 0.0, np.zeros(conv.layout.patch_dim), np.zeros(conv.layout.n_patches), None
    for rows, sl, x, w, ls, phi in _pair_blocks(conv, X):
        vr = v[rows]
        u = np.matmul(phi, w)  # [n, Pg]
        dvar += vr @ (u @ w)
        dw[sl] += 2.0 * pk.variance * (vr @ u)
        wx = x * w[:, None]
        Y = np.matmul(phi, wx)  # [n, Pg, E]
        T += 2.0 * np.einsum("n,np,npe->e", vr, u * w, x * x) - 2.0 * np.einsum("n,npe,npe->e", vr, wx, Y)
    return {"variance": float(dvar), "lengthscale": _lengthscale_gradient(pk, pk.variance * T / ls)}, dw


# ---------------------------------------------------------------------------------------------
# unique patches (Lemmas 1-3)
# ---------------------------------------------------------------------------------------------
def _counts(conv, ids, nU):
    """S [G, N, nU]: s_gn[a] = sum of the effective weights of image n's patches of group g equal to U_a."""
    layout = conv.layout
    N = ids.shape[0]
    w = conv.effective_weights
    out = np.empty((layout.n_groups, N, nU))
    flat = (np.arange(N)[:, None] * nU + ids)  # [N, P]
    for g in range(layout.n_groups):
        mask = layout.group == g
        out[g] = np.bincount(flat[:, mask].ravel(), np.broadcast_to(w[mask], (N, int(mask.sum()))).ravel(),
                             minlength=N * nU).reshape(N, nU)
    return out


def unique_cross(conv, Z, X):
    U, ids = conv.decomposition(X)
    S = _counts(conv, ids, len(U))
    KZU = conv.patch_kernel.K(Z, U)
    return np.vstack([KZU @ S[g].T for g in range(len(S))])


def _dweights(conv, ids, dS):
    """dw_p = sum_n dL/ds_{g_p, n}[ids[n, p]] (the counts are linear in the effective weights);
    zeros for an unweighted kernel, whose weights are not parameters."""
    if not conv.weighted:
        return np.zeros(ids.shape[1])
    return dS[conv.layout.group[None, :], np.arange(ids.shape[0])[:, None], ids].sum(axis=0)


def unique_cross_gradients(conv, Z, X, W):
    U, ids = conv.decomposition(X)
    S = _counts(conv, ids, len(U))
    pk, M = conv.patch_kernel, Z.shape[0]
    KZU = pk.K(Z, U)
    blocks = [W[g * M:(g + 1) * M] for g in range(len(S))]
    dKZU = sum(Wg @ S[g] for g, Wg in enumerate(blocks))
    grads, dZ = pk.grad_params_and_X(dKZU, Z, U, K=KZU)
    dS = np.stack([Wg.T @ KZU for Wg in blocks])
    return grads, _dweights(conv, ids, dS), dZ


def unique_diag(conv, X):
    U, ids = conv.decomposition(X)
    S = _counts(conv, ids, len(U))
    KUU = conv.patch_kernel.K(U)
    return sum(np.einsum("na,na->n", S[g] @ KUU, S[g]) for g in range(len(S)))


def unique_diag_gradients(conv, X, v):
    U, ids = conv.decomposition(X)
    S = _counts(conv, ids, len(U))
    pk = conv.patch_kernel
    KUU = pk.K(U)
    v = np.asarray(v, dtype=float)
    dKUU = sum(S[g].T @ (v[:, None] * S[g]) for g in range(len(S)))
    grads = pk.grad_params(dKUU, U, None, K=KUU)
    dS = np.stack([2.0 * v[:, None] * (S[g] @ KUU) for g in range(len(S))])
    return grads, _dweights(conv, ids, dS)


# ---------------------------------------------------------------------------------------------
# any patch kernel, by its own contractions
# ---------------------------------------------------------------------------------------------
def _group_mask(layout):
    return layout.group[:, None] == layout.group[None, :]


def generic_cross(conv, Z, X):
    layout, pk, w = conv.layout, conv.patch_kernel, conv.effective_weights
    M, G = Z.shape[0], layout.n_groups
    out = np.empty((G * M, X.shape[0]))
    for rows in layout.chunks(X.shape[0]):
        Xp = layout.patches(X[rows])
        n = Xp.shape[0]
        Kb = pk.K(Z, Xp.reshape(-1, layout.patch_dim)).reshape(M, n, layout.n_patches)
        for g in range(G):
            mask = layout.group == g
            out[g * M:(g + 1) * M, rows] = Kb[:, :, mask] @ w[mask]
    return out


def generic_cross_gradients(conv, Z, X, W):
    layout, pk, w = conv.layout, conv.patch_kernel, conv.effective_weights
    M, P = Z.shape[0], layout.n_patches
    grads, dw, dZ = {}, np.zeros(P), np.zeros_like(Z)
    for rows in layout.chunks(X.shape[0]):
        Xp = layout.patches(X[rows]).reshape(-1, layout.patch_dim)
        n = Xp.shape[0] // P
        Kb = pk.K(Z, Xp).reshape(M, n, P)
        Wp = np.stack([W[g * M:(g + 1) * M, rows] for g in layout.group], axis=2)  # [M, n, P]
        dw += np.einsum("mnp,mnp->p", Wp, Kb)
        g, d = pk.grad_params_and_X((Wp * w).reshape(M, -1), Z, Xp, K=Kb.reshape(M, -1))
        grads, dZ = sum_gradients(grads, g), dZ + d
    return grads, dw, dZ


def generic_diag(conv, X):
    layout, pk, w = conv.layout, conv.patch_kernel, conv.effective_weights
    ww = np.outer(w, w) * _group_mask(layout)
    return np.array([np.sum(pk.K(x) * ww) for x in layout.patches(X)])


def generic_diag_gradients(conv, X, v):
    layout, pk, w = conv.layout, conv.patch_kernel, conv.effective_weights
    mask = _group_mask(layout)
    ww = np.outer(w, w) * mask
    grads, dw = {}, np.zeros(layout.n_patches)
    for vn, x in zip(np.asarray(v, dtype=float), layout.patches(X)):
        Kp = pk.K(x)
        dw += 2.0 * vn * (Kp * mask) @ w
        grads = sum_gradients(grads, pk.grad_params(vn * ww, x, None, K=Kp))
    return grads, dw


def full(conv, X, X2):
    """K(X, X2) [N1, N2] (eq. 5.13, 5.46), from the patch kernel on all patch pairs."""
    layout, pk, w = conv.layout, conv.patch_kernel, conv.effective_weights
    P, E = layout.n_patches, layout.patch_dim
    A = layout.patches(X)
    B = A if X2 is None else layout.patches(X2)
    mask = _group_mask(layout)
    out = np.empty((A.shape[0], B.shape[0]))
    Bf = B.reshape(-1, E)
    step = max(1, 2_000_000 // max(1, P * P * B.shape[0]))
    for i in range(0, A.shape[0], step):
        n = len(A[i:i + step])
        Kb = pk.K(A[i:i + step].reshape(n * P, E), Bf).reshape(n, P, B.shape[0], P)
        out[i:i + step] = np.einsum("ipjq,p,q,pq->ij", Kb, w, w, mask)
    return out


def full_gradients(conv, dK, X, X2):
    """(patch-kernel gradients, dw [P], dX [N1, D]) of sum dK * K(X, X2); with X2 None both move."""
    layout, pk, w = conv.layout, conv.patch_kernel, conv.effective_weights
    P, E = layout.n_patches, layout.patch_dim
    A = layout.patches(X)
    B = A if X2 is None else layout.patches(X2)
    N1, N2 = A.shape[0], B.shape[0]
    mask = _group_mask(layout)
    dKb = (np.asarray(dK, dtype=float)[:, None, :, None] * (np.outer(w, w) * mask)[None, :, None, :])
    dKb = dKb.reshape(N1 * P, N2 * P)
    Af, Bf = A.reshape(-1, E), B.reshape(-1, E)
    Kb = pk.K(Af, Bf)
    grads, dA = pk.grad_params_and_X(dKb, Af, Bf, K=Kb)
    Kb4 = Kb.reshape(N1, P, N2, P)
    dw = np.einsum("ij,ipjq,q,pq->p", dK, Kb4, w, mask) + np.einsum("ij,ipjq,p,pq->q", dK, Kb4, w, mask)
    if X2 is None:  # the second argument is X as well
        dA = dA + pk.grad_params_and_X(dKb.T, Bf, Af, K=Kb.T)[1]
    return grads, dw, layout.scatter(dA.reshape(N1, P, E), N1)
