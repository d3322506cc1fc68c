"""Exact GP regression and the collapsed sparse approximations (thesis ch. 2-3): the objectives
of eq. 3.1 and Titsias' upper bound (``objectives``, compiled in ``_core``), the models
``ExactGPR`` / ``SparseGPR`` (``regression``), fused fast paths per (feature, kernel) pair
(``fused``), side-by-side evaluation (``comparison``), joint fits (``joint_fit``), studies of the
inducing inputs (``studies``) and pathology detectors (``diagnostics``).
"""

from gpexplorer.sparse.objectives import (APPROXIMATIONS, ObjectiveResult, SparsePosterior, collapsed_objective,
                                          exact_objective, upper_bound)
from gpexplorer.sparse.regression import ExactGPR, SparseGPR

__all__ = ["APPROXIMATIONS", "ObjectiveResult", "SparsePosterior", "collapsed_objective", "exact_objective",
           "upper_bound", "ExactGPR", "SparseGPR"]
