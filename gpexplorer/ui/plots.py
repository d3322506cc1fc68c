"""HoloViews figures of fitted models, for composing your own figures in a notebook.

Each function returns a HoloViews element or overlay built from what the library computes (the
models' ``predict_f`` / ``predict_y`` / ``log_marginal_likelihood`` / ``upper_bound``, a
:class:`gpexplorer.optimize.FitResult`'s trace, :func:`gpexplorer.sparse.studies.m_sweep`'s
rows); nothing here evaluates an equation itself. Colours follow the sparse lab.

>>> import gpexplorer
>>> from gpexplorer.ui import plots
>>> gpexplorer.notebook()                            # offline resources, once per notebook
>>> plots.posterior(vfe) * plots.posterior(exact)    # bands, data and inducing inputs
>>> plots.bound_sandwich(X, y, kernel, Ms=[2, 4, 8, 16], noise_variance=0.1)
>>> plots.fit_trace(vfe.fit())

Bokeh options are registered with HoloViews when a function is first called (importing
``holoviews.plotting.bokeh``), not at import.
"""

from __future__ import annotations

import numpy as np

from gpexplorer.inducing import initial_inducing_inputs
from gpexplorer.sparse.comparison import LABELS, default_grid
from gpexplorer.sparse.regression import ExactGPR, SparseGPR
from gpexplorer.ui.plotting import TOOLS
from gpexplorer.ui.sparse.figures import COLORS, inducing_rows

__all__ = ["posterior", "sandwich_rows", "bound_sandwich", "models_sandwich", "fit_trace"]

INDUCING_COLOR = "#2ca02c"  # the lab's green triangles
BOUND_COLOR = "#555555"


def _hv():
    """HoloViews with its bokeh options registered (on first use, not at import)."""
    import holoviews as hv
    import holoviews.plotting.bokeh  # noqa: F401  (registers the bokeh backend's options)

    return hv


def _tools():
    return TOOLS.split(",")


def _framed(layers, title, width=700, height=350):
    """An overlay with its legend right of the plot; size, title and tools ride on its first
    element, from which HoloViews propagates them, so they survive composing overlays with ``*``
    (the legend's place does not: add ``.opts(legend_position="right")`` to a composition)."""
    layers[0] = layers[0].opts(title=title, width=width, height=height, default_tools=_tools())
    return _hv().Overlay(layers).opts(legend_position="right")


def _name(model):
    """'exact' for the exact GP, else the approximation ('vfe', 'fitc', ...)."""
    return getattr(model, "approximation", "exact")


def _one_d(model):
    if model.X.shape[1] != 1:
        raise ValueError(f"posterior draws 1-D inputs; this model has D = {model.X.shape[1]} "
                         "(plot predicted against true, or a 1-D slice, instead)")


def posterior(model, X_grid=None, *, n_grid=300, label=None, color=None, data=True, noise=True):
    """Posterior of a 1-D model (``ExactGPR`` or ``SparseGPR``) as an ``hv.Overlay``.

    Elements, in order: the +-2 s.d. band of y (``noise``; ``hv.Spread``, mean and 2 s.d. of
    ``model.predict_y``), the +-2 s.d. band of f (``hv.Spread``, ``model.predict_f``), the mean
    (``hv.Curve``), the training data (``data``; ``hv.Scatter``) and, for a sparse model, its
    inducing inputs (``model.Z``, the feature's locations) as triangles below the data
    (``hv.Scatter``). ``X_grid`` defaults to ``n_grid`` points over the data range plus 10 %.
    Overlay several models with ``*``.
    """
    hv = _hv()
    _one_d(model)
    grid = default_grid(model.X, n_grid) if X_grid is None else np.asarray(X_grid, dtype=float).reshape(-1, 1)
    mean, var_f = model.predict_f(grid)
    _, var_y = model.predict_y(grid)
    name = _name(model)
    label = label or LABELS.get(name, name)
    color = color or COLORS.get(name, "#404040")
    x_dim, y_dim = hv.Dimension("x"), hv.Dimension("y", label="f(x), y")
    x = grid[:, 0]
    layers = []
    if noise:
        layers.append(hv.Spread((x, mean, 2.0 * np.sqrt(var_y)), x_dim, [y_dim, "2 s.d. of y"],
                                label=f"{label}: ±2 s.d. of y").opts(color=color, alpha=0.12, line_alpha=0))
    layers.append(hv.Spread((x, mean, 2.0 * np.sqrt(var_f)), x_dim, [y_dim, "2 s.d. of f"],
                            label=f"{label}: ±2 s.d. of f").opts(color=color, alpha=0.3, line_alpha=0))
    layers.append(hv.Curve((x, mean), x_dim, y_dim, label=f"{label}: mean").opts(color=color, line_width=2))
    if data:
        layers.append(hv.Scatter((model.X[:, 0], model.y), x_dim, y_dim, label="data")
                      .opts(color="black", alpha=0.45, size=4))
    if hasattr(model, "inducing"):
        Z = model.Z[:, 0]
        layers.append(hv.Scatter((Z, np.full(len(Z), inducing_rows(model.y, 1)[0])), x_dim, y_dim,
                                 label=f"{label}: inducing inputs (M = {len(Z)})")
                      .opts(marker="triangle", size=11, color=INDUCING_COLOR, line_color="black"))
    return _framed(layers, f"Posterior: {label}")


