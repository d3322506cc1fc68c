"""Reproductions of van der Wilk's thesis chapter 3 on the Snelson data (§3.2.1-3.2.2).

``fitc_vfe_snelson`` jointly optimises an exact GP, FITC and VFE from M random initial
inducing inputs for several seeds and reports noise estimates, evidences and clumping.
``vfe_m_sweep`` grows M, warm-starting each model from the previous optimum with the new
inducing inputs added (Remark 3: VFE's bound cannot decrease by adding one). Both return
plain dicts so the CLI, the tests and the README print the same numbers.
"""

from __future__ import annotations

import warnings

import numpy as np

from gpexplorer import datasets, kernels
from gpexplorer.sparse import regression as models
from gpexplorer.sparse import diagnostics
from gpexplorer.inducing.placement import initial_inducing_inputs
from gpexplorer.linalg import JitterWarning

START = {"variance": 1.0, "lengthscale": 0.5, "noise_variance": 0.09}


def _kernel():
    return kernels.SquaredExponential(variance=START["variance"], lengthscale=START["lengthscale"])


def fit_exact(ds):
    exact = models.ExactGPR(ds.X, ds.y, kernel=_kernel(), noise_variance=START["noise_variance"])
    exact.fit(max_iter=1000)
    return exact


def fitc_vfe_snelson(M=15, seeds=(0, 1, 2), fitc_iters=1000, vfe_iters=1000, dataset="snelson"):
    """FITC vs VFE vs exact, jointly optimised from M random inducing inputs per seed."""
    ds = datasets.load(dataset)
    exact = fit_exact(ds)
    out = {"dataset": dataset, "M": M, "exact": {"noise_variance": exact.noise_variance,
                                                  "log_marginal_likelihood": exact.log_marginal_likelihood(),
                                                  "lengthscale": exact.kernel.lengthscale}, "runs": []}
    for seed in seeds:
        Z0 = initial_inducing_inputs(ds.X, M, "random", seed)
        for approximation, iters in (("fitc", fitc_iters), ("vfe", vfe_iters)):
            m = models.SparseGPR(ds.X, ds.y, kernel=_kernel(), Z=Z0.copy(), approximation=approximation,
                                 noise_variance=START["noise_variance"])
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", JitterWarning)  # clumping FITC may need it; recorded below
                result = m.fit(max_iter=iters)
            ls = m.kernel.lengthscale
            out["runs"].append({
                "seed": seed, "approximation": approximation, "iterations": result.n_iter,
                "noise_variance": m.noise_variance,
                "noise_ratio": m.noise_variance / exact.noise_variance,
                "log_marginal_likelihood": m.log_marginal_likelihood(),
                "upper_bound": m.upper_bound(),
                "clumped_pairs": diagnostics.clumped_pairs(m.Z, ls),
                "min_distance_lengthscales": diagnostics.min_scaled_distance(m.Z, ls),
                "jitter_used": m.jitter_used, "inducing_inputs": m.Z.ravel().tolist(),
            })
    return out


def vfe_m_sweep(Ms=(4, 6, 8, 10, 15, 20), seed=0, max_iter=1000, dataset="snelson"):
    """Optimised VFE bound, noise and upper bound against M, each M warm-started from the last."""
    ds = datasets.load(dataset)
    rng = np.random.default_rng(seed)
    rows, model = [], None
    for M in Ms:
        if model is None:
            model = models.SparseGPR(ds.X, ds.y, kernel=_kernel(), Z=initial_inducing_inputs(ds.X, M, "kmeans", rng),
                                     approximation="vfe", noise_variance=START["noise_variance"])
        else:
            extra = ds.X[rng.choice(ds.X.shape[0], M - model.Z.shape[0], replace=False)]
            model = models.SparseGPR.from_model(model, "vfe", Z=np.vstack([model.Z, extra]))
        start = model.log_marginal_likelihood()
        model.fit(max_iter=max_iter)
        exact = models.ExactGPR(ds.X, ds.y, kernel=model.kernel.copy(), noise_variance=model.noise_variance)
        rows.append({"M": M, "start_bound": start, "bound": model.log_marginal_likelihood(),
                     "exact_at_params": exact.log_marginal_likelihood(),
                     "noise_variance": model.noise_variance, "upper_bound": model.upper_bound()})
    return rows


def format_comparison(result):
    """A plain-text table of :func:`fitc_vfe_snelson`'s result."""
    ex = result["exact"]
    lines = [f"{result['dataset']}: M = {result['M']}, exact GP optimum: noise {ex['noise_variance']:.4f}, "
             f"log p(y) {ex['log_marginal_likelihood']:.2f}",
             f"{'seed':>4} {'method':>6} {'iters':>6} {'noise':>8} {'/exact':>7} {'objective':>10} "
             f"{'upper bd':>9} {'clumped':>8} {'min gap (l)':>12}"]
    for r in result["runs"]:
        lines.append(f"{r['seed']:>4} {r['approximation']:>6} {r['iterations']:>6} {r['noise_variance']:>8.4f} "
                     f"{r['noise_ratio']:>7.2f} {r['log_marginal_likelihood']:>10.2f} {r['upper_bound']:>9.2f} "
                     f"{r['clumped_pairs']:>8d} {r['min_distance_lengthscales']:>12.2e}")
    return "\n".join(lines)
