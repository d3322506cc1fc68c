"""Sums of delta functions as inducing features (thesis §4.3, eq. 4.14-4.19):

    u_m = sum_c w_mc f(z_mc),    so  Kfu[n, m] = sum_c w_mc k(x_n, z_mc),
                                     Kuu[i, j] = sum_c sum_c' w_ic w_jc' k(z_ic, z_jc')

(the first expression of eq. 4.19 drops the weights). Each inducing variable is a weighted sum
of f at C locations, so the posterior mean has M C basis functions (eq. 4.17) while q(u) stays
M-dimensional; any kernel works, since only k itself is evaluated. Cost O(N M C) for Kfu and
O(M^2 C^2) for Kuu.

**One weight per member is fixed: w_m1 = 1.** Rescaling u_m by a constant leaves Q_ff = Kfu
Kuu^-1 Kuf unchanged, so a free first weight would only add a flat direction to every
objective. The constructor divides each member's weights by its first one (which must not be
zero); the optimiser moves the other C - 1 weights, held as the parameter ``w`` [M, C - 1]
(absent when C = 1, where the feature is an inducing point at z_m1).

``locations`` [M, D] are each member's *unweighted* mean delta location (weights may be negative
or cancel, so a weighted mean can sit far from every delta); ``Z`` [M, C, D] holds every delta,
which the labs draw as C joined ticks per member.
"""

from __future__ import annotations

import numpy as np

from gpexplorer.inducing.base import InducingFeature
from gpexplorer.inducing.placement import kmeans, random_subset
from gpexplorer.parameters import Parameter

__all__ = ["SumOfDeltas"]

#: spread of a member's deltas around its centre made by ``from_data``, in lengthscales
SPREAD_IN_LENGTHSCALES = 0.5


