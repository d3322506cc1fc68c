"""revrand report fig. 1: each kernel against its random-feature estimate as the number of
frequencies grows (``gpexplorer reproduce revrand-kernels``).

The figure's set-up: 10-dimensional inputs, up to 1,500 frequencies (3,000 columns); ours adds
the error measure (relative Frobenius error of Phi Phi^T against the closed-form kernel on 300
inputs drawn from N(0, I), lengthscale 3, mean over 5 seeds) so the curves can be compared, and
revrand's orthogonal features (input columns scaled instead of frequency vectors:
:func:`gpexplorer.random_features.spectral.orthogonal_draws` with ``scale_rows=False``) beside
the corrected ones. One dask task per basis. ``quick``: 3 sizes, 2 seeds.
"""

from __future__ import annotations

import time

import numpy as np

from gpexplorer.experiments.distributed import run_cells, write_rows
from gpexplorer.random_features import RANDOM_BASES, basis
from gpexplorer.random_features.spectral import orthogonal_draws, stationary_kernel

__all__ = ["SETUP", "QUICK", "REVRAND_ORTHOGONAL", "run", "run_cell", "format_report"]

SETUP = {"input_dim": 10, "n_points": 300, "lengthscale": 3.0, "frequencies": (50, 100, 200, 500, 1000, 1500),
         "seeds": 5}
QUICK = {"frequencies": (50, 200, 1500), "seeds": 2}
REVRAND_ORTHOGONAL = "orthogonal_rbf (revrand's column scaling)"
OPTIONS = {"spectral_mixture": lambda d: {"mean_frequency": np.full(d, 0.2)}}


def _inputs(setup):
    return np.random.default_rng(2026).standard_normal((setup["n_points"], setup["input_dim"]))


def _revrand_orthogonal_error(X, m, seed, lengthscale):
    W = orthogonal_draws(m, X.shape[1], np.random.default_rng(seed), scale_rows=False).T / lengthscale
    P = np.hstack([np.cos(X @ W), np.sin(X @ W)]) / np.sqrt(m)
    K = stationary_kernel("rbf", X, X, lengthscale)
    return np.linalg.norm(P @ P.T - K) / np.linalg.norm(K)


def run_cell(cell, setup):
    X, t0 = _inputs(setup), time.perf_counter()
    d, ls = setup["input_dim"], setup["lengthscale"]
    rows = []
    for m in setup["frequencies"]:
        errs = []
        for seed in range(setup["seeds"]):
            if cell["basis"] == REVRAND_ORTHOGONAL:
                errs.append(_revrand_orthogonal_error(X, m, seed, ls))
                continue
            b = basis(cell["basis"], d, 2 * m, lengthscale=ls, seed=seed, **OPTIONS.get(cell["basis"], lambda d: {})(d))
            K = b.kernel(X)
            errs.append(np.linalg.norm(b.kernel_approximation(X) - K) / np.linalg.norm(K))
        rows.append({"basis": cell["basis"], "frequencies": m, "error": float(np.mean(errs)),
                     "error_sd": float(np.std(errs))})
    return {"rows": rows, "seconds": time.perf_counter() - t0,
            "summary": f"{cell['basis']}: {rows[-1]['error']:.4f} at {rows[-1]['frequencies']} frequencies"}


def run(quick=False, seed=0, max_iter=None, num_inducing=None, scheduler=None, n_workers=None, out=None,
        **dask_options):
    setup = {**SETUP, **(QUICK if quick else {})}
    names = list(RANDOM_BASES) + [REVRAND_ORTHOGONAL]
    results, info = run_cells(run_cell, [{"basis": n} for n in names], shared={"setup": setup}, scheduler=scheduler,
                              n_workers=n_workers, **dask_options)
    rows = [r for res in results for r in res["rows"]]
    at = {r["basis"]: r for r in rows if r["frequencies"] == setup["frequencies"][-1]}
    first = {r["basis"]: r for r in rows if r["frequencies"] == setup["frequencies"][0]}
    ratio = np.sqrt(setup["frequencies"][-1] / setup["frequencies"][0])
    claims = {f"every basis' error falls at least {ratio / 2:.1f}-fold over the sizes (1/sqrt(n) gives {ratio:.1f})":
              all(first[n]["error"] / at[n]["error"] > ratio / 2 for n in names if n != REVRAND_ORTHOGONAL),
              "corrected orthogonal features beat plain RBF features":
              at["orthogonal_rbf"]["error"] < at["rbf"]["error"],
              "revrand's orthogonal features are worse than plain RBF features":
              at[REVRAND_ORTHOGONAL]["error"] > at["rbf"]["error"]}
    result = {"setup": setup, "quick": bool(quick), "rows": rows, "claims": claims, "dask": info}
    if out is not None:
        result["files"] = write_rows(result, out, "revrand_kernels", ["basis", "frequencies", "error", "error_sd"])
    return result


def format_report(result):
    sizes = result["setup"]["frequencies"]
    lines = [f"revrand report fig. 1: relative Frobenius error of Phi Phi^T against the kernel, d = "
             f"{result['setup']['input_dim']}, lengthscale {result['setup']['lengthscale']}, "
             f"mean of {result['setup']['seeds']} seeds{' (QUICK)' if result['quick'] else ''}",
             f"{'basis':<44}" + "".join(f"{m:>9}" for m in sizes)]
    by = {}
    for r in result["rows"]:
        by.setdefault(r["basis"], {})[r["frequencies"]] = r["error"]
    for name, errs in by.items():
        lines.append(f"{name:<44}" + "".join(f"{errs[m]:>9.4f}" for m in sizes))
    lines += [f"  [{'yes' if ok else 'NO '}] {text}" for text, ok in result["claims"].items()]
    return "\n".join(lines)
