"""What a lesson can ask of the sparse-regression lab: its actions, its named views, and the
quantities its checks read (``gpexplorer/ui/claims.py``).

Every quantity is read off the lab as the page shows it: the comparison behind the posterior
plot, the sandwich and the readouts, the badges, the fits behind the replay, the sweep and add-one
charts' data. Names (``a`` is an approximation shown: exact, sor, dtc, fitc, vfe):

* ``a.objective`` (log p(y), the evidence or VFE's bound; ``exact.objective`` is log p(y)),
  ``a.exact_at_params``, ``a.upper_bound``, ``a.upper_bound_tightened``, ``a.complexity``,
  ``a.data_fit``, ``a.trace``, ``a.noise``, ``a.variance``, ``a.lengthscale``, ``a.M``,
  ``a.clumped_pairs``, ``a.distinct_inducing_inputs`` (told apart at the posterior plot's
  resolution, 1/400 of its x range), ``a.condition_number``;
* bands over the data's x range: ``a.band_f_width`` and ``a.band_y_width`` (mean width of the
  2-sigma band), ``a.band_f_width_at_Z`` / ``a.band_f_width_between_Z`` (at the shared inducing
  inputs / midway between neighbours), ``a.mean_gap`` (largest |mean - exact mean|);
* ``badge.<kind>.<a>`` (true when that badge is shown; kinds in ``sparse.comparison.BADGE_KINDS``), ``badges.count``;
* after Optimise: ``fitted``, ``fit.a.iterations``, ``fit.a.objective``, ``fit.a.noise``,
  ``fit.a.noise_ratio`` (to the exact GP's fitted noise), ``fit.a.converged``, and where the fit
  started: ``fit.a.start_noise``, ``fit.a.start_objective``;
* after the M sweep: ``sweep.a.<key>@<M>`` and ``@first`` / ``@last`` for key in objective, noise,
  nlpd, smse, upper_bound, upper_bound_tightened, plus ``sweep.a.objective.smallest_rise`` (the
  smallest change between successive M), ``sweep.exact.objective`` and ``sweep.largest_M``;
* with the add-one tab shown: ``add_one.a.total.min`` / ``.max``;
* with the position tab shown: ``position.highest``, ``position.highest_at``, ``position.zoom_highest``,
  ``position.feature_at``, ``position.partner_distance`` (selected feature to its nearest other);
* ``feature.max_correlation`` (largest |corr(u_i, u_j)| under the prior, of the last approximation
  shown, VFE when it is; 0 for M = 1).
"""

from __future__ import annotations

import numpy as np

from gpexplorer.sparse.comparison import APPROXIMATIONS, BADGE_KINDS
from gpexplorer.sparse.feature_position import u_correlation

__all__ = ["ACTIONS", "VIEWS", "settings_and_names", "make_lab", "quantities"]

#: action -> (its button's label, the lab's method that starts it)
ACTIONS = {"optimise": ("Optimise", "start_fit"), "sweep": ("Run M sweep", "start_sweep"),
           "tighten": ("Tighten upper bound", "start_tighten")}
#: view -> where it is: the lab's tab that holds it (None: always on the page), and the Bokeh figure
#: name (``figure``) or HTML element id (``element``) the page scrolls into sight
VIEWS = {"posterior": {"figure": "posterior"}, "strip": {"figure": "feature-strip"}, "badges": {"element": "badges"},
         "sandwich": {"figure": "sandwich"}, "terms": {"figure": "terms"}, "noise": {"element": "noise-readout"},
         "trace": {"tab": "trace", "figure": "trace"}, "add_one": {"tab": "add_one", "figure": "add-one"},
         "sweep": {"tab": "sweep", "figure": "sweep-log_marginal_likelihood"},
         "split": {"tab": "split", "figure": "gh-split"}, "position": {"tab": "position", "figure": "position-coarse"}}
SWEEP_KEYS = {"objective": "log_marginal_likelihood", "noise": "noise_variance", "nlpd": "nlpd", "smse": "smse",
              "upper_bound": "upper_bound", "upper_bound_tightened": "upper_bound_tightened"}


