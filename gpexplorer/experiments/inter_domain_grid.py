"""Thesis §4.5 (figs. 4.6-4.12) scaled down: VFE with sum-of-deltas features over (M, C).

The thesis runs kin40k and Parkinsons, which are not available offline; **abalone is the
substitute** (4177 rows, ``assets/abalone.csv``; Sex one-hot, so D = 10; target Rings). A fixed
held-out split (seed 0, 1000 test rows), inputs and target standardised with the training
statistics. Each cell (M, C) fits VFE with :class:`gpexplorer.inducing.SumOfDeltas` (deltas
started at M C training inputs drawn at random, as §4.5; unit weights), an ARD squared-
exponential kernel, jointly with the hyperparameters, and records RMSE and NLPD on the test
split, the bound on the training split (the thesis' NLML, fig. 4.6) and the noise. Three
variants of the grid:

* ``clean``  -- §4.5.1 (figs. 4.6/4.7);
* ``noisy``, ``noisy-0.05`` -- §4.5.1 "noisy kin40k/Parkinsons" (figs. 4.8/4.9): Gaussian noise
  of :data:`NOISE_SDS` s.d. (in standardised target units) added to train and test targets, the
  thesis' two levels (0.4 s.d. on kin40k, 0.05 s.d. on Parkinsons). Abalone's own noise is
  ~0.6 s.d., so the small level is expected to change little: it is run to show that;
* ``fixed``  -- §4.5.2 (fig. 4.10): hyperparameters fixed at an exact GP's fitted on a
  training subset (the thesis fixed them from a sparse model with M = 1e4), only the
  features optimised.

Model size (§4.5.3, eq. 4.20): M + M^2 + M C (D + 1) stored numbers; the storage-vs-NLPD
frontier and the compression it allows (figs. 4.11/4.12). The thesis' claims (the spec's list)
are checked by :func:`claims`, each with the numbers that decide it. Cells run through
:func:`gpexplorer.experiments.distributed.run_cells` (dask).
"""

from __future__ import annotations

import time
import warnings

import numpy as np

from gpexplorer import datasets, inducing, kernels
from gpexplorer.experiments import distributed
from gpexplorer.linalg import JitterWarning
from gpexplorer.sparse.regression import ExactGPR, SparseGPR

__all__ = ["GRID_M", "GRID_C", "QUICK_M", "QUICK_C", "VARIANTS", "NOISE_SDS", "load_abalone", "split",
           "exact_reference", "run_cell", "storage", "frontier", "claims", "run", "format_report", "write_outputs"]

GRID_M, GRID_C = (5, 10, 20, 50, 100, 200), (1, 2, 5, 10, 20)
QUICK_M, QUICK_C = (5, 20), (1, 5)
VARIANTS = ("clean", "noisy", "noisy-0.05", "fixed")
#: noisy variants: added noise s.d. in standardised target units (thesis: kin40k 0.4, Parkinsons 0.05)
NOISE_SDS = {"noisy": 0.4, "noisy-0.05": 0.05}
N_TEST, EXACT_SUBSET, QUICK_TRAIN = 1000, 1000, 800
MAX_ITER, QUICK_MAX_ITER = 200, 30
#: "near-optimal RMSE" (claim 4): within this factor of the reference RMSE
NEAR_OPTIMAL = 1.02
#: NLPD differences below this (nats per test point) are not read as one model beating another
NLPD_TOL = 1e-3
START = {"variance": 1.0, "lengthscale": 1.0, "noise_variance": 0.3}
COLUMNS = ["variant", "M", "C", "basis_functions", "storage", "rmse", "nlpd", "bound", "bound_per_point",
           "noise_variance", "n_iter", "seconds"]


def load_abalone():
    """(X [4177, 10], y [4177], column names): Sex one-hot (M, F, I) and the seven measurements."""
    ds = datasets.abalone()
    return ds.X, ds.y, ds.meta["features"]


