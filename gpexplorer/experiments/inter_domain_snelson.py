"""Thesis §4.4.2 ("A motivating example", figs. 4.3-4.5): Snelson, VFE, M = 3 multiscale features.

``gpexplorer reproduce inter-domain-snelson`` runs :func:`run` and prints :func:`format_report`:

1. **Fig. 4.3.** VFE with three :class:`gpexplorer.inducing.Multiscale` features is optimised
   jointly (centres, widths, kernel, noise) from several deterministic starts (seeded uniform
   centres, widths half the starting lengthscale). The run with the best bound is kept -- never
   any other criterion -- and we count how many starts ended at a near-coincident pair (prior
   correlation of their u above :data:`~gpexplorer.sparse.feature_position.DUPLICATE_CORRELATION`)
   and how many reached the best bound: the thesis says the solution is "consistently found".
   For the pair: the correlation of their u under q(u) and under the prior, and
   alpha = Kuu^-1 mu (thesis: 0.99999979; 1.8662e5 and -1.8674e5).
2. **Fig. 4.4.** The bound against one pair member's position
   (:func:`~gpexplorer.sparse.feature_position.position_curve`) on a coarse grid over the inputs
   (its apparent maximum; thesis ~2.6), then zoomed on the partner (the true peak; thesis ~4.2),
   and both again with extra jitter on Kuu (relative to the kernel variance): the peak goes.
3. **Fig. 4.5.** The pair merged into one inducing variable u' = u_i + w u_j with
   w = alpha_j / alpha_i (the weights of the GP solution; w_1 = 1 as in
   :class:`gpexplorer.inducing.SumOfDeltas`): (a) as the thesis does, the sum of the two
   multiscale features (eq. 4.14-4.19 with the multiscale covariances as base, i.e. Kuu' = A Kuu
   A^T, Kuf' = A Kuf), and (b) as a :class:`~gpexplorer.inducing.SumOfDeltas` member (C = 2, the
   deltas at the two centres), before and after re-optimising its features with the
   hyperparameters fixed. Reported: the bound penalty and the largest change of the predictive
   mean over the inputs.

The fit uses jitter :data:`FIT_JITTER` on Kuu: the near-coincident solution needs a correlation
Kuu's default jitter (1e-6) does not allow, which is the thesis' point about jitter.
"""

from __future__ import annotations

import time
import warnings

import numpy as np

from gpexplorer import covariances, datasets, inducing, kernels
from gpexplorer.linalg import JitterWarning
from gpexplorer.sparse import feature_position as fp
from gpexplorer.sparse import objectives
from gpexplorer.sparse.regression import SparseGPR

__all__ = ["THESIS", "START", "FIT_JITTER", "EXTRA_JITTERS", "run", "format_report"]

#: thesis §4.4.2 (text and fig. 4.4 caption)
THESIS = {"q_correlation": 0.99999979, "alpha": (1.8662e5, -1.8674e5), "apparent_max": 2.6, "true_peak": 4.2}
#: starting hyperparameters (as thesis_chapter3) and multiscale width (half the lengthscale)
START = {"variance": 1.0, "lengthscale": 0.5, "noise_variance": 0.09, "delta": 0.25}
FIT_JITTER = 1e-12
#: extra jitter on diag(Kuu) for the fig. 4.4 comparison, relative to the fitted kernel variance
EXTRA_JITTERS = (1e-4, 1e-2)
#: a start "reached the best bound" when within this many nats of it
SAME_BOUND = 0.05
#: points of the coarse curve outside +-AWAY of the partner count as "away from the pair"
AWAY = 0.05


def _fit_start(ds, seed, M, max_iter):
    rng = np.random.default_rng(seed)
    mu = np.sort(rng.uniform(ds.X.min(), ds.X.max(), M))[:, None]
    kernel = kernels.SquaredExponential(variance=START["variance"], lengthscale=START["lengthscale"])
    model = SparseGPR(ds.X, ds.y, kernel=kernel, Z=inducing.Multiscale(mu, np.full((M, 1), START["delta"])),
                      approximation="vfe", noise_variance=START["noise_variance"], jitter=FIT_JITTER)
    model.fit(max_iter=max_iter, tol=1e-15)
    return model


def _pair_facts(model, i, j):
    post = model.posterior()
    S = model.q_u()[1]
    prior = fp.u_correlation(model.inducing, model.kernel)
    return {"members": (i, j), "centres": (float(model.inducing.mu[i, 0]), float(model.inducing.mu[j, 0])),
            "widths": (float(model.inducing.delta[i, 0]), float(model.inducing.delta[j, 0])),
            "q_correlation": float(S[i, j] / np.sqrt(S[i, i] * S[j, j])),
            "prior_correlation": float(prior[i, j]),
            "alpha": (float(post.weights[i]), float(post.weights[j]))}