def settings_and_names():
    """A fresh settings object and the names the lab's URL carries (for validating lessons)."""
    from gpexplorer.ui.sparse import settings as cfg

    return cfg.LabSettings(), cfg.url_parameters() + ["inducing_inputs"]


def make_lab():
    """A fresh lab, as a page (or a headless lesson check) builds one."""
    from gpexplorer.ui.sparse.lab import SparseRegressionLab

    return SparseRegressionLab()


def _within_data(lab, x):
    lo, hi = float(np.min(lab.dataset.X[:, 0])), float(np.max(lab.dataset.X[:, 0]))
    return (x >= lo) & (x <= hi)


def _band_quantities(lab, name, r, out, exact_mean):
    if r.mean is None or lab.dataset.input_dim != 1:
        return
    x = lab.comparison.inputs[:, 0]
    inside = _within_data(lab, x)
    width_f = 4.0 * np.sqrt(np.maximum(r.var_f, 0.0))
    out[f"{name}.band_f_width"] = float(np.mean(width_f[inside]))
    out[f"{name}.band_y_width"] = float(np.mean(4.0 * np.sqrt(np.maximum(r.var_y, 0.0))[inside]))
    if exact_mean is not None:
        out[f"{name}.mean_gap"] = float(np.max(np.abs(r.mean - exact_mean)[inside]))
    if lab.Z is not None and len(lab.Z) > 1:
        z = np.sort(lab.Z[:, 0])
        mid = 0.5 * (z[1:] + z[:-1])
        out[f"{name}.band_f_width_at_Z"] = float(np.mean(np.interp(z, x, width_f)))
        out[f"{name}.band_f_width_between_Z"] = float(np.mean(np.interp(mid, x, width_f)))


def _distinct(values, resolution):
    v = np.sort(np.asarray(values, dtype=float))
    return int(1 + np.sum(np.diff(v) > resolution)) if v.size else 0


def _comparison_quantities(lab, out):
    c = lab.comparison
    exact = c.results.get("exact")
    exact_mean = exact.mean if exact is not None and exact.error is None else None
    span = float(np.ptp(c.inputs[:, 0])) if lab.dataset.input_dim == 1 else 1.0
    for name, r in c.results.items():
        if r.error:
            out[f"{name}.failed"] = True
            continue
        p = r.params
        out.update({f"{name}.objective": r.log_evidence, f"{name}.exact_at_params": r.exact_at_params,
                    f"{name}.noise": float(p.noise_variance), f"{name}.failed": False})
        out.update({f"{name}.{t}": v for t, v in r.terms.items()})
        for hp in ("variance", "lengthscale"):
            if hasattr(p.kernel, hp):
                out[f"{name}.{hp}"] = float(np.mean(getattr(p.kernel, hp)))
        if name != "exact":
            out.update({f"{name}.upper_bound": r.upper_bound, f"{name}.upper_bound_tightened": r.tightened_upper_bound,
                        f"{name}.clumped_pairs": r.clumped_pairs, f"{name}.condition_number": r.condition_number,
                        f"{name}.M": len(p.inducing)})
            if p.Z is not None and p.Z.shape[1] == 1:
                out[f"{name}.distinct_inducing_inputs"] = _distinct(p.Z[:, 0], span / 400.0)
        _band_quantities(lab, name, r, out, exact_mean)
    shown = {(b.kind, b.approximation) for b in c.badges}
    for kind in BADGE_KINDS:
        for name in APPROXIMATIONS:
            out[f"badge.{kind}.{name}"] = (kind, name) in shown
    out["badges.count"] = len(c.badges)


def _fit_quantities(lab, out):
    out["fitted"] = bool(lab.fits) and lab.mode == "fitted"
    if not lab.fits:
        return
    exact_noise = lab.fits["exact"].final.noise_variance if "exact" in lab.fits else np.nan
    for name, o in lab.fits.items():
        out.update({f"fit.{name}.iterations": o.n_iter, f"fit.{name}.objective": o.log_evidence[-1],
                    f"fit.{name}.noise": float(o.final.noise_variance),
                    f"fit.{name}.noise_ratio": float(o.final.noise_variance / exact_noise),
                    f"fit.{name}.start_noise": float(o.trace[0].noise_variance) if o.trace else np.nan,
                    f"fit.{name}.start_objective": float(o.log_evidence[0]) if o.log_evidence else np.nan})
        converged = getattr(o, "converged", None)
        if converged is not None:
            out[f"fit.{name}.converged"] = bool(converged)


