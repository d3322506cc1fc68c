"""The bases by name: ``basis(name, input_dim, n_features, ...)`` and the registry ``BASES``.

Each entry builds a :class:`gpexplorer.random_features.bases.Basis`; a class registered with
:func:`register_basis` appears wherever bases are listed (the random-features lab, the generic
basis tests).
"""

from __future__ import annotations

from gpexplorer.random_features.bases import BiasBasis, LinearBasis
from gpexplorer.random_features.fastfood import FastfoodBasis
from gpexplorer.random_features.spectral import SPECTRAL_DENSITIES, RandomFourierBasis

__all__ = ["BASES", "basis", "register_basis", "RANDOM_BASES"]


def _spectral(kernel):
    def build(input_dim, n_features=200, lengthscale=1.0, seed=0, columns=None, **options):
        return RandomFourierBasis(input_dim, n_features, kernel, lengthscale=lengthscale, seed=seed,
                                  columns=columns, **options)
    build.__doc__ = f"Random Fourier features of the {SPECTRAL_DENSITIES[kernel]} kernel."
    return build


def _deterministic(cls):
    def build(input_dim, n_features=None, lengthscale=None, seed=0, columns=None):
        return cls(input_dim, columns=columns)
    build.__doc__ = cls.__doc__
    return build


def _fastfood(input_dim, n_features=200, lengthscale=1.0, seed=0, columns=None):
    return FastfoodBasis(input_dim, n_features, lengthscale=lengthscale, seed=seed, columns=columns)


_fastfood.__doc__ = FastfoodBasis.__doc__

#: name -> builder(input_dim, n_features, lengthscale=, seed=, columns=)
BASES = {name: _spectral(name) for name in SPECTRAL_DENSITIES}
BASES["fastfood_rbf"] = _fastfood
BASES["linear"] = _deterministic(LinearBasis)
BASES["bias"] = _deterministic(BiasBasis)

#: the bases whose features are random draws (their kernel estimate converges as features grow)
RANDOM_BASES = tuple(n for n in BASES if n not in ("linear", "bias"))


def register_basis(name, builder, random=True):
    """Add a basis builder under ``name`` (see :data:`BASES`)."""
    global RANDOM_BASES
    BASES[name] = builder
    if random and name not in RANDOM_BASES:
        RANDOM_BASES = RANDOM_BASES + (name,)


def basis(name, input_dim, n_features=200, lengthscale=1.0, seed=0, columns=None, **options):
    """A basis by name (``BASES``): ``basis("rbf", 3, 400, lengthscale=[1, 2, 3])``.

    ``n_features`` is the number of columns of Phi (ignored by "linear", which has one per input
    column, and "bias"); ``lengthscale`` a scalar (isotropic) or one per selected column (ARD);
    ``columns`` the input columns the basis reads (report eq. 38)."""
    key = str(name).strip().lower()
    if key not in BASES:
        raise ValueError(f"unknown basis {name!r}; choose one of {sorted(BASES)}")
    return BASES[key](input_dim, n_features, lengthscale=lengthscale, seed=seed, columns=columns, **options)
