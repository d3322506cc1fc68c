"""The optimiser core: one flat, bounded, log-space vector (:mod:`.packing`), strategies on it
(joint and block-cyclic L-BFGS-B through scipy's public API in :mod:`.lbfgsb`, minibatch Adam in
:mod:`.adam`, derivative-free searches in :mod:`.derivative_free`), restarts (:mod:`.restarts`),
one :class:`FitResult` with a trace of :class:`TraceEntry` (:mod:`.results`: a callback
returning True stops, a cancel ends a run between evaluations), and the fit of the models with an
objective and gradient (:func:`fit`, :mod:`.driver`).
"""

from gpexplorer.optimize.adam import ADAM_BETAS, adam
from gpexplorer.optimize.derivative_free import DERIVATIVE_FREE_METHODS, derivative_free
from gpexplorer.optimize.driver import ModelObjective, fit
from gpexplorer.optimize.lbfgsb import block_cyclic, lbfgsb
from gpexplorer.optimize.packing import Packer, expand_fixed, feature_parameter_names
from gpexplorer.optimize.restarts import RESTART_SPREAD, best_of_starts, perturb_log, summaries
from gpexplorer.optimize.results import (CANCELLED_MESSAGE, FAILED_OBJECTIVE, STOPPED_MESSAGE, FitResult, Run,
                                         TraceEntry, as_cancel, snapshot)

__all__ = ["ADAM_BETAS", "CANCELLED_MESSAGE", "DERIVATIVE_FREE_METHODS", "FAILED_OBJECTIVE", "RESTART_SPREAD",
           "STOPPED_MESSAGE", "FitResult", "ModelObjective", "Packer", "Run", "TraceEntry", "adam", "as_cancel",
           "best_of_starts", "block_cyclic", "derivative_free", "expand_fixed", "feature_parameter_names", "fit",
           "lbfgsb", "perturb_log", "snapshot", "summaries"]
