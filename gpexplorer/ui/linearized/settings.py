"""The linearised-inference lab's configuration as Param parameters, and what it turns into.

One :class:`LinearizedSettings` per session is the single source of truth: widgets are generated
from it (``pn.Param``), the URL query string mirrors it (``pn.state.location.sync``) and the JSON
export serialises it. The plain functions below turn settings into a forward model, a data set
(the EGP paper's toy inversion problem, section 4.1, or an uploaded CSV) and the four models:
EGP / UGP (:class:`gpexplorer.linearized.gp.LinearizedGP`, EGP paper section 3) and EKS / UKS
(:class:`gpexplorer.linearized.kitchen_sinks.LinearizedKitchenSinks`, EKS paper sections 4-5). Nothing here
touches Bokeh, so the tests call it without a browser.
"""

from __future__ import annotations

import functools
import json
import time
from dataclasses import dataclass

import numpy as np
import param

from gpexplorer import kernels, metrics
from gpexplorer.linearized import linearization
from gpexplorer.likelihoods.forward_models import get_forward_model
from gpexplorer.linearized.kitchen_sinks import LinearizedKitchenSinks
from gpexplorer.linearized.gp import LinearizedGP
from gpexplorer.experiments.linearized_papers import toy_inversion_data
from gpexplorer.ui.uploads import read_upload

METHODS = ("egp", "ugp", "eks", "uks")
LABELS = {"egp": "EGP", "ugp": "UGP", "eks": "EKS", "uks": "UKS"}
#: method -> (model family, linearisation): Taylor (EGP eq. 36, EKS eq. 21-23) or unscented
#: (EGP eq. 37, EKS eq. 24-34)
FAMILY = {"egp": ("gp", "taylor"), "ugp": ("gp", "unscented"),
          "eks": ("ks", "taylor"), "uks": ("ks", "unscented")}
SCALAR_MODELS = ("identity", "poly3", "exp", "sin", "tanh2", "sign_cubic", "logistic")
FORWARD_CHOICES = {**{name: name for name in SCALAR_MODELS}, "custom expression": "custom"}
KERNELS = {"Squared exponential": "se", "Matern 3/2": "matern32", "Matern 5/2": "matern52"}
DATASETS = {"Toy inversion (EGP paper 4.1)": "toy", "Uploaded CSV (x, y)": "upload"}
Y_PREDICTIONS = {"quadrature (eq. 39)": "quadrature", "unscented (eq. 40)": "unscented"}
TOY_POINTS = 1000  # EGP paper section 4.1: 1000 points on [-2 pi, 2 pi], train on N, test on the rest
CSV_GRID = 400
MAX_UPLOAD_ROWS = 3000  # the GP methods are O(N^3) per Gauss-Newton step
#: bounds of the hyperparameter search: EGP paper section 4.1 / the original code's lower bounds
FIT_BOUNDS = {"variance": (0.01, 1e6), "lengthscale": (0.1, 1e6), "noise_variance": (1e-4, 1e6)}

# which settings invalidate what: the data (and any fits), the inner loops, or one view only
STRUCTURAL = ("dataset", "n_train", "data_seed", "forward", "expression")
MODEL = ("methods", "kappa", "ugp_inner_loop", "kernel", "variance", "lengthscale", "noise_variance",
         "n_features", "feature_seed", "max_iter")
PREDICTION = ("y_prediction",)
CLOSEUP = ("x0",)
PROFILE = ("profile_parameter",)
HYPERPARAMETERS = ("variance", "lengthscale", "noise_variance")
#: the model that learnt hyperparameters belong to: changing one of these discards them
FIT_CONTEXT = ("kernel", "kappa", "ugp_inner_loop", "n_features", "feature_seed", "max_iter")


