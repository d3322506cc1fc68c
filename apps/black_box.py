"""The black-box inference lab: `panel serve apps/black_box.py` (SAVIGP: FG / MoG1 / MoG2 side by side)."""

import panel as pn

from gpexplorer.ui.black_box.lab import BlackBoxLab
from gpexplorer.ui.page import lab_page

pn.extension()

with pn.io.hold(freeze=True):  # one model-graph recompute for the whole page, not one per root
    lab_page(BlackBoxLab, "gpexplorer: black-box inference lab (SAVIGP: FG / MoG1 / MoG2)").servable(
        title="Black-box inference lab")
