"""The GP primer page: `panel serve apps/primer.py` (prior, conditioning, two views of one Gaussian,
the evidence as sequential prediction and Occam's razor by filtering)."""

import panel as pn

from gpexplorer.ui.page import lab_page
from gpexplorer.ui.primer.lab import PrimerLab

pn.extension()

with pn.io.hold(freeze=True):  # one model-graph recompute for the whole page, not one per root
    lab_page(PrimerLab, "gpexplorer: GP primer").servable(title="GP primer")
