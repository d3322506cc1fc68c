"""Derivative-free minimisation of ``fun(x) -> F`` through :func:`scipy.optimize.minimize`:
Powell, Nelder-Mead, COBYLA or COBYQA within [lo, hi].

``initial_step`` sets each method's first move: Powell's direction set ``initial_step * I``,
Nelder-Mead's simplex x0 + ``initial_step`` e_i (- where + would leave the box, unless
``simplex`` is given), COBYLA's ``rhobeg``, COBYQA's initial trust radius. ``xtol`` / ``ftol``
are each method's tolerances on x and F (COBYLA and COBYQA: ``xtol`` only).
``max_evals`` bounds the evaluations (COBYLA / COBYQA: their ``maxiter``, which counts those).
A ``cancel`` (:func:`gpexplorer.optimize.results.as_cancel`) is checked before each evaluation;
to stop from a callback, ``fun`` raises an exception of its own.
"""

from __future__ import annotations

import numpy as np

from gpexplorer.optimize.results import CANCELLED_MESSAGE, Cancelled, Run, as_cancel, checked

__all__ = ["derivative_free", "DERIVATIVE_FREE_METHODS"]

DERIVATIVE_FREE_METHODS = ("powell", "nelder-mead", "cobyla", "cobyqa")
_SCIPY_NAMES = {"powell": "Powell", "nelder-mead": "Nelder-Mead", "cobyla": "COBYLA", "cobyqa": "COBYQA"}


def _simplex(x0, hi, step):
    simplex = [x0]
    for i in range(x0.size):
        v = x0.copy()
        v[i] = v[i] + step if v[i] + step <= hi[i] else v[i] - step
        simplex.append(v)
    return np.array(simplex)


def derivative_free(fun, x0, lo, hi, *, method, max_evals, xtol, ftol=1e-8, initial_step=1.0, simplex=None,
                    cancel=None):
    """Minimise ``fun`` from x0 with scipy's ``method`` (module docstring); returns a :class:`Run`
    (n_iter: scipy's ``nit`` where it reports one, else its evaluations)."""
    from scipy.optimize import Bounds, minimize  # on use: importing scipy.optimize takes 0.4 s of a page's start

    if method not in DERIVATIVE_FREE_METHODS:
        raise ValueError(f"method must be one of {DERIVATIVE_FREE_METHODS}; got {method!r}")
    x0 = np.asarray(x0, dtype=float)
    if method == "powell":
        options = {"xtol": xtol, "ftol": ftol, "maxfev": int(max_evals), "direc": initial_step * np.eye(x0.size)}
    elif method == "nelder-mead":
        options = {"initial_simplex": _simplex(x0, hi, initial_step) if simplex is None else simplex,
                   "xatol": xtol, "fatol": ftol, "maxfev": int(max_evals)}
    elif method == "cobyla":
        options = {"rhobeg": initial_step, "tol": xtol, "maxiter": int(max_evals)}
    else:
        options = {"initial_tr_radius": initial_step, "final_tr_radius": xtol, "maxiter": int(max_evals)}
    try:
        res = minimize(checked(fun, as_cancel(cancel)), x0, method=_SCIPY_NAMES[method], bounds=Bounds(lo, hi), options=options)
    except Cancelled:
        return Run(x0, False, CANCELLED_MESSAGE, 0, cancelled=True)
    return Run(np.asarray(res.x), bool(res.success), str(res.message), int(res.get("nit", res.get("nfev", 0))))