def split(seed=0, n_test=N_TEST, n_train=None, noise_sds=None):
    """The fixed held-out split, standardised by the training statistics, and its noisy copies
    (``y_<variant>`` and ``y_test_<variant>`` for each of ``noise_sds``, default :data:`NOISE_SDS`)."""
    X, y, names = load_abalone()
    perm = np.random.default_rng(seed).permutation(len(y))
    test, train = perm[:n_test], perm[n_test:]
    if n_train is not None:
        train = train[:n_train]
    mx, sx, my, sy = X[train].mean(0), X[train].std(0), y[train].mean(), y[train].std()
    d = {"X": (X[train] - mx) / sx, "y": (y[train] - my) / sy, "X_test": (X[test] - mx) / sx,
         "y_test": (y[test] - my) / sy, "y_sd": float(sy), "columns": names}
    for k, (variant, sd) in enumerate((NOISE_SDS if noise_sds is None else noise_sds).items()):
        rng = np.random.default_rng([seed + 1, k])
        d[f"y_{variant}"] = d["y"] + sd * rng.standard_normal(len(train))
        d[f"y_test_{variant}"] = d["y_test"] + sd * rng.standard_normal(len(test))
    return d


def _kernel(D, hypers=None):
    h = hypers or {"variance": START["variance"], "lengthscale": np.full(D, START["lengthscale"])}
    return kernels.SquaredExponential(variance=h["variance"], lengthscale=np.array(h["lengthscale"], dtype=float))


def _scores(model, X_test, y_test):
    mean, var = model.predict_y(X_test)
    rmse = float(np.sqrt(np.mean((mean - y_test) ** 2)))
    nlpd = float(np.mean(0.5 * np.log(2 * np.pi * var) + 0.5 * (y_test - mean) ** 2 / var))
    return rmse, nlpd


def exact_reference(data, subset=EXACT_SUBSET, max_iter=200, seed=0):
    """Exact GP hyperparameters fitted on ``subset`` training rows, and that GP's test scores
    when conditioned on the whole training split (the 'optimal' RMSE/NLPD)."""
    X, y = data["X"], data["y"]
    rows = np.random.default_rng(seed).permutation(len(y))[:min(subset, len(y))]
    m = ExactGPR(X[rows], y[rows], kernel=_kernel(X.shape[1]), noise_variance=START["noise_variance"])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", JitterWarning)
        m.fit(max_iter=max_iter)
    hypers = {"variance": float(m.kernel.variance), "lengthscale": np.atleast_1d(m.kernel.lengthscale).tolist(),
              "noise_variance": float(m.noise_variance)}
    full = ExactGPR(X, y, kernel=_kernel(X.shape[1], hypers), noise_variance=hypers["noise_variance"])
    rmse, nlpd = _scores(full, data["X_test"], data["y_test"])
    return {"hypers": hypers, "subset": len(rows), "rmse": rmse, "nlpd": nlpd,
            "bound": float(full.log_marginal_likelihood())}


def storage(M, C, D):
    """Numbers stored for prediction (thesis §4.5.3): Kuu^-1 mu, the M x M matrix, Z and weights."""
    return M + M * M + M * C * (D + 1)


def _initial_feature(X, M, C, seed):
    """M C training inputs drawn at random (thesis §4.5), with replacement only when M C > N."""
    rng = np.random.default_rng([seed, M, C])
    rows = rng.choice(len(X), M * C, replace=M * C > len(X))
    return inducing.SumOfDeltas(X[rows].reshape(M, C, X.shape[1]))


