"""Frequency inducing features with the squared-exponential kernel (thesis eq. 4.6, 4.9).

A frequency feature is a time-frequency feature with every centre at the origin, so both
covariances are the time-frequency ones (:mod:`gpexplorer.covariances.time_frequency`) at
mu = 0:

    Kuf = sigma^2 prod_d (l_d^2 / (l_d^2 + delta_d^2))^(1/2)
          * exp(-sum_d (x_d^2 + delta_d^2 l_d^2 omega_d^2) / (2 (delta_d^2 + l_d^2)))
          * cos(omega0 + sum_d delta_d^2 omega_d x_d / (delta_d^2 + l_d^2))       (eq. 4.9, corrected)

(the printed eq. 4.9 has a positive exponent, a factor 1/2 too many in the phase and no
sigma^2), and Kuu is the corrected eq. A.5 with tau = mu - mu' = 0.
"""

from __future__ import annotations

import numpy as np

from gpexplorer.covariances.dispatch import Kuf, Kuu, gradients
from gpexplorer.covariances.time_frequency import contract, kuf_matrix, kuu_value, se_arguments
from gpexplorer.inducing.frequency import Frequency
from gpexplorer.kernels import SquaredExponential


@Kuu.register(Frequency, SquaredExponential)
def frequency_Kuu(feature, kernel):
    variance, v, _ = se_arguments(feature, kernel)
    return kuu_value(np.zeros_like(feature.omega), feature.omega, feature.omega0, feature.delta, variance, v)


@Kuf.register(Frequency, SquaredExponential)
def frequency_Kuf(feature, kernel, X):
    variance, v, X = se_arguments(feature, kernel, X)
    return kuf_matrix(np.zeros_like(feature.omega), feature.omega, feature.omega0, feature.delta, variance, v, X)


@gradients.register(Frequency, SquaredExponential)
def frequency_gradients(feature, kernel, X, dKuu, dKuf, *, Kuu=None, Kuf=None, rank_one=None):
    grads_kernel, grads_feature = contract(feature, kernel, X, dKuu, dKuf, rank_one, np.zeros_like(feature.omega),
                                            Kuf)
    del grads_feature["mu"]  # the centres are fixed at the origin
    return grads_kernel, grads_feature
