"""The bound against one inducing feature's position (thesis §4.4.2, figs. 4.3-4.5).

Sweeping member m of the feature over a grid of locations, everything else fixed, shows where
the bound would put it. Two nearly coincident features can carry a very narrow, very high peak
(their u correlated to 0.9999998, alpha ~ +-1.9e5 on Snelson with M = 3 multiscale features):
at a coarse grid the maximum appears elsewhere, zooming in finds it, and extra jitter on Kuu
removes it. :func:`position_curve` computes the curve, :func:`zoom_grid` the grid around its
maximum, :func:`near_duplicates` the pairs of features whose u are that strongly correlated.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np

from gpexplorer import covariances
from gpexplorer.linalg import JitterWarning

__all__ = ["PositionCurve", "position_curve", "zoom_grid", "near_duplicates", "u_correlation", "closest_pair",
           "DUPLICATE_CORRELATION", "NO_VARIANCE"]

DUPLICATE_CORRELATION = 0.9999  # thesis §4.4.2: "very strongly correlates their inducing outputs"


@dataclass
class PositionCurve:
    """``bound[i]``: the objective with member ``member`` at ``grid[i]`` (NaN where it failed)."""

    member: int
    grid: np.ndarray  # [G] positions along the swept input dimension
    bound: np.ndarray  # [G]
    jitter: float

    @property
    def best(self):
        """(position, bound) of the curve's maximum."""
        i = int(np.nanargmax(self.bound))
        return float(self.grid[i]), float(self.bound[i])


def position_curve(model, member, grid, dim=0, jitter=None) -> PositionCurve:
    """The objective of ``model`` (a SparseGPR; its approximation's, VFE's bound for "vfe") with
    member ``member`` of its inducing feature moved along input dimension ``dim`` to each value
    of ``grid``; ``jitter`` replaces the model's jitter on diag(Kuu) when given."""
    M = len(model.inducing)
    if not 0 <= member < M:
        raise ValueError(f"member must be in 0..{M - 1}; got {member}")
    grid = np.asarray(grid, dtype=float).ravel()
    if grid.size == 0 or not np.all(np.isfinite(grid)):
        raise ValueError("the position grid must be a non-empty array of finite values")
    probe = model.copy()
    if jitter is not None:
        if not np.isfinite(jitter) or jitter < 0:
            raise ValueError(f"jitter must be a non-negative finite number; got {jitter!r}")
        probe.jitter = float(jitter)
    original = model.inducing
    start = np.array(original.locations[member], dtype=float)
    bound = np.full(grid.size, np.nan)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", JitterWarning)  # the curve shows the jitter's effect itself
        for i, value in enumerate(grid):
            location = start.copy()
            location[dim] = value
            probe.inducing = original.moved(member, location)
            try:
                bound[i] = probe.log_marginal_likelihood()
            except (ValueError, np.linalg.LinAlgError):
                pass
    return PositionCurve(member, grid, bound, probe.jitter)


def zoom_grid(curve: PositionCurve, points=None, width=None, center=None):
    """A finer grid around ``center`` (default ``curve``'s maximum): ``width`` (default two steps
    of the coarse grid) each side, ``points`` values (default as many as the coarse grid)."""
    x = curve.best[0] if center is None else float(center)
    step = float(np.min(np.diff(np.sort(curve.grid)))) if curve.grid.size > 1 else 1.0
    width = 2 * step if width is None else float(width)
    return np.linspace(x - width, x + width, points or curve.grid.size)


#: a member whose prior variance is below this fraction of the largest has no correlation to speak of
NO_VARIANCE = 1e-12


def closest_pair(feature, kernel):
    """(i, j), i < j: the two members whose u are most correlated (in |corr|) under the prior;
    (0, 0) for a single member. Which members pair up after a fit depends on which of several
    equally good starts won, so a page selects the pair by this, not by index."""
    if len(feature) < 2:
        return 0, 0
    C = np.abs(u_correlation(feature, kernel))
    np.fill_diagonal(C, -1.0)
    i, j = np.unravel_index(int(np.argmax(C)), C.shape)
    return int(min(i, j)), int(max(i, j))


def u_correlation(feature, kernel):
    """[M, M] prior correlation of the inducing outputs u (Kuu scaled to unit diagonal), in [-1, 1].

    A member with (numerically) no prior variance, such as a sine at frequency 0, which is
    identically zero, has no correlation with anything (0/0): its row and column are 0, its
    diagonal 1. Round-off beyond +-1 is clipped."""
    Kuu = covariances.Kuu(feature, kernel)
    variance = np.diag(Kuu).copy()
    alive = variance > NO_VARIANCE * max(float(np.max(variance)), 0.0)
    d = np.sqrt(np.where(alive, variance, 1.0))
    C = np.clip(Kuu / d[:, None] / d[None, :], -1.0, 1.0)
    C[~alive, :] = 0.0
    C[:, ~alive] = 0.0
    np.fill_diagonal(C, 1.0)
    return C


def near_duplicates(feature, kernel, threshold=DUPLICATE_CORRELATION):
    """Pairs (i, j, correlation) of features whose u are correlated above ``threshold`` in absolute
    value; every correlation is finite and in [-1, 1] (see :func:`u_correlation`)."""
    C = u_correlation(feature, kernel)
    i, j = np.triu_indices(C.shape[0], k=1)
    keep = np.abs(C[i, j]) > threshold
    return [(int(a), int(b), float(C[a, b])) for a, b in zip(i[keep], j[keep])]
