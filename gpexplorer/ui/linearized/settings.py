"""The linearised-inference lab's configuration as Param parameters, and the data it loads.

One :class:`LinearizedSettings` per session is the single source of truth: widgets are generated
from it (``pn.Param``), the URL query string mirrors it (``pn.state.location.sync``) and the JSON
export serialises it. The plain functions below turn settings into a forward model and a data
set (the EGP paper's toy inversion problem, section 4.1, or an uploaded CSV); the models, their
evaluation and learning are :mod:`gpexplorer.linearized.comparison`'s, which takes the plain
:class:`~gpexplorer.linearized.comparison.ComparisonSettings` that :func:`comparison_settings`
reads from here. Nothing here touches Bokeh, so the tests call it without a browser.
"""

from __future__ import annotations

import functools

import numpy as np
import param

from gpexplorer.datasets.toy_inversion import TOY_PRIOR_SD, toy_inversion
from gpexplorer.likelihoods.expressions import MAX_LENGTH as MAX_EXPRESSION_CHARS
from gpexplorer.likelihoods.expressions import check_on_range
from gpexplorer.likelihoods.forward_models import SCALAR_FORWARD_MODELS, get_forward_model
from gpexplorer.linearized.comparison import METHODS, ComparisonSettings, InversionProblem
from gpexplorer import kernels
from gpexplorer.random_features.fourier import fourier_kernels
from gpexplorer.ui.uploads import read_upload
from gpexplorer.ui import url_state

DEFAULTS = ComparisonSettings()
FORWARD_CHOICES = {**{name: name for name in SCALAR_FORWARD_MODELS}, "custom expression": "custom"}


def kernel_choices():
    """{label: name} of the registered kernels offered: those with a variance and a lengthscale (the
    sliders) and random Fourier features (EKS / UKS), on plain vector inputs."""
    return {cls.label: name for name, cls in fourier_kernels().items()
            if cls.has_lengthscale() and "variance" in cls.param_names and cls.input_shape is None}


KERNELS = kernel_choices()
DATASETS = {"Toy inversion (EGP paper 4.1)": "toy", "Uploaded CSV (x, y)": "upload"}
Y_PREDICTIONS = {"quadrature (eq. 39)": "quadrature", "unscented (eq. 40)": "unscented"}
TOY_POINTS = 1000  # EGP paper section 4.1: 1000 points on [-2 pi, 2 pi], train on N, test on the rest
CSV_GRID = 400
#: the GP methods are O(N^3) per Gauss-Newton step: at 3,000 rows a slider move re-runs the four
#: inner loops in about 7 s on a 2-core machine, at 20,000 rows one Cholesky alone takes minutes
MAX_UPLOAD_ROWS = 3000
#: characters the custom-expression box keeps (Panel's TextInput cuts a paste at 5,000 by default,
#: so a longer paste would be reported as 5,000 characters); the parser's limit is far lower
EXPRESSION_BOX_CHARS = 100_000
#: a typed g must be finite, with a finite slope, on +- this many prior standard deviations of f
CHECKED_SDS = 5.0
#: the checked range never gets narrower than +- CHECKED_SDS sd of the toy problem's latent prior
#: (TOY_PRIOR_SD), where the data's f lie

# which settings invalidate what: the data (and any fits), the inner loops, or one view only
STRUCTURAL = ("dataset", "n_train", "data_seed", "forward", "expression")
MODEL = ("methods", "kappa", "ugp_inner_loop", "kernel", "variance", "lengthscale", "noise_variance",
         "n_features", "feature_seed", "max_iter")
