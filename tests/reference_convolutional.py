"""Slow, literal transcription of the convolutional kernels of van der Wilk's thesis, ch. 5.

Written from the contract of ``gpexplorer.kernels.Convolutional`` (issue 26) with plain Python
loops over images, patch positions, channels and pixels, so that every index is visible:

* eq. 5.11-5.13: f(x) = s sum_p w_p g(x^[p]),  K(x, x') = s^2 sum_p sum_p' w_p w_p' k(x^[p], x'^[p']),
  weighted as in eq. 5.45-5.47 (w = 1 when unweighted);
* eq. 5.15-5.16: Kuf[m, n] = s sum_p w_p k(z_m, x_n^[p]),  Kuu = k(Z, Z);
* §5.8, colour images of C channels:
  - "none" (baseline): one single-channel h x w patch per (position q, channel c), p = q C + c;
  - "patch" (weighted colour-patch): one h x w x C patch per position, pixels in (di, dj, c) order;
  - "additive" (eq. 5.63-5.64, corrected): "patch" patches with the patch kernel
    k~(z, z') = sum_c cw_c^2 k(z[c::C], z'[c::C]);
  - "multi" (eq. 5.61-5.62): "none" patches, one independent patch response g_c per channel,
    u = [g_0(Z); ...; g_{C-1}(Z)], so only patches of the same channel covary and Kuu is
    block-diagonal.
* s = 1 for scaling "sum" (the thesis), s = 1 / P for "mean" (convgp and GPflow).

Images are rows of X [N, H W C], row-major with the channels last: pixel (i, j, c) is column
(i W + j) C + c. Patch positions q = a Pw + b, top-left corner (a, b), a over rows.

Nothing from gpexplorer is imported: the base kernel k is any object with ``.K(A, B)`` (or a
plain function of (A, B)) evaluated on [*, E] arrays of patch vectors. The sums over patches are
explicit loops; do not vectorise them.
"""

from __future__ import annotations

import numpy as np

__all__ = ["COLOURS", "SCALINGS", "n_patches", "patch_dim", "extract_patches", "patch_kernel", "conv_K",
           "conv_Kdiag", "conv_Kuf", "conv_Kuu"]

COLOURS = ("none", "patch", "multi", "additive")
SCALINGS = ("sum", "mean")


def _check_colour(colour):
    if colour not in COLOURS:
        raise ValueError(f"colour must be one of {COLOURS}; got {colour!r}")


def n_patches(image_shape, patch_shape, channels=1, colour="none"):
    """P: (H - h + 1)(W - w + 1) positions, times C for the single-channel colours."""
    _check_colour(colour)
    (H, W), (h, w) = image_shape, patch_shape
    positions = (H - h + 1) * (W - w + 1)
    return positions * channels if colour in ("none", "multi") else positions


def patch_dim(patch_shape, channels=1, colour="none"):
    """E, the length of a patch vector: h w for "none"/"multi", h w C for "patch"/"additive"."""
    _check_colour(colour)
    h, w = patch_shape
    return h * w if colour in ("none", "multi") else h * w * channels


def extract_patches(image_row, image_shape, patch_shape, channels=1, colour="none"):
    """The patches of one image [P, E], in the contract's order (see the module notes)."""
    _check_colour(colour)
    (H, W), (h, w), C = image_shape, patch_shape, channels
    x = np.asarray(image_row, dtype=float)
    if x.shape != (H * W * C,):
        raise ValueError(f"image_row must have {H * W * C} entries; got shape {x.shape}")
    if h > H or w > W:
        raise ValueError(f"patch_shape {patch_shape} is larger than image_shape {image_shape}")

    def pixel(i, j, c):
        return x[(i * W + j) * C + c]

    patches = []
    for a in range(H - h + 1):
        for b in range(W - w + 1):
            if colour in ("none", "multi"):
                for c in range(C):
                    patches.append([pixel(a + di, b + dj, c) for di in range(h) for dj in range(w)])
            else:
                patches.append([pixel(a + di, b + dj, c) for di in range(h) for dj in range(w) for c in range(C)])
    return np.array(patches, dtype=float)


def _base(base, A, B):
    return np.asarray(base.K(A, B) if hasattr(base, "K") else base(A, B), dtype=float)


