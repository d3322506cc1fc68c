"""The free energy along one hyperparameter: what hyperparameter learning climbs, point by point.

EGP paper section 3.2 learns kernel hyperparameters and the noise by maximising the approximate
free energy F (eq. 41; for EKS/UKS the bound of EKS eq. 20), and every evaluation of F runs the
inner loop (EGP eq. 34-37, EKS eq. 16-19) from the prior. :func:`free_energy_profile` does exactly
that on a grid of one hyperparameter, the others held, and records beside F how the inner loop
stopped and, optionally, a score of the posterior (say the NLPD of f* on held-out points). On
tanh(2f) this shows why a search that gets closer to the maximum of F can predict worse (the EGP's
F peaks at a smaller kernel variance than the NLPD's minimum) and why the UGP's F is rough (it
jumps wherever the paper's inner loop stops on 'diverge'); see
``tests/benchmarks/free_energy_profile.py``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from gpexplorer.linearized.gauss_newton import NumericalFailure

__all__ = ["Profile", "free_energy_profile", "log_grid"]

#: inner-loop outcomes recorded per grid point ("failed": the inner loop or F could not be computed)
STATUSES = ("converged", "diverged", "max_iter", "failed")


@dataclass(frozen=True)
class Profile:
    """F along a grid: ``values`` (G,), ``free_energy`` (G,; NaN where failed), ``status`` (G
    strings, one of STATUSES), ``scores`` (G,; NaN where failed or when no score was asked for)
    and ``errors`` (G; the message of a failed point, else None)."""

    values: np.ndarray
    free_energy: np.ndarray
    status: tuple
    scores: np.ndarray
    errors: tuple

    def best(self):
        """Index of the largest F, or None when every point failed."""
        finite = np.isfinite(self.free_energy)
        return int(np.nanargmax(np.where(finite, self.free_energy, np.nan))) if finite.any() else None


def log_grid(centre, factor=10.0, points=21):
    """``points`` values evenly spaced in log from centre / factor to centre * factor, with the
    centre itself exactly in the middle (``points`` odd)."""
    if not (isinstance(centre, (int, float, np.floating, np.integer)) and math.isfinite(centre) and centre > 0):
        raise ValueError(f"the profile's centre must be a finite positive number; got {centre!r}")
    if not (math.isfinite(factor) and factor > 1):
        raise ValueError(f"the profile's factor must be a finite number > 1; got {factor!r}")
    if isinstance(points, bool) or not isinstance(points, (int, np.integer)) or points < 3 or points % 2 == 0:
        raise ValueError(f"the profile needs an odd number of points >= 3; got {points!r}")
    exponents = np.linspace(-1.0, 1.0, int(points))
    exponents[points // 2] = 0.0
    return float(centre) * float(factor) ** exponents


def _status(model):
    if model.diverged:
        return "diverged"
    return "converged" if model.converged else "max_iter"


def free_energy_profile(make_model, values, *, score=None, progress=None) -> Profile:
    """F (EGP eq. 41 / EKS eq. 20) of ``make_model(value)`` at each of ``values``.

    ``make_model(value)`` returns an unfitted LinearizedGP or LinearizedKitchenSinks with the
    profiled hyperparameter at ``value``; its inner loop runs from the prior, as the first
    evaluation of a hyperparameter search does. ``score(model)`` (optional) is recorded beside F.
    ``progress(done, total)`` is called after each point (it may raise to stop the profile). A
    point whose inner loop fails (g overflows, a Cholesky fails) is recorded as "failed" with its
    message; the profile goes on.
    """
    values = np.asarray(values, dtype=float)
    if values.ndim != 1 or values.size == 0:
        raise ValueError(f"values must be a non-empty 1-D sequence; got shape {values.shape}")
    if not np.all(np.isfinite(values)) or np.any(values <= 0):
        raise ValueError("every profiled value must be finite and positive (variances and lengthscales)")
    free_energy = np.full(values.size, np.nan)
    scores = np.full(values.size, np.nan)
    status, errors = [], []
    for i, value in enumerate(values):
        try:
            with np.errstate(all="ignore"):
                model = make_model(float(value))
                model.fit_posterior()
                f = float(model.free_energy())
                if not math.isfinite(f):
                    raise NumericalFailure("the free energy is not finite")
                s = float(score(model)) if score is not None else np.nan
            free_energy[i], scores[i] = f, s
            status.append(_status(model))
            errors.append(None)
        except (ValueError, ArithmeticError, np.linalg.LinAlgError) as err:  # NumericalFailure, CholeskyError
            status.append("failed")
            errors.append(str(err))
        if progress is not None:
            progress(i + 1, values.size)
    return Profile(values, free_energy, tuple(status), scores, tuple(errors))