class LinearizedSettings(param.Parameterized):
    """Everything a user can set on the linearised-inference page."""

    dataset = param.Selector(default="toy", objects=DATASETS, doc="Data set to fit")
    n_train = param.Integer(default=200, bounds=(10, 800), label="N train",
                            doc="N training points of the toy problem")
    data_seed = param.Integer(default=0, bounds=(0, 10_000), doc="Seed of the toy data (latent draw, split)")
    forward = param.Selector(default="sin", objects=FORWARD_CHOICES, label="Forward model g",
                             doc="Forward model g(f)")
    expression = param.String(default="sin(f) + 0.1*f^3", label="Custom g(f)",
                              doc="Custom g(f): an expression in f (e.g. f^3 + f)")
    methods = param.ListSelector(default=list(METHODS), objects={LABELS[m]: m for m in METHODS},
                                 doc="Methods shown side by side")
    kappa = param.Number(default=0.5, bounds=(-0.9, 10.0), softbounds=(-0.9, 3.0), label="kappa",
                         doc="Unscented spread kappa (eq. 26): sigma points at m +- sqrt((1 + kappa) C)")
    ugp_inner_loop = param.Selector(
        default="map-search", objects={"MAP step search (paper)": "map-search", "fixed point": "fixed-point"},
        label="UGP inner loop",
        doc="UGP posterior: the paper's Gauss-Newton loop with the step search on the MAP objective (eq. 31), "
            "or the fixed point of its statistical linearisation (smooth free energy, about 3x the cost)")
    y_prediction = param.Selector(default="quadrature", objects=Y_PREDICTIONS, label="Predicted y by",
                                  doc="How the predicted y is computed from q(f*)")
    kernel = param.Selector(default="matern52", objects=KERNELS, doc="Covariance function")
    variance = param.Number(default=0.64, bounds=(1e-4, 1e3), softbounds=(0.01, 4.0), doc="Signal variance")
    lengthscale = param.Number(default=0.6, bounds=(1e-3, 1e3), softbounds=(0.05, 5.0), doc="Lengthscale")
    noise_variance = param.Number(default=0.04, bounds=(1e-6, 1e3), softbounds=(1e-4, 1.0),
                                  doc="Likelihood noise variance sigma^2")
    n_features = param.Integer(default=200, bounds=(10, 1000), step=2, label="D (random features)",
                               doc="D, number of random Fourier features of EKS/UKS (even)")
    feature_seed = param.Integer(default=0, bounds=(0, 10_000), doc="Seed of the random features")
    max_iter = param.Integer(default=50, bounds=(1, 500), softbounds=(1, 100), label="Max GN iterations",
                             doc="Gauss-Newton iterations (max)")
    x0 = param.Number(default=0.0, bounds=(-2 * np.pi, 2 * np.pi), label="x0 (close-up)",
                      doc="Input of the linearisation close-up")
    max_evals = param.Integer(default=150, bounds=(5, 2000), softbounds=(5, 500), label="Max evaluations",
                              doc="Free-energy evaluations per method when learning hyperparameters")
    gp_search = param.Selector(
        default="fisher", objects={"Fisher scoring (gradient)": "fisher", "COBYLA (derivative-free)": "cobyla"},
        label="EGP/UGP search",
        doc="How Learn maximises the EGP/UGP free energy (eq. 41): Fisher scoring with its gradient (fast, "
            "gets closest to the maximum) or scipy's COBYLA (derivative-free like the paper's BOBYQA, stops "
            "earlier); EKS/UKS always use their own derivative-free search")

    profile_parameter = param.Selector(
        default="variance", objects={"kernel variance": "variance", "lengthscale": "lengthscale",
                                     "noise variance": "noise_variance"},
        label="Profile F along",
        doc="Hyperparameter that 'Profile free energy' varies (from a tenth to ten times each method's "
            "shown value, the others held): the free energy (eq. 41) and the test NLPD of f* along it")

    @param.depends("forward", watch=True, on_init=True)
    def _show_expression(self):
        self.param.expression.precedence = 1 if self.forward == "custom" else -1

    @param.depends("dataset", watch=True, on_init=True)
    def _show_toy_controls(self):
        for name in ("n_train", "data_seed"):
            self.param[name].precedence = 1 if self.dataset == "toy" else -1


def control_groups():
    """Parameter names of each control panel, in display order."""
    return {
        "Data and forward model": ["dataset", "n_train", "data_seed", "forward", "expression"],
        "Methods": ["methods", "kappa", "ugp_inner_loop", "y_prediction", "max_iter"],
        "Kernel and noise": ["kernel", "variance", "lengthscale", "noise_variance"],
        "Kitchen sinks (EKS / UKS)": ["n_features", "feature_seed"],
        "Close-up and learning": ["x0", "max_evals", "gp_search", "profile_parameter"],
    }


def search_label(method, gp_search):
    """Name of the hyperparameter search Learn uses for ``method`` (EKS/UKS: their own COBYQA)."""
    if FAMILY[method][0] != "gp":
        return "COBYQA"
    return {"fisher": "Fisher scoring", "cobyla": "COBYLA"}[gp_search]


