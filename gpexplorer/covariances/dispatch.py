"""Functions chosen by the (inducing feature type, kernel type) pair, as GPflow's covariances.

Kernels and inducing features never import each other; the covariance of a feature with f is
written once per pair and registered here:

    @covariances.Kuu.register(InducingPoints, Kernel)
    def _kuu_points(feature, kernel): ...

A call looks the pair up along both method resolution orders (the feature's first), so a
registration for a base class serves its subclasses until a more specific one is registered.
"""

from __future__ import annotations


class Dispatcher:
    """One operation (Kuu, Kuf, their gradient contraction, ...) implemented per type pair."""

    def __init__(self, name, doc=""):
        self.name = name
        self.__doc__ = doc
        self._table = {}
        self._resolved = {}

    def register(self, feature_type, kernel_type):
        """Decorator registering ``fn(feature, kernel, ...)`` for the pair."""
        def decorate(fn):
            self._table[(feature_type, kernel_type)] = fn
            self._resolved.clear()
            return fn

        return decorate

    def find(self, feature_type, kernel_type):
        """The implementation for the pair, or None."""
        key = (feature_type, kernel_type)
        if key not in self._resolved:
            self._resolved[key] = next((self._table[(f, k)] for f in feature_type.__mro__
                                        for k in kernel_type.__mro__ if (f, k) in self._table), None)
        return self._resolved[key]

    def __call__(self, feature, kernel, *args, **kwargs):
        fn = self.find(type(feature), type(kernel))
        if fn is None:
            raise NotImplementedError(f"no {self.name} registered for {type(feature).__name__} with "
                                      f"{type(kernel).__name__}; register one in gpexplorer.covariances")
        return fn(feature, kernel, *args, **kwargs)

    def registered_pairs(self):
        return list(self._table)


Kuu = Dispatcher("Kuu", """Kuu(feature, kernel) -> [M, M] covariance of the inducing variables (no jitter).""")
Kuf = Dispatcher("Kuf", """Kuf(feature, kernel, X) -> [M, N] covariance of the inducing variables with f(X).""")
gradients = Dispatcher("gradients", """gradients(feature, kernel, X, dKuu, dKuf, *, Kuu=None, Kuf=None, rank_one=None)
-> (kernel gradients {name: value}, feature gradients {name: array}).

The contraction sum_ij dL/dKuu_ij dKuu_ij/dtheta + sum_mn dL/dKuf_mn dKuf_mn/dtheta for every
kernel and feature parameter theta; ``Kuu``/``Kuf`` are the matrices already computed (reused,
not recomputed) and ``rank_one`` = (a [M], b [N]) means the Kuf weight is dKuf - a b^T, so a
caller never has to build the corrected [M, N] matrix.""")