def _curves(model, member, partner, coarse, zoom_points, jitter):
    """Coarse curve, its maximum away from the pair, and the zoom on the partner (fig. 4.4)."""
    c = fp.position_curve(model, member, coarse, jitter=jitter)
    step = float(coarse[1] - coarse[0])
    z = fp.position_curve(model, member, np.linspace(partner - 2 * step, partner + 2 * step, zoom_points),
                          jitter=jitter)
    z = fp.position_curve(model, member, fp.zoom_grid(z, points=zoom_points), jitter=jitter)  # once more
    away = np.abs(c.grid - partner) > AWAY
    k = int(np.nanargmax(np.where(away, c.bound, -np.inf)))
    at_fit = fp.position_curve(model, member, [model.inducing.mu[member, 0]], jitter=jitter).bound[0]
    return {"jitter": float(c.jitter), "coarse_max": c.best, "coarse_max_away": (float(c.grid[k]), float(c.bound[k])),
            "zoom_max": z.best, "at_fit": float(at_fit), "coarse": c, "zoom": z}


def _merged_basis_sum(model, i, j, w, Xs):
    """Fig. 4.5 as printed: u' = u_i + w u_j of the two multiscale features, the third kept."""
    rest = [k for k in range(len(model.inducing)) if k not in (i, j)]
    A = np.zeros((1 + len(rest), len(model.inducing)))
    A[0, i], A[0, j] = 1.0, w
    for r, k in enumerate(rest, start=1):
        A[r, k] = 1.0
    Kuu = covariances.Kuu(model.inducing, model.kernel)
    Kuf = covariances.Kuf(model.inducing, model.kernel, model.X)
    r, post = objectives.collapsed_objective(A @ Kuu @ A.T, A @ Kuf, model.kernel.Kdiag(model.X), model.y,
                                             model.noise_variance, model.jitter, "vfe", warn=False)
    mean, _ = post.predict(A @ covariances.Kuf(model.inducing, model.kernel, Xs), kss_diag=model.kernel.Kdiag(Xs))
    return -r.value, mean


def _merged_sum_of_deltas(model, i, j, w, Xs, max_iter):
    """The pair as one SumOfDeltas member (deltas at the two centres, weights (1, w)); every
    other member a sum of two deltas at its centre with weights (1, 0), i.e. an inducing point."""
    mu = model.inducing.mu
    rest = [k for k in range(len(model.inducing)) if k not in (i, j)]
    Z = np.stack([np.stack([mu[i], mu[j]])] + [np.stack([mu[k], mu[k]]) for k in rest])
    weights = np.array([[1.0, w]] + [[1.0, 0.0] for _ in rest])
    sod = SparseGPR.from_model(model, "vfe", Z=inducing.SumOfDeltas(Z, weights))
    start = sod.log_marginal_likelihood()
    start_mean = sod.predict_f(Xs)[0]
    sod.fit(max_iter=max_iter, fixed=("kernel", "noise_variance"), tol=1e-15)
    return {"start_bound": start, "start_mean": start_mean, "bound": sod.log_marginal_likelihood(),
            "mean": sod.predict_f(Xs)[0], "Z": sod.inducing.Z[:, :, 0].tolist(), "weights": sod.inducing.weights.tolist()}