def url_parameters():
    """Settings mirrored in the URL query string (all of them)."""
    return [name for group in control_groups().values() for name in group]


# --- forward model and data -----------------------------------------------------------------

def forward_model(s: LinearizedSettings):
    """The chosen g; a custom expression goes through the whitelist parser (ValueError if bad)."""
    if s.forward == "custom":
        if not s.expression.strip():
            raise ValueError("the custom expression is empty: type g as an expression in f, e.g. f^3 + f")
        return get_forward_model(s.expression)
    return get_forward_model(s.forward)


@dataclass(frozen=True, eq=False)
class LabData:
    """Training data plus where the views are drawn.

    ``grid`` (G,) sorted inputs of the plots; for the toy problem it is the paper's 1000 points,
    with the true latent ``f_true``, noisy ``y_grid`` and ``test`` (indices into the grid of the
    points not used for training). For a CSV upload those three are None.
    """

    X: np.ndarray
    y: np.ndarray
    grid: np.ndarray
    name: str
    f_true: np.ndarray | None = None
    y_grid: np.ndarray | None = None
    test: np.ndarray | None = None

    @property
    def n(self):
        return int(self.X.shape[0])


@functools.lru_cache(maxsize=32)
def _toy_draw(forward_name, seed):
    """The paper's 1000-point problem for one forward model (a 1000 x 1000 Cholesky: cached)."""
    d = toy_inversion_data(get_forward_model(forward_name), seed=seed, n_points=TOY_POINTS)
    arrays = (d.x[:, 0].copy(), d.f.copy(), d.y.copy())
    for a in arrays:
        a.setflags(write=False)  # shared between sessions through the cache: never modified
    return arrays


def load_data(s: LinearizedSettings, forward, uploaded=None) -> LabData:
    """The toy inversion problem for ``forward`` (y = g(f) + N(0, 0.2^2), EGP paper 4.1) with
    ``n_train`` random training points, or the uploaded CSV."""
    if s.dataset == "upload":
        if uploaded is None:
            raise ValueError("no CSV uploaded yet: choose a file with columns x, y")
        x = uploaded.X[:, 0]
        lo, hi = float(x.min()), float(x.max())
        pad = 0.05 * max(hi - lo, 1e-9)
        return LabData(uploaded.X, uploaded.y, np.linspace(lo - pad, hi + pad, CSV_GRID), uploaded.name)
    x, f, y = _toy_draw(forward.name, int(s.data_seed))
    order = np.random.default_rng((int(s.data_seed), 0x7EA1)).permutation(TOY_POINTS)
    train, test = np.sort(order[:s.n_train]), np.sort(order[s.n_train:])
    return LabData(x[train, None], y[train], x, f"toy inversion, g = {forward.name}", f_true=f, y_grid=y, test=test)


def parse_upload(contents: bytes, filename: str = "upload.csv"):
    """Validate an uploaded CSV into a 1-D Dataset; ValueError explains what is wrong."""
    ds = read_upload(contents, filename, MAX_UPLOAD_ROWS, min_rows=3)
    if ds.input_dim != 1:
        raise ValueError(f"{filename} has {ds.input_dim} input columns; this page plots f(x) for one "
                         "input column x (give two columns: x, y)")
    return ds


# --- models ---------------------------------------------------------------------------------

def active_methods(s: LinearizedSettings, forward):
    """(methods to run, methods refused): Taylor needs a differentiable g (EGP eq. 36)."""
    chosen = [m for m in METHODS if m in s.methods]
    if forward.differentiable:
        return chosen, []
    return [m for m in chosen if FAMILY[m][1] != "taylor"], [m for m in chosen if FAMILY[m][1] == "taylor"]


def shared_parameters(s: LinearizedSettings) -> dict:
    """The sliders' hyperparameters (the same for every method)."""
    return {"variance": float(s.variance), "lengthscale": float(s.lengthscale),
            "noise_variance": float(s.noise_variance)}


def n_features(s: LinearizedSettings) -> int:
    """D rounded down to even: the features come in cos/sin pairs (EKS eq. 6)."""
    return max(2, int(s.n_features) - int(s.n_features) % 2)


