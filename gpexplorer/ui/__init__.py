"""Panel/Param/Bokeh dashboards over the inference code (the only package importing them).

Each lab is imported on first use (PEP 562), so a page loads only its own modules."""

import importlib

_LABS = {"PrimerLab": "gpexplorer.ui.primer.lab", "SparseRegressionLab": "gpexplorer.ui.sparse.lab", "LinearizedLab": "gpexplorer.ui.linearized.lab",
         "BlackBoxLab": "gpexplorer.ui.black_box.lab", "ConvolutionalLab": "gpexplorer.ui.convolutional.lab",
         "RandomFeaturesLab": "gpexplorer.ui.random_features.lab"}
__all__ = list(_LABS)


def __getattr__(name):
    if name in _LABS:
        return getattr(importlib.import_module(_LABS[name]), name)
    raise AttributeError(f"module 'gpexplorer.ui' has no attribute {name!r}")
