"""What a lesson can ask of the black-box (SAVIGP) lab: its actions, its named views, and the
quantities its checks read (``gpexplorer/ui/claims.py``), read off the lab as the page shows it.

The page fits every shown posterior by itself when a step opens; the lesson checks wait for that
fit as the page does. Names (``p`` is a posterior: fg, mog1, mog2):

* ``dataset`` (text), ``M`` (the inducing points per latent the fits use: the setting, at most N);
* ``p.fitted``, ``p.failed``; ``p.elbo``, ``p.nlpd``, ``p.error_rate`` or ``p.sse``,
  ``p.iterations``, ``p.seconds``, ``p.converged`` (the metrics table's *ended* column says
  converged), ``p.stopped`` (cancelled), ``p.last_change_per_iteration``;
* how the fit ended, as its verdict says (the metrics table's *ended* column and the badge):
  ``p.rounds`` (rounds run), ``p.on_budget``, ``p.stalled`` (true or false), ``p.exact_round_gain``
  (a stalled score fit: what one exact-gradient round would still add to the ELBO; the badge's number);
* the badges as the page shows them (``#badges``): ``badge.not-converged.<p>``,
  ``badge.stalled.<p>``, ``badge.budget.<p>`` (true or false);
* ``p.elbo_last_rise``: the ELBO's rise over the last quarter of its trace (a fit still climbing
  when it ends has a large one);
* bands: ``p.band_f_width`` (mean width of q(f*)'s central 95 % band over the views' points, the
  latent chart), ``p.obs_band_width`` (of the observation-space 90 % band: the intensity for coal);
* the latent mean (1-D data only): ``p.mean_variation``, its total variation over the latent
  chart's grid (the sum of its ups and downs: a wiggly mean has a large one), ``p.mean_f`` (its
  average over the grid);
* the learnt kernel, which the page does not draw (read from the fitted model; the lesson card's
  checks show the value): ``p.lengthscale`` (for several input dimensions, their geometric mean),
  ``p.kernel_variance``, ``p.neighbour_correlation`` (1-D data: the prior correlation of
  neighbouring inducing values, k(z_i, z_i+1) / k(z, z) averaged over the sorted inducing inputs,
  under p's learnt kernel: how much a diagonal q(u) leaves out);
* mixtures: ``p.weight.k`` (k = 0, 1, ...), ``p.smallest_weight``, ``p.component_gap`` (the
  largest distance between two components' means at the inducing inputs, in units of their sd);
* the estimator-variance chart: ``variance.<curve>@<S>`` for curve in score, score+cv, reparam
  (the variance of d/dmean, the chart's solid lines), ``variance.cv_gain@<S>`` (score over
  score+cv), ``variance.S`` (the page's S); the same of d/dvariance (the dashed lines) as
  ``variance_dvar.<curve>@<S>`` and ``variance_dvar.cv_gain@<S>``;
* ``note.unnormalised``: the "Not a probability" badge is shown (the typed likelihood's
  exp(log p) does not sum to one over y; the status line says it too).
"""

from __future__ import annotations

import re

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


def _kernel_quantities(p, model, out, one_d):
    kernels = getattr(model, "kernels", None)
    if not kernels:
        return
    kernel = kernels[0]  # its lengthscale and variance come with the fit's metrics (variational.comparison.metrics)
    Z = getattr(model.features[0], "Z", None)
    if one_d and Z is not None and len(Z) > 1:
        Z = np.sort(np.asarray(Z, float)[:, 0])[:, None]
        K = kernel.K(Z)
        d = np.sqrt(np.maximum(np.diag(K), 1e-300))
        out[f"{p}.neighbour_correlation"] = float(np.mean(np.diag(K, 1) / (d[:-1] * d[1:])))


def _badge_quantities(lab, out):
    """What the badges pane shows: a not-converged badge per posterior, with its reason."""
    shown = lab.badge_pane.object or ""
    for p in POSTERIORS.values():
        found = re.search(rf'data-kind="not-converged" data-reason="(\w+)" data-posterior="{p}"', shown)
        out[f"badge.not-converged.{p}"] = found is not None
        for reason in ("stalled", "budget"):
            out[f"badge.{reason}.{p}"] = found is not None and found.group(1) == reason


def _posterior_quantities(p, r, out, one_d=True):
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
    verdict = r.convergence
    out[f"{p}.rounds"] = int(verdict.get("rounds", 0))
    out[f"{p}.on_budget"] = verdict.get("reason") == "budget"
    out[f"{p}.stalled"] = verdict.get("reason") == "stalled"
    if verdict.get("exact_round_gain") is not None:
        out[f"{p}.exact_round_gain"] = float(verdict["exact_round_gain"])
    if r.f_mean is not None and one_d:
        out[f"{p}.mean_variation"] = float(np.sum(np.abs(np.diff(r.f_mean))))
        out[f"{p}.mean_f"] = float(np.mean(r.f_mean))
    _kernel_quantities(p, r.model, out, one_d)
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
    for part, prefix in (("dmean", "variance"), ("dvar", "variance_dvar")):
        for label in ("score", "score+cv", "reparam"):
            if label in curve and part in curve[label]:
                for S, v in zip(curve["S"], curve[label][part]):
                    out[f"{prefix}.{label}@{S}"] = float(v)
        if "score" in curve and "score+cv" in curve and part in curve["score"]:
            for S, a, b in zip(curve["S"], curve["score"][part], curve["score+cv"][part]):
                out[f"{prefix}.cv_gain@{S}"] = float(a / b) if b > 0 else float("nan")


def quantities(lab) -> dict:
    """name -> value of everything above that the lab holds now."""
    out = {"dataset": lab.settings.dataset}
    problem = lab.problem
    if problem is not None:
        out["M"] = int(min(lab.settings.M, problem.X.shape[0]))
    one_d = problem is not None and problem.one_d
    for p in POSTERIORS.values():
        r = lab.results.get(p)
        if r is not None and p in lab.shown:
            _posterior_quantities(p, r, out, one_d)
    _badge_quantities(lab, out)
    _variance_quantities(lab, out)
    out["note.unnormalised"] = 'data-kind="unnormalised"' in (lab.badge_pane.object or "")
    return out