def build_model(method, data: LabData, forward, s: LinearizedSettings, params=None):
    """An unfitted model of ``method`` at ``params`` (default: the sliders).

    For EKS / UKS the kernel variance is the weight prior variance omega^2 (EKS eq. 7) and the
    lengthscale that of the random features (EKS eq. 10)."""
    p = params or shared_parameters(s)
    family, linearization = FAMILY[method]
    if family == "gp":
        kernel = kernels.KERNELS[s.kernel](variance=p["variance"], lengthscale=p["lengthscale"])
        inner_loop = s.ugp_inner_loop if linearization == "unscented" else "map-search"
        return LinearizedGP(data.X, data.y, forward=forward, linearization=linearization, kernel=kernel,
                            noise_variance=p["noise_variance"], kappa=s.kappa, max_iter=s.max_iter,
                            inner_loop=inner_loop)
    return LinearizedKitchenSinks(data.X, data.y, forward=forward, linearization=linearization,
                                  n_features=n_features(s), kernel=s.kernel, lengthscale=p["lengthscale"],
                                  weight_variance=p["variance"], noise_variance=p["noise_variance"],
                                  kappa=s.kappa, seed=s.feature_seed, max_iter=s.max_iter)


def model_parameters(model) -> dict:
    """{variance, lengthscale, noise_variance} of either model family (EKS: omega^2 as variance)."""
    p = model.parameters
    if "weight_variance" in p:
        return {"variance": float(np.ravel(p["weight_variance"])[0]),
                "lengthscale": float(np.ravel(p["lengthscale"])[0]),
                "noise_variance": float(np.ravel(p["noise_variance"])[0])}
    return {k: float(np.ravel(p[k])[0]) for k in ("variance", "lengthscale", "noise_variance")}


def fit_context(s: LinearizedSettings) -> tuple:
    return tuple(getattr(s, name) for name in FIT_CONTEXT)


def snapshot(s: LinearizedSettings) -> LinearizedSettings:
    """An independent copy of the settings a computation needs (x0, a view setting, excluded)."""
    return LinearizedSettings(**{name: getattr(s, name) for name in url_parameters() if name != "x0"})


def to_json(s: LinearizedSettings, fitted=None) -> str:
    """The state as JSON: every setting and, after learning, each method's hyperparameters."""
    state = {"settings": json.loads(s.param.serialize_parameters(subset=url_parameters()))}
    if fitted:
        state["learnt"] = {m: {k: v for k, v in learnt.items() if k != "model"} for m, learnt in fitted.items()}
    return json.dumps(state, indent=1)


# --- evaluation: inner loops, predictions, metrics, close-up -------------------------------

@dataclass(eq=False)
class MethodResult:
    """One method at fixed hyperparameters: its posterior on the grid and how it got there.

    ``mean_f``/``var_f``: q(f*) (EGP eq. 38, EKS eq. 35-36); ``mean_y``/``var_y``: the predicted
    observation including the noise (eq. 39 or 40); ``trace``: the Gauss-Newton iterations
    (IterationRecord: MAP objective eq. 31, step length, cuts, status); ``free_energy``: EGP
    eq. 41 or EKS eq. 20; ``status``: "converged", "diverged" (the step search's 'diverge'
    condition, section 2.5) or "max_iter"; ``error`` instead of all that when the model failed.
    """

    method: str
    params: dict
    model: object = None
    mean_f: np.ndarray | None = None
    var_f: np.ndarray | None = None
    mean_y: np.ndarray | None = None
    var_y: np.ndarray | None = None
    trace: list = None
    status: str = ""
    free_energy: float = float("nan")
    map_objective: float = float("nan")
    metrics: dict = None
    seconds: float = 0.0
    error: str | None = None


def observation_moments(forward, mean_f, var_f, how="quadrature", kappa=0.5, noise_variance=0.0,
                        n_nodes=40):
    """Mean and variance of y* = g(f*) + eps under f* ~ N(mean_f, var_f) (each (G,)).

    "quadrature": Gauss-Hermite with ``n_nodes`` nodes (EGP eq. 39, the variance likewise);
    "unscented": the three sigma points m*, m* +- sqrt((1 + kappa) C*) with the weights of eq. 26
    (EGP eq. 40). The same arithmetic as ``LinearizedGP.predict_y``, applied to q(f*) the page
    has already computed, so every method's y* is predicted the same way (the tests compare).
    """
    if how == "quadrature":
        nodes, weights = np.polynomial.hermite_e.hermegauss(n_nodes)
        weights = weights / weights.sum()
    elif how == "unscented":
        weights = linearization.sigma_point_weights(1, kappa)
        nodes = np.array([0.0, 1.0, -1.0]) * np.sqrt(1.0 + kappa)
    else:
        raise ValueError(f"y prediction must be 'quadrature' (eq. 39) or 'unscented' (eq. 40); got {how!r}")
    F = mean_f[:, None] + np.sqrt(var_f)[:, None] * nodes[None, :]
    G = np.asarray(forward.value(F.reshape(-1, 1)), dtype=float).reshape(F.shape)
    mean = G @ weights
    var = ((G - mean[:, None]) ** 2) @ weights
    return mean, np.maximum(var, 0.0) + noise_variance


