"""HTML readouts of the sparse-regression lab: bound values, noise estimates, badges.

Each readout carries a stable element id (``bound-readout``, ``noise-readout``, ``badges``) that
the browser tests and the explanations refer to; the job status and the upload verdict are the
labs' shared ones (:mod:`gpexplorer.ui.markup`).
"""

from __future__ import annotations

import html

import numpy as np

from gpexplorer.sparse.comparison import LABELS
from gpexplorer.ui.markup import STYLE

BADGE_TITLES = {"noise-collapse": "Noise collapse", "clumping": "Clumped inducing inputs",
                "ill-conditioned": "Ill-conditioned Kuu", "near-duplicate": "Near-duplicate features",
                "above-upper-bound": "Above the upper bound", "jitter": "Jitter escalated",
                "failure": "Numerical failure"}


def _num(v, fmt="{:.3f}"):
    return "n/a" if v is None or not np.isfinite(v) else fmt.format(v)


def bounds_html(comparison):
    rows = []
    for name, r in comparison.results.items():
        if r.error:
            rows.append(f"<tr><th>{LABELS[name]}</th><td colspan=3>failed: {html.escape(r.error)}</td></tr>")
            continue
        rows.append(f"<tr><th>{LABELS[name]}</th><td>{_num(r.log_evidence)}</td>"
                    f"<td>{_num(r.exact_at_params)}</td><td>{_num(r.upper_bound)}</td>"
                    f"<td>{_num(r.tightened_upper_bound)}</td></tr>")
    return (STYLE + '<div id="bound-readout"><table class="gpx-table"><tr><th></th><th>objective</th>'
            "<th>exact log p(y)</th><th>upper bound</th><th>Z optimised</th></tr>" + "".join(rows)
            + "</table></div>")


def noise_html(comparison, fits=None):
    """Noise variance of each approximation beside the exact GP's (fitted values after a fit)."""
    if fits:
        exact = fits["exact"].final.noise_variance if "exact" in fits else np.nan
        rows = [f"<tr><th>{LABELS[n]}</th><td>{o.final.noise_variance:.4g}</td>"
                f"<td>{_num(o.final.noise_variance / exact, '{:.2f}')}</td><td>{o.n_iter}</td></tr>"
                for n, o in fits.items()]
        head = "<tr><th></th><th>fitted noise</th><th>/ exact</th><th>iterations</th></tr>"
        note = "Fitted noise variances (each approximation at its own optimum)."
    else:
        rows = [f"<tr><th>{LABELS[n]}</th><td>{r.params.noise_variance:.4g}</td></tr>"
                for n, r in comparison.results.items()]
        head = "<tr><th></th><th>noise (slider)</th></tr>"
        note = "Not fitted yet: every approximation uses the slider's noise. Press Optimise."
    return (STYLE + f'<div id="noise-readout"><table class="gpx-table">{head}{"".join(rows)}</table>'
            f"<small>{note}</small></div>")


def badges_html(badges, error=None):
    items = []
    if error:
        items.append(f'<div class="gpx-badge failure"><b>Problem:</b> {html.escape(error)}</div>')
    for b in badges:
        items.append(f'<div class="gpx-badge {b.kind}" data-kind="{b.kind}"><b>{BADGE_TITLES[b.kind]}</b>: '
                     f"{html.escape(b.message)}</div>")
    body = "".join(items) or "<small>No pathologies detected.</small>"
    return STYLE + f'<div id="badges">{body}</div>'
