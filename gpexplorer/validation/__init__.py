"""The one validation layer at the model boundary (ARCHITECTURE.md, "Validation is one layer").

Every model checks what it is given here, before any placement, factorisation or allocation,
and every refusal is a ``ValueError`` (``TypeError`` for a wrong kind of object) whose message
names the argument:

* :mod:`.arrays`: data and prediction inputs: numeric, the right shape, non-empty, finite, and
  of a magnitude float64 survives (|value| <= :data:`MAX_MAGNITUDE` = 1e100, so that squares,
  squared distances and products of two such values, up to 1e200 times a dimension count, stay
  far below float64's 1.8e308);
* :mod:`.options`: scalar options: positive values, seeds, tolerances, counts (``max_iter``,
  ``restarts``, ``n_points``, ``num_samples``) and the jitter;
* :mod:`.sizes`: sizes the machine can hold: the number of inducing variables M, the number of
  mixture components K, and the work arrays (N M, M^2, S N Q, ...) against
  :data:`MEMORY_CAP_BYTES`.
"""

from gpexplorer.validation.arrays import (MAX_MAGNITUDE, bounded, inputs, prediction_inputs, targets,
                                          validate_data)
from gpexplorer.validation.options import (MAX_ITERATIONS, count, jitter, optional_count, positive, positive_bounded, seed,
                                           tolerance)
from gpexplorer.validation.sizes import (MAX_COMPONENTS, MEMORY_CAP_BYTES, check_memory, inducing_count,
                                         max_inducing, mixture_components)

__all__ = ["MAX_COMPONENTS", "MAX_ITERATIONS", "MAX_MAGNITUDE", "MEMORY_CAP_BYTES", "bounded", "check_memory", "count",
           "inducing_count", "inputs", "jitter", "max_inducing", "mixture_components", "optional_count",
           "positive", "positive_bounded", "prediction_inputs", "seed", "targets", "tolerance", "validate_data"]
