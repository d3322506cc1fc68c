"""Covariance functions with analytic gradients (van der Wilk thesis §1.2.4; R&W ch. 4).

Every kernel offers the same five operations, which is all the sparse objectives need:

* ``K(X, X2=None)`` and ``Kdiag(X)``: covariance matrix [N1, N2] and its diagonal [N];
* ``grad_params(dL_dK, X, X2=None)``: sum_ij dL/dK_ij dK_ij/dtheta for every hyperparameter,
  returned as a dict keyed like ``parameters`` (natural, not log, parameters);
* ``grad_params_diag(dL_dKdiag, X)``: the same for the diagonal;
* ``grad_X(dL_dK, X, X2=None)``: d/dX of sum_ij dL/dK_ij K_ij [N1, D] (with ``X2=None`` both
  arguments move, as needed for Kuu and the inducing inputs Z).

Parameterisations (s = variance, r2 = sum_d (x_d - x'_d)^2 / l_d^2, lengthscale scalar or [D]):
SE s exp(-r2/2); Matern12 s exp(-r); Matern32 s (1+sqrt3 r) exp(-sqrt3 r);
Matern52 s (1 + sqrt5 r + 5 r2/3) exp(-sqrt5 r); RQ s (1 + r2/(2 alpha))^-alpha;
Periodic s exp(-2 sum_d sin^2(pi (x_d-x'_d)/p) / l_d^2); Linear sum_d v_d x_d x'_d.
Sums and products combine kernels; their parameters are named "<index>.<name>".
"""

from gpexplorer.kernels.base import Kernel, Product, Sum
from gpexplorer.registry import Registry
from gpexplorer.kernels.linear import Linear
from gpexplorer.kernels.periodic import Periodic
from gpexplorer.kernels.stationary import (Matern12, Matern32, Matern52, RationalQuadratic, SquaredExponential,
                                           Stationary)
from gpexplorer.kernels.convolutional import Convolutional

__all__ = ["Kernel", "Stationary", "SquaredExponential", "Matern12", "Matern32", "Matern52", "RationalQuadratic",
           "Periodic", "Linear", "Sum", "Product", "Convolutional", "KERNELS", "register", "unregister"]

#: registry used by generic tests and the labs: name -> class (each declares its ``name``,
#: ``label``, slider ranges and capabilities; see :mod:`gpexplorer.registry`)
KERNELS = Registry("kernel", Kernel, (SquaredExponential, Matern12, Matern32, Matern52, RationalQuadratic, Periodic,
                                      Linear, Convolutional))
register = KERNELS.register
unregister = KERNELS.unregister
