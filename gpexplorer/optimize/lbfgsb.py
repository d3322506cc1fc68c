"""L-BFGS-B strategies through :func:`scipy.optimize.minimize`'s public API: joint (every entry
of the flat vector, or a subset, optionally in other coordinates) and block-cyclic.

``fun(x) -> (F, gradient)`` on the full flat vector; ``on_iterate(x, F)`` after each accepted
iterate (x the full vector, valid during the call only) returns True to stop, which ends
scipy's loop through its ``callback(intermediate_result)`` raising StopIteration
(scipy >= 1.11); the run's message is then :data:`~gpexplorer.optimize.results.STOPPED_MESSAGE`,
as for every strategy. A ``cancel``
(:func:`gpexplorer.optimize.results.as_cancel`) is checked before each evaluation.

The strategy adds nothing per evaluation where it optimises the whole vector in its own
coordinates: ``fun`` goes to ``minimize`` as it is (with a cancel, behind one check).
"""

from __future__ import annotations

import math

import numpy as np

from gpexplorer.optimize.results import CANCELLED_MESSAGE, STOPPED_MESSAGE, Cancelled, Run, as_cancel, checked

__all__ = ["lbfgsb", "block_cyclic", "SCIPY_FTOL", "SCIPY_GTOL", "SCIPY_MEMORY", "MAXFUN"]

#: scipy's own L-BFGS-B defaults (``minimize(method="L-BFGS-B")``)
SCIPY_FTOL = 2.2204460492503131e-09
SCIPY_GTOL = 1e-5
SCIPY_MEMORY = 10
MAXFUN = 15000


class _Block:
    """The entries ``idx`` of a full vector x as the optimiser's vector (the rest held), with
    ``coords`` = (positions of some entries in x, a change of variables with ``to_z``,
    ``to_free`` and ``gradient``, as :class:`gpexplorer.variational.whitening.WhitenedCoordinates`)
    for those entries."""

    def __init__(self, x, idx, coords):
        self.x, self.idx = x, np.arange(x.size) if idx is None else np.asarray(idx, dtype=int)
        self.where, self.W = coords if coords is not None else (None, None)
        self.inner = np.isin(self.idx, self.where) if self.W is not None else None

    def start(self):
        start = self.x[self.idx].copy()
        if self.W is not None:
            start[self.inner] = self.W.to_z(self.x[self.where])
        return start

    def full(self, xb):
        full = self.x.copy()
        full[self.idx] = xb
        if self.W is not None:
            full[self.where] = self.W.to_free(xb[self.inner])
        return full

    def wrap(self, fun):
        def block_fun(xb):
            F, g = fun(self.full(xb))
            gb = g[self.idx]
            if self.W is not None:
                gb = gb.copy()
                gb[self.inner] = self.W.gradient(xb[self.inner], g[self.where])
            return F, gb
        return block_fun


def _split(fun):
    """``fun(x) -> (F, g)`` as scipy's separate value and gradient callables: scipy asks for the
    gradient right after the value at the same x, so the gradient is the value's by-product (a
    cheaper hand-over than ``jac=True``'s memoising wrapper: ~0.5 ms of a 60-evaluation fit)."""
    last = [None, None]

    def value(x):
        F, g = fun(x)
        last[0], last[1] = x.tobytes(), g
        return F

    def gradient(x):
        if last[0] != x.tobytes():
            value(x)
        return last[1]

    return value, gradient


