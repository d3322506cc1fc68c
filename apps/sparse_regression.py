"""The sparse-regression lab: `panel serve apps/sparse_regression.py` or `gpexplorer serve`."""

import panel as pn

from gpexplorer.ui import SparseRegressionLab
from gpexplorer.ui.layout import controls, views
from gpexplorer.ui.markup import LightBootstrapTemplate

pn.extension()

lab = SparseRegressionLab()
with pn.io.hold(freeze=True):  # one model-graph recompute for the whole page, not one per root
    LightBootstrapTemplate(
        title="gpexplorer: sparse-regression lab (FITC vs VFE)",
        sidebar=[controls(lab)],
        main=[views(lab)],
        sidebar_width=340,
    ).servable(title="Sparse regression lab")
