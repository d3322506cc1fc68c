"""Sparse variational inference with black-box likelihoods (SAVIGP, Dezfouli & Bonilla, NIPS 2015).

* :mod:`.posterior`: the families q(u) (FG, MoG1, MoG2), entropy and cross terms (eq. 7, 19, 20);
* :mod:`.marginals`: the marginals of q(f) and their backward pass (eq. 10-11, 15);
* :mod:`.estimators`: the expected log likelihood by quadrature, reparameterisation or the score
  function with a control variate (eq. 12-13, 17);
* :mod:`.elbo`: the ELBO and its gradients (eq. 8); :mod:`.savigp`: the model class.
"""

from gpexplorer.variational.elbo import ElboResult, elbo, mixture_moments
from gpexplorer.variational.estimators import Estimate, estimate, estimator_variance, variance_curve
from gpexplorer.variational.families import make_posterior
from gpexplorer.variational.mixture import MixtureOfDiagonalGaussians
from gpexplorer.variational.posterior import FullGaussian
from gpexplorer.variational.savigp import SparseVariationalGP

__all__ = ["ElboResult", "Estimate", "FullGaussian", "MixtureOfDiagonalGaussians", "elbo", "estimate",
           "estimator_variance", "make_posterior", "mixture_moments", "SparseVariationalGP",
           "variance_curve"]
