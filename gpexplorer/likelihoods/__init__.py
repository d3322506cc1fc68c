"""Forward models y = g(f) + noise with their Jacobians (``forward_models``) and the whitelisted
parser of user-typed expressions (``expressions``). Pointwise likelihoods p(y_n | f_n) for sparse
variational inference (SAVIGP), their registry ``LIKELIHOODS`` / ``get_likelihood`` (``pointwise``)
and Gauss-Hermite expected log densities (``quadrature``) are exported here; the forward models'
names are not (``Softmax`` here is the softmax *likelihood*)."""

from gpexplorer.likelihoods.pointwise import (GPRN, KINDS, Binomial, LIKELIHOODS, MULTI_OUTPUT_LIKELIHOODS, TYPED_LIKELIHOODS,
                                              BernoulliLogit, BernoulliProbit, ExpectedLogDensity, Gaussian,
                                              PointwiseLikelihood, Poisson, RobustMax, Softmax, WarpedGaussian,
                                              get_likelihood, register, unregister)
from gpexplorer.likelihoods.quadrature import expected_log_density, gauss_hermite

__all__ = ["PointwiseLikelihood", "ExpectedLogDensity", "Gaussian", "BernoulliLogit", "BernoulliProbit", "Poisson", "Binomial",
           "Softmax", "RobustMax", "WarpedGaussian", "GPRN", "LIKELIHOODS", "MULTI_OUTPUT_LIKELIHOODS",
           "TYPED_LIKELIHOODS", "KINDS", "get_likelihood", "register", "unregister", "gauss_hermite",
           "expected_log_density"]
