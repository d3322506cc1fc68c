"""The linearised-inference lab: `panel serve apps/linearized.py` (EGP, UGP, EKS, UKS side by side)."""

import panel as pn

from gpexplorer.ui.linearized.figures import controls, views
from gpexplorer.ui.linearized.lab import LinearizedLab
from gpexplorer.ui.markup import LightBootstrapTemplate

pn.extension()

lab = LinearizedLab()
with pn.io.hold(freeze=True):  # one model-graph recompute for the whole page, not one per root
    LightBootstrapTemplate(
        title="gpexplorer: linearised inference lab (EGP / UGP / EKS / UKS)",
        sidebar=[controls(lab)],
        main=[views(lab)],
        sidebar_width=340,
    ).servable(title="Linearised inference lab")
