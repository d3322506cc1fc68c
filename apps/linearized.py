"""The linearised-inference lab: `panel serve apps/linearized.py` (EGP, UGP, EKS, UKS side by side)."""

import panel as pn

from gpexplorer.ui.page import lab_page
from gpexplorer.ui.linearized.lab import LinearizedLab

pn.extension()

with pn.io.hold(freeze=True):  # one model-graph recompute for the whole page, not one per root
    lab_page(LinearizedLab, "gpexplorer: linearised inference lab (EGP / UGP / EKS / UKS)").servable(
        title="Linearised inference lab")