def sandwich_rows(X, y, kernel, Ms, *, noise_variance=1.0, approximations=("vfe",), z_init="kmeans", seed=0,
                  jitter=1e-6):
    """The bound sandwich against M at fixed hyperparameters, as plain rows.

    For each M in ``Ms`` the inducing inputs are ``initial_inducing_inputs(X, M, z_init,
    seed)``, shared by every approximation; per (M, approximation) a dict with "M",
    "approximation", "log_marginal_likelihood" (the model's: VFE's is Titsias' lower bound),
    "upper_bound" (Titsias' upper bound, ``SparseGPR.upper_bound``) and "exact" (``ExactGPR``'s
    log p(y) at the same kernel and noise). ``kernel`` is copied, never changed.
    """
    X, y = np.asarray(X, dtype=float), np.asarray(y, dtype=float)
    X = X[:, None] if X.ndim == 1 else X
    exact = float(ExactGPR(X, y, kernel=kernel.copy(), noise_variance=noise_variance).log_marginal_likelihood())
    rows = []
    for M in Ms:
        Z = initial_inducing_inputs(X, int(M), z_init, seed)
        for approximation in approximations:
            model = SparseGPR(X, y, kernel=kernel.copy(), Z=Z.copy(), approximation=approximation,
                              noise_variance=noise_variance, jitter=jitter)
            rows.append({"M": int(M), "approximation": approximation, "exact": exact,
                         "log_marginal_likelihood": float(model.log_marginal_likelihood()),
                         "upper_bound": float(model.upper_bound())})
    return rows


def bound_sandwich(X=None, y=None, kernel=None, Ms=(2, 4, 8, 16, 32), *, rows=None, exact=None, **options):
    """Lower bound (or evidence) <= exact log p(y) <= Titsias' upper bound, against M.

    Either from data (``X``, ``y``, ``kernel``, ``Ms`` and :func:`sandwich_rows`'s keyword
    ``options``: ``noise_variance``, ``approximations``, ``z_init``, ``seed``, ``jitter``) at
    fixed hyperparameters, or from precomputed ``rows`` such as
    ``studies.m_sweep(...)["rows"]`` (each with "M", "approximation",
    "log_marginal_likelihood", "upper_bound"; "exact" per row, or pass ``exact``: a number,
    or m_sweep's "exact" dict, drawn as a constant line). Returns an ``hv.Overlay``: per
    approximation its objective and its upper bound (``hv.Curve`` each, with ``hv.Scatter``
    markers), the shaded gap between them (``hv.Area``) and the exact log p(y) (``hv.Curve``).
    """
    hv = _hv()
    if rows is None:
        if X is None or y is None or kernel is None:
            raise ValueError("give X, y and kernel (the sandwich is computed) or rows (precomputed)")
        rows = sandwich_rows(X, y, kernel, Ms, **options)
    elif options:
        raise ValueError(f"options {sorted(options)} only apply when the rows are computed here")
    rows = sorted(rows, key=lambda r: r["M"])
    if not rows:
        raise ValueError("rows is empty; nothing to draw")
    if isinstance(exact, dict):
        exact = exact["log_marginal_likelihood"]
    M_dim, v_dim = hv.Dimension("M", label="M (inducing inputs)"), hv.Dimension("log_ml", label="log p(y) or bound")
    layers = []
    for approximation in dict.fromkeys(r["approximation"] for r in rows):
        mine = [r for r in rows if r["approximation"] == approximation]
        Ms_, low = [r["M"] for r in mine], [r["log_marginal_likelihood"] for r in mine]
        up = [r["upper_bound"] for r in mine]
        label, color = LABELS.get(approximation, approximation), COLORS.get(approximation, "#404040")
        layers += [
            hv.Area((Ms_, low, up), M_dim, [v_dim, "upper"], label=f"{label}: gap to the upper bound")
            .opts(color=color, alpha=0.12, line_alpha=0),
            hv.Curve((Ms_, low), M_dim, v_dim, label=f"{label} objective").opts(color=color, line_width=2),
            hv.Scatter((Ms_, low), M_dim, v_dim, label=f"{label} objective").opts(color=color, size=7),
            hv.Curve((Ms_, up), M_dim, v_dim, label=f"upper bound ({label})")
            .opts(color=BOUND_COLOR, line_dash="dashed", line_width=2),
            hv.Scatter((Ms_, up), M_dim, v_dim, label=f"upper bound ({label})")
            .opts(color=BOUND_COLOR, marker="inverted_triangle", size=8),
        ]
    Ms_all = sorted({r["M"] for r in rows})
    if exact is None:
        if any("exact" not in r for r in rows):
            raise ValueError("rows have no 'exact' value; pass exact= (e.g. m_sweep(...)['exact'])")
        exact_values = [next(r["exact"] for r in rows if r["M"] == M) for M in Ms_all]
    else:
        exact_values = [float(exact)] * len(Ms_all)
    layers.append(hv.Curve((Ms_all, exact_values), M_dim, v_dim, label="exact log p(y)")
                  .opts(color="black", line_width=2))
    layers[0] = layers[0].opts(logx=True)
    return _framed(layers, "Bound sandwich against M")