def run(seeds=None, max_iter=5000, grid_points=200, zoom_points=1001, quick=False, M=3):
    """Figs. 4.3-4.5; returns a dict (see the module docstring) for :func:`format_report`."""
    t0 = time.perf_counter()
    seeds = tuple(range(8 if quick else 20)) if seeds is None else tuple(seeds)
    grid_points, zoom_points = (100, 401) if quick else (grid_points, zoom_points)
    ds = datasets.load("snelson")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", JitterWarning)
        models = [_fit_start(ds, s, M, max_iter) for s in seeds]
        bounds = np.array([m.log_marginal_likelihood() for m in models])
        pairs = [fp.near_duplicates(m.inducing, m.kernel) for m in models]
        best = models[int(np.argmax(bounds))]
        out = {"seeds": seeds, "bounds": bounds.tolist(), "M": M, "n_starts": len(seeds),
               "n_near_coincident": sum(bool(p) for p in pairs),
               "n_best": int(np.sum(bounds >= bounds.max() - SAME_BOUND)),
               "best": {"bound": float(bounds.max()), "seed": seeds[int(np.argmax(bounds))],
                        "centres": best.inducing.mu[:, 0].tolist(), "widths": best.inducing.delta[:, 0].tolist(),
                        "lengthscale": float(best.kernel.lengthscale), "variance": float(best.kernel.variance),
                        "noise_variance": float(best.noise_variance), "jitter": best.jitter},
               "best_has_pair": bool(pairs[int(np.argmax(bounds))]), "pair": None}
        best_pairs = pairs[int(np.argmax(bounds))]
        if not best_pairs:
            out["seconds"] = time.perf_counter() - t0
            return out
        i, j, _ = max(best_pairs, key=lambda p: p[2])
        out["pair"] = _pair_facts(best, i, j)
        coarse = np.linspace(ds.X.min(), ds.X.max(), grid_points)
        partner = float(best.inducing.mu[j, 0])
        out["curves"] = [_curves(best, i, partner, coarse, zoom_points, None)]
        out["curves"] += [_curves(best, i, partner, coarse, zoom_points, r * best.kernel.variance)
                          for r in EXTRA_JITTERS]
        alpha_i, alpha_j = out["pair"]["alpha"]
        Xs = np.linspace(ds.X.min(), ds.X.max(), 500)[:, None]
        mean3 = best.predict_f(Xs)[0]
        bound2, mean2 = _merged_basis_sum(best, i, j, alpha_j / alpha_i, Xs)
        sod = _merged_sum_of_deltas(best, i, j, alpha_j / alpha_i, Xs, 200 if quick else 2000)
    out["merge"] = {"w": alpha_j / alpha_i, "basis_sum_bound": bound2, "basis_sum_penalty": out["best"]["bound"] - bound2,
                    "basis_sum_mean_diff": float(np.max(np.abs(mean2 - mean3))),
                    "sod_start_penalty": out["best"]["bound"] - sod["start_bound"],
                    "sod_start_mean_diff": float(np.max(np.abs(sod["start_mean"] - mean3))),
                    "sod_penalty": out["best"]["bound"] - sod["bound"],
                    "sod_mean_diff": float(np.max(np.abs(sod["mean"] - mean3))),
                    "sod_Z": sod["Z"], "sod_weights": sod["weights"], "mean_range": float(np.ptp(mean3))}
    out["seconds"] = time.perf_counter() - t0
    return out


def _jitter_label(c, variance):
    return f"{c['jitter']:.0e} (fit)" if c["jitter"] == FIT_JITTER else f"{c['jitter'] / variance:.0e} x var"


def format_report(r):
    """Plain text: ours beside the thesis' values, and where ours differs."""
    b = r["best"]
    lines = [f"Thesis §4.4.2, figs 4.3-4.5: Snelson (200 points), VFE, M = {r['M']} multiscale features, "
             f"jitter {b['jitter']:.0e} on Kuu",
             f"starts: {r['n_starts']} (seeds {r['seeds'][0]}..{r['seeds'][-1]}, uniform centres, widths "
             f"{START['delta']}); kept: the best bound only",
             f"  ended with a near-coincident pair (prior corr > {fp.DUPLICATE_CORRELATION}): "
             f"{r['n_near_coincident']}/{r['n_starts']}; reached the best bound (within {SAME_BOUND} nats): "
             f"{r['n_best']}/{r['n_starts']}",
             f"  bounds by start: {', '.join(f'{v:.1f}' for v in r['bounds'])}",
             f"best (seed {b['seed']}): bound {b['bound']:.3f}; centres {np.round(b['centres'], 4).tolist()}, "
             f"widths {np.round(b['widths'], 4).tolist()}; lengthscale {b['lengthscale']:.3f}, "
             f"variance {b['variance']:.4f}, noise {b['noise_variance']:.4f}"]
    if r["pair"] is None:
        lines.append("NO near-coincident pair in the best solution: figs 4.4-4.5 not reproduced.")
        return "\n".join(lines)
    p, T = r["pair"], THESIS
    lines += ["",
              f"{'fig. 4.3-4.4 quantity':<44} {'ours':>16} {'thesis':>16}",
              f"{'corr(u_i, u_j) under q(u)':<44} {p['q_correlation']:>16.8f} {T['q_correlation']:>16.8f}",
              f"{'corr(u_i, u_j) under the prior':<44} {p['prior_correlation']:>16.8f} {'-':>16}",
              f"{'alpha_i = (Kuu^-1 mu)_i':<44} {p['alpha'][0]:>16.4e} {T['alpha'][0]:>16.4e}",
              f"{'alpha_j':<44} {p['alpha'][1]:>16.4e} {T['alpha'][1]:>16.4e}",
              f"{'pair centres':<44} {p['centres'][0]:>8.4f}{p['centres'][1]:>8.4f} {'(not given)':>16}"]
    var = b["variance"]
    for c in r["curves"]:
        lines.append(f"position curve of member {p['members'][0]}, extra jitter {_jitter_label(c, var)}:")
        x0, v0 = c["coarse_max"]
        xa, va = c["coarse_max_away"]
        xz, vz = c["zoom_max"]
        thesis = c["jitter"] == FIT_JITTER
        lines.append(f"  coarse max ({c['coarse'].grid.size} pts): x = {x0:.4f}, bound {v0:.2f}"
                     + (f"   [thesis apparent max ~{T['apparent_max']}]" if thesis else ""))
        lines.append(f"  coarse max away from the pair (|x - x_j| > {AWAY}): x = {xa:.4f}, bound {va:.2f}")
        lines.append(f"  zoomed max (+-2 coarse steps around x_j, refined): x = {xz:.5f}, bound {vz:.3f}"
                     + (f"   [thesis true peak ~{T['true_peak']}]" if thesis else "")
                     + ("" if thesis else ("   -> the peak is gone" if vz < va else "   -> a peak remains")))
        lines.append(f"  bound at the fitted position: {c['at_fit']:.3f}")
    m = r["merge"]
    lines += ["",
              f"fig. 4.5: the pair merged into one variable u' = u_i + w u_j, w = alpha_j/alpha_i = {m['w']:.6f}",
              f"  (a) sum of the two multiscale features (as the thesis): bound {m['basis_sum_bound']:.3f}, "
              f"penalty {m['basis_sum_penalty']:.4f} nats, max |mean change| {m['basis_sum_mean_diff']:.2e} "
              f"(predictive mean spans {m['mean_range']:.2f})",
              f"  (b) SumOfDeltas member (C = 2, deltas at the two centres, weights (1, w)): at the merge "
              f"penalty {m['sod_start_penalty']:.2f} nats, max |mean change| {m['sod_start_mean_diff']:.3f}; "
              f"features re-optimised (hyperparameters fixed): penalty {m['sod_penalty']:.2f} nats, "
              f"max |mean change| {m['sod_mean_diff']:.3f}",
              "", "Where ours differs from the thesis:"]
    lines += _differences(r)
    lines.append(f"wall time: {r['seconds']:.1f} s")
    return "\n".join(lines)


