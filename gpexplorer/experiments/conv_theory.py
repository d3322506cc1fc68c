"""Thesis §5.4 (Lemmas 1-3, Theorem 1) and §5.7.1 (eq. 5.48-5.49) in numbers: ``gpexplorer reproduce
conv-theory``.

(a) **The bound against M.** Regression (Gaussian likelihood) on small binary images, rectangle
    outlines labelled +1 (tall) / -1 (wide), with the convolutional kernel (invariant, and weighted
    with fixed random weights; "mean" scaling; the hyperparameters are fixed: the statements hold at
    any). The collapsed bound (Titsias; :class:`~gpexplorer.sparse.regression.SparseGPR`, eq. 2.37)
    with inducing patches (eq. 5.15-5.16) chosen among the U unique training patches in a random
    order, M = 1..U, against the exact log marginal likelihood (:class:`ExactGPR` on the kernel's own
    sum over all patch pairs, eq. 5.13/5.46). Checked: the bound equals it at M = U (Lemma 3,
    Theorem 1) and not before -- every set missing one unique patch is strictly below, so by the
    bound's monotonicity in the inducing set every M < U is; patches beyond the U change nothing;
    inducing points at Z = X are exact (Lemma 1; jitter needed when U < N, K being singular), and so
    are inducing points at rank W images whose patch-count rows span those of all N (the remark
    after Lemma 2; W [N, U] holds each image's summed patch weights per unique patch, f = W u,
    eq. 5.20).
(b) **Single-pixel images** (§5.7.1: each image one lit pixel, N = side^2): K = (WQ) K_G (WQ)^T
    (eq. 5.49, corrected) against the kernel's own pairwise sum, its eigen-spectrum and rank. The
    thesis says U = 25 for 5x5 patches; the blank patch is also a patch (U = 26), and rank K is
    measured against both. An SE kernel on the same images is full rank (universal).
"""

from __future__ import annotations

import time
import warnings

import numpy as np
from scipy.linalg import qr

from gpexplorer import _threads
from gpexplorer.experiments import conv_common as cc
from gpexplorer.inducing import InducingPatches, InducingPoints
from gpexplorer.kernels import Convolutional, SquaredExponential
from gpexplorer.linalg import JitterWarning
from gpexplorer.sparse.regression import ExactGPR, SparseGPR

__all__ = ["FULL", "QUICK", "TOL_EXACT", "TOL_POINTS", "THESIS_U", "COLUMNS", "rectangle_outlines",
           "patch_weight_matrix", "bound_curve", "single_pixel", "run", "format_report"]

#: sizes (N) of the bound-vs-M data sets, their image side, patch side; single-pixel (side, patch) sets
FULL = {"side": 10, "patch": 3, "sizes": (200, 60, 12), "single_pixel": ((10, 3), (28, 5)), "extra_patches": 5}
QUICK = {"side": 8, "patch": 3, "sizes": (60, 12), "single_pixel": ((8, 3), (28, 5)), "extra_patches": 3}
#: fixed hyperparameters of (a): base SE on patches, Gaussian noise
HYPER = {"variance": 1.0, "lengthscale": 1.0, "noise_variance": 0.1}
#: |bound - log p(y)| below this many nats counts as exact (inducing patches: no jitter is needed)
TOL_EXACT = 1e-6
#: ... for inducing points (at Z = X, Kuu = K is singular when rank W < N: jitter POINT_JITTER)
TOL_POINTS = 1e-5
POINT_JITTER = 1e-10
#: the thesis' U for the 28x28 single-pixel images and 5x5 patches (blank patch omitted)
THESIS_U = 25
COLUMNS = ["part", "kernel", "image", "patch", "N", "U", "M", "bound", "exact", "gap", "rank_W", "rank_K", "jitter"]


