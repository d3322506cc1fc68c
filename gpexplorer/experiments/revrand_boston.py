"""revrand report Table 2, Boston housing, 5-fold cross-validation (``gpexplorer reproduce revrand-boston``).

The report's set-up (section 2.1 and spec ``revrand.md``): X standardised and y centred on each
training fold; KFold shuffled with seed 100 (a numpy permutation seeded 100 here, not sklearn's
shuffle, so the folds differ from the report's); R^2 and MSLL on the held-out folds.

* SLM: 400 random RBF frequencies (800 columns, ARD lengthscales) + a linear basis, one weight
  variance each; 100 random starts drawn from the report's priors (lengthscales Gamma(1, scale 20),
  weight variances Gamma(1, scale 10), noise Gamma(1, scale 1)), then L-BFGS-B (at most 1,000
  iterations) on the evidence.
* GLM: 100 frequencies (200 columns) + linear, Gaussian likelihood, K = 10 components, 20
  reparameterised samples, minibatches of 10, 40,000 Adam steps, 500 random starts from the same
  priors (the report's estimator: ``estimator="monte_carlo"``).
* GP: the exact GP with the same kernel, ARD SE + linear (+ noise), amplitudes and lengthscales
  started at 1, one restart (the report used scikit-learn's GaussianProcessRegressor).

The folds run as dask tasks (:func:`gpexplorer.experiments.distributed.run_cells`). ``quick``
runs two folds with a tenth of the work; its numbers are not the report's set-up.
"""

from __future__ import annotations

import time

import numpy as np

from gpexplorer import kernels, metrics
from gpexplorer.datasets import boston
from gpexplorer.experiments.distributed import run_cells, write_rows
from gpexplorer.random_features import GeneralizedLinearModel, StandardLinearModel, basis
from gpexplorer.sparse.regression import ExactGPR

__all__ = ["REPORT", "SETUP", "QUICK", "run", "run_cell", "format_report", "claims"]

#: report Table 2: model -> (R^2 mean, sd, MSLL mean, sd); the RF and SVM rows are quoted, not run
REPORT = {"SLM": (0.9018, 0.0134, -1.504, 0.1191), "GLM": (0.8411, 0.0491, -0.9209, 0.1530),
          "GP": (0.9027, 0.0137, -1.1792, 0.1581), "random forest": (0.8467, 0.0709, None, None),
          "SVM": (0.6295, 0.0863, None, None)}
SETUP = {"folds": 5, "split_seed": 100, "slm_frequencies": 400, "slm_random_starts": 100, "slm_max_iter": 1000,
         "glm_frequencies": 100, "glm_components": 10, "glm_samples": 20, "glm_batch": 10, "glm_steps": 40_000,
         "glm_random_starts": 500, "glm_learning_rate": 0.01, "gp_restarts": 1}
QUICK = {"folds": 2, "slm_frequencies": 100, "slm_random_starts": 10, "slm_max_iter": 200, "glm_frequencies": 50,
         "glm_steps": 2000, "glm_random_starts": 20, "glm_samples": 5}
MODELS = ("SLM", "GLM", "GP")


def _priors(d, blocks):
    return {"0.lengthscale": lambda r: r.gamma(1.0, 20.0, size=d),
            "weight_variance": lambda r: r.gamma(1.0, 10.0, size=blocks),
            "noise_variance": lambda r: float(r.gamma(1.0, 1.0)),
            "likelihood.variance": lambda r: float(r.gamma(1.0, 1.0))}


def folds_of(n, k, seed):
    """k shuffled folds of range(n) (a permutation seeded ``seed``, split into near-equal parts)."""
    return np.array_split(np.random.default_rng(seed).permutation(n), k)


