"""Sizes the machine can hold: checked before anything is allocated.

A model's work arrays are estimated from its sizes (N data points, M inducing variables, Q
latents, K mixture components, S Monte Carlo samples, N* prediction points) and compared with
:data:`MEMORY_CAP_BYTES`, 2 GiB: a quarter of a small teaching server's memory, so that a page
shared by a class (several sessions in one process) survives one absurd setting, and a
MemoryError from numpy (or the machine swapping) never happens. The estimates count the
largest arrays only (float64, 8 bytes each), so the cap is on the order of magnitude.
"""

from __future__ import annotations

import math

from gpexplorer.validation.options import count

#: cap on the estimated work arrays of one model (module docstring)
MEMORY_CAP_BYTES = 2 * 1024 ** 3

#: most mixture components of a MoG posterior: the Jensen entropy bound (eq. 19) is O(K^2 M)
#: per evaluation; K = 100 costs about 0.1 s per ELBO on 30 points (K = 1,000: 7.6 s), and the
#: paper and the black-box lab use K <= 2
MAX_COMPONENTS = 100


def _gib(n_bytes):
    return f"{n_bytes / 1024 ** 3:.3g} GiB"


def check_memory(what, n_bytes, hint):
    """A ValueError naming ``what`` when ``n_bytes`` exceeds the cap; ``hint`` says what to reduce."""
    if n_bytes > MEMORY_CAP_BYTES:
        raise ValueError(f"{what} would need about {_gib(n_bytes)} of work arrays, above the cap of "
                         f"{_gib(MEMORY_CAP_BYTES)} (gpexplorer.validation.MEMORY_CAP_BYTES); {hint}")


def max_inducing(N, arrays_per_row=4):
    """Largest M whose Kuu (M^2) and ``arrays_per_row`` (M, N) arrays fit the cap."""
    cap = MEMORY_CAP_BYTES / 8
    by_kuu = math.isqrt(int(cap))
    by_rows = int(cap // (arrays_per_row * max(int(N), 1)))
    return max(1, min(by_kuu, by_rows))


def inducing_count(value, N, name="Z", arrays_per_row=4):
    """An int M of inducing variables to place, checked against :func:`max_inducing`."""
    M = count(name, value, 1)
    limit = max_inducing(N, arrays_per_row)
    if M > limit:
        check_memory(f"{name} = {M:,} inducing variables with N = {N:,}",
                     8 * (M * M + arrays_per_row * M * max(int(N), 1)), f"use at most {limit:,}")
    return M


def mixture_components(value, name="K"):
    """The number of components of a mixture posterior, 1 <= K <= :data:`MAX_COMPONENTS`."""
    try:
        return count(name, value, 1, MAX_COMPONENTS)
    except ValueError:
        raise ValueError(f"the number of mixture components {name} must be a positive integer, at most "
                         f"{MAX_COMPONENTS} (the Jensen entropy bound costs O(K^2) per evaluation); "
                         f"got {value!r:.60}") from None


__all__ = ["MAX_COMPONENTS", "MEMORY_CAP_BYTES", "check_memory", "inducing_count", "max_inducing",
           "mixture_components"]
