"""What a lesson can ask of the primer page: its actions, its named views, and the quantities its
checks read (``gpexplorer/ui/claims.py``), read off the lab as the page shows it.

Names:

* settings: ``kernel`` (text, the expression in use), ``lengthscale``, ``variance``,
  ``noise_variance``, ``x1``, ``x2``, ``fix_x1``, ``f_x1``, ``reverse``, ``tolerance``; ``n_points``;
* the prior: ``prior.samples`` (functions drawn), ``prior.max_abs`` (largest |f| among them);
* the posterior on the plotted grid: ``posterior.sd_f_at_data`` (largest sd of f at the data's
  inputs), ``posterior.sd_f_far`` (sd of f at the grid's right end, x = 4), ``posterior.sd_f_max``,
  ``posterior.noise_gap`` (sd of y minus sd of f where f is best known: what the noise adds);
* the two views: ``pair.prior_correlation`` and ``pair.posterior_correlation`` of (f(x1), f(x2)),
  ``pair.prior_sd2`` / ``pair.posterior_sd2`` (sd of f(x2)), ``pair.given_first_sd2`` (sd of f(x2)
  once f(x1) is known, under the prior);
* f(x1) fixed (``fix_x1``, ``f_x1``): ``fixed.mean2_function`` and ``fixed.sd2_function`` (the prior
  given f(x1) at x2, read off the function view's band), ``fixed.mean2_pair`` and ``fixed.sd2_pair``
  (the same read off the 2-D view's bar), ``fixed.at_x1`` (the band's centre at x1);
  ``covariance.pair_correlation`` (the correlation of the image's entries at (x1, x2));
* the invariance view: ``images``; ``invariance.conv_total`` and ``invariance.se_total`` (each
  kernel's log evidence after every image), ``invariance.conv_late`` and ``invariance.se_late``
  (their mean log p(y_n | y_<n) over the second half of the images), ``invariance.overtake`` (the
  number of images from which on the convolutional model's running sum stays above SE's);
* the evidence: ``evidence.total`` (the sum of the bars), ``evidence.exact`` (log p(y) of the exact
  GP, :class:`gpexplorer.sparse.regression.ExactGPR`, computed apart), ``evidence.first`` and
  ``evidence.last`` (the first and last bars), ``evidence.lowest`` and ``evidence.highest``,
  ``evidence.best_step`` (1-based step of the highest bar), ``evidence.bars``, ``evidence.order``
  ("forward" or "reverse");
* the filter (after its action), for role r in ``short``, ``page``, ``long``:
  ``filter.<r>.share``, ``filter.<r>.kept``, ``filter.<r>.log_evidence``,
  ``filter.<r>.density_estimate``; ``filter.ran``, ``filter.best`` (the role keeping the most draws).
"""

from __future__ import annotations

import numpy as np

__all__ = ["ACTIONS", "VIEWS", "settings_and_names", "make_lab", "quantities"]

ACTIONS = {"filter": ("Filter prior samples", "run_filter")}
#: view -> the Bokeh figure name the page scrolls into sight
VIEWS = {"prior": {"figure": "prior-figure"}, "posterior": {"figure": "posterior-figure"},
         "invariance": {"figure": "invariance-figure"}, "covariance": {"figure": "covariance-figure"},
         "pair": {"figure": "pair-figure"}, "evidence": {"figure": "evidence-figure"}}
ROLES = {"too short": "short", "this page's": "page", "too long": "long"}


def settings_and_names():
    """A fresh settings object and the names the lab's URL carries (for validating lessons)."""
    from gpexplorer.ui.primer import settings as cfg

    return cfg.PrimerSettings(), cfg.url_parameters()


def make_lab():
    """A fresh lab, as a page (or a headless lesson check) builds one."""
    from gpexplorer.ui.primer.lab import PrimerLab

    return PrimerLab()


def _posterior(lab, out):
    from gpexplorer.ui.primer.settings import GRID

    c = lab.conditioned
    if c is None:
        return
    sd_f, sd_y = np.sqrt(c.var_f), np.sqrt(c.var_y)
    out.update({"posterior.sd_f_far": float(sd_f[-1]), "posterior.sd_f_max": float(sd_f.max())})
    if lab.X:
        at = [int(np.argmin(np.abs(GRID - x))) for x in lab.X]
        out["posterior.sd_f_at_data"] = float(sd_f[at].max())
        best = int(np.argmin(sd_f))
        out["posterior.noise_gap"] = float(sd_y[best] - sd_f[best])


