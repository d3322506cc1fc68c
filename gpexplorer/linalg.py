"""Dense linear algebra helpers: a Cholesky that escalates jitter and says what it used.

LAPACK does the work (scipy.linalg); these wrappers only add the failure policy.
"""

from __future__ import annotations

import warnings

import numpy as np
from scipy import linalg as sla

#: jitter multipliers tried, relative to the requested jitter, before giving up
_ESCALATION = (1.0, 10.0, 1e2, 1e3, 1e4, 1e5, 1e6)


class JitterWarning(RuntimeWarning):
    """Emitted when a Cholesky needed more jitter than requested."""


class CholeskyError(ValueError):
    """Raised when even the largest jitter leaves a matrix indefinite."""


def with_escalating_jitter(compute, jitter, *, what="matrix", warn=True):
    """Run ``compute(j)`` for j = jitter, 10 jitter, ... until no LinAlgError is raised.

    The jitter is absolute (as in GPflow and GPy), so Z = X comparisons are exact up to it.
    Returns (result, jitter_used). Warns with :class:`JitterWarning` when escalation was
    needed and raises :class:`CholeskyError` with a readable message if nothing works.
    """
    base = float(jitter)
    for factor in _ESCALATION:
        used = base * factor if base > 0 else (0.0 if factor == 1.0 else 1e-12 * factor)
        try:
            result = compute(used)
        except np.linalg.LinAlgError:
            continue
        if factor > 1.0 and warn:
            warnings.warn(
                f"Cholesky of {what} needed jitter {used:.3g} (requested {base:.3g}); "
                "inducing inputs may be clumped or the lengthscale too long",
                JitterWarning,
                stacklevel=3,
            )
        return result, used
    raise CholeskyError(
        f"Cholesky of {what} failed even with jitter {used:.3g}; the matrix is numerically "
        "indefinite (duplicate inputs with tiny noise, or absurd hyperparameters)"
    )


def jittered_cholesky(A, jitter, *, what="matrix", warn=True):
    """Lower Cholesky factor of A + j I with escalating j; returns (L, jitter_used)."""
    A = np.asarray(A, dtype=float)
    if not np.all(np.isfinite(A)):
        raise CholeskyError(f"{what} contains NaN or inf; check the hyperparameters and inputs")
    eye = np.eye(A.shape[0])

    def factor(j):  # LAPACK directly: scipy's cholesky wrapper costs as much as a 50 x 50 factorisation
        L, info = sla.lapack.dpotrf(A + j * eye, lower=1, clean=1)
        if info > 0:
            raise np.linalg.LinAlgError(f"{what} is not positive definite (leading minor {info})")
        if info < 0:
            raise ValueError(f"LAPACK dpotrf rejected argument {-info} for {what}")
        return L

    return with_escalating_jitter(factor, jitter, what=what, warn=warn)


def solve_lower(L, B):
    """L^{-1} B for lower-triangular L."""
    return sla.solve_triangular(L, B, lower=True, check_finite=False)


def solve_upper_t(L, B):
    """L^{-T} B for lower-triangular L."""
    return sla.solve_triangular(L, B, lower=True, trans="T", check_finite=False)


def inv_from_cholesky(L):
    """A^{-1} from the lower Cholesky factor of A (LAPACK potri), symmetrised."""
    Ainv, info = sla.lapack.dpotri(L, lower=1)
    if info != 0:
        raise CholeskyError("inverse from Cholesky factor failed")
    Ainv = np.tril(Ainv)  # dpotri leaves the strict upper triangle as it found it
    Ainv += np.tril(Ainv, -1).T
    return Ainv
