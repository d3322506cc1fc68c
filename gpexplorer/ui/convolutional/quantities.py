"""What a lesson can ask of the patches lab: its actions, its named views, and the quantities its
checks read (``gpexplorer/ui/claims.py``), read off the lab as the page shows it.

The page fits the lab's model by itself when a step opens; the lesson checks wait for that fit
as the page does. Names:

* ``dataset`` (text), ``n_train``, ``M`` (the setting), ``kernel`` (text);
* the lab's model: ``fitted``, ``elbo``, ``error_rate``, ``nlpd`` (on the test images),
  ``iterations``, ``converged`` (its fit converged before the iteration budget), ``seconds``;
* ``unique_patches`` (U, distinct h x h patches of the training images), ``M_used``;
* the inducing patches: ``z.min`` and ``z.max`` (their pixel values), ``z.binary`` (every value 0
  or 1 to within 1e-6), ``tiles.mean_min`` / ``tiles.mean_max`` (q(u)'s means);
* the contributions over the chosen test image: ``contributions.sum`` (their sum), ``f_mean``
  (the model's E[f] there), ``contributions.max_abs``, ``image`` (its number), ``image_class``;
* the edge effect: ``edge.corner``, ``edge.edge`` (middle of the left border), ``edge.centre``
  (patches each of those pixels is in), ``bar.edge`` and ``bar.centre`` (E[f] of the vertical bar
  at column 0 and at the middle column), ``bar.patches_edge`` / ``bar.patches_centre``;
* the weights: ``weights.min``, ``weights.max``, ``weights.sd``;
* the race: ``race.<kind>.elbo``, ``.error_rate``, ``.nlpd``, ``.fitted`` for kind in se, conv,
  weighted, weighted+se;
* editing: ``edits``, ``edit.elbo`` (the model's ELBO as drawn now), ``edit.error_rate``.
"""

from __future__ import annotations

import numpy as np

from gpexplorer.ui.convolutional.settings import RACE

__all__ = ["ACTIONS", "VIEWS", "settings_and_names", "make_lab", "quantities"]

ACTIONS = {"fit": ("Fit", "request_fit"), "race": ("Race the four kernels", "request_race")}
#: view -> the Bokeh figure name (``figure``) or HTML element id (``element``) the page scrolls into sight
VIEWS = {"tiles": {"figure": "tiles-figure"}, "editor": {"element": "edit-readout"},
         "predictions": {"figure": "predictions-figure"}, "contributions": {"figure": "contrib-heat-figure"},
         "weights": {"figure": "weights-figure"}, "edge": {"figure": "edge-bar-figure"},
         "race": {"figure": "race-figure"}, "digits": {"figure": "digit-probabilities-figure"},
         "metrics": {"element": "fit-table"}}


def settings_and_names():
    """A fresh settings object and the names the lab's URL carries (for validating lessons)."""
    from gpexplorer.ui.convolutional import settings as cfg

    return cfg.PatchesSettings(), cfg.url_parameters()


def make_lab():
    """A fresh lab, as a page (or a headless lesson check) builds one."""
    from gpexplorer.ui.convolutional.lab import ConvolutionalLab

    return ConvolutionalLab()


def _model_quantities(lab, out):
    o = lab.outcome
    out["fitted"] = o is not None and o.error is None and lab.current is not None
    if not out["fitted"]:
        return
    out.update({k: float(v) for k, v in o.metrics.items() if isinstance(v, (int, float)) and not isinstance(v, bool)})
    out["converged"] = o.metrics.get("ended") == "converged"
    out["unique_patches"], out["M_used"] = int(lab.extra["unique"]), int(lab.extra["M"])
    now = lab.current
    out["edit.elbo"], out["edit.error_rate"], out["edits"] = now["elbo"], now["error_rate"], int(lab.edits)
    Z = o.model.features[0].Z
    out["z.min"], out["z.max"] = float(Z.min()), float(Z.max())
    out["z.binary"] = bool(np.all(np.minimum(np.abs(Z), np.abs(Z - 1.0)) <= 1e-6))
    out["tiles.mean_min"], out["tiles.mean_max"] = float(now["tiles"]["mean"].min()), float(now["tiles"]["mean"].max())
    k = lab.image_index()
    out["image"], out["image_class"] = k, int(lab.problem.y_test[k])
    out["contributions.sum"] = now["contribution_sum"]
    out["contributions.max_abs"] = now["contribution_max"]
    out["f_mean"] = now["f_mean"]
    bar = now["bar"]
    mid = len(bar["mean"]) // 2
    out["bar.edge"], out["bar.centre"] = float(bar["mean"][0]), float(bar["mean"][mid])
    out["bar.patches_edge"], out["bar.patches_centre"] = int(bar["patches"][0]), int(bar["patches"][mid])
    w = np.asarray(o.model.kernels[0].weights, dtype=float)
    out["weights.min"], out["weights.max"], out["weights.sd"] = float(w.min()), float(w.max()), float(w.std())


def _edge_quantities(lab, out):
    if lab.problem is None:
        return
    from gpexplorer.convolutional_views import patch_counts

    counts = patch_counts(lab.layout_now())
    H, W = counts.shape
    out["edge.corner"], out["edge.edge"], out["edge.centre"] = (int(counts[0, 0]), int(counts[H // 2, 0]),
                                                                int(counts[H // 2, W // 2]))


def quantities(lab) -> dict:
    """name -> value of everything above that the lab holds now."""
    s = lab.settings
    out = {"dataset": s.dataset, "n_train": int(s.n_train), "M": int(s.M), "kernel": s.kernel}
    _model_quantities(lab, out)
    _edge_quantities(lab, out)
    for kind in RACE:
        o = lab.race.get(kind)
        out[f"race.{kind}.fitted"] = o is not None and o.error is None
        if o is not None and o.error is None:
            for name in ("elbo", "error_rate", "nlpd"):
                out[f"race.{kind}.{name}"] = float(o.metrics[name])
    return out
