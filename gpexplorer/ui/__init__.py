"""Panel/Param/Bokeh dashboards over the inference code (the only package importing them)."""

from gpexplorer.ui.sparse_lab import SparseRegressionLab

__all__ = ["SparseRegressionLab"]
