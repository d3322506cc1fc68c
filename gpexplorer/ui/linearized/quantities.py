"""What a lesson can ask of the linearised-inference lab: its actions, its named views, and the
quantities its checks read (``gpexplorer/ui/claims.py``), read off the lab as the page shows it.

Names (``m`` is a method: egp, ugp, eks, uks):

* ``forward.differentiable`` (whether g has a derivative everywhere: the Taylor methods need it);
* ``m.shown`` (it has a result), ``m.refused`` (switched off: g not differentiable), ``m.failed``;
* ``m.free_energy``, ``m.map_objective`` (eq. 31 where the inner loop stopped; the Gauss-Newton chart
  plots it rising), ``m.map_objective_start`` (its value at the prior mean, iteration 0),
  ``m.iterations`` (Gauss-Newton iterations, as the metrics table counts them), ``m.nlpd_f``,
  ``m.smse_f``, ``m.smse_y``, ``m.status`` (converged, diverged, max_iter), ``m.diverged`` (its
  "Diverged" badge is shown), ``m.variance``, ``m.lengthscale``, ``m.noise_variance`` (the
  hyperparameters it is shown at), ``m.band_f_width`` (mean width of its 2 sd band of f over the grid);
* toy data only (a true f): ``m.coverage_f`` (the fraction of test points whose true f lies inside
  the method's 2 sd band of f, as the latent plot draws it), and where g is flat or steep at the
  true f (the grid inputs in the lowest / highest quarter of |dg/df| there, by central differences,
  so a g with a jump works too): ``m.band_f_width.flat`` / ``m.band_f_width.steep`` (mean width of
  the 2 sd band of f there) and ``m.error_f.flat`` / ``m.error_f.steep`` (mean |mean of f - true f|);
* ``gap.m1.m2``: the largest |mean of f| difference between two methods over the grid (how far
  apart their curves are drawn);
* the close-up at x0: ``closeup.m.mean`` / ``.sd`` (of f(x0)), ``.slope`` (of the method's line:
  tangent or fit through the sigma points), ``.g_slope`` (the slope of g itself at the mean, by
  central differences), ``.lowest`` / ``.highest`` (the extreme f of its sigma points, or its mean
  for Taylor), ``.reach`` ((highest - mean) / sd: sqrt(1 + kappa) for the unscented methods, 0 for
  Taylor), ``.g_jump`` (the largest jump of g between neighbouring points of the close-up's f range,
  which spans +- 3 sd around the mean), ``.g_jump_sigma`` (the same between the lowest and highest
  sigma point: whether the line's points straddle a jump of g; 0 for Taylor), ``x0``;
* after learning: ``learnt`` (each shown method at its learnt values), ``learnt.m.free_energy``,
  ``learnt.m.evaluations``, ``learnt.m.converged`` (when the search says), ``learnt.m.search`` (the
  search's name as the hyperparameter table shows it) and ``learnt.m.by_fisher`` /
  ``learnt.m.by_cobyla`` / ``learnt.m.by_cobyqa`` (true for the search it was learnt by);
* after profiling: ``profile.m.argmax_free_energy`` (the value of the hyperparameter where F is
  highest), ``profile.m.max_free_energy``, ``profile.m.argmin_nlpd``, ``profile.m.min_nlpd``,
  ``profile.m.nlpd_at_argmax`` (the test NLPD where F is highest), ``profile.m.shown_value`` (the
  star), ``profile.m.local_maxima`` (grid points whose F is above both neighbours: 1 for a single
  smooth peak), ``profile.m.peak_prominence`` (the highest F minus the higher F of its two grid
  neighbours: large for a narrow spike), ``profile.m.diverged_points`` (red x marks),
  ``profile.parameter``.
"""

from __future__ import annotations

import numpy as np

from gpexplorer.linearized.comparison import HYPERPARAMETERS, METHODS, SEARCH_LABELS

__all__ = ["ACTIONS", "VIEWS", "settings_and_names", "make_lab", "quantities"]