def run_cell(cell, data, hypers=None):
    """One (variant, M, C) fit; returns a row of :data:`COLUMNS` (plus a 'summary' string)."""
    t0 = time.perf_counter()
    variant, M, C = cell["variant"], int(cell["M"]), int(cell["C"])
    noisy = variant in NOISE_SDS
    X, y = data["X"], data[f"y_{variant}" if noisy else "y"]
    fixed_h = variant == "fixed"
    kernel = _kernel(X.shape[1], hypers if fixed_h else None)
    noise = hypers["noise_variance"] if fixed_h else START["noise_variance"]
    model = SparseGPR(X, y, kernel=kernel, Z=_initial_feature(X, M, C, cell.get("seed", 0)),
                      approximation="vfe", noise_variance=noise)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", JitterWarning)
        result = model.fit(max_iter=cell["max_iter"], fixed=("kernel", "noise_variance") if fixed_h else ())
        bound = float(model.log_marginal_likelihood())
    rmse, nlpd = _scores(model, data["X_test"], data[f"y_test_{variant}" if noisy else "y_test"])
    row = {"variant": variant, "M": M, "C": C, "basis_functions": M * C, "storage": storage(M, C, X.shape[1]),
           "rmse": rmse, "nlpd": nlpd, "bound": bound, "bound_per_point": bound / len(y),
           "noise_variance": float(model.noise_variance), "n_iter": int(result.n_iter),
           "seconds": time.perf_counter() - t0}
    row["summary"] = f"{variant:>5} M={M:<3} C={C:<2} RMSE {rmse:.4f} NLPD {nlpd:.4f} bound {bound:.1f}"
    return row


def _cost(cell):
    return cell["M"] * cell["C"] + cell["M"] ** 2 / 10


def _table(rows, variant):
    return {(r["M"], r["C"]): r for r in rows if r["variant"] == variant}


def frontier(rows, variant, metric="nlpd"):
    """The storage-vs-``metric`` Pareto frontier of one variant: cells no smaller cell beats."""
    out, best = [], np.inf
    for r in sorted((r for r in rows if r["variant"] == variant), key=lambda r: (r["storage"], r[metric])):
        if r[metric] < best:
            out.append(r)
            best = r[metric]
    return out


def compression(rows, variant, metric="nlpd", tol=0.0):
    """Thesis §4.5.3 (figs. 4.11/4.12), compression "for a chosen NLPD": at the level of each
    point of the storage frontier, (M, C, level, ratio, reached) with ratio = the smallest
    C = 1 model reaching that level (within ``tol``) over the frontier point's size; when no
    C = 1 model reaches it (reached False) the ratio is a lower bound, from the largest one."""
    ones = [r for r in rows if r["variant"] == variant and r["C"] == 1]
    out = []
    for f in frontier(rows, variant, metric):
        hits = [s["storage"] for s in ones if s[metric] <= f[metric] + tol]
        size = min(hits) if hits else max(s["storage"] for s in ones)
        out.append((f["M"], f["C"], f[metric], size / f["storage"], bool(hits)))
    return out


def _gains(t, Ms, Cs):
    """M -> RMSE(M, C=1) - best RMSE(M, C>1)."""
    return {M: t[(M, 1)]["rmse"] - min(t[(M, C)]["rmse"] for C in Cs if C > 1)
            for M in Ms if (M, 1) in t and any((M, C) in t for C in Cs if C > 1)}


def _verdict(ok):
    return "HOLDS" if ok else "does NOT hold"