class SumOfDeltas(InducingFeature):
    """M members of C deltas: locations ``Z`` [M, C, D] and weights [M, C] (``weights``, with the
    first column fixed to 1; the free ones are the parameter ``w`` [M, C - 1]). ``locations``
    [M, D] are each member's mean delta location, where the labs draw and drag it."""

    name, label = "sum-of-deltas", "Sum of deltas"
    editable = ("width", "count")
    #: a lab's starting spread of the deltas, in lengthscales
    EDITOR_SPREAD = 0.6

    def __init__(self, Z, weights=None):
        """``Z`` (M, C, D) delta locations ((M, C) in one dimension); ``weights`` (M, C), default
        ones, each row divided by its first entry (see the module notes)."""
        Z = self._checked("Z", Z)
        if Z.ndim == 2:
            Z = Z[:, :, None]  # (M, C) deltas in one dimension
        if Z.ndim != 3 or 0 in Z.shape:
            raise ValueError(f"SumOfDeltas.Z must be a non-empty (M, C, D) array of delta locations with M, C, "
                             f"D >= 1 (C deltas per member); got {Z.shape}")
        M, C, _ = Z.shape
        weights = np.ones((M, C)) if weights is None else self._checked("weights", weights)
        if weights.shape != (M, C):
            raise ValueError(f"SumOfDeltas.weights must have shape ({M}, {C}) like Z's first two axes; got {weights.shape}")
        if np.any(weights[:, 0] == 0):
            raise ValueError("each member's first weight must be non-zero: the weights are rescaled so that it is 1")
        self.Z = Z
        with np.errstate(over="ignore"):
            w = weights[:, 1:] / weights[:, :1]
        self.w = self._checked("w", w) if w.size else np.ascontiguousarray(w)  # a ratio can reach 1e200

    @property
    def param_names(self):
        return ("Z", "w") if self.Z.shape[1] > 1 else ("Z",)

    @property
    def memo(self) -> dict:
        """Scratch space of :mod:`gpexplorer.covariances.sum_of_deltas` (kernel matrices of the
        deltas reused within one evaluation, a work buffer); never copied nor pickled."""
        return self.__dict__.setdefault("_memo", {})  # setdefault: atomic, no lock needed

    def __getstate__(self):  # copies and pickles leave the memo behind
        return {k: v for k, v in self.__dict__.items() if k != "_memo"}

    @property
    def C(self) -> int:
        return int(self.Z.shape[1])

    @property
    def weights(self):
        """[M, C] every member's weights, the first fixed to 1."""
        return np.hstack([np.ones((self.Z.shape[0], 1)), self.w])

    @property
    def parameter_specs(self) -> dict:
        return {n: Parameter.real(n) for n in self.param_names}

    @property
    def locations(self):
        return self.Z.mean(axis=1)

    def __len__(self):
        return int(self.Z.shape[0])

    @property
    def input_dim(self) -> int:
        return int(self.Z.shape[2])

    @classmethod
    def from_data(cls, X, M, kernel, C=3, spread=None, seed=None):
        """M members at k-means centres of X, each with C deltas evenly spread over +-``spread``
        (default half the kernel's lengthscale) and unit weights."""
        if int(C) != C or C < 1:
            raise ValueError(f"C, the number of deltas per member, must be an integer >= 1; got {C!r}")
        rng = seed if isinstance(seed, np.random.Generator) else np.random.default_rng(seed)
        centres = kmeans(np.asarray(X, dtype=float).reshape(len(X), -1), int(M), rng)
        if spread is None:
            spread = SPREAD_IN_LENGTHSCALES * np.broadcast_to(np.asarray(kernel.lengthscale, dtype=float),
                                                              centres.shape[1:])
        steps = np.linspace(-1.0, 1.0, int(C)) if C > 1 else np.zeros(1)
        return cls(centres[:, None, :] + steps[None, :, None] * np.asarray(spread)[None, None, :])

    @classmethod
    def from_editor(cls, locations, *, width=1.0, frequency=1.0, count=1):
        """C = ``count`` deltas per member evenly spread over +- ``width`` around each location."""
        Z, C = np.asarray(locations, dtype=float), int(count)
        offsets = np.linspace(-1.0, 1.0, C) * float(width) if C > 1 else np.zeros(1)
        return cls(Z[:, None, :] + offsets[None, :, None], np.ones((len(Z), C)))

    @classmethod
    def editor_defaults(cls, lengthscale, X, M):
        return {"width": cls.EDITOR_SPREAD * float(np.mean(lengthscale))}

    def with_width(self, member, width):
        """Every member's deltas spread over +- ``width`` around its centre (pattern kept)."""
        Z = np.array(self.Z)
        centre = Z.mean(axis=1, keepdims=True)
        spread = np.abs(Z - centre).max(axis=1, keepdims=True)
        scale = np.divide(width, spread, out=np.ones_like(spread), where=spread > 0)
        return self.copy().set_parameters(Z=centre + (Z - centre) * scale)

    def delta_positions(self):
        return np.asarray(self.Z)[:, :, 0]

    def _offsets(self):
        """[C, D] the members' mean pattern of deltas around their centres."""
        return (self.Z - self.locations[:, None, :]).mean(axis=0)

    def moved(self, m, location):
        """Member ``m`` shifted so that its mean location is ``location``; its pattern and weights kept."""
        Z = self.Z.copy()
        Z[m] += np.asarray(location, dtype=float).reshape(-1) - self.locations[m]
        return SumOfDeltas(Z, self.weights)

    def restart_from(self, X, rng):
        """New centres from the data, each member keeping its pattern of deltas."""
        centres = random_subset(X, len(self), rng)
        return {"Z": centres[:, None, :] + (self.Z - self.locations[:, None, :])}

    def at_locations(self, locations):
        """Members centred at ``locations`` [K, D] (each one's mean delta location), with unit weights
        and the members' mean pattern of deltas around their centres: the spread the fit has
        reached, rather than a fixed fraction of the data range."""
        locations = np.asarray(locations, dtype=float).reshape(-1, self.input_dim)
        return SumOfDeltas(locations[:, None, :] + self._offsets()[None, :, :])

    def concatenate(self, other):
        if not isinstance(other, SumOfDeltas) or other.C != self.C:
            raise ValueError(f"can only concatenate sums of {self.C} deltas; got {type(other).__name__}"
                             + (f" with C = {other.C}" if isinstance(other, SumOfDeltas) else ""))
        return SumOfDeltas(np.concatenate([self.Z, other.Z]), np.vstack([self.weights, other.weights]))