def _differences(r):
    p, T, c = r["pair"], THESIS, r["curves"][0]
    out = []
    if r["n_best"] < r["n_starts"]:
        second = max((b for b in r["bounds"] if b < r["best"]["bound"] - SAME_BOUND), default=float("nan"))
        out.append(f"- 'consistently found by the optimiser': here {r['n_best']} of {r['n_starts']} starts reach the best "
                   f"bound ({r['best']['bound'] - second:.1f} nats above the next optimum) and {r['n_near_coincident']} "
                   "end with a near-coincident pair (some of them in worse optima); the rest stop in local optima "
                   "with separated features.")
    out.append(f"- |alpha| is {abs(p['alpha'][0]):.3g} here against {abs(T['alpha'][0]):.3g}, and 1 - corr under q(u) "
               f"is {1 - p['q_correlation']:.1e} against {1 - T['q_correlation']:.1e}: how close the pair gets is "
               "set by the jitter and the optimiser's stopping rule, not by the data.")
    out.append(f"- the pair sits at x ~ {p['centres'][1]:.2f} (the thesis' peak is at ~{T['true_peak']}); the thesis "
               "does not give its hyperparameters or starts, so the location of the pair is not comparable.")
    side = "right" if c["zoom_max"][0] > p["centres"][1] else "left"
    out.append(f"- the peak of the swept member sits {abs(c['zoom_max'][0] - p['centres'][1]):.4f} to the {side} of its "
               "partner (the thesis: 'slightly to the right'; which side depends on which member of the pair is swept).")
    m = r["merge"]
    out.append(f"- fig. 4.5 (a) costs {m['basis_sum_penalty']:.1f} nats (the thesis: 'a slight penalty'); the mean is "
               "unchanged as the thesis says. (b) a SumOfDeltas member is not the thesis' merge: its deltas evaluate f "
               "at the two centres, without the multiscale widths, so it starts far off and re-optimising its features "
               f"recovers only part ({m['sod_penalty']:.1f} nats below the M = 3 bound).")
    (x0, v0), (xz, vz) = c["coarse_max"], c["zoom_max"]
    if abs(x0 - xz) < AWAY:
        out.append(f"- our coarse grid's maximum (x = {x0:.4f}) lies on the flank of the peak, {abs(x0 - xz):.4f} from "
                   f"it and {vz - v0:.2f} nats below it; the thesis' coarse maximum was away from the peak. Away from "
                   f"the pair our coarse curve's best is at x = {c['coarse_max_away'][0]:.2f} "
                   f"({c['coarse_max_away'][1]:.1f}). Whether a grid point lands on the peak (a few 1e-3 wide) is luck.")
    else:
        out.append(f"- as in the thesis, the coarse maximum (x = {x0:.2f}) is away from the true peak at the pair, "
                   f"{vz - v0:.1f} nats below it.")
    return out