def _pair(lab, out):
    if lab.pair is None:
        return
    prior, post = lab.pair
    for name, pm in (("prior", prior), ("posterior", post)):
        c = pm.cov
        out[f"pair.{name}_correlation"] = float(c[0, 1] / np.sqrt(c[0, 0] * c[1, 1])) if c[0, 0] * c[1, 1] > 0 else 0.0
        out[f"pair.{name}_sd2"] = float(np.sqrt(max(c[1, 1], 0.0)))
    out["pair.given_first_sd2"] = float(np.sqrt(prior.given_first(prior.mean[0])[1]))


def _fixed(lab, out):
    from gpexplorer.ui.primer.settings import GRID, GRID_STEP

    s = lab.settings
    image = np.asarray(lab.covariance_chart.src.data["image"][0], dtype=float)
    if image.shape[0] > 2:
        i, j = (int(round((v - GRID[0]) / (2 * GRID_STEP))) for v in (s.x1, s.x2))
        out["covariance.pair_correlation"] = float(image[i, j] / np.sqrt(image[i, i] * image[j, j]))
    band, bar = lab.prior_chart.given.data, lab.pair_chart.given.data
    if len(band["x"]) and len(bar["y"]) == 2:
        k1, k2 = (int(np.argmin(np.abs(GRID - v))) for v in (s.x1, s.x2))
        out.update({"fixed.mean2_function": float(band["mean"][k2]),
                    "fixed.sd2_function": float(band["upper"][k2] - band["lower"][k2]) / 4,
                    "fixed.mean2_pair": float(bar["y"][0] + bar["y"][1]) / 2,
                    "fixed.sd2_pair": float(bar["y"][1] - bar["y"][0]) / 4,
                    "fixed.at_x1": float(band["mean"][k1])})


def _invariance(lab, out):
    if lab.invariance is None:
        return
    _, y, result = lab.invariance
    half = len(y) // 2
    for key, name in (("conv", "convolutional"), ("se", "se")):
        terms, cumulative = result[name]
        out[f"invariance.{key}_total"] = float(cumulative[-1])
        out[f"invariance.{key}_late"] = float(np.mean(terms[half:]))
    behind = np.flatnonzero(result["convolutional"][1] <= result["se"][1])
    out["invariance.overtake"] = int(behind[-1] + 2) if behind.size else 1


def _evidence(lab, out):
    from gpexplorer.sparse.regression import ExactGPR

    e = lab.evidence
    if e is None:
        return
    X, y = np.asarray(lab.X, dtype=float)[:, None], np.asarray(lab.y, dtype=float)
    exact = ExactGPR(X, y[:, None], lab.kernel, noise_variance=lab.settings.noise_variance)
    out.update({"evidence.total": e.total, "evidence.exact": float(exact.log_marginal_likelihood()),
                "evidence.first": float(e.terms[0]), "evidence.last": float(e.terms[-1]),
                "evidence.lowest": float(e.terms.min()), "evidence.highest": float(e.terms.max()),
                "evidence.best_step": int(np.argmax(e.terms)) + 1,
                "evidence.bars": int(e.terms.size), "evidence.order": "reverse" if lab.settings.reverse else "forward"})


def _filter(lab, out):
    results = lab.filter_results
    out["filter.ran"] = bool(results)
    if not results:
        return
    for role, _, f in results:
        r = ROLES[role]
        out.update({f"filter.{r}.share": f.share, f"filter.{r}.kept": f.n_kept,
                    f"filter.{r}.log_evidence": f.log_evidence, f"filter.{r}.density_estimate": f.density_estimate})
    out["filter.best"] = ROLES[max(results, key=lambda t: t[2].n_kept)[0]]


def quantities(lab) -> dict:
    """name -> value of everything above that the lab holds now."""
    s = lab.settings
    out = {"kernel": lab.kernel_used, "lengthscale": float(s.lengthscale), "variance": float(s.variance),
           "noise_variance": float(s.noise_variance), "x1": float(s.x1), "x2": float(s.x2), "reverse": bool(s.reverse),
           "tolerance": float(s.tolerance), "n_points": len(lab.X), "fix_x1": bool(s.fix_x1), "f_x1": float(s.f_x1),
           "images": int(s.images)}
    if lab.prior is not None:
        out.update({"prior.samples": int(lab.prior.shape[0]), "prior.max_abs": float(np.abs(lab.prior).max())})
    _posterior(lab, out)
    _pair(lab, out)
    _fixed(lab, out)
    _invariance(lab, out)
    _evidence(lab, out)
    _filter(lab, out)
    return out
