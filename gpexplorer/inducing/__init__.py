"""Inducing features (thesis ch. 2 and 4) and where to place them.

A feature holds its arrays and names its parameters; :mod:`gpexplorer.covariances` knows how
each (feature, kernel) pair covaries. ``as_feature`` turns what a user passes as ``Z=`` (an
array of inducing inputs, or a feature) into a feature.
"""

from gpexplorer.inducing.base import InducingFeature
from gpexplorer.registry import Registry
from gpexplorer.inducing.placement import INITIALISATIONS, even, initial_inducing_inputs, kmeans, random_subset
from gpexplorer.inducing.points import InducingPoints
from gpexplorer.inducing.frequency import Frequency
from gpexplorer.inducing.multiscale import Multiscale
from gpexplorer.inducing.sum_of_deltas import SumOfDeltas
from gpexplorer.inducing.time_frequency import TimeFrequency
from gpexplorer.inducing.patches import PATCH_INITIALISATIONS, InducingPatches
from gpexplorer.inducing.components import Components

__all__ = ["FEATURES", "InducingFeature", "InducingPoints", "INITIALISATIONS", "as_feature", "even",
           "initial_inducing_inputs", "kmeans", "random_subset"]
__all__ += ["Frequency", "Multiscale", "SumOfDeltas", "TimeFrequency", "InducingPatches", "PATCH_INITIALISATIONS", "Components",
            "register", "unregister"]

#: registry of inducing-feature types: name -> class (the generic feature tests run over every
#: entry, building each as ``cls(locations)`` from an [M, D] array of locations; the labs offer
#: each with the kernels :mod:`gpexplorer.covariances` pairs it with)
FEATURES = Registry("inducing feature", InducingFeature, (InducingPoints, Multiscale, Frequency, TimeFrequency,
                                                         SumOfDeltas, InducingPatches))
register = FEATURES.register
unregister = FEATURES.unregister


def as_feature(Z, input_dim):
    """``Z`` as an inducing feature in ``input_dim`` dimensions: a feature (checked), or an
    array of inducing inputs [M, D] (or [M] when D = 1)."""
    if isinstance(Z, InducingFeature):
        Z.check_input_dim(input_dim)
        return Z
    return InducingPoints(Z, input_dim=input_dim)
