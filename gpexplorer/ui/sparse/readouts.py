"""HTML readouts of the sparse-regression lab: bound values, noise estimates, badges.

Each readout carries a stable element id (``bound-readout``, ``noise-readout``, ``badges``) that
the browser tests and the explanations refer to; the job status and the upload verdict are the
labs' shared ones (:mod:`gpexplorer.ui.markup`).
"""

from __future__ import annotations

import html

import numpy as np

from gpexplorer.sparse.comparison import LABELS
from gpexplorer.formatting import format_number
from gpexplorer.ui.markup import STYLE

BADGE_TITLES = {"noise-collapse": "Noise collapse", "clumping": "Clumped inducing inputs",
                "ill-conditioned": "Ill-conditioned Kuu", "near-duplicate": "Near-duplicate features",
                "above-exact": "Above the exact log p(y)", "above-upper-bound": "Above the upper bound",
                "jitter": "Jitter escalated", "failure": "Numerical failure",
                "not-converged": "Stopped on its iteration budget"}


def _cell(v, missing="n/a"):
    """A number of a readout, formatted by magnitude (``gpexplorer.formatting.format_number``)."""
    return missing if v is None or not np.isfinite(v) else format_number(v)


def bounds_html(comparison):
    rows = []
    for name, r in comparison.results.items():
        if r.error:
            rows.append(f"<tr><th>{LABELS[name]}</th><td colspan=4>failed: {html.escape(r.error)}</td></tr>")
            continue
        sparse = name != "exact"
        rows.append(f"<tr><th>{LABELS[name]}</th><td>{_cell(r.log_evidence)}</td>"
                    f"<td>{_cell(r.exact_at_params)}</td><td>{_cell(r.upper_bound) if sparse else ''}</td>"
                    f"<td>{_cell(r.tightened_upper_bound, 'not yet') if sparse else ''}</td></tr>")
    return (STYLE + '<div id="bound-readout"><table class="gpx-table"><tr><th></th><th>objective</th>'
            "<th>exact log p(y)</th><th>upper bound</th><th>upper bound, Z optimised</th></tr>" + "".join(rows)
            + "</table><small>Objective: log p(y), the approximation's evidence, or VFE's lower bound. Upper "
            "bound: Titsias' bound on the exact log p(y) at the same parameters and Z; <i>upper bound, Z "
            "optimised</i>: the same bound with its own Z optimised for it, lower and so tighter, computed "
            "by <i>Tighten upper bound</i>.</small></div>")


def noise_html(comparison, fits=None):
    """Noise variance of each approximation beside the exact GP's (fitted values after a fit)."""
    if fits:
        exact = fits["exact"].final.noise_variance if "exact" in fits else np.nan
        rows = [f"<tr><th>{LABELS[n]}</th><td>{_cell(o.final.noise_variance)}</td>"
                f"<td>{_cell(o.final.noise_variance / exact)}</td><td>{o.n_iter}</td></tr>"
                for n, o in fits.items()]
        head = "<tr><th></th><th>fitted noise</th><th>/ exact GP's</th><th>iterations</th></tr>"
        note = "Fitted noise variances (each approximation at its own optimum)."
    else:
        rows = [f"<tr><th>{LABELS[n]}</th><td>{_cell(r.params.noise_variance)}</td></tr>"
                for n, r in comparison.results.items()]
        head = "<tr><th></th><th>noise (slider)</th></tr>"
        note = "Not fitted yet: every approximation uses the slider's noise. Press Optimise."
    return (STYLE + f'<div id="noise-readout"><table class="gpx-table">{head}{"".join(rows)}</table>'
            f"<small>{note}</small></div>")


def badges_html(badges, error=None):
    """The badges (``comparison.badges`` and the lab's ``fit_badges``), each titled by its kind."""
    items = []
    if error:
        items.append(f'<div class="gpx-badge failure"><b>Problem:</b> {html.escape(error)}</div>')
    for b in badges:
        title = BADGE_TITLES.get(b.kind, b.kind)
        items.append(f'<div class="gpx-badge {b.kind}" data-kind="{b.kind}" data-approximation="{b.approximation}">'
                     f"<b>{title}</b>: {html.escape(b.message)}</div>")
    body = "".join(items) or "<small>No pathologies detected.</small>"
    return STYLE + f'<div id="badges">{body}</div>'
