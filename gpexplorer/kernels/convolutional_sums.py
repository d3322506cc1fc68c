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


def _nonblank(layout, X):
    """[N, P] whether each patch of each image holds a non-zero pixel (every patch, where patches carry
    their location: blank ones at different places differ)."""
    if layout.locations:
        return np.ones((X.shape[0], layout.n_patches), dtype=bool)
    return (X != 0.0)[:, layout.index].any(axis=2)


def _ordered_blocks(counts, cost):
    """Index arrays of images in ascending order of their merged slot count K_n (``counts``), in runs
    with n * cost(K_max) <= BLOCK_VALUES: blocks of like images pad little when merged."""
    order = np.argsort(counts, kind="stable")
    sizes = counts[order]
    blocks, start = [], 0
    for i in range(1, len(order) + 1):
        if i == len(order) or (i - start + 1) * cost(int(sizes[i])) > BLOCK_VALUES:
            blocks.append(order[start:i])
            start = i
    return blocks


def _slot_counts(layout, nonblank, sl):
    """K_n of :func:`_compacted` for the patches ``sl`` (non-blank ones + the merged slot, at most Pg)."""
    sub = nonblank[:, sl]
    return np.minimum(sub.sum(axis=1) + 1, sub.shape[1])


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


def _compacted(x, w):
    """(x' [n, K, E], w' [n, K], slot [n, Pg]): each image's blank (all-zero) patches merged into one
    slot 0 carrying the sum of their weights, its other patches in slots 1.., padding with weight
    0 (exact: sum_p w_p k(x_p, .) = sum_k w'_k k(x'_k, .)); dL/dw_p = sum_n dL/dw'_{n, slot[n, p]}.
    A digit's 5 x 5 patches are about half blank, so the pair sums of Kdiag shrink about fourfold.
    Left as it is (w' = w for every image) when merging would not save a tenth of the slots."""
    n, P, E = x.shape
    nonblank = x.any(axis=2)
    counts = nonblank.sum(axis=1)
    K = int(counts.max(initial=0)) + 1
    if K > 0.9 * P:
        return x, np.broadcast_to(w, (n, P)), np.broadcast_to(np.arange(P), (n, P))
    order = np.argsort(~nonblank, axis=1, kind="stable")[:, :K - 1]  # each image's non-blank patches first
    keep = np.arange(K - 1)[None, :] < counts[:, None]
    xc = np.zeros((n, K, E))
    xc[:, 1:] = np.take_along_axis(x, order[:, :, None], axis=1) * keep[:, :, None]
    wc = np.empty((n, K))
    wc[:, 0] = (~nonblank).astype(float) @ w
    wc[:, 1:] = w[order] * keep
    slot = np.zeros((n, P), dtype=np.intp)
    np.put_along_axis(slot, order, np.where(keep, np.arange(1, K)[None, :], 0), axis=1)
    return xc, wc, slot


def _to_patches(G, slot):
    """dL/dw_p = sum_n G[n, slot[n, p]] from the gradient G [n, K] with respect to merged weights."""
    return np.take_along_axis(G, slot, axis=1).sum(axis=0)


def _cross_blocks(conv, X, M):
    """Blocks of images for the cross sums: by their largest slot count over groups, n K M per block."""
    layout = conv.layout
    nonblank = _nonblank(layout, X)
    counts = np.max([_slot_counts(layout, nonblank, _members(layout, g)) for g in range(layout.n_groups)], axis=0)
    return _ordered_blocks(counts, lambda K: K * M)


def _cross_phi(conv, Za, X, rows):
    """Per group: (group slice, merged scaled patches x' [n, K, E], their weights w' [n, K], slot
    [n, Pg], phi [n, K, M] = exp(-|x'_k - z_m|^2 / 2)) for the images X[rows]."""
    layout, pk = conv.layout, conv.patch_kernel
    Xs = _scaled(pk, layout.patches(X[rows]), layout.patch_dim)[0]
    for g in range(layout.n_groups):
        sl = _members(layout, g)
        x, w, slot = _compacted(Xs[:, sl], conv.effective_weights[sl])
        n, K, E = x.shape
        yield g, sl, x, w, slot, _se((_augmented(x, True).reshape(n * K, E + 2) @ Za.T).reshape(n, K, -1))


#: largest number of values (G N M (E + E or 1)) the Kuf pass keeps for its gradient (:func:`se_cross`)
PARTS_VALUES = 6_000_000