def claims(rows, exact, Ms, Cs):
    """The thesis' claims (spec list), each as (claim, verdict, numbers); verdict "n/a" when the
    grid lacks the cells that decide it (e.g. --quick)."""
    clean, fixed = _table(rows, "clean"), _table(rows, "fixed")
    out = []
    need = [(10, 20), (100, 1), (200, 1)]
    if all(k in clean for k in need):
        a, b, c = (clean[k]["rmse"] for k in need)
        out.append(("M=10, C=20 beats M=150, C=1 on RMSE (kin40k; no M=150 here: M=100 and 200 with C=1)",
                    _verdict(a < b), f"RMSE (10,20) {a:.4f}; (100,1) {b:.4f}; (200,1) {c:.4f}"))
    else:
        out.append(("M=10, C=20 beats M=150, C=1 on RMSE", "n/a", "cells not in this grid"))
    for name, table in [("clean", clean)] + [(v, _table(rows, v)) for v in NOISE_SDS]:
        g = _gains(table, Ms, Cs)
        if len(g) >= 2:
            Mlo, Mhi = min(g), max(g)
            out.append((f"the gain from C > 1 fades as M grows ({name})", _verdict(g[Mhi] < g[Mlo]),
                        "RMSE(M,1) - best RMSE(M,C>1): " + ", ".join(f"M={M}: {v:+.4f}" for M, v in sorted(g.items()))))
    if (200, 1) in clean and (50, 10) in clean:
        a, b = clean[(200, 1)], clean[(50, 10)]
        ok = a["bound"] > b["bound"] and a["rmse"] > b["rmse"]
        out.append(("M=200, C=1 has a better bound but worse RMSE than M=50, C=8 (no C=8 here: C=10)", _verdict(ok),
                    f"bound {a['bound']:.1f} vs {b['bound']:.1f}; RMSE {a['rmse']:.4f} vs {b['rmse']:.4f}"))
    else:
        out.append(("M=200, C=1 better bound, worse RMSE than M=50, C=8", "n/a", "cells not in this grid"))
    ref = min([exact["rmse"]] + [r["rmse"] for r in clean.values()])
    near = {C: min((M * C for (M, c), r in clean.items() if c == C and r["rmse"] <= NEAR_OPTIMAL * ref), default=None)
            for C in (1, 5)}
    if any(c == 5 for _, c in clean) and any(c == 1 for _, c in clean):
        n5, n1 = near[5], near[1]
        ok = n5 is not None and n5 <= 100 and (n1 is None or n1 >= 2 * n5)
        fmt = lambda n, C: f"{n} basis functions" if n is not None else f"not reached up to M={max(Ms)} (C={C})"
        out.append((f"C=5 reaches near-optimal RMSE (<= {NEAR_OPTIMAL} x {ref:.4f}, the best of the exact GP and the "
                    "grid) with ~100 basis functions, inducing points need > 200", _verdict(ok),
                    f"C=5: {fmt(n5, 5)}; C=1: {fmt(n1, 1)}"))
    small = [M for M in Ms[:2] if (M, 1) in fixed]
    if small:
        g = _gains(fixed, small, Cs)
        out.append(("with fixed hyperparameters C > 1 still helps at small M", _verdict(all(v > 0 for v in g.values())),
                    "RMSE(M,1) - best RMSE(M,C>1), fixed: " + ", ".join(f"M={M}: {v:+.4f}" for M, v in g.items())))
    comp, loose = compression(rows, "clean"), compression(rows, "clean", tol=NLPD_TOL)
    if comp:
        fmt = lambda cs: ", ".join(f"({M},{C}) {v:.4f}: " + (f"x{c:.2f}" if hit else "C=1 never") for M, C, v, c, hit in cs)
        ratios = [c for *_, c, _ in loose]
        med, top = float(np.median(ratios)), float(max(ratios))
        verdict = "HOLDS" if med >= 2 else ("partly (x2 reached only at some levels)" if top >= 2 else "does NOT hold")
        out.append((f"storage compression x2-3 at a given NLPD, up to x10 (levels within {NLPD_TOL} nats count as "
                    "reached)", verdict,
                    "at each frontier point (M,C) NLPD: smallest C=1 model reaching it over the point's size: "
                    f"{fmt(loose)} (median x{med:.2f}, max x{top:.2f}); "
                    f"strictly: {fmt(comp)}"))
    return out


