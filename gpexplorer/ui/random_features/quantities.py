"""What a lesson can ask of the random-features lab: its actions, its named views, and the
quantities its checks read (``gpexplorer/ui/claims.py``), read off the lab as the page shows it.

The page fits the four models by itself when a step opens; the lesson checks wait for that fit as
the page does. Names:

* settings: ``basis`` (text), ``n_features``, ``lengthscale``, ``dim``, ``fit_features``;
* the kernel views: ``kernel.error`` (||Phi Phi^T - K||_F / ||K||_F on the 1-D grid),
  ``kernel.slice_error`` (largest |estimate - exact| of k(x0, x)), ``kernel.features`` (D used),
  ``kernel.seconds`` (the last recomputation);
* the error curves in ``dim`` inputs, for every basis b estimating the same kernel (rbf,
  orthogonal_rbf, fastfood_rbf, ...): ``curve.<b>.error`` (mean over three draws at the page's D),
  ``curve.<b>.slope`` (log-log slope of the error against D), ``curve.<b>.shown``;
* the four fits, for m in exact, vfe, slm, glm: ``fitted``, ``<m>.objective`` (log p(y), VFE bound,
  log evidence, ELBO), ``<m>.mean_gap`` / ``<m>.sd_gap`` (RMS distance of the predictive mean / sd
  from the exact GP's over the data's range), ``<m>.lengthscale``, ``<m>.seconds``,
  ``<m>.iterations``; ``gp_kernel`` (text), ``kernel_matched`` (the GP uses the basis' own kernel);
* the weight space: ``weights.i``, ``weights.j``, ``weights.components``, ``weights.component_sd_max``
  (the widest component sd over the two weights), ``weights.exact_sd_min`` (the SLM posterior's
  narrower sd there), ``weights.mean_spread`` (largest distance between two components' means);
* ARD: ``ard.fitted``, ``ard.pruned`` (count), ``ard.lengthscale.<input>`` for each Boston column
  (crim, zn, ..., lstat), ``ard.shortest`` (the input of the shortest lengthscale, text),
  ``ard.log_evidence``, ``ard.r2``.
"""

from __future__ import annotations

import numpy as np

__all__ = ["ACTIONS", "VIEWS", "settings_and_names", "make_lab", "quantities"]

ACTIONS = {"fit": ("Fit the four models", "request_fit"), "ard": ("Fit ARD (Boston)", "request_ard")}
#: view -> the Bokeh figure name (``figure``) or HTML element id (``element``) the page scrolls into sight
VIEWS = {"slice": {"figure": "kernel-slice-figure"}, "maps": {"figure": "kernel-estimate-figure"},
         "curve": {"figure": "error-curve-figure"}, "fits": {"figure": "fits-figure"},
         "metrics": {"element": "fit-table"}, "weights": {"figure": "weights-figure"}, "ard": {"figure": "ard-figure"}}


def settings_and_names():
    """A fresh settings object and the names the lab's URL carries (for validating lessons)."""
    from gpexplorer.ui.random_features import settings as cfg

    return cfg.RandomFeaturesSettings(), cfg.url_parameters()


def make_lab():
    """A fresh lab, as a page (or a headless lesson check) builds one."""
    from gpexplorer.ui.random_features.lab import RandomFeaturesLab

    return RandomFeaturesLab()


def _kernel_quantities(lab, out):
    if lab.view is not None:
        out.update({"kernel.error": lab.view.error, "kernel.slice_error": lab.view.slice_error,
                    "kernel.features": lab.view.n_features})
    if lab.last_kernel_seconds is not None:
        out["kernel.seconds"] = lab.last_kernel_seconds
    if lab.curves is not None:
        for b, error in lab.curves.at.items():
            out.update({f"curve.{b}.error": error, f"curve.{b}.slope": lab.curves.slope[b], f"curve.{b}.shown": True})


def _model_quantities(lab, out):
    c = lab.comparison
    from gpexplorer.ui.random_features.settings import fit_context

    out["fitted"] = c is not None and lab.fit_context == fit_context(lab.settings) and not lab.jobs.running
    if c is None:
        return
    out["gp_kernel"], out["kernel_matched"] = c.gp_kernel, bool(c.matched)
    for key, f in c.fits.items():
        if f.error is not None:
            continue
        out.update({f"{key}.objective": f.objective, f"{key}.seconds": f.seconds, f"{key}.iterations": f.iterations,
                    f"{key}.lengthscale": f.parameters.get("lengthscale", float("nan"))})
        if key in c.gaps:
            out[f"{key}.mean_gap"], out[f"{key}.sd_gap"] = c.gaps[key]
    w = lab.weights
    if w is not None:
        spread = max((float(np.hypot(*(a - b))) for a in w.means for b in w.means), default=0.0)
        out.update({"weights.i": w.i, "weights.j": w.j, "weights.components": int(w.means.shape[0]),
                    "weights.component_sd_max": float(w.sds.max()), "weights.mean_spread": spread})
        if w.exact_cov is not None:
            out["weights.exact_sd_min"] = float(np.sqrt(np.min(np.diag(w.exact_cov))))


def _ard_quantities(lab, out):
    r = lab.ard
    out["ard.fitted"] = r is not None and r.error is None
    if not out["ard.fitted"]:
        return
    out.update({f"ard.lengthscale.{n}": float(v) for n, v in zip(r.names, r.lengthscale)})
    out.update({"ard.pruned": int(np.sum(r.pruned)), "ard.shortest": r.names[int(np.argmin(r.lengthscale))],
                "ard.log_evidence": r.log_evidence, "ard.r2": r.r2})


def quantities(lab) -> dict:
    """name -> value of everything above that the lab holds now."""
    s = lab.settings
    out = {"basis": s.basis, "n_features": int(s.n_features), "lengthscale": float(s.lengthscale), "dim": int(s.dim),
           "fit_features": int(s.fit_features)}
    _kernel_quantities(lab, out)
    _model_quantities(lab, out)
    _ard_quantities(lab, out)
    return out