def models_sandwich(models, labels=None):
    """The bound sandwich for a set of sparse models, each at its own parameters.

    Per model (a categorical row): its objective (``log_marginal_likelihood``: VFE's bound,
    FITC's evidence...), the exact GP's log p(y) at the same kernel and noise, and Titsias'
    ``upper_bound``. An objective above the upper bound (FITC can) overestimates log p(y).
    Returns an ``hv.Overlay`` of ``hv.Segments`` (exact to upper bound) and three ``hv.Scatter``.
    """
    hv = _hv()
    models = list(models)
    labels = list(labels) if labels is not None else [f"{LABELS.get(_name(m), _name(m))} (M = {len(m.Z)})"
                                                      for m in models]
    if len(labels) != len(models):
        raise ValueError(f"{len(labels)} labels for {len(models)} models")
    objective, exact, upper = [], [], []
    for m in models:
        objective.append(float(m.log_marginal_likelihood()))
        exact.append(float(ExactGPR(m.X, m.y, kernel=m.kernel.copy(),
                                    noise_variance=m.noise_variance).log_marginal_likelihood()))
        upper.append(float(m.upper_bound()))
    row, v_dim = hv.Dimension("model"), hv.Dimension("log_ml", label="log p(y) or bound")
    colors = [COLORS.get(_name(m), "#404040") for m in models]
    return _framed([
        hv.Segments((exact, labels, upper, labels), [v_dim, row, "x1", "y1"], label="exact .. upper bound")
        .opts(color="#aaaaaa", line_width=10),
        hv.Scatter((exact, labels), v_dim, row, label="exact log p(y)").opts(color="black", marker="dash",
                                                                              size=22, angle=90, line_width=3),
        hv.Scatter((upper, labels), v_dim, row, label="upper bound")
        .opts(color=BOUND_COLOR, marker="inverted_triangle", size=10),
        hv.Scatter((objective, labels, colors), v_dim, [row, "color"], label="objective")
        .opts(color="color", size=12),
    ], "Bound sandwich per model", height=60 + 50 * len(models))


def fit_trace(result, quantity="objective", *, label=None, color=None):
    """One quantity of a :class:`gpexplorer.optimize.FitResult`'s trace against the iteration,
    as an ``hv.Curve``: "objective" (F = -log p(y) or -bound, minimised), "log_marginal_likelihood"
    (-F), or a term of the objective ("complexity", "data_fit", "trace", ...)."""
    hv = _hv()
    trace = list(result.trace)
    if not trace:
        raise ValueError("the fit result has an empty trace (was it produced by fit()?)")
    if quantity == "objective":
        values = [e.objective for e in trace]
    elif quantity == "log_marginal_likelihood":
        values = [e.log_marginal_likelihood for e in trace]
    elif quantity in trace[0].terms:
        values = [e.terms[quantity] for e in trace]
    else:
        raise ValueError(f"quantity must be 'objective', 'log_marginal_likelihood' or a term "
                         f"{sorted(trace[0].terms)}; got {quantity!r}")
    return hv.Curve(([e.iteration for e in trace], values), "iteration", quantity, label=label or quantity) \
        .opts(color=color or "#1f77b4", line_width=2, width=600, height=300, tools=["hover"],
              default_tools=_tools())
