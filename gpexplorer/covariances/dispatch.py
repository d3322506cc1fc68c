"""Functions chosen by the (inducing feature type, kernel type) pair, as GPflow's covariances.

Kernels and inducing features never import each other; the covariance of a feature with f is
written once per pair and registered here:

    @covariances.Kuu.register(InducingPoints, Kernel)
    def _kuu_points(feature, kernel): ...

A call looks the pair up along both method resolution orders (the feature's first), so a
registration for a base class serves its subclasses until a more specific one is registered.
The walk up the feature's classes stops at a class that registers its own ``Kuu``: such a
subclass has covariances of its own, so no base-class implementation of any operation (Kuf,
the gradient contraction, a fused objective in :mod:`gpexplorer.sparse.fused`) describes it;
what it does not register raises instead of silently using its parent's maths.
"""

from __future__ import annotations


_generation = [0]  # bumped by every registration: every dispatcher's resolved lookups go stale


class Dispatcher:
    """One operation (Kuu, Kuf, their gradient contraction, ...) implemented per type pair."""

    def __init__(self, name, doc=""):
        self.name = name
        self.__doc__ = doc
        self._table = {}
        self._resolved = {}
        self._generation = -1

    def register(self, feature_type, kernel_type):
        """Decorator registering ``fn(feature, kernel, ...)`` for the pair."""
        def decorate(fn):
            self._table[(feature_type, kernel_type)] = fn
            _generation[0] += 1  # a new Kuu can change where other dispatchers stop (see find)
            return fn

        return decorate

    def unregister(self, feature_type, kernel_type):
        """Remove the pair's implementation (a registration from a test, undone)."""
        del self._table[(feature_type, kernel_type)]
        _generation[0] += 1

    def find(self, feature_type, kernel_type):
        """The implementation for the pair, or None."""
        if self._generation != _generation[0]:
            self._resolved.clear()
            self._generation = _generation[0]
        key = (feature_type, kernel_type)
        if key not in self._resolved:
            self._resolved[key] = self._lookup(feature_type, kernel_type)
        return self._resolved[key]

    def _lookup(self, feature_type, kernel_type):
        for f in feature_type.__mro__:
            for k in kernel_type.__mro__:
                if (f, k) in self._table:
                    return self._table[(f, k)]
            if defines_covariances(f):  # its parents' implementations do not describe it
                return None
        return None

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


def defines_covariances(feature_type):
    """Whether ``feature_type`` itself (not a parent) registers a ``Kuu``."""
    return any(f is feature_type for f, _ in Kuu._table)
