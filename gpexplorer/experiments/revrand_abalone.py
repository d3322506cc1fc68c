"""revrand report Table 4's question on abalone (``gpexplorer reproduce revrand-abalone``).

Table 4 ran the GLM on SARCOS (44,484 x 21) against Rasmussen & Williams' subset of data (SD),
subset of regressors (SR) and projected process (PP, our DTC/VFE) at equal approximation sizes.
SARCOS is not here; abalone (4,177 x 10: sex one-hot and seven measurements; 3,177 train / 1,000
test, a permutation seeded 0) is the named substitute. At each approximation size s:

* GLM: s random RBF frequencies (2s columns, ARD), Gaussian likelihood, K = 10 components, 10
  reparameterised samples, minibatches of 10, 20,000 Adam steps (the report: 10^6 steps on SARCOS);
* SD: the exact GP (ARD SE) on s random training points;
* SoR, DTC and VFE (the sparse engine): M = s inducing inputs from k-means, hyperparameters and
  inducing inputs fitted jointly (200 L-BFGS-B iterations). SoR and DTC share the evidence and
  differ in the predictive variance.

Inputs standardised, targets standardised on the training set; SMSE and MSLL on the test set (as
Table 4), with each fit's seconds so the cost is on the table too. One dask task per (method, s).
``quick``: s in (16, 32), 1,000 GLM steps, 50 iterations.
"""

from __future__ import annotations

import time

import numpy as np

from gpexplorer import kernels, metrics
from gpexplorer.datasets import abalone
from gpexplorer.experiments.distributed import run_cells, write_rows
from gpexplorer.random_features import GeneralizedLinearModel, basis
from gpexplorer.sparse.regression import ExactGPR, SparseGPR

__all__ = ["REPORT_SARCOS", "SETUP", "QUICK", "METHODS", "run", "run_cell", "format_report"]

#: report Table 4 (SARCOS, GLM only): components -> (SMSE, MSLL)
REPORT_SARCOS = {256: (0.0358, -1.6644), 512: (0.0252, -1.8397), 1024: (0.0207, -1.9341), 2048: (0.0171, -2.0243),
                 8192: (0.0152, -1.9804)}
SETUP = {"sizes": (32, 64, 128, 256, 512), "n_test": 1000, "glm_steps": 20_000, "glm_components": 10,
         "glm_samples": 10, "glm_batch": 10, "glm_learning_rate": 0.01, "sparse_max_iter": 200}
QUICK = {"sizes": (16, 32), "glm_steps": 1000, "sparse_max_iter": 50}
METHODS = ("GLM", "SD", "SoR", "DTC", "VFE")


def split(seed=0, n_test=1000):
    data = abalone()
    X, y = np.asarray(data.X, dtype=float), np.asarray(data.y, dtype=float).ravel()
    order = np.random.default_rng(seed).permutation(len(y))
    test, train = order[:n_test], order[n_test:]
    mx, sx, my, sy = X[train].mean(0), X[train].std(0), y[train].mean(), y[train].std()
    return (X[train] - mx) / sx, (y[train] - my) / sy, (X[test] - mx) / sx, (y[test] - my) / sy


def run_cell(cell, setup):
    X, y, Xt, yt = split(n_test=setup["n_test"])
    s, method, t0 = cell["size"], cell["method"], time.perf_counter()
    d = X.shape[1]
    kernel = kernels.SquaredExponential(variance=1.0, lengthscale=np.ones(d))
    if method == "GLM":
        model = GeneralizedLinearModel(X, y, basis("rbf", d, 2 * s, lengthscale=np.ones(d), seed=s), "gaussian",
                                       setup["glm_components"], estimator="monte_carlo",
                                       num_samples=setup["glm_samples"], seed=s)
        model.fit(max_iter=setup["glm_steps"], batch_size=setup["glm_batch"], learning_rate=setup["glm_learning_rate"],
                  seed=s, trace_every=max(1, setup["glm_steps"] // 10))
        mean, var = model.predict_y(Xt)
    elif method == "SD":
        rows = np.random.default_rng(s).choice(len(y), size=s, replace=False)
        model = ExactGPR(X[rows], y[rows, None], kernel, noise_variance=0.5)
        model.fit(max_iter=setup["sparse_max_iter"])
        mean, var = (np.ravel(a) for a in model.predict_y(Xt))
    else:
        approximation = {"SoR": "sor", "DTC": "dtc", "VFE": "vfe"}[method]
        model = SparseGPR(X, y[:, None], kernel, Z=s, approximation=approximation, noise_variance=0.5, seed=s)
        model.fit(max_iter=setup["sparse_max_iter"])
        mean, var = (np.ravel(a) for a in model.predict_y(Xt))
    row = {"method": method, "size": s, "smse": metrics.smse(yt, mean), "msll": metrics.msll(yt, mean, var, y),
           "seconds": time.perf_counter() - t0}
    row["summary"] = f"{method} s={s}: SMSE {row['smse']:.4f}, MSLL {row['msll']:.3f}"
    return row


def claims(rows, sizes):
    at = {(r["method"], r["size"]): r for r in rows}
    big, small = sizes[-1], sizes[0]
    return {"the GLM's SMSE falls as its number of components grows (Table 4's trend)":
            at[("GLM", big)]["smse"] < at[("GLM", small)]["smse"],
            f"at s = {big} the GLM beats the subset of data (SD) on SMSE, as on SARCOS":
            at[("GLM", big)]["smse"] < at[("SD", big)]["smse"],
            f"at s = {big} VFE's MSLL is at least as good as the GLM's (SR/PP beat it at large sizes on SARCOS)":
            at[("VFE", big)]["msll"] <= at[("GLM", big)]["msll"]}


def run(quick=False, seed=0, max_iter=None, num_inducing=None, scheduler=None, n_workers=None, out=None,
        **dask_options):
    setup = {**SETUP, **(QUICK if quick else {})}
    if max_iter is not None:
        setup["glm_steps"] = int(max_iter)
    cells = [{"method": m, "size": s} for m in METHODS for s in setup["sizes"]]
    rows, info = run_cells(run_cell, cells, shared={"setup": setup}, scheduler=scheduler, n_workers=n_workers,
                           cost=lambda c: c["size"] * (3 if c["method"] == "GLM" else 1), **dask_options)
    result = {"setup": setup, "quick": bool(quick), "rows": rows, "claims": claims(rows, setup["sizes"]),
              "dask": info}
    if out is not None:
        result["files"] = write_rows(result, out, "revrand_abalone", ["method", "size", "smse", "msll", "seconds"])
    return result


def format_report(result):
    sizes = result["setup"]["sizes"]
    lines = ["revrand report Table 4's question on abalone (SARCOS is not here): SMSE / MSLL / seconds by "
             f"approximation size{' (QUICK)' if result['quick'] else ''}",
             f"{'method':<8}" + "".join(f"{'s = ' + str(s):>24}" for s in sizes)]
    at = {(r["method"], r["size"]): r for r in result["rows"]}
    for m in METHODS:
        cells = [at[(m, s)] for s in sizes]
        lines.append(f"{m:<8}" + "".join(f"{c['smse']:>8.4f} {c['msll']:>7.3f} {c['seconds']:>6.1f}s" for c in cells))
    lines.append("Report (SARCOS, GLM, components: SMSE / MSLL): "
                 + "; ".join(f"{k}: {v[0]} / {v[1]}" for k, v in REPORT_SARCOS.items()))
    lines += [f"  [{'yes' if ok else 'NO '}] {text}" for text, ok in result["claims"].items()]
    return "\n".join(lines)
