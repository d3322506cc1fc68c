"""Covariances between inducing features and f, per (feature type, kernel type) pair.

``Kuu(feature, kernel)`` [M, M], ``Kuf(feature, kernel, X)`` [M, N] and ``gradients(...)``, the
contraction of dL/dKuu and dL/dKuf into gradients of kernel and feature parameters. Each
feature family registers its pairs in its own module (``points`` for inducing points).
"""

from gpexplorer.covariances import points  # noqa: F401  (registers the inducing-point pairs)
from gpexplorer.covariances import frequency, time_frequency  # noqa: F401  (FIF, TFIF with SE)
from gpexplorer.covariances import multiscale  # noqa: F401  (MSIF with SE)
from gpexplorer.covariances import sum_of_deltas  # noqa: F401  (sums of deltas with any kernel)
from gpexplorer.covariances import patches  # noqa: F401  (inducing patches with a convolutional kernel)
from gpexplorer.covariances import components  # noqa: F401  (one feature per component of a sum kernel)
from gpexplorer.covariances.dispatch import Dispatcher, Kuf, Kuu, gradients

__all__ = ["Dispatcher", "Kuu", "Kuf", "gradients"]
