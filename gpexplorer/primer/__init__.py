"""The first lecture's computations (issue 28): prior samples and conditioning on a few points,
the two views of one Gaussian (a function and the 2-D marginal of two of its values), the evidence
as sequential prediction (thesis eq. 5.2) and Occam's razor by filtering prior samples (thesis
fig. 5.1), and the evidence of an invariant against a pixel kernel as images arrive (fig. 5.5's
argument on a toy). Plain numpy/scipy on a kernel from :mod:`gpexplorer.kernels` (or an expression of them,
:func:`gpexplorer.kernels.expression.parse_kernel`); the primer page (``ui/``) only draws them."""

from gpexplorer.primer.evidence import OccamFilter, SequentialEvidence, occam_filter, sequential_evidence
from gpexplorer.primer.gaussian_views import (Conditioned, ObservedData, PairMarginal, condition, ellipse,
                                              pair_marginal, prior_samples, prior_samples_per_seed)
from gpexplorer.primer.invariance import evidence_as_data_arrive, invariance_kernels, stamped_images

__all__ = ["prior_samples", "prior_samples_per_seed", "condition", "Conditioned", "ObservedData", "pair_marginal",
           "PairMarginal", "ellipse",
           "sequential_evidence", "SequentialEvidence", "occam_filter", "OccamFilter", "stamped_images",
           "invariance_kernels", "evidence_as_data_arrive"]
