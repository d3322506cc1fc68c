"""The sparse-regression lab: `panel serve apps/sparse_regression.py` or `gpexplorer serve`."""

import panel as pn

from gpexplorer.ui.page import lab_page
from gpexplorer.ui.sparse.lab import SparseRegressionLab

pn.extension()

with pn.io.hold(freeze=True):  # one model-graph recompute for the whole page, not one per root
    lab_page(SparseRegressionLab, "gpexplorer: sparse-regression lab (FITC vs VFE)").servable(title="Sparse regression lab")