def run(quick=False, scheduler=None, out=None, max_iter=None, n_workers=None, processes=True, progress=True):
    """The whole study; returns a dict (rows, exact reference, claims, settings, paths)."""
    t0 = time.perf_counter()
    Ms, Cs = (QUICK_M, QUICK_C) if quick else (GRID_M, GRID_C)
    max_iter = max_iter or (QUICK_MAX_ITER if quick else MAX_ITER)
    data = split(n_train=QUICK_TRAIN if quick else None)
    exact = exact_reference(data, subset=300 if quick else EXACT_SUBSET, max_iter=50 if quick else 200)
    cells = [{"variant": v, "M": M, "C": C, "max_iter": max_iter} for v in VARIANTS for M in Ms for C in Cs]
    if progress:
        print(f"inter-domain grid: {len(cells)} cells ({len(VARIANTS)} variants x {len(Ms)} M x {len(Cs)} C), "
              f"{max_iter} L-BFGS-B iterations each, on "
              + (f"the cluster at {scheduler}" if scheduler else "a local dask cluster"), flush=True)
    rows, info = distributed.run_cells(run_cell, cells, shared={"data": data, "hypers": exact["hypers"]},
                                       scheduler=scheduler, n_workers=n_workers, processes=processes, cost=_cost,
                                       progress=distributed.print_progress if progress else None)
    for r in rows:
        r.pop("summary", None)
    result = {"dataset": "abalone (substitute for the thesis' kin40k and Parkinsons)", "quick": quick,
              "n_train": len(data["y"]), "n_test": len(data["y_test"]), "D": data["X"].shape[1], "y_sd": data["y_sd"],
              "noise_sds": dict(NOISE_SDS), "max_iter": max_iter, "Ms": list(Ms), "Cs": list(Cs), "exact": exact,
              "rows": rows, "cluster": info}
    result["claims"] = claims(rows, exact, Ms, Cs)
    result["frontiers"] = {v: frontier(rows, v) for v in VARIANTS}  # drawn by gpexplorer.ui.grid_figure
    result["seconds"] = time.perf_counter() - t0
    if out is not None:
        result["files"] = write_outputs(result, out)
    return result


def write_outputs(result, out):
    """grid.csv (one row per cell) and grid.json (everything); returns their paths. The figure
    is drawn by :mod:`gpexplorer.ui.grid_figure` (``gpexplorer reproduce`` saves it beside them)."""
    return distributed.write_rows(result, out, "grid", COLUMNS)


def format_report(result):
    """Tables per variant (RMSE / NLPD / bound per point over M x C), the frontier and the claims."""
    ex, Cs = result["exact"], result["Cs"]
    lines = [f"Thesis §4.5 (figs 4.6-4.12) scaled down. Dataset: {result['dataset']} -- NOT the thesis' data.",
             f"split: {result['n_train']} train / {result['n_test']} test, D = {result['D']}, inputs and target "
             f"standardised (RMSE in units of the target s.d. = {result['y_sd']:.3f} rings); VFE, SumOfDeltas, ARD SE; "
             f"{result['max_iter']} L-BFGS-B iterations per cell" + (" [quick]" if result["quick"] else ""),
             f"exact GP (hyperparameters fitted on {ex['subset']} training rows, conditioned on all): RMSE "
             f"{ex['rmse']:.4f}, NLPD {ex['nlpd']:.4f}, noise {ex['hypers']['noise_variance']:.4f}",
             "noisy copies: " + ", ".join(f"{v}: + N(0, {sd}^2)" for v, sd in result["noise_sds"].items())
             + " on train and test targets (thesis: 0.4 s.d. on kin40k, 0.05 s.d. on Parkinsons)"]
    for v in VARIANTS:
        t = _table(result["rows"], v)
        lines += ["", f"[{v}]  RMSE | NLPD | -bound per training point", f"{'M':>5} " + " ".join(f"{'C=' + str(c):>24}" for c in Cs)]
        for M in result["Ms"]:
            cells = [t.get((M, c)) for c in Cs]
            lines.append(f"{M:>5} " + " ".join(f"{r['rmse']:>7.4f} {r['nlpd']:>7.4f} {-r['bound_per_point']:>7.4f}"
                                                if r else f"{'-':>24}" for r in cells))
    lines += ["", "storage-vs-NLPD frontier (clean): " + ", ".join(
        f"({r['M']},{r['C']}) {r['storage']}: {r['nlpd']:.4f}" for r in frontier(result["rows"], "clean"))]
    lines += ["", "the thesis' claims, here:"]
    lines += [f"- {claim}: {verdict}\n    {numbers}" for claim, verdict, numbers in result["claims"]]
    info = result["cluster"]
    lines.append(f"\ncells ran on {info['workers']} dask worker(s) at {info['scheduler']}; wall time {result['seconds']:.0f} s")
    if result.get("files"):
        lines.append("saved: " + ", ".join(result["files"].values()))
    return "\n".join(lines)
