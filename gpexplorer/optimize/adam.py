"""Minibatch Adam (Kingma & Ba 2015) on the flat vector, for any stochastic gradient.

``gradient(x, t)`` returns a (stochastic) gradient of the objective at x for step t, or None
where that evaluation failed; a failed or non-finite gradient skips the step, and
``max_failures`` in a row end the run. After each step x is clipped into [lo, hi];
``on_step(t, x)`` returns True to stop. A ``cancel``
(:func:`gpexplorer.optimize.results.as_cancel`) is checked before each gradient.
"""

from __future__ import annotations

import numpy as np

from gpexplorer.optimize.results import CANCELLED_MESSAGE, STOPPED_MESSAGE, Cancelled, Run, as_cancel

__all__ = ["adam", "ADAM_BETAS", "ADAM_EPSILON"]

ADAM_BETAS = (0.9, 0.999)
ADAM_EPSILON = 1e-8


def adam(gradient, x0, lo, hi, *, steps, learning_rate, betas=ADAM_BETAS, epsilon=ADAM_EPSILON, on_step=None,
         cancel=None, max_failures=10, after_step=None):
    """``steps`` Adam steps of size ``learning_rate`` from x0 (module docstring); returns a
    :class:`Run` at the last point (n_iter: the steps taken, failed ones included).
    ``after_step(t, x) -> x``: replaces entries another rule moves (a natural-gradient step on q(u),
    whose gradient entries are given as zero so that Adam leaves them)."""
    b1, b2 = betas
    x = np.array(x0, dtype=float)
    m, v = np.zeros_like(x), np.zeros_like(x)
    check = as_cancel(cancel)
    failures = 0
    for t in range(1, int(steps) + 1):
        try:
            if check is not None:
                check()
        except Cancelled:
            return Run(x, False, CANCELLED_MESSAGE, t - 1, cancelled=True)
        g = gradient(x, t)
        if g is None or not np.all(np.isfinite(g)):
            failures += 1
            if failures >= max_failures:
                return Run(x, False, f"stopped: {max_failures} gradient evaluations in a row failed", t)
            continue
        failures = 0
        m = b1 * m + (1 - b1) * g
        v = b2 * v + (1 - b2) * g * g
        step = learning_rate * (m / (1 - b1 ** t)) / (np.sqrt(v / (1 - b2 ** t)) + epsilon)
        x = np.clip(x - step, lo, hi)
        if after_step is not None:
            x = after_step(t, x)
        if on_step is not None and on_step(t, x):
            return Run(x, False, STOPPED_MESSAGE, t, stopped=True)
    return Run(x, True, f"{int(steps)} Adam steps", int(steps))