def rectangle_outlines(n, side, seed=0):
    """n binary side x side images of one-pixel rectangle outlines (sides 2..side, height != width),
    as rows X [n, side^2], and targets y = +1 (tall) / -1 (wide)."""
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 1:
        raise ValueError(f"n must be a positive integer; got {n!r}")
    if isinstance(side, bool) or not isinstance(side, (int, np.integer)) or side < 3:
        raise ValueError(f"side must be an integer of at least 3; got {side!r}")
    rng = np.random.default_rng(seed)
    X, y = np.zeros((n, side, side)), np.zeros(n)
    for i in range(n):
        h, w = rng.integers(2, side + 1, 2)
        while h == w:
            h, w = rng.integers(2, side + 1, 2)
        r, c = rng.integers(0, side - h + 1), rng.integers(0, side - w + 1)
        X[i, r, c:c + w] = X[i, r + h - 1, c:c + w] = X[i, r:r + h, c] = X[i, r:r + h, c + w - 1] = 1.0
        y[i] = 1.0 if h > w else -1.0
    return X.reshape(n, side * side), y


def patch_weight_matrix(kernel, X):
    """(W [N, U], U [U, E]): the unique patches of X and, per image, the summed effective weights
    (scale x w_p) of its patches equal to each, so that f(X) = W g(U) (eq. 5.20, 5.48)."""
    U, ids = kernel.decomposition(X)
    N, P = ids.shape
    W = np.zeros((N, len(U)))
    np.add.at(W, (np.repeat(np.arange(N), P), ids.ravel()), np.tile(kernel.effective_weights, N))
    return W, U


def _kernel(name, side, patch, seed):
    P = (side - patch + 1) ** 2
    weights = np.random.default_rng([seed, 5]).uniform(0.5, 1.5, P) if name == "weighted" else None
    return Convolutional(SquaredExponential(HYPER["variance"], HYPER["lengthscale"]), image_shape=(side, side),
                         patch_shape=(patch, patch), weighted=name == "weighted", weights=weights, scaling="mean")


def _bound(X, y, kernel, feature, jitter=0.0):
    m = SparseGPR(X, y, kernel, feature, noise_variance=HYPER["noise_variance"], jitter=jitter)
    return m.log_marginal_likelihood(), m.jitter_used


def bound_curve(X, y, kernel, seed=0, extra=5):
    """(a) for one data set and kernel: a dict (module docstring) with the curve over M."""
    exact = ExactGPR(X, y, kernel, noise_variance=HYPER["noise_variance"]).log_marginal_likelihood()
    W, U = patch_weight_matrix(kernel, X)
    nU, N = len(U), len(X)
    order = np.random.default_rng([seed, 1]).permutation(nU)
    curve = [_bound(X, y, kernel, InducingPatches(U[order[:M]]))[0] for M in range(1, nU + 1)]
    drop = [_bound(X, y, kernel, InducingPatches(np.delete(U, a, axis=0)))[0] for a in range(nU)]
    lo, hi = float(X.min()), float(X.max())
    extras = np.random.default_rng([seed, 2]).uniform(lo, hi, (extra, U.shape[1]))
    beyond = _bound(X, y, kernel, InducingPatches(np.vstack([U, extras])))[0]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", JitterWarning)
        at_X, jitter_X = _bound(X, y, kernel, InducingPoints(X.copy()), POINT_JITTER)
        rho = int(np.linalg.matrix_rank(W))
        pivots = np.sort(qr(W.T, pivoting=True, mode="r")[1][:rho])  # rho images whose rows span W's rows
        at_rho, jitter_rho = _bound(X, y, kernel, InducingPoints(X[pivots]), POINT_JITTER)
        below_rho = _bound(X, y, kernel, InducingPoints(X[pivots[:-1]]), POINT_JITTER)[0] if rho > 1 else -np.inf
    return {"N": N, "U": nU, "rank_W": rho, "exact": exact, "order": order, "curve": curve,
            "gaps": [exact - b for b in curve], "drop_one_gaps": [exact - b for b in drop],
            "beyond_U": {"M": nU + extra, "gap": exact - beyond},
            "points_at_X": {"M": N, "gap": exact - at_X, "jitter": jitter_X},
            "points_at_rank_W": {"M": rho, "images": pivots, "gap": exact - at_rho, "jitter": jitter_rho,
                                 "gap_one_fewer": exact - below_rho}}


