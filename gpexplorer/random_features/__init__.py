"""Random-feature bases and the Bayesian linear models on them (revrand; EKS's Fourier features).

* bases: :func:`basis` by name (``BASES``), concatenated with ``+``, multiplied with ``*``
  (:mod:`.bases`, :mod:`.spectral`, :mod:`.fastfood`, :mod:`.catalogue`);
* :class:`StandardLinearModel` (Bayesian linear regression, evidence maximisation) and
  :class:`GeneralizedLinearModel` (mixture-of-Gaussians variational GLM);
* :class:`RandomFourierFeatures`: the fixed-kernel features of the EKS kitchen sinks (:mod:`.fourier`).
"""

from gpexplorer.random_features.catalogue import BASES, RANDOM_BASES, basis, register_basis
from gpexplorer.random_features.fourier import RandomFourierFeatures, base_frequencies, kernel_name
from gpexplorer.random_features.glm import GeneralizedLinearModel
from gpexplorer.random_features.linear_model import StandardLinearModel

__all__ = ["BASES", "RANDOM_BASES", "basis", "register_basis", "StandardLinearModel", "GeneralizedLinearModel",
           "RandomFourierFeatures", "base_frequencies", "kernel_name"]