def _sweep_quantities(lab, out):
    rows = (lab.sweep or {}).get("rows") or []
    if not rows:
        return
    out["sweep.largest_M"] = max(r["M"] for r in rows)
    for a in sorted({r["approximation"] for r in rows}):
        mine = sorted((r for r in rows if r["approximation"] == a), key=lambda r: r["M"])
        for key, column in SWEEP_KEYS.items():
            values = [float(r[column]) for r in mine if column in r]
            if len(values) != len(mine):
                continue
            for r, v in zip(mine, values):
                out[f"sweep.{a}.{key}@{r['M']}"] = v
            out[f"sweep.{a}.{key}@first"], out[f"sweep.{a}.{key}@last"] = values[0], values[-1]
        objective = [float(r["log_marginal_likelihood"]) for r in mine]
        if len(objective) > 1:
            out[f"sweep.{a}.objective.smallest_rise"] = float(np.min(np.diff(objective)))
    exact = (lab.sweep or {}).get("exact") or {}
    for key, column in SWEEP_KEYS.items():
        if column in exact:
            out[f"sweep.exact.{key}"] = float(exact[column])


def _add_one_quantities(lab, out):
    if "add_one" not in lab.__dict__:  # the tab was never shown
        return
    series = lab.add_one.series
    for label, (_, ys) in zip(series.labels, zip(series.source.data["xs"], series.source.data["ys"])):
        approximation, _, term = label.partition(" ")
        if term == "total":
            name = {"VFE": "vfe", "FITC": "fitc", "DTC": "dtc", "SoR": "sor"}.get(approximation)
            if name:
                out[f"add_one.{name}.total.min"] = float(np.min(ys))
                out[f"add_one.{name}.total.max"] = float(np.max(ys))


def _position_quantities(lab, out):
    if "position_chart" not in lab.__dict__:
        return
    coarse, zoom = (s.data for s in lab.position_chart.sources)
    if len(coarse["x"]) == 0:
        return
    bound = np.asarray(coarse["bound"], dtype=float)
    i = int(np.nanargmax(bound))
    out.update({"position.highest": float(bound[i]), "position.highest_at": float(coarse["x"][i]),
                "position.zoom_highest": float(np.nanmax(np.asarray(zoom["bound"], dtype=float))),
                "position.feature_at": float(lab.position_chart.markers[0].location)})
    if lab.feature is not None and len(lab.feature) > 1:
        loc = np.asarray(lab.feature.locations, dtype=float)[:, 0]
        m = min(int(lab.settings.selected_feature), len(loc) - 1)
        out["position.partner_distance"] = float(np.min(np.abs(np.delete(loc, m) - loc[m])))


def _feature_quantities(lab, out):
    shown = [r for n, r in lab.comparison.results.items() if n != "exact" and not r.error]
    if not shown or len(shown[-1].params.inducing) < 2:
        out["feature.max_correlation"] = 0.0
        return
    p = shown[-1].params  # VFE's when shown (the table's last)
    corr = np.array(u_correlation(p.inducing, p.kernel))
    np.fill_diagonal(corr, 0.0)
    out["feature.max_correlation"] = float(np.max(np.abs(corr)))


def quantities(lab) -> dict:
    """name -> value of everything above that the lab holds now."""
    out = {"mode": lab.mode, "view_tab": lab.view_tab}
    if lab.comparison is None or lab.dataset is None:
        return out
    _comparison_quantities(lab, out)
    _fit_quantities(lab, out)
    _sweep_quantities(lab, out)
    _add_one_quantities(lab, out)
    _position_quantities(lab, out)
    _feature_quantities(lab, out)
    return out
