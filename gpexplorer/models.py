"""The public facade: every model class, from the sub-package that implements it.

``ExactGPR`` and ``SparseGPR`` (:mod:`gpexplorer.sparse.regression`), ``LinearizedGP`` (EGP/UGP,
:mod:`gpexplorer.linearized.gp`) and ``LinearizedKitchenSinks`` (EKS/UKS,
:mod:`gpexplorer.linearized.kitchen_sinks`), ``SparseVariationalGP`` (SAVIGP, black-box
likelihoods, :mod:`gpexplorer.variational.savigp`), ``StandardLinearModel`` and
``GeneralizedLinearModel`` (revrand's Bayesian linear models on random features,
:mod:`gpexplorer.random_features`). All follow one convention: ``parameters``,
``set_parameters(**values)``, ``fit(...)`` returning a :class:`gpexplorer.optimize.FitResult`,
``predict_f`` / ``predict_y``.
"""

from gpexplorer.linearized.gp import LinearizedGP
from gpexplorer.linearized.kitchen_sinks import LinearizedKitchenSinks
from gpexplorer.optimize import FitResult, TraceEntry
from gpexplorer.random_features import GeneralizedLinearModel, StandardLinearModel
from gpexplorer.sparse.regression import ExactGPR, SparseGPR
from gpexplorer.variational.savigp import SparseVariationalGP

__all__ = ["ExactGPR", "SparseGPR", "LinearizedGP", "LinearizedKitchenSinks", "SparseVariationalGP",
           "StandardLinearModel", "GeneralizedLinearModel", "FitResult", "TraceEntry"]