PREDICTION = ("y_prediction",)
CLOSEUP = ("x0",)
PROFILE = ("profile_parameter",)
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
    methods = param.ListSelector(default=list(METHODS), objects={spec.label: m for m, spec in METHODS.items()},
                                 doc="Methods shown side by side")
    kappa = param.Number(default=DEFAULTS.kappa, bounds=(-0.9, 10.0), softbounds=(-0.9, 3.0), label="κ (unscented spread)",
                         doc="Unscented spread κ (eq. 26): sigma points at m ± √((1 + κ) C)")
    ugp_inner_loop = param.Selector(
        default=DEFAULTS.ugp_inner_loop,
        objects={"MAP step search (paper)": "map-search", "fixed point": "fixed-point"},
        label="UGP inner loop",
        doc="UGP posterior: the paper's Gauss-Newton loop with the step search on the MAP objective (eq. 31), "
            "or the fixed point of its statistical linearisation (smooth free energy, about 3x the cost)")
    y_prediction = param.Selector(default=DEFAULTS.y_prediction, objects=Y_PREDICTIONS, label="Predicted y by",
                                  doc="How the predicted y is computed from q(f*)")
    kernel = param.Selector(default=DEFAULTS.kernel, objects=KERNELS, doc="Covariance function")
    variance = param.Number(default=DEFAULTS.variance, bounds=(1e-4, 1e3), softbounds=(0.01, 4.0),
                            doc="Signal variance")
    lengthscale = param.Number(default=DEFAULTS.lengthscale, bounds=(1e-3, 1e3), softbounds=(0.05, 5.0),
                               doc="Lengthscale")
    noise_variance = param.Number(default=DEFAULTS.noise_variance, bounds=(1e-6, 1e3), softbounds=(1e-4, 1.0),
                                  doc="Likelihood noise variance σ²")
    n_features = param.Integer(default=DEFAULTS.n_features, bounds=(10, 1000), step=2, label="D (random features)",
                               doc="D, number of random Fourier features of EKS/UKS (even)")
    feature_seed = param.Integer(default=DEFAULTS.feature_seed, bounds=(0, 10_000), doc="Seed of the random features")
    max_iter = param.Integer(default=DEFAULTS.max_iter, bounds=(1, 500), softbounds=(1, 100),
                             label="Max GN iterations",
                             doc="Gauss-Newton iterations (max)")
    x0 = param.Number(default=0.0, bounds=(-2 * np.pi, 2 * np.pi), label="x0 (close-up)",
                      doc="Input of the linearisation close-up")
    max_evals = param.Integer(default=DEFAULTS.max_evals, bounds=(5, 2000), softbounds=(5, 500),
                              label="Max evaluations",
                              doc="Free-energy evaluations per method when learning hyperparameters")
    gp_search = param.Selector(
        default=DEFAULTS.gp_search,
        objects={"Fisher scoring (gradient)": "fisher", "COBYLA (derivative-free)": "cobyla"},
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

    def __init__(self, **values):
        type(self).param.kernel.objects = kernel_choices()  # a kernel registered after import is offered
        super().__init__(**values)

    @param.depends("kernel", watch=True, on_init=True)
    def _kernel_slider_ranges(self):
        """The variance and lengthscale sliders span the ranges the chosen kernel's specs give."""
        specs = kernels.KERNELS[self.kernel]().parameter_specs
        for name in ("variance", "lengthscale"):
            if specs[name].slider is not None:
                self.param[name].softbounds = specs[name].slider

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


def url_parameters():
    """Settings mirrored in the URL query string (all of them)."""
    return url_state.grouped_names(control_groups())


# --- forward model and data -----------------------------------------------------------------

def forward_model(s: LinearizedSettings):
    """The chosen g. A custom expression goes through the whitelist parser and must then be
    finite, with a finite slope, on :func:`checked_range` (ValueError saying what is wrong)."""
    if s.forward != "custom":
        return get_forward_model(s.forward)
    if not s.expression.strip():
        raise ValueError("the custom expression is empty: type g as an expression in f, e.g. f^3 + f")
    if len(s.expression) >= EXPRESSION_BOX_CHARS:  # the box cut a longer paste
        raise ValueError(f"the expression is too long (at least {EXPRESSION_BOX_CHARS:,} characters; "
                         f"the box keeps only that many and the limit is {MAX_EXPRESSION_CHARS:,})")
    forward = get_forward_model(s.expression)
    lower, upper = checked_range(s)
    sd = upper / CHECKED_SDS
    check_on_range(forward.expression, lower, upper,
                   where=f"the prior's ±{CHECKED_SDS:g} sd of f, sd {sd:.3g}, where the methods evaluate g")
    return forward


def unusable_expression(s: LinearizedSettings, results):
    """Why a typed g that passed :func:`checked_range`'s check cannot be used after all, or None:
    every shown method failed with it (the methods evaluate g beyond that range too, e.g. the
    predictions' Gauss-Hermite nodes up to 11.45 posterior sd from the mean). ``results``:
    method -> MethodResult of a trial run with g. A g that only some methods fail with is kept."""
    if s.forward != "custom" or not results or any(r.error is None for r in results.values()):
        return None
    reasons = sorted({r.error.split(" failed: ", 1)[-1] for r in results.values()})
    return (f"every method failed with g(f) = {s.expression.strip()} ({'; '.join(reasons)}): it is finite on the "
            "checked range of f but not everywhere the methods evaluate it")


def checked_range(s: LinearizedSettings):
    """The f range a custom g is checked on: +- CHECKED_SDS prior sd (the kernel variance
    slider's, or the toy problem's own when larger), where the inner loops start and move."""
    sd = max(float(np.sqrt(s.variance)), TOY_PRIOR_SD)
    return -CHECKED_SDS * sd, CHECKED_SDS * sd


@functools.lru_cache(maxsize=32)
def _toy_draw(forward_name, seed):
    """The paper's 1000-point problem for one forward model (a 1000 x 1000 Cholesky: cached)."""
    d = toy_inversion(get_forward_model(forward_name), seed=seed, n_points=TOY_POINTS)
    arrays = (d.X[:, 0].copy(), d.f.copy(), d.y.copy())
    for a in arrays:
        a.setflags(write=False)  # shared between sessions through the cache: never modified
    return arrays


def load_data(s: LinearizedSettings, forward, uploaded=None) -> InversionProblem:
    """The toy inversion problem for ``forward`` (y = g(f) + N(0, 0.2^2), EGP paper 4.1) with
    ``n_train`` random training points (the plots' grid is the paper's 1000 points, the other
    points are the test set), or the uploaded CSV (no true f, no test set)."""
    if s.dataset == "upload":
        if uploaded is None:
            raise ValueError("no CSV uploaded yet: choose a file with columns x, y")
        x = uploaded.X[:, 0]
        lo, hi = float(x.min()), float(x.max())
        pad = 0.05 * max(hi - lo, 1e-9)
        return InversionProblem(uploaded.X, uploaded.y, np.linspace(lo - pad, hi + pad, CSV_GRID), uploaded.name)
    x, f, y = _toy_draw(forward.name, int(s.data_seed))
    order = np.random.default_rng((int(s.data_seed), 0x7EA1)).permutation(TOY_POINTS)
    train, test = np.sort(order[:s.n_train]), np.sort(order[s.n_train:])
    return InversionProblem(x[train, None], y[train], x, f"toy inversion, g = {forward.name}", f_true=f, y_grid=y,
                            test=test)


def parse_upload(contents: bytes, filename: str = "upload.csv"):
    """Validate an uploaded CSV into a 1-D Dataset; ValueError explains what is wrong."""
    ds = read_upload(contents, filename, MAX_UPLOAD_ROWS, min_rows=3)
    if ds.input_dim != 1:
        raise ValueError(f"{filename} has {ds.input_dim} input columns; this page plots f(x) for one "
                         "input column x (give two columns: x, y)")
    return ds


def comparison_settings(s: LinearizedSettings) -> ComparisonSettings:
    """The plain settings the comparison back end reads: an independent snapshot, so a worker
    never sees later edits."""
    return ComparisonSettings.from_object(s)


def fit_context(s: LinearizedSettings) -> tuple:
    """The settings that learnt hyperparameters belong to (see FIT_CONTEXT)."""
    return tuple(getattr(s, name) for name in FIT_CONTEXT)


def state_extras(fitted) -> dict:
    """What the JSON export holds besides the settings: each method's learnt hyperparameters."""
    if not fitted:
        return {}
    return {"learnt": {m: {k: v for k, v in learnt.items() if k != "model"} for m, learnt in fitted.items()}}