def single_pixel(side, patch, dense=None, seed=0):
    """(b): N = side^2 single-pixel images; K by eq. 5.49 for the invariant and weighted (random
    weights) kernels, checked against the kernel's pairwise sum when ``dense`` (default: side <= 12),
    its eigenvalues and rank; an SE kernel's rank on the same images."""
    X = np.eye(side * side)
    dense = side <= 12 if dense is None else dense
    out = {"image": f"{side}x{side}", "patch": f"{patch}x{patch}", "N": len(X), "kernels": {}}
    for name in ("invariant", "weighted"):
        k = _kernel(name, side, patch, seed)
        W, U = patch_weight_matrix(k, X)
        K = W @ k.base.K(U) @ W.T  # eq. 5.49: (WQ) K_G (WQ)^T
        ev = np.linalg.eigvalsh(K)[::-1]
        tol = float(ev[0] * len(X) * np.finfo(float).eps)
        rank = int(np.sum(ev > tol))
        row = {"U": len(U), "blank_is_unique_patch": bool(np.any(np.all(U == 0.0, axis=1))),
               "rank_K": rank, "rank_W": int(np.linalg.matrix_rank(W)), "rank_tolerance": tol,
               "eigenvalues": ev[:min(len(ev), len(U) + 5)]}
        if dense:
            Kd = k.K(X)
            row["eq_5_49_max_rel_diff"] = float(np.max(np.abs(Kd - K)) / np.max(np.abs(Kd)))
        out["kernels"][name] = row
    se = np.linalg.eigvalsh(SquaredExponential(1.0, 1.0).K(X))
    out["se_rank"] = int(np.sum(se > se[-1] * len(X) * np.finfo(float).eps))
    return out


def _claims(curves, pixels):
    out = []
    for c in curves:
        tag = f"{c['kernel']}, N = {c['N']}, U = {c['U']}"
        gap_U = c["gaps"][-1]
        out.append(cc.claim(f"bound with all U unique patches = exact log marginal likelihood ({tag}; Lemma 3, Thm 1)",
                            abs(gap_U) < TOL_EXACT, f"exact {c['exact']:.6f}, gap at M = U {gap_U:.2e} nats"))
        worst = min(c["drop_one_gaps"])
        below = min(c["gaps"][:-1]) if c["U"] > 1 else np.inf
        out.append(cc.claim(f"bound strictly below exact whenever a unique patch is missing ({tag})",
                            worst > TOL_EXACT and below > TOL_EXACT,
                            f"smallest gap over the U sets missing one patch {worst:.3g} nats; smallest over "
                            f"the curve's M < U {below:.3g}"))
        b = c["beyond_U"]
        out.append(cc.claim(f"patches beyond the U unique ones add nothing ({tag})", abs(b["gap"]) < TOL_EXACT,
                            f"M = {b['M']}: gap {b['gap']:.2e}"))
        p = c["points_at_X"]
        out.append(cc.claim(f"inducing points at Z = X are exact ({tag}; Lemma 1)", abs(p["gap"]) < TOL_POINTS,
                            f"M = N = {p['M']}: gap {p['gap']:.2e} nats (jitter {p['jitter']:.0e}; "
                            f"rank K = rank W = {c['rank_W']} {'<' if c['rank_W'] < c['N'] else '='} N)"))
        r = c["points_at_rank_W"]
        out.append(cc.claim(f"inducing points at rank W = {c['rank_W']} images are exact ({tag}; remark after "
                            "Lemma 2)", abs(r["gap"]) < TOL_POINTS,
                            f"gap {r['gap']:.2e} (fewer images cannot be: Qff would have rank < rank K; with "
                            f"{r['M'] - 1} of them {r['gap_one_fewer']:.2g} nats)"))
    inv = [c for c in curves if c["kernel"] == "invariant"]
    remark = all((c["U"] > c["rank_W"]) == (c["U"] > c["N"]) for c in inv)
    out.append(cc.claim("the remark after Thm 1 as printed: inducing patches need more inducing variables than "
                        "inducing points only when U > N", remark,
                        "; ".join(f"N = {c['N']}: patches need U = {c['U']}, points rank W = {c['rank_W']}"
                                  for c in inv)
                        + ("" if remark else "; points need only rank W <= min(N, U) images (the remark after "
                           "Lemma 2), which can be below U even when U < N")))
    for s in pixels:
        for name, k in s["kernels"].items():
            tag = f"{s['image']} single-pixel images, {s['patch']} patches, {name}"
            if "eq_5_49_max_rel_diff" in k:
                out.append(cc.claim(f"eq. 5.49 K = (WQ) K_G (WQ)^T equals the kernel's pairwise patch sum ({tag})",
                                    k["eq_5_49_max_rel_diff"] < 1e-10,
                                    f"max relative difference {k['eq_5_49_max_rel_diff']:.1e}"))
            out.append(cc.claim(f"rank K <= U, the blank patch counted ({tag})", k["rank_K"] <= k["U"],
                                f"rank K = {k['rank_K']}, U = {k['U']} (blank among them: "
                                f"{k['blank_is_unique_patch']})"))
            if s["patch"] == "5x5" and s["image"] == "28x28":
                out.append(cc.claim(f"rank K <= {THESIS_U}, the thesis' U with the blank patch omitted ({tag})",
                                    k["rank_K"] <= THESIS_U,
                                    f"rank K = {k['rank_K']}" + ("" if k["rank_K"] <= THESIS_U else
                                                                 ": the blank patch is a patch of every image too")))
        out.append(cc.claim(f"an SE kernel on the same {s['image']} images is full rank (universal)",
                            s["se_rank"] == s["N"], f"rank {s['se_rank']} of {s['N']}"))
    return out