def run_cell(cell, X, y, setup):
    """One (model, fold): fit on the other folds, score on this one."""
    folds = folds_of(len(y), setup["folds"], setup["split_seed"])
    test = folds[cell["fold"]]
    train = np.concatenate([f for i, f in enumerate(folds) if i != cell["fold"]])
    mx, sx, my = X[train].mean(0), X[train].std(0), y[train].mean()
    Xtr, Xte, ytr, yte = (X[train] - mx) / sx, (X[test] - mx) / sx, y[train] - my, y[test] - my
    d, seed, t0 = X.shape[1], 1000 + cell["fold"], time.perf_counter()
    if cell["model"] == "SLM":
        b = basis("rbf", d, 2 * setup["slm_frequencies"], lengthscale=np.ones(d), seed=seed) + basis("linear", d)
        model = StandardLinearModel(Xtr, ytr, b)
        model.fit(max_iter=setup["slm_max_iter"], random_starts=setup["slm_random_starts"], seed=seed,
                  start_distribution=_priors(d, 2))
        mean, var = model.predict_y(Xte)
    elif cell["model"] == "GLM":
        b = basis("rbf", d, 2 * setup["glm_frequencies"], lengthscale=np.ones(d), seed=seed) + basis("linear", d)
        model = GeneralizedLinearModel(Xtr, ytr, b, "gaussian", setup["glm_components"], estimator="monte_carlo",
                                       num_samples=setup["glm_samples"], seed=seed)
        model.fit(max_iter=setup["glm_steps"], batch_size=setup["glm_batch"], learning_rate=setup["glm_learning_rate"],
                  random_starts=setup["glm_random_starts"], seed=seed, trace_every=max(1, setup["glm_steps"] // 20),
                  start_distribution=_priors(d, 2))
        mean, var = model.predict_y(Xte)
    else:
        kernel = kernels.SquaredExponential(variance=1.0, lengthscale=np.ones(d)) + kernels.Linear(variance=1.0)
        model = ExactGPR(Xtr, ytr[:, None], kernel, noise_variance=1.0)
        model.fit(restarts=setup["gp_restarts"], seed=seed)
        mean, var = (np.ravel(a) for a in model.predict_y(Xte))
    r2 = 1.0 - np.mean((yte - mean) ** 2) / np.var(yte)
    row = {"model": cell["model"], "fold": cell["fold"], "r2": float(r2),
           "msll": metrics.msll(yte, mean, var, ytr), "seconds": time.perf_counter() - t0}
    row["summary"] = f"{row['model']} fold {row['fold']}: R2 {row['r2']:.3f}, MSLL {row['msll']:.3f}"
    return row


def claims(summary):
    """The report's orderings, checked on our numbers: {claim: bool}."""
    r2 = {m: summary[m]["r2"] for m in MODELS}
    return {"SLM's R2 is above the GLM's (report: 0.902 vs 0.841)": r2["SLM"] > r2["GLM"],
            "the exact GP and the SLM are within 0.02 in R2 (report: 0.903 vs 0.902)": abs(r2["GP"] - r2["SLM"]) < 0.02,
            "SLM's MSLL is below the GLM's (report: -1.50 vs -0.92)": summary["SLM"]["msll"] < summary["GLM"]["msll"]}


def run(quick=False, seed=0, max_iter=None, num_inducing=None, scheduler=None, n_workers=None, out=None,
        **dask_options):
    """Every (model, fold) cell through dask; returns {"setup", "rows", "summary", "claims", "files"}."""
    setup = {**SETUP, **(QUICK if quick else {})}
    if max_iter is not None:
        setup["glm_steps"] = int(max_iter)
    data = boston()
    X, y = np.asarray(data.X, dtype=float), np.asarray(data.y, dtype=float).ravel()
    cells = [{"model": m, "fold": k} for m in MODELS for k in range(setup["folds"])]
    rows, info = run_cells(run_cell, cells, shared={"X": X, "y": y, "setup": setup}, scheduler=scheduler,
                           n_workers=n_workers, cost=lambda c: {"GLM": 3, "SLM": 2, "GP": 1}[c["model"]],
                           **dask_options)
    summary = {}
    for m in MODELS:
        mine = [r for r in rows if r["model"] == m]
        summary[m] = {k: float(np.mean([r[k] for r in mine])) for k in ("r2", "msll", "seconds")}
        summary[m].update({f"{k}_sd": float(np.std([r[k] for r in mine])) for k in ("r2", "msll")})
    result = {"setup": setup, "quick": bool(quick), "rows": rows, "summary": summary, "claims": claims(summary),
              "dask": info}
    if out is not None:
        result["files"] = write_rows(result, out, "revrand_boston", ["model", "fold", "r2", "msll", "seconds"])
    return result


def _cell(mean, sd, fmt):
    return "-" if mean is None else f"{mean:{fmt}} ({sd:{fmt}})"


def format_report(result):
    lines = ["revrand report Table 2: Boston housing, "
             f"{result['setup']['folds']}-fold CV{' (QUICK: not the report set-up)' if result['quick'] else ''}",
             f"{'model':<14} {'R2 ours':>17} {'R2 report':>17} {'MSLL ours':>17} {'MSLL report':>17} {'s/fold':>7}"]
    for m, (r2, r2sd, ms, mssd) in REPORT.items():
        s = result["summary"].get(m)
        ours_r2 = _cell(s["r2"], s["r2_sd"], ".4f") if s else "(not run)"
        ours_ms = _cell(s["msll"], s["msll_sd"], ".4f") if s else "(not run)"
        secs = f"{s['seconds']:.1f}" if s else ""
        lines.append(f"{m:<14} {ours_r2:>17} {_cell(r2, r2sd, '.4f'):>17} {ours_ms:>17} {_cell(ms, mssd, '.4f'):>17} "
                     f"{secs:>7}")
    lines.append("Folds: a numpy permutation seeded 100 (not sklearn's KFold shuffle); the report's SLM MSLL is "
                 "-1.1504 in the authors' notebook. Random forest and SVM: quoted, not run.")
    lines += [f"  [{'yes' if ok else 'NO '}] {text}" for text, ok in result["claims"].items()]
    return "\n".join(lines)