ACTIONS = {"learn": ("Learn hyperparameters", "start_learning"), "profile": ("Profile free energy", "start_profile")}
#: view -> the Bokeh figure name (``figure``) or HTML element id (``element``) the page scrolls into sight
VIEWS = {"badges": {"element": "badges"}, "latent": {"figure": "latent"}, "observation": {"figure": "observation"},
         "objective": {"figure": "objective"}, "closeup": {"figure": "closeup"}, "metrics": {"element": "metrics-table"},
         "hyper": {"element": "hyper-table"}, "profile": {"figure": "profile"}}
CLOSEUP_SDS, CLOSEUP_POINTS = 3.0, 2001
#: the band of f the latent plot draws: mean +- BAND_SDS sd
BAND_SDS = 2.0
#: relative step of the central differences that give g's slope
SLOPE_STEP = 1e-6


def settings_and_names():
    """A fresh settings object and the names the lab's URL carries (for validating lessons)."""
    from gpexplorer.ui.linearized import settings as cfg

    return cfg.LinearizedSettings(), cfg.url_parameters()


def make_lab():
    """A fresh lab, as a page (or a headless lesson check) builds one."""
    from gpexplorer.ui.linearized.lab import LinearizedLab

    return LinearizedLab()


def _method_quantities(lab, out):
    for m in METHODS:
        r = lab.results.get(m)
        out[f"{m}.shown"] = r is not None and r.error is None
        out[f"{m}.refused"] = m in lab.refused
        out[f"{m}.failed"] = r is not None and r.error is not None
        if r is None or r.error is not None:
            continue
        out.update({f"{m}.free_energy": r.free_energy, f"{m}.map_objective": r.map_objective,
                    f"{m}.status": r.status, f"{m}.diverged": r.status == "diverged",
                    f"{m}.band_f_width": float(np.mean(4.0 * np.sqrt(np.maximum(r.var_f, 0.0)))),
                    f"{m}.iterations": len(r.trace) - 1, f"{m}.map_objective_start": float(r.trace[0].map_objective)})
        out.update({f"{m}.{k}": float(v) for k, v in (r.metrics or {}).items()})
        out.update({f"{m}.{k}": float(r.params[k]) for k in HYPERPARAMETERS})
        out.update(_truth_quantities(lab, m, r))
    shown = [m for m in METHODS if out.get(f"{m}.shown")]
    for i, a in enumerate(shown):
        for b in shown[i + 1:]:
            gap = float(np.max(np.abs(lab.results[a].mean_f - lab.results[b].mean_f)))
            out[f"gap.{a}.{b}"] = out[f"gap.{b}.{a}"] = gap


def _g_slope(forward, f):
    """dg/df at each of ``f`` by central differences (a g with a jump gets a huge slope only at it)."""
    f = np.asarray(f, dtype=float)
    h = SLOPE_STEP * np.maximum(1.0, np.abs(f))
    with np.errstate(all="ignore"):
        return (np.ravel(forward.value((f + h)[:, None])) - np.ravel(forward.value((f - h)[:, None]))) / (2 * h)


def _truth_quantities(lab, m, r):
    """Coverage of the true f by m's band, and its band and error where g is flat or steep."""
    data = lab.data
    if data.f_true is None or r.mean_f is None:
        return {}
    sd = np.sqrt(np.maximum(r.var_f, 0.0))
    out = {}
    if data.scored:
        t = data.test
        out[f"{m}.coverage_f"] = float(np.mean(np.abs(data.f_true[t] - r.mean_f[t]) <= BAND_SDS * sd[t]))
    slope = np.abs(_g_slope(lab.forward, data.f_true))
    if np.all(np.isfinite(slope)):
        low, high = np.quantile(slope, [0.25, 0.75])
        for name, where in (("flat", slope <= low), ("steep", slope >= high)):
            out[f"{m}.band_f_width.{name}"] = float(np.mean(2 * BAND_SDS * sd[where]))
            out[f"{m}.error_f.{name}"] = float(np.mean(np.abs(r.mean_f[where] - data.f_true[where])))
    return out