def patch_kernel(A, B, base, *, colour="none", channels=1, channel_weights=None):
    """k(A, B) [len A, len B] between patch vectors: the base kernel, or for "additive"
    k~(z, z') = sum_c cw_c^2 k(z[c::C], z'[c::C]) (eq. 5.64 as corrected in the spec)."""
    A, B = np.atleast_2d(A), np.atleast_2d(B)
    if colour != "additive":
        return _base(base, A, B)
    C = channels
    cw = np.ones(C) if channel_weights is None else np.asarray(channel_weights, dtype=float)
    out = np.zeros((len(A), len(B)))
    for c in range(C):
        out += cw[c] ** 2 * _base(base, A[:, c::C], B[:, c::C])
    return out


def _setup(image_shape, patch_shape, channels, colour, scaling, weights):
    if scaling not in SCALINGS:
        raise ValueError(f"scaling must be one of {SCALINGS}; got {scaling!r}")
    P = n_patches(image_shape, patch_shape, channels, colour)
    w = np.ones(P) if weights is None else np.asarray(weights, dtype=float)
    if w.shape != (P,):
        raise ValueError(f"weights must have {P} entries; got shape {w.shape}")
    s = 1.0 if scaling == "sum" else 1.0 / P
    return P, w, s


def conv_K(X, X2, base, *, image_shape, patch_shape, channels=1, colour="none", scaling="sum", weights=None,
           channel_weights=None):
    """K(X, X2) [N, N2] (eq. 5.13 / 5.46; "multi": same-channel pairs only, eq. 5.61)."""
    X = np.atleast_2d(np.asarray(X, dtype=float))
    X2 = X if X2 is None else np.atleast_2d(np.asarray(X2, dtype=float))
    P, w, s = _setup(image_shape, patch_shape, channels, colour, scaling, weights)
    C = channels
    K = np.zeros((len(X), len(X2)))
    for n in range(len(X)):
        pn = extract_patches(X[n], image_shape, patch_shape, C, colour)
        for n2 in range(len(X2)):
            pn2 = extract_patches(X2[n2], image_shape, patch_shape, C, colour)
            k = patch_kernel(pn, pn2, base, colour=colour, channels=C, channel_weights=channel_weights)
            total = 0.0
            for p in range(P):
                for p2 in range(P):
                    if colour == "multi" and p % C != p2 % C:
                        continue  # g_c and g_c' are independent for c != c'
                    total += w[p] * w[p2] * k[p, p2]
            K[n, n2] = s * s * total
    return K


def conv_Kdiag(X, base, **options):
    """Kdiag(X)[n] = K(x_n, x_n), one image at a time."""
    X = np.atleast_2d(np.asarray(X, dtype=float))
    return np.array([conv_K(X[n:n + 1], X[n:n + 1], base, **options)[0, 0] for n in range(len(X))])


def conv_Kuf(Z, X, base, *, image_shape, patch_shape, channels=1, colour="none", scaling="sum", weights=None,
             channel_weights=None):
    """Kuf [M, N] (eq. 5.15 / 5.47): s sum_p w_p k(z_m, x_n^[p]); for "multi" [C M, N] with
    row c M + m = s sum_q w_{qC+c} k(z_m, x_n^[qC+c]) (eq. 5.62)."""
    Z = np.atleast_2d(np.asarray(Z, dtype=float))
    X = np.atleast_2d(np.asarray(X, dtype=float))
    P, w, s = _setup(image_shape, patch_shape, channels, colour, scaling, weights)
    C, M = channels, len(Z)
    rows = C * M if colour == "multi" else M
    Kuf = np.zeros((rows, len(X)))
    for n in range(len(X)):
        pn = extract_patches(X[n], image_shape, patch_shape, C, colour)
        k = patch_kernel(Z, pn, base, colour=colour, channels=C, channel_weights=channel_weights)  # [M, P]
        for m in range(M):
            for p in range(P):
                row = (p % C) * M + m if colour == "multi" else m
                Kuf[row, n] += s * w[p] * k[m, p]
    return Kuf


def conv_Kuu(Z, base, *, channels=1, colour="none", channel_weights=None):
    """Kuu = k(Z, Z) (eq. 5.16); k~ for "additive"; blockdiag of C copies for "multi"."""
    _check_colour(colour)
    Z = np.atleast_2d(np.asarray(Z, dtype=float))
    k = patch_kernel(Z, Z, base, colour=colour, channels=channels, channel_weights=channel_weights)
    if colour != "multi":
        return k
    M = len(Z)
    Kuu = np.zeros((channels * M, channels * M))
    for c in range(channels):
        for i in range(M):
            for j in range(M):
                Kuu[c * M + i, c * M + j] = k[i, j]
    return Kuu
