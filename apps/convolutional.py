"""The patches lab: `panel serve apps/convolutional.py` (convolutional GPs: inducing patches, race, digits)."""

import panel as pn

from gpexplorer.ui.convolutional.lab import ConvolutionalLab
from gpexplorer.ui.page import lab_page

pn.extension()

with pn.io.hold(freeze=True):  # one model-graph recompute for the whole page, not one per root
    lab_page(ConvolutionalLab, "gpexplorer: patches lab (convolutional GPs)").servable(title="Patches lab")
