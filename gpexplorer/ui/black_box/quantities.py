"""What a lesson can ask of the black-box (SAVIGP) lab: its actions, its named views, and the
quantities its checks read (``gpexplorer/ui/claims.py``), read off the lab as the page shows it.

The page fits every shown posterior by itself when a step opens; the lesson checks wait for that
fit as the page does. Names (``p`` is a posterior: fg, mog1, mog2):

* ``p.fitted``, ``p.failed``; ``p.elbo``, ``p.nlpd``, ``p.error_rate`` or ``p.sse``,
  ``p.iterations``, ``p.seconds``, ``p.converged`` (when the fit says);
* ``p.elbo_last_rise``: the ELBO's rise over the last quarter of its trace (a fit still climbing
  when it ends has a large one);
* bands: ``p.band_f_width`` (mean width of q(f*)'s central 95 % band over the views' points),
  ``p.obs_band_width`` (of the observation-space 90 % band: the intensity for coal);
* mixtures: ``p.weight.k`` (k = 0, 1, ...), ``p.smallest_weight``, ``p.component_gap`` (the
  largest distance between two components' means at the inducing inputs, in units of their sd);
* the estimator-variance chart: ``variance.<curve>@<S>`` for curve in score, score+cv, reparam
  (the variance of d/dmean), ``variance.cv_gain@<S>`` (score over score+cv), ``variance.S``
  (the page's S);
* ``note.unnormalised``: the typed likelihood's warning that it does not sum to one is shown.
"""

from __future__ import annotations

import numpy as np

from gpexplorer.ui.black_box.settings import POSTERIORS

__all__ = ["ACTIONS", "VIEWS", "settings_and_names", "make_lab", "quantities"]

ACTIONS = {"fit": ("Fit", "request_fit")}
#: view -> the Bokeh figure name (``figure``) or HTML element id (``element``) the page scrolls into sight
VIEWS = {"badges": {"element": "badges"}, "latent": {"figure": "latent"}, "observation": {"figure": "observation"},
         "elbo": {"figure": "elbo"}, "variance": {"figure": "variance"}, "components": {"figure": "components"},
         "metrics": {"element": "metrics-table"}}


def settings_and_names():
    """A fresh settings object and the names the lab's URL carries (for validating lessons)."""
    from gpexplorer.ui.black_box import settings as cfg

    return cfg.BlackBoxSettings(), cfg.url_parameters()


def make_lab():
    """A fresh lab, as a page (or a headless lesson check) builds one."""
    from gpexplorer.ui.black_box.lab import BlackBoxLab

    return BlackBoxLab()


def _posterior_quantities(p, r, out):
    out[f"{p}.fitted"], out[f"{p}.failed"] = r.error is None, r.error is not None
    if r.error is not None:
        return
    out.update({f"{p}.{k}": (bool(v) if isinstance(v, bool) else float(v)) for k, v in r.metrics.items()
                if isinstance(v, (int, float, bool))})
    elbo = np.asarray(r.trace.get("elbo", []), dtype=float)
    if elbo.size > 1:
        tail = elbo[-max(2, elbo.size // 4):]
        out[f"{p}.elbo_last_rise"] = float(tail[-1] - tail[0])
    if r.f_lower is not None:
        out[f"{p}.band_f_width"] = float(np.mean(r.f_upper - r.f_lower))
    if r.obs:
        out[f"{p}.obs_band_width"] = float(np.mean(np.asarray(r.obs["upper"]) - np.asarray(r.obs["lower"])))
    weights = [c["pi"] for c in r.components]
    for k, w in enumerate(weights):
        out[f"{p}.weight.{k}"] = float(w)
    if weights:
        out[f"{p}.smallest_weight"] = float(min(weights))
    if len(r.components) > 1:
        a, b = r.components[0], r.components[1]
        scale = np.maximum(0.5 * (a["sd"] + b["sd"]), 1e-12)
        out[f"{p}.component_gap"] = float(np.max(np.abs(a["mean"] - b["mean"]) / scale))


def _variance_quantities(lab, out):
    out["variance.S"] = int(lab.settings.num_samples)
    curve = lab.curve
    if not curve or "error" in curve:
        return
    for label in ("score", "score+cv", "reparam"):
        if label in curve:
            for S, v in zip(curve["S"], curve[label]["dmean"]):
                out[f"variance.{label}@{S}"] = float(v)
    if "score" in curve and "score+cv" in curve:
        for S, a, b in zip(curve["S"], curve["score"]["dmean"], curve["score+cv"]["dmean"]):
            out[f"variance.cv_gain@{S}"] = float(a / b) if b > 0 else float("nan")


def quantities(lab) -> dict:
    """name -> value of everything above that the lab holds now."""
    out = {"dataset": lab.settings.dataset}
    for p in POSTERIORS.values():
        r = lab.results.get(p)
        if r is not None and p in lab.shown:
            _posterior_quantities(p, r, out)
    _variance_quantities(lab, out)
    out["note.unnormalised"] = "not to 1" in (lab.status.object or "")
    return out