def lbfgsb(fun, x0, lo, hi, *, max_iter, maxfun=MAXFUN, ftol=None, gtol=None, memory=None, on_iterate=None,
           cancel=None, idx=None, coords=None):
    """Minimise ``fun`` from x0 within [lo, hi] (full-length arrays, +-inf where unbounded) with
    scipy's L-BFGS-B, ``max_iter`` iterations and ``maxfun`` evaluations at most; ``ftol`` /
    ``gtol`` default to scipy's, ``memory`` (stored corrections, maxcor) too. ``idx``: only these entries move; ``coords``: some of them in
    other coordinates (:class:`_Block`). Returns a :class:`Run` whose x is scipy's final point
    as a full vector (the last accepted iterate when cancelled)."""
    from scipy.optimize import Bounds, minimize  # on use: importing scipy.optimize takes 0.4 s of a page's start

    x0 = np.asarray(x0, dtype=float)
    block = _Block(x0, idx, coords) if idx is not None or coords is not None else None
    f = fun if block is None else block.wrap(fun)
    to_full = (lambda xb: xb) if block is None else block.full
    check = as_cancel(cancel)
    state = {"nit": 0, "stopped": False, "last": x0}
    f = checked(f, check)

    def callback(intermediate_result):
        state["nit"] += 1
        full = to_full(intermediate_result.x)
        if check is not None:
            state["last"] = full.copy()
        if on_iterate is not None and on_iterate(full, float(intermediate_result.fun)):
            state["stopped"] = True
            raise StopIteration

    start = x0 if block is None else block.start()
    sub = slice(None) if block is None else block.idx
    options = {"maxiter": int(max_iter), "maxfun": int(maxfun), "ftol": SCIPY_FTOL if ftol is None else ftol,
               "gtol": SCIPY_GTOL if gtol is None else gtol, "maxcor": SCIPY_MEMORY if memory is None else int(memory)}
    value, gradient = _split(f)
    try:
        res = minimize(value, start, jac=gradient, method="L-BFGS-B", bounds=Bounds(lo[sub], hi[sub]),
                       callback=callback if on_iterate is not None or check is not None else None, options=options)
    except Cancelled:
        return Run(state["last"], False, CANCELLED_MESSAGE, state["nit"], cancelled=True)
    if state["stopped"]:
        return Run(to_full(res.x), False, STOPPED_MESSAGE, int(res.nit), stopped=True, objective=float(res.fun))
    return Run(to_full(res.x), bool(res.success), str(res.message), int(res.nit), objective=float(res.fun))


def block_cyclic(fun, x0, lo, hi, blocks, *, rounds, evals_per_block, ftol=None, gtol=None, on_iterate=None,
                 cancel=None, coords_for=None, after_round=None):
    """Block-cyclic L-BFGS-B: ``rounds`` rounds, each running :func:`lbfgsb` over the blocks
    (``{name: index array}``) in turn with ``evals_per_block`` iterations and evaluations per
    block; every block starts from the best point evaluated so far, so the best objective never
    rises. ``coords_for(name, x)`` -> a block's change of variables (or None) at its start;
    ``after_round(gain, n_iter, messages)`` (the round's fall of the best objective, accepted
    iterations, scipy's message per block) returns True to end the rounds. Returns a
    :class:`Run` at the best point."""
    best = [math.inf, None]

    def tracked(x):
        F, g = fun(x)
        if F < best[0]:
            best[0], best[1] = F, x.copy()
        return F, g

    check = as_cancel(cancel)
    try:
        if check is not None:
            check()
        tracked(x0)
    except Cancelled:
        return Run(np.array(x0, dtype=float), False, CANCELLED_MESSAGE, 0, cancelled=True)
    x, nit, done = best[1].copy(), 0, 0
    for _ in range(int(rounds)):
        before, nit_round, messages = best[0], 0, {}
        for name, idx in blocks.items():
            coords = coords_for(name, x) if coords_for is not None else None
            run = lbfgsb(tracked, x, lo, hi, max_iter=evals_per_block, maxfun=evals_per_block, ftol=ftol, gtol=gtol,
                         on_iterate=on_iterate, cancel=cancel, idx=idx, coords=coords)
            x, messages[name] = best[1].copy(), run.message
            nit_round += run.n_iter
            if run.stopped or run.cancelled:
                return Run(x, False, run.message, nit + nit_round, stopped=run.stopped, cancelled=run.cancelled)
        nit += nit_round
        done += 1
        if after_round is not None and after_round(before - best[0], nit_round, messages):
            break
    return Run(x, True, f"{done} rounds over the blocks {list(blocks)}", nit)