def _status(model):
    if model.diverged:
        return "diverged"
    return "converged" if model.converged else "max_iter"


def _metrics(data: LabData, mean_f, var_f, mean_y):
    """NLPD and SMSE of f* and SMSE of y* on the toy problem's test points (EGP paper Table 1)."""
    if data.test is None or data.test.size < 2:
        return {}
    t, f = data.test, data.f_true[data.test]
    return {"nlpd_f": metrics.nlpd(f, mean_f[t], np.maximum(var_f[t], 1e-300)),
            "smse_f": metrics.smse(f, mean_f[t]), "smse_y": metrics.smse(data.y_grid[t], mean_y[t])}


def evaluate(method, data: LabData, forward, s: LinearizedSettings, params=None, model=None) -> MethodResult:
    """Inner loop only (posterior at fixed hyperparameters), then predictions and metrics.

    Starts every time from the prior, so a URL always reproduces the same picture; a ``model``
    whose posterior is already computed (a learnt one) is shown as it is. Any numerical failure
    becomes ``error`` (shown in the page), never an exception."""
    p = dict(params or shared_parameters(s))
    t0 = time.perf_counter()
    try:
        with np.errstate(all="ignore"):  # thread-local; warnings.catch_warnings would not be
            if model is None:
                model = build_model(method, data, forward, s, p)
                model.fit_posterior()
            mean_f, var_f = (np.ravel(a) for a in model.predict_f(data.grid[:, None]))
            mean_y, var_y = observation_moments(forward, mean_f, var_f, s.y_prediction, s.kappa,
                                                p["noise_variance"])
            result = MethodResult(method, p, model, mean_f, var_f, mean_y, var_y, list(model.trace),
                                  _status(model), float(model.free_energy()), float(model.map_objective()))
            if not all(np.all(np.isfinite(a)) for a in (mean_f, var_f, mean_y, var_y)):
                raise FloatingPointError("predictions are not finite (g overflows over the posterior)")
            result.metrics = _metrics(data, mean_f, var_f, mean_y)
    except (ValueError, FloatingPointError, ArithmeticError, np.linalg.LinAlgError) as err:
        return MethodResult(method, p, error=f"{LABELS[method]} failed: {err}", seconds=time.perf_counter() - t0)
    result.seconds = time.perf_counter() - t0
    return result


@dataclass(frozen=True)
class Closeup:
    """The linearisation a point at x0 gets from one method's posterior marginal N(m0, v0).

    Taylor (EGP eq. 36): the tangent of g at m0. Unscented (EGP eq. 37): the weighted least-squares
    line through the sigma points m0, m0 +- sqrt((1 + kappa) v0) (``points``/``values``/``weights``).
    At a training input this is the a_n, b_n of the converged inner loop."""

    method: str
    m0: float
    v0: float
    slope: float
    intercept: float
    points: np.ndarray
    values: np.ndarray
    weights: np.ndarray | None


def closeup(result: MethodResult, forward, x0, kappa) -> Closeup:
    mean, var = result.model.predict_f(np.array([[float(x0)]]))
    m0, v0 = float(np.ravel(mean)[0]), max(float(np.ravel(var)[0]), 0.0)
    if FAMILY[result.method][1] == "taylor":
        lin = linearization.taylor(forward, np.array([[m0]]))
        points, values, weights = np.array([m0]), lin.y_mean[0], None
    else:
        lin = linearization.unscented(forward, np.array([[m0]]), np.array([[v0]]), kappa=kappa)
        points, values, weights = lin.sigma_points[0, :, 0], lin.sigma_values[0, :, 0], lin.weights
    return Closeup(result.method, m0, v0, float(lin.A[0, 0, 0]), float(lin.b[0, 0]), points, values, weights)