def run(quick=False, seed=0, max_iter=None, num_inducing=None, scheduler=None, n_workers=None, out=None):
    """Parts (a) and (b) (module docstring); ``max_iter``, ``num_inducing``, ``scheduler``,
    ``n_workers`` are not used (nothing is fitted; it runs in seconds on one core)."""
    t0 = time.perf_counter()
    cfg = QUICK if quick else FULL
    curves = []
    with _threads.single_threaded():  # small matrices: BLAS threads cost more than they give on a shared machine
        for N in cfg["sizes"]:
            X, y = rectangle_outlines(N, cfg["side"], seed)
            for name in ("invariant", "weighted"):
                c = bound_curve(X, y, _kernel(name, cfg["side"], cfg["patch"], seed), seed, cfg["extra_patches"])
                curves.append({"kernel": name, "image": f"{cfg['side']}x{cfg['side']}",
                               "patch": f"{cfg['patch']}x{cfg['patch']}", **c})
        pixels = [single_pixel(side, patch, seed=seed) for side, patch in cfg["single_pixel"]]
    rows = []
    for c in curves:
        base = {"part": "bound_vs_M", "kernel": c["kernel"], "image": c["image"], "patch": c["patch"], "N": c["N"],
                "U": c["U"], "exact": c["exact"], "rank_W": c["rank_W"]}
        rows += [{**base, "M": M, "bound": c["exact"] - g, "gap": g} for M, g in enumerate(c["gaps"], start=1)]
        for key in ("beyond_U", "points_at_X", "points_at_rank_W"):
            rows.append({**base, "part": key, "M": c[key]["M"], "bound": c["exact"] - c[key]["gap"],
                         "gap": c[key]["gap"], "jitter": c[key].get("jitter", 0.0)})
    for s in pixels:
        rows += [{"part": "single_pixel", "kernel": name, "image": s["image"], "patch": s["patch"], "N": s["N"],
                  "U": k["U"], "rank_W": k["rank_W"], "rank_K": k["rank_K"]} for name, k in s["kernels"].items()]
    result = {"experiment": "conv-theory", "quick": quick, "settings": dict(cfg), "hyperparameters": dict(HYPER),
              "scaling": "mean", "curves": curves, "single_pixel": pixels, "rows": rows,
              "data": "synthetic rectangle outlines (rectangle_outlines, seed %d) and single-pixel images" % seed}
    result["claims"] = _claims(curves, pixels)
    result["seconds"] = time.perf_counter() - t0
    if out is not None:
        result["files"] = cc.write_outputs(result, out, "conv_theory", COLUMNS)
    return result