def se_cross(conv, Z, X, keep_parts=False):
    """(Kuf [G*M, N], parts or None). Kuf_gm,n = variance a_gnm with a_gnm = sum_k w'_nk phi_nkm; with
    ``keep_parts`` (and their G N M (E + E or 1) values <= PARTS_VALUES) the same batched GEMM of
    [w', w' x', w' x'^2]^T with phi also gives parts = {"y1" [G, N, E, M]: sum_k w'_nk x'_nke phi_nkm, "y2": the same of x'^2,
    [G, N, E, M] for ARD lengthscales, of |x'|^2, [G, N, 1, M], for one lengthscale}: all that the
    gradient with respect to Z, the lengthscales and the variance needs for any dL/dKuf
    (:func:`se_cross_gradients`), so a step forms the exponentials once."""
    layout, pk = conv.layout, conv.patch_kernel
    M, N, E, G = Z.shape[0], X.shape[0], layout.patch_dim, layout.n_groups
    Za = _augmented(_scaled(pk, Z, E)[0], False)
    out = np.empty((G * M, N))
    E2 = E if np.ndim(pk.lengthscale) else 1
    keep = keep_parts and G * N * M * (E + E2) <= PARTS_VALUES
    parts = {"y1": np.empty((G, N, E, M)), "y2": np.empty((G, N, E2, M))} if keep else None
    for rows in _cross_blocks(conv, X, M):
        for g, _, x, w, _, phi in _cross_phi(conv, Za, X, rows):
            if not keep:
                out[g * M:(g + 1) * M, rows] = pk.variance * np.matmul(w[:, None, :], phi)[:, 0].T
                continue
            wx = w[:, :, None] * x
            wx2 = wx * x if E2 == E else np.einsum("nke,nke->nk", wx, x)[:, :, None]
            stacked = np.matmul(np.concatenate([w[:, :, None], wx, wx2], axis=2).transpose(0, 2, 1), phi)
            out[g * M:(g + 1) * M, rows] = pk.variance * stacked[:, 0].T
            parts["y1"][g, rows] = stacked[:, 1:E + 1]
            parts["y2"][g, rows] = stacked[:, E + 1:]
    return out, parts


def _weight_gradients(conv, Za, X, W):
    """dL/dw_p = variance sum_n sum_m phi_n,slot(n,p),m W_mn (the one sum that needs phi itself)."""
    layout, pk = conv.layout, conv.patch_kernel
    M = Za.shape[0]
    dw = np.zeros(layout.n_patches)
    for rows in _cross_blocks(conv, X, M):
        for g, sl, _, _, slot, phi in _cross_phi(conv, Za, X, rows):
            s_nk = np.matmul(phi, W[g * M:(g + 1) * M, rows].T[:, :, None])[:, :, 0]
            dw[sl] += pk.variance * _to_patches(s_nk, slot)
    return dw


def _from_parts(conv, Z, Kuf, parts, W):
    """(dvariance, gsum [M], GtX [M, E], x2 [E] or [1]) of :func:`se_cross_gradients` from Kuf and
    the parts (x2 summed over e for one lengthscale)."""
    pk, M = conv.patch_kernel, Z.shape[0]
    var = pk.variance
    dvar, gsum = 0.0, np.zeros(M)
    GtX, x2 = np.zeros((M, Z.shape[1])), np.zeros(parts["y2"].shape[2])
    for g in range(conv.layout.n_groups):
        Wg, Kg = W[g * M:(g + 1) * M], Kuf[g * M:(g + 1) * M]
        WK = np.einsum("mn,mn->m", Wg, Kg)
        dvar += float(WK.sum()) / var
        gsum += -0.5 * WK
        GtX += -0.5 * var * np.einsum("mn,nem->me", Wg, parts["y1"][g])
        x2 += -0.5 * var * np.einsum("mn,nem->e", Wg, parts["y2"][g])
    return dvar, gsum, GtX, x2