def _largest_jump(forward, lo, hi):
    """The largest |g| step between neighbouring points of CLOSEUP_POINTS on [lo, hi] (0 if lo == hi)."""
    if not hi > lo:
        return 0.0
    f = np.linspace(lo, hi, CLOSEUP_POINTS)
    with np.errstate(all="ignore"):
        g = np.ravel(forward.value(f[:, None]))
    finite = np.isfinite(g)
    return float(np.max(np.abs(np.diff(g[finite])))) if finite.sum() > 1 else 0.0


def _closeup_quantities(lab, out):
    out["x0"] = float(lab.settings.x0)
    for m, c in lab.closeups().items():
        sd = float(np.sqrt(c.v0))
        lowest, highest = float(np.min(c.points)), float(np.max(c.points))
        out.update({f"closeup.{m}.mean": c.m0, f"closeup.{m}.sd": sd, f"closeup.{m}.slope": c.slope,
                    f"closeup.{m}.g_slope": float(_g_slope(lab.forward, [c.m0])[0]),
                    f"closeup.{m}.lowest": lowest, f"closeup.{m}.highest": highest,
                    f"closeup.{m}.reach": (highest - c.m0) / sd if sd > 0 else 0.0,
                    f"closeup.{m}.g_jump": _largest_jump(lab.forward, c.m0 - CLOSEUP_SDS * sd, c.m0 + CLOSEUP_SDS * sd),
                    f"closeup.{m}.g_jump_sigma": _largest_jump(lab.forward, lowest, highest)})


def _learnt_quantities(lab, out):
    out["learnt"] = bool(lab.fitted) and lab.mode == "fitted"
    for m, learnt in (lab.fitted or {}).items():
        out[f"learnt.{m}.free_energy"] = float(learnt["free_energy"])
        out[f"learnt.{m}.evaluations"] = int(learnt["evaluations"])
        if "converged" in learnt:
            out[f"learnt.{m}.converged"] = bool(learnt["converged"])
        if learnt.get("search"):
            out[f"learnt.{m}.search"] = learnt["search"]
            out.update({f"learnt.{m}.by_{key}": learnt["search"] == label for key, label in SEARCH_LABELS.items()})


def _profile_quantities(lab, out):
    job = lab.job
    if lab.profile.parameter is None or job is None or job.name != "profile" or not job.result:
        return
    out["profile.parameter"] = lab.profile.parameter
    for m, p in job.result.items():
        best = p.best()
        free_energy = np.asarray(p.free_energy, dtype=float)
        scores = np.asarray(p.scores, dtype=float)
        if best is not None:
            out[f"profile.{m}.argmax_free_energy"] = float(p.values[best])
            out[f"profile.{m}.max_free_energy"] = float(free_energy[best])
            out[f"profile.{m}.nlpd_at_argmax"] = float(scores[best])
            neighbours = [free_energy[i] for i in (best - 1, best + 1) if 0 <= i < len(free_energy)]
            neighbours = [v for v in neighbours if np.isfinite(v)]
            if neighbours:
                out[f"profile.{m}.peak_prominence"] = float(free_energy[best] - max(neighbours))
        inner = free_energy[1:-1]
        out[f"profile.{m}.local_maxima"] = int(np.sum((inner > free_energy[:-2]) & (inner > free_energy[2:])))
        out[f"profile.{m}.diverged_points"] = int(sum(status == "diverged" for status in p.status))
        if np.any(np.isfinite(scores)):
            out[f"profile.{m}.argmin_nlpd"] = float(p.values[int(np.nanargmin(scores))])
            out[f"profile.{m}.min_nlpd"] = float(np.nanmin(scores))
        out[f"profile.{m}.shown_value"] = float(lab.parameters(m)[lab.profile.parameter])


def quantities(lab) -> dict:
    """name -> value of everything above that the lab holds now."""
    out = {"mode": lab.mode, "forward": lab.settings.forward}
    if lab.forward is not None:
        out["forward.differentiable"] = bool(lab.forward.differentiable)
    if lab.data is None:
        return out
    _method_quantities(lab, out)
    _closeup_quantities(lab, out)
    _learnt_quantities(lab, out)
    _profile_quantities(lab, out)
    return out