def _curve_line(c):
    marks = sorted({1, 2, 4, 8, 16, 32, c["U"] - 1, c["U"]} & set(range(1, c["U"] + 1)))
    return "  gap by M: " + ", ".join(f"{M}{'=U' if M == c['U'] else ''}: {c['gaps'][M - 1]:.3g}" for M in marks)


def format_report(result):
    h = result["hyperparameters"]
    lines = ["Thesis §5.4 (Lemmas 1-3, Theorem 1) and §5.7.1 (eq. 5.48-5.49) in numbers"
             + (" [quick: smaller images]" if result["quick"] else ""),
             f"data: {result['data']}; kernel: conv ('mean' scaling), base SE variance {h['variance']}, lengthscale "
             f"{h['lengthscale']}, Gaussian noise {h['noise_variance']} (fixed); weighted: fixed random weights "
             "U(0.5, 1.5)", "",
             "(a) collapsed bound (SparseGPR, VFE) minus the exact log marginal likelihood (ExactGPR on the kernel's "
             "sum over all patch pairs), in nats; inducing patches added in a random order of the U unique patches:"]
    for c in result["curves"]:
        lines.append(f"- {c['kernel']}, {c['image']} images, {c['patch']} patches, N = {c['N']}: U = {c['U']}, "
                     f"rank W = {c['rank_W']}, log p(y) = {c['exact']:.4f}")
        lines.append(_curve_line(c))
        lines.append(f"  smallest gap with one unique patch missing: {min(c['drop_one_gaps']):.3g}; M = "
                     f"{c['beyond_U']['M']} (U + uniform extras): {c['beyond_U']['gap']:.1e}; inducing points at "
                     f"Z = X (M = {c['N']}): {c['points_at_X']['gap']:.1e}; at rank W = {c['rank_W']} images: "
                     f"{c['points_at_rank_W']['gap']:.1e} (one fewer: {c['points_at_rank_W']['gap_one_fewer']:.3g})")
    lines += ["", "(b) single-pixel images (one lit pixel each), K = (WQ) K_G (WQ)^T (eq. 5.49):"]
    for s in result["single_pixel"]:
        for name, k in s["kernels"].items():
            ev = k["eigenvalues"]
            U = k["U"]
            check = (f"; vs the kernel's pairwise sum {k['eq_5_49_max_rel_diff']:.1e}"
                     if "eq_5_49_max_rel_diff" in k else "")
            lines.append(f"- {s['image']}, {s['patch']} patches, {name}: N = {s['N']}, U = {U} (blank included: "
                         f"{k['blank_is_unique_patch']}), rank K = {k['rank_K']}; eigenvalues {U - 1}-{U + 2}: "
                         + ", ".join(f"{v:.2e}" for v in ev[U - 2:U + 2]) + check)
        lines.append(f"  SE kernel on the same images: rank {s['se_rank']} of {s['N']}")
    lines += ["", "claims, checked on these numbers:"]
    lines += [f"- {c['claim']}: {c['verdict']}\n    {c['numbers']}" for c in result["claims"]]
    failed = [c for c in result["claims"] if c["verdict"] != "HOLDS"]
    lines += ["", "where ours differs from the thesis' text:" if failed else "every claim above holds."]
    lines += [f"- {c['claim']}: {c['numbers']}" for c in failed]
    lines.append(f"\nwall time {result['seconds']:.1f} s")
    if result.get("files"):
        lines.append("saved: " + ", ".join(result["files"].values()))
    return "\n".join(lines)
