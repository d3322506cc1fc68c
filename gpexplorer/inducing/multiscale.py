"""Multiscale inducing features (MSIF, thesis eq. 4.5 and 4.8; Walder et al., 2008):
u_m = integral f(x) v(x; z_m) dx with a normalised Gaussian window

    v(x; z_m) = |2 pi Delta_m|^(-1/2) exp(-(x - mu_m)^T Delta_m^(-1) (x - mu_m) / 2),
    Delta_m = diag(delta_m^2),

a bump of its own widths delta_m (standard deviations, one per member and dimension) at its
centre mu_m. As delta -> 0 the window tends to a delta function and the feature to an inducing
point at mu_m. The closed-form covariances with the squared-exponential kernel are registered
in :mod:`gpexplorer.covariances.multiscale`.
"""

from __future__ import annotations

import numpy as np

from gpexplorer.inducing.base import InducingFeature
from gpexplorer.inducing.placement import kmeans, random_subset
from gpexplorer.parameters import Parameter

__all__ = ["Multiscale"]

#: default width of members made by ``from_data``, in lengthscales
WIDTH_IN_LENGTHSCALES = 0.5


class Multiscale(InducingFeature):
    """M Gaussian windows: centres ``mu`` [M, D] (real) and widths ``delta`` [M, D] (standard
    deviations, positive, optimised on the log scale). ``locations`` are the centres."""

    name, label = "multiscale", "Multiscale"
    param_names = ("mu", "delta")
    editable = ("width", "member")

    def __init__(self, mu, delta):
        mu = self._checked("mu", mu)
        if mu.ndim == 1:
            mu = mu[:, None]
        if mu.ndim != 2 or mu.shape[0] == 0:
            raise ValueError(f"Multiscale.mu must be a non-empty (M, D) array of centres; got shape {mu.shape}")
        delta = self._checked("delta", delta)
        if delta.ndim == 1 and mu.shape[1] == 1 and delta.shape[0] == mu.shape[0]:
            delta = delta[:, None]  # one width per member in 1-D
        try:
            delta = np.ascontiguousarray(np.broadcast_to(delta, mu.shape), dtype=float)
        except ValueError:
            raise ValueError(f"Multiscale.delta must have shape {mu.shape} like mu (or broadcast to it); "
                             f"got {delta.shape}") from None
        self.mu, self.delta = mu, delta

    def _checked(self, name, value):
        a = super()._checked(name, value)
        if name == "delta" and np.any(a <= 0):
            raise ValueError(f"Multiscale.delta must be positive (standard deviations of the windows); got min {a.min()}")
        return a

    @property
    def parameter_specs(self) -> dict:
        return {"mu": Parameter.real("mu"), "delta": Parameter("delta")}

    @property
    def locations(self):
        return self.mu

    @classmethod
    def from_data(cls, X, M, lengthscale, rng=None, *, fraction=WIDTH_IN_LENGTHSCALES, delta=None, seed=None):
        """M windows at k-means centres of X [N, D] (:func:`gpexplorer.inducing.placement.kmeans`),
        each ``fraction`` of ``lengthscale`` wide in every dimension (or ``delta`` wide if given).

        ``lengthscale`` is a scalar, a [D] array or a kernel (its ``lengthscale`` is used); ``rng``
        is a seed or a numpy Generator (``seed=`` is accepted as well, as the other features'
        ``from_data`` take it)."""
        if rng is not None and seed is not None:
            raise ValueError("Multiscale.from_data takes rng or seed, not both")
        rng = rng if rng is not None else seed
        rng = rng if isinstance(rng, np.random.Generator) else np.random.default_rng(rng)
        X = np.asarray(X, dtype=float)
        X = X[:, None] if X.ndim == 1 else X
        if X.ndim != 2 or X.shape[0] == 0:
            raise ValueError(f"Multiscale.from_data needs a non-empty (N, D) array of inputs; got shape {X.shape}")
        if delta is None:
            ls = np.asarray(getattr(lengthscale, "lengthscale", lengthscale), dtype=float)
            if ls.ndim > 1 or ls.size not in (1, X.shape[1]) or not np.all(np.isfinite(ls)) or np.any(ls <= 0):
                raise ValueError(f"Multiscale.from_data needs a positive lengthscale, scalar or one per input "
                                 f"dimension ({X.shape[1]}); got {ls}")
            if not (np.isfinite(fraction) and fraction > 0):
                raise ValueError(f"Multiscale.from_data needs a positive width fraction; got {fraction!r}")
            delta = fraction * np.broadcast_to(ls, (X.shape[1],))
        mu = kmeans(X, M, rng)
        return cls(mu, np.broadcast_to(np.asarray(delta, dtype=float), mu.shape))

    @classmethod
    def from_editor(cls, locations, *, width=1.0, frequency=1.0, count=1):
        Z = np.asarray(locations, dtype=float)
        return cls(Z, np.full(Z.shape, float(width)))

    @classmethod
    def editor_defaults(cls, lengthscale, X, M):
        """Bumps WIDTH_IN_LENGTHSCALES wide."""
        return {"width": WIDTH_IN_LENGTHSCALES * float(np.mean(lengthscale))}

    def with_width(self, member, width):
        delta = np.array(self.delta)
        delta[member] = width
        return self.copy().set_parameters(delta=delta)

    def member_values(self, member):
        return float(self.delta[member, 0]), None

    def restart_from(self, X, rng):
        """New centres from the data; the widths keep their value."""
        return {"mu": random_subset(X, self.mu.shape[0], rng)}

    def at_locations(self, locations):
        """Members at ``locations`` [K, D], each as wide as this feature's members on average."""
        locations = np.asarray(locations, dtype=float).reshape(-1, self.input_dim)
        return Multiscale(locations, np.broadcast_to(self.delta.mean(axis=0), locations.shape))

    def concatenate(self, other):
        if not isinstance(other, Multiscale):
            raise ValueError(f"can only concatenate Multiscale with Multiscale; got {type(other).__name__}")
        return Multiscale(np.vstack([self.mu, other.mu]), np.vstack([self.delta, other.delta]))