def se_cross_gradients(conv, Z, X, W, kept=None):
    """With G_nkm = W_mn w'_nk dk/dr2 = -W_mn w'_nk k_nkm / 2 (never formed): dZs = -2 sum G (x - z),
    dl_e = -2 sum G (x_e - z_e)^2 / l_e; every sum a GEMM or GEMV over the block. ``kept``: (Kuf, parts)
    of :func:`se_cross` for these Z, X and parameters, from which all but the weights' gradient come
    without forming phi again."""
    layout, pk = conv.layout, conv.patch_kernel
    E, M, var = layout.patch_dim, Z.shape[0], pk.variance
    Zs, ls = _scaled(pk, Z, E)
    Za = _augmented(Zs, False)
    if kept is not None and kept[1] is not None:
        dvar, gsum, GtX, x2 = _from_parts(conv, Z, kept[0], kept[1], W)
        dw = _weight_gradients(conv, Za, X, W) if conv.weighted else np.zeros(layout.n_patches)
    else:
        dw, dvar = np.zeros(layout.n_patches), 0.0
        GtX, gsum, x2 = np.zeros((M, E)), np.zeros(M), np.zeros(E)
        for rows in _cross_blocks(conv, X, M):
            for g, sl, x, w, slot, KW in _cross_phi(conv, Za, X, rows):
                KW *= W[g * M:(g + 1) * M, rows].T[:, None, :]  # phi_nkm W_mn, in place
                s_nk = KW.sum(axis=2)
                dw[sl] += var * _to_patches(s_nk, slot)
                dvar += float(np.sum(w * s_nk))
                gsum += -0.5 * var * np.matmul(w[:, None, :], KW)[:, 0].sum(axis=0)
                x2 += -0.5 * var * np.einsum("nk,nke->e", w * s_nk, x * x)
                n, K = s_nk.shape
                GtX += -0.5 * var * (KW.reshape(n * K, M).T @ (x * w[:, :, None]).reshape(n * K, E))
    T = gsum @ (Zs * Zs) - 2.0 * np.einsum("me,me->e", Zs, GtX)
    if x2.shape == T.shape:
        T += x2
    else:  # one lengthscale: x2 holds the sum over e, and only T's sum is used
        T[0] += x2[0]
    dZs = -2.0 * (GtX - gsum[:, None] * Zs)
    return {"variance": float(dvar), "lengthscale": _lengthscale_gradient(pk, -2.0 * T / ls)}, dw, dZs / ls


def _pair_blocks(conv, X):
    """Per block of images and group: (rows, group slice, merged scaled patches x' [n, K, E], their
    weights w' [n, K], slot [n, Pg], lengthscales, phi [n, K, K] = exp(-|x'_k - x'_l|^2 / 2)): one
    batched GEMM of the augmented patches and numpy's exp over all pairs, which beats a compiled
    loop over the pairs of one triangle (the compiled scalar exp costs about five times numpy's).
    Images are blocked in order of their number of non-blank patches, so a block pads little."""
    layout, pk = conv.layout, conv.patch_kernel
    nonblank = _nonblank(layout, X)
    for g in range(layout.n_groups):
        sl = _members(layout, g)
        for rows in _ordered_blocks(_slot_counts(layout, nonblank, sl), lambda K: K * K):
            x, ls = _scaled(pk, layout.patches(X[rows])[:, sl], layout.patch_dim)
            x, w, slot = _compacted(x, conv.effective_weights[sl])
            phi = _se(np.matmul(_augmented(x, True), _augmented(x, False).transpose(0, 2, 1)))
            yield rows, sl, x, w, slot, ls, phi


def se_diag(conv, X):
    """Kdiag_n = variance w'^T Phi_n w' per group (eq. 5.46), with what its gradient needs for any
    dL/dKdiag (:func:`se_diag_gradients`), so that the pair sums are formed once per step:
    {"kdiag" [N], "u" [N, P]: [Phi_n w']_{slot(n, p)}, "t" [N, E]: 2 sum_k w'_k u_k x_ke^2 - 2 sum_k
    w'_k x_ke [Phi_n (w' x)]_ke}."""
    N, P, E = X.shape[0], conv.layout.n_patches, conv.layout.patch_dim
    out = {"kdiag": np.zeros(N), "u": np.zeros((N, P)), "t": np.zeros((N, E))}
    for rows, sl, x, w, slot, _, phi in _pair_blocks(conv, X):
        u = np.matmul(phi, w[:, :, None])[:, :, 0]  # [n, K]
        out["kdiag"][rows] += np.einsum("nk,nk->n", u, w)
        out["u"][rows, sl] += np.take_along_axis(u, slot, axis=1)
        wx = x * w[:, :, None]
        Y = np.matmul(phi, wx)  # [n, K, E]
        out["t"][rows] += 2.0 * np.einsum("nk,nke->ne", u * w, x * x) - 2.0 * np.einsum("nke,nke->ne", wx, Y)
    out["kdiag"] *= conv.patch_kernel.variance
    return out


def se_diag_gradients(conv, X, v, parts=None):
    """With u = Phi w': dKdiag/dvariance = w'^T u, dKdiag/dw' = 2 variance u, and dKdiag/dl_e =
    variance / l_e sum_kl w'_k w'_l phi_kl (x_ke - x_le)^2 = variance / l_e t_e (:func:`se_diag`'s
    parts, formed here if not given)."""
    pk = conv.patch_kernel
    parts = se_diag(conv, X) if parts is None else parts
    v = np.asarray(v, dtype=float)
    ls = np.broadcast_to(np.asarray(pk.lengthscale, dtype=float), (conv.layout.patch_dim,))
    dvar = float(v @ parts["kdiag"]) / pk.variance
    dw = 2.0 * pk.variance * (v @ parts["u"])
    return {"variance": dvar, "lengthscale": _lengthscale_gradient(pk, pk.variance * (v @ parts["t"]) / ls)}, dw


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
