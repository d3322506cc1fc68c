"""One short explanation per view of the sparse-regression lab: what to look at (HTML; ``$...$`` is TeX,
rendered as MathML by :func:`gpexplorer.ui.math_text.with_math`)."""

from gpexplorer.ui.math_text import with_math

TABS = {"trace": "Optimisation trace", "add_one": "Add one inducing input", "sweep": "M sweep",
        "split": "g/h split", "position": "Bound vs feature position"}

EXPLAIN = {
    "strip": (
        "<b>Inducing features.</b> Each inducing variable's basis function $K_{uf}(x, z_m) / \\sigma^2$, one colour "
        "per feature: a bump for a point or a multiscale feature, a modulated bump for a time-frequency one, "
        "a windowed sinusoid for a frequency one; ticks mark a sum of deltas' C locations (thesis ch. 4)."),
    "position": (
        "<b>Bound against one feature's position (fig. 4.4).</b> VFE's bound as the selected feature is moved "
        "across the inputs, everything else fixed; right, a zoom around where the feature sits now. Two nearly "
        "coincident features can carry a narrow, high peak that a coarse sweep misses; more jitter "
        "(Show card) removes it."),
    "posterior": (
        "<b>Posterior.</b> Dots are data; each colour is an approximation's mean and 2-sigma band, the band's "
        "edges drawn as thin lines of its colour, over the exact GP (black, dashed). Click a legend entry to hide "
        "its band. Green triangles are the shared inducing inputs Z: <b>drag one</b> and every objective is "
        "recomputed at once. After <i>Optimise</i>, crosses show each approximation's own optimised Z (one row "
        "each), grey circles where the fit started, and the triangles the replayed iterate of the fit whose "
        "optimum is written back (VFE's when it was fitted)."),
    "pvt": "<b>Predicted vs true.</b> With more than one input dimension the posterior is shown as test "
           "predictions against held-out targets; on the diagonal is perfect.",
    "sandwich": (
        "<b>Bound sandwich.</b> Per row, the grey bar runs from the exact log p(y) (black tick) to Titsias' "
        "upper bound at the same parameters (the bar's end). VFE's dot is always left of the black tick (a "
        "lower bound). Any dot right of the black tick overestimates the marginal likelihood, as FITC can "
        "(thesis 3.2.6): it gets a black outline and an <i>Above the exact log p(y)</i> badge. Right of the "
        "bar's end too, the overestimate is proven from the upper bound alone, without the exact value: a "
        "black outline with a cross and an <i>Above the upper bound</i> badge. The triangle is the upper "
        "bound with Z optimised for it (<i>Tighten upper bound</i>), often lower than the bar's end."),
    "terms": (
        "<b>Terms (eq. 3.1).</b> log p(y) = complexity + data fit (+ VFE's trace term), constant omitted; "
        "each bar is one term's contribution to log p(y) (or to VFE's bound). "
        "FITC buys data fit with its heteroscedastic diagonal; VFE pays a trace penalty for poor Z."),
    "noise": "<b>Noise.</b> After a fit: each approximation's noise variance beside the exact GP's. FITC's "
             "far below the exact value is the noise collapse of thesis 3.2.1.",
    "trace": "<b>Trace.</b> Objective and terms at every L-BFGS-B iterate; the replay slider moves the "
             "posterior plot through these iterates (dotted marker). The charts fill after <i>Optimise</i>.",
    "add_one": (
        "<b>Add one inducing input (fig. 3.2).</b> Change of each term of log p(y) if one more inducing input "
        "were placed at z*, everything else fixed. VFE's total is never negative: an extra inducing "
        "input cannot hurt its bound; FITC's can be."),
    "sweep": "<b>M sweep (fig. 3.5-3.7).</b> Each M fitted from scratch in the background: objective, noise, "
             "NLPD and SMSE against M for FITC and VFE, with the exact GP dotted and the upper bound dashed. "
             "The charts fill after <i>Run M sweep</i>.",
    "split": "<b>g/h split (fig. 2.4-2.5).</b> f = g + h: g carries what the inducing outputs explain, h the "
             "remaining prior variance, large away from Z. SoR drops h entirely.",
    "badges": "Badges flag pathologies as they occur: noise collapse, clumped inputs, an evidence above the "
              "exact log p(y) or above the upper bound, escalated jitter, a fit stopped by its iteration budget.",
}
EXPLAIN = {key: with_math(text) for key, text in EXPLAIN.items()}
