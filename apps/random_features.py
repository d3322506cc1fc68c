"""The random-features lab: `panel serve apps/random_features.py` (random Fourier features, SLM / GLM beside the GP)."""

import panel as pn

from gpexplorer.ui.page import lab_page
from gpexplorer.ui.random_features.lab import RandomFeaturesLab

pn.extension()

with pn.io.hold(freeze=True):  # one model-graph recompute for the whole page, not one per root
    lab_page(RandomFeaturesLab, "gpexplorer: random-features lab (revrand: SLM and GLM)").servable(
        title="Random-features lab")
