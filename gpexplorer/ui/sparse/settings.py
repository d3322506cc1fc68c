"""The sparse-regression lab's configuration as Param parameters.

Widgets are generated from these parameters (``pn.Param``), the URL query string mirrors them
(``pn.state.location.sync``) and the JSON export serialises them, so one object is the single
source of truth for what a user chose. Turning settings into a dataset, a kernel and initial
inducing inputs lives here too, as plain functions the tests call without a browser.
"""

from __future__ import annotations

import numpy as np
import param

from gpexplorer import datasets, inducing, kernels
from gpexplorer.inducing.placement import initial_inducing_inputs
from gpexplorer.sparse import objectives
from gpexplorer.sparse.comparison import APPROXIMATIONS, LABELS, ParameterSet
from gpexplorer.inducing import InducingFeature
from gpexplorer.ui.sparse import features
from gpexplorer.ui.sparse.features import FEATURE_SETTINGS, feature_choices, supports, uses
from gpexplorer.ui.uploads import read_upload
from gpexplorer.ui import url_state

DATASETS = {"Snelson (200)": "snelson", "Snelson-100": "snelson100", "mcycle": "mcycle",
            "1-D synthetic": "synthetic1d", "4-D problem (thesis 3.2.4)": "thesis4d",
            "Uploaded CSV": "upload"}


def kernel_choices():
    """{label: name} of the registered kernels the page offers: those with a lengthscale (the
    page's inputs are plain vectors, so no kernel that needs images)."""
    return kernels.KERNELS.choices(lambda cls: cls.has_lengthscale() and cls.input_shape is None)


def kernel_sliders():
    """Names of the sliders of the offered kernels' parameters, in registry order."""
    names = []
    for key in kernel_choices().values():
        names += [n for n in kernels.KERNELS[key].param_names if n not in names]
    return names


def hyperparameters():
    """The settings that are model hyperparameters (every kernel slider and the noise)."""
    return (*kernel_sliders(), "noise_variance")


KERNELS = kernel_choices()
MAX_UPLOAD_ROWS = 20_000
MAX_EXACT_N = 3000  # the exact GP is O(N^3); larger uploads are refused with a message
MAX_URL_INPUT = 1e6  # |inducing input| accepted from a URL

# parameters that define the problem: changing one discards fits and sweeps
STRUCTURAL = ("dataset", "n_points", "data_noise", "data_seed", "kernel", "M", "z_init", "seed", "feature", "C")
#: settings that edit the current inducing feature in place (no re-initialisation)
FEATURE_EDITS = ("feature_width", "feature_frequency")


#: the data controls and the datasets they act on; elsewhere they are hidden
DATA_CONTROLS = {"n_points": ("synthetic1d",), "data_noise": ("synthetic1d",), "data_seed": ("synthetic1d", "thesis4d")}


class LabSettings(param.Parameterized):
    """Everything a user can set on the sparse-regression page."""

    dataset = param.Selector(default="snelson", objects=DATASETS, doc="Data set to fit")
    n_points = param.Integer(default=200, bounds=(10, 2000), doc="N for the 1-D synthetic data")
    data_noise = param.Number(default=0.09, bounds=(1e-4, 1.0), step=1e-4, doc="Noise variance of the synthetic data")
    data_seed = param.Integer(default=0, bounds=(0, 10_000), doc="Seed of the synthetic data")
    kernel = param.Selector(default="se", objects=KERNELS, doc="Covariance function")
    variance = param.Number(default=1.0, bounds=(1e-4, 1e3), softbounds=(0.01, 5.0), doc="Signal variance")
    lengthscale = param.Number(default=0.5, bounds=(1e-3, 1e3), softbounds=(0.02, 5.0), doc="Lengthscale")
    alpha = param.Number(default=1.0, bounds=(1e-3, 1e3), softbounds=(0.05, 10.0), precedence=-1,
                         doc="Rational-quadratic shape")
    period = param.Number(default=1.0, bounds=(1e-3, 1e3), softbounds=(0.05, 10.0), precedence=-1,
                          doc="Period of the periodic kernel")
    noise_variance = param.Number(default=0.09, bounds=(1e-6, 1e3), softbounds=(1e-4, 2.0),
                                  doc="Likelihood noise variance")
    M = param.Integer(default=15, bounds=(1, 200), softbounds=(1, 60), doc="Number of inducing inputs")
    z_init = param.Selector(default="random", objects=["even", "random", "kmeans"],
                            doc="Initial placement of the inducing inputs")
    seed = param.Integer(default=0, bounds=(0, 10_000), doc="Seed for the initial inducing inputs")
    feature = param.Selector(default="points", objects=feature_choices(), label="Inducing features",
                             doc="What each inducing variable is (thesis ch. 4): a point, a bump (multiscale), a "
                                 "Gabor wavelet (time-frequency), a windowed sinusoid (frequency) or a sum of C deltas")
    C = param.Integer(default=3, bounds=(1, 20), precedence=-1, doc="Deltas per inducing feature (sum of deltas)")
    feature_width = param.Number(default=0.3, bounds=(1e-3, 20.0), softbounds=(0.01, 3.0), precedence=-1,
                                 label="Feature width", doc="Width (standard deviation) of the selected feature's "
                                 "window; shared by all time-frequency features; the spread of the deltas")
    feature_frequency = param.Number(default=1.0, bounds=(-100.0, 100.0), softbounds=(0.0, 10.0), precedence=-1,
                                     label="Feature frequency", doc="Angular frequency of the selected feature")
    selected_feature = param.Integer(default=0, bounds=(0, 199), precedence=-1, label="Selected feature",
                                     doc="The feature the width and frequency sliders and the position sweep act on")
    select_closest = param.Boolean(default=False, label="Select the closest pair after a fit",
                                   doc="When a fit ends, select the first of the two features whose u are most "
                                       "correlated under the prior (the position tab then sweeps it)")
    jitter = param.Selector(default=1e-6, objects={f"{v:.0e}": v for v in (1e-12, 1e-10, 1e-8, 1e-6, 1e-4, 1e-2)},
                            label="Kuu jitter",
                            doc="Added to Kuu's diagonal in every evaluation and fit (thesis 4.4.2: near-coincident "
                                "features need a tiny one; a larger one forbids them)")
    position_jitter = param.Selector(default=1e-6, objects={f"{v:.0e}": v for v in (1e-12, 1e-10, 1e-8, 1e-6, 1e-4,
                                                                                    1e-2, 1e-1)},
                                     label="Jitter (position sweep)",
                                     doc="Jitter on Kuu's diagonal for the bound-against-position curve (thesis fig. 4.4)")
    approximations = param.ListSelector(default=["exact", "fitc", "vfe"], objects={LABELS[a]: a for a in APPROXIMATIONS},
                                        doc="Approximations shown at once")
    band = param.Selector(default="y", objects={"±2σ of y": "y", "±2σ of f": "f"},
                          doc="What the shaded bands show")
    show_samples = param.Boolean(default=False, doc="Draw posterior samples of f")
    optimise_kernel = param.Boolean(default=True, doc="Optimise the kernel hyperparameters")
    optimise_noise = param.Boolean(default=True, doc="Optimise the noise variance")
    optimise_Z = param.Boolean(default=True, doc="Optimise the inducing inputs")
    restarts = param.Integer(default=0, bounds=(0, 10), doc="Random restarts per fit")
    max_iter = param.Integer(default=300, bounds=(1, 5000), softbounds=(1, 1000), doc="L-BFGS-B iterations")
    vfe_from_fitc = param.Boolean(default=False, label="VFE from FITC's optimum",
                                  doc="Start VFE from FITC's optimum (thesis 3.2.5)")
    sweep_max_M = param.Integer(default=30, bounds=(2, 200), softbounds=(2, 60), doc="Largest M of the sweep")
    inducing_inputs = param.List(default=[], item_type=float, precedence=-1,
                                 doc="Inducing inputs set by dragging (1-D); empty = initialise")
    split_of = param.Selector(default="vfe", objects=list(reversed(objectives.APPROXIMATIONS)),
                              doc="Approximation whose g/h split is drawn")

    def __init__(self, **values):
        _offer_registered(type(self))
        super().__init__(**values)

    @param.depends("dataset", watch=True, on_init=True)
    def _show_data_controls(self):
        """A data control is shown only for the datasets it acts on (issue 14 bug 4)."""
        for name, used_by in DATA_CONTROLS.items():
            self.param[name].precedence = 1 if self.dataset in used_by else -1

    @param.depends("feature", watch=True, on_init=True)
    def _show_feature_controls(self):
        for name in FEATURE_SETTINGS:
            self.param[name].precedence = 1 if name in uses(self.feature) else -1

    @param.depends("kernel", watch=True, on_init=True)
    def _show_kernel_parameters(self):
        """The chosen kernel's sliders, over the ranges its parameter specs give."""
        specs = kernels.KERNELS[self.kernel]().parameter_specs
        for name in kernel_sliders():
            self.param[name].precedence = 1 if name in specs else -1
            if name in specs and specs[name].slider is not None:
                self.param[name].softbounds = specs[name].slider


def _offer_registered(cls):
    """Point the kernel and feature selectors at the registries as they are now, and give every
    offered kernel parameter a slider (a kernel registered after import is offered too)."""
    cls.param.kernel.objects = kernel_choices()
    cls.param.feature.objects = feature_choices()
    for key in kernel_choices().values():
        kernel = kernels.KERNELS[key]()
        for name, spec in kernel.parameter_specs.items():
            if name not in cls.param:
                soft = spec.slider or (spec.lower, spec.upper)
                cls.param.add_parameter(name, param.Number(
                    default=float(np.mean(kernel.parameters[name])), bounds=(spec.lower, spec.upper), softbounds=soft,
                    precedence=-1, doc=f"{name} of the {kernels.KERNELS[key].label} kernel"))


def control_groups():
    """Parameter names of each control panel, in display order."""
    return {
        "Data": ["dataset", "n_points", "data_noise", "data_seed"],
        "Model": ["kernel", *kernel_sliders(), "noise_variance"],
        "Inducing inputs": ["M", "z_init", "seed", "feature", "C", "selected_feature", "feature_width",
                            "feature_frequency", "jitter"],
        "Show": ["approximations", "band", "show_samples", "split_of", "position_jitter"],
        "Optimisation": ["optimise_kernel", "optimise_noise", "optimise_Z", "restarts", "max_iter",
                         "vfe_from_fitc", "sweep_max_M", "select_closest"],
    }


def url_parameters():
    """Settings mirrored in the URL query string (all of them)."""
    return url_state.grouped_names(control_groups())


def make_kernel(s: LabSettings):
    cls = kernels.KERNELS[s.kernel]
    return cls(**{name: getattr(s, name) for name in cls.param_names})


def load_dataset(s: LabSettings, uploaded=None):
    """The chosen dataset; ``uploaded`` is the Dataset parsed from the user's CSV (or None)."""
    if s.dataset == "upload":
        if uploaded is None:
            raise ValueError("no CSV uploaded yet: choose a file with columns x..., y")
        return uploaded
    if s.dataset == "synthetic1d":
        return datasets.synthetic1d(n=s.n_points, noise_variance=s.data_noise, seed=s.data_seed)
    if s.dataset == "thesis4d":
        return datasets.thesis4d(seed=s.data_seed, n_train=400, n_test=400)
    if s.dataset == "mcycle":
        return datasets.mcycle(standardize=True)  # raw accelerations (-134..75 g) dwarf unit priors
    return datasets.load(s.dataset)


def parse_upload(contents: bytes, filename: str = "upload.csv"):
    """The sparse lab's upload: at most MAX_EXACT_N rows, since every view compares with the exact GP."""
    ds = read_upload(contents, filename, MAX_UPLOAD_ROWS, min_rows=2)
    if ds.n > MAX_EXACT_N:
        raise ValueError(f"{filename} has {ds.n} rows; the lab compares against the exact GP, "
                         f"so at most {MAX_EXACT_N} rows are accepted")
    return ds


def initial_Z(ds, s: LabSettings):
    return initial_inducing_inputs(ds.X, s.M, s.z_init, s.seed)


def shared_parameters(ds, s: LabSettings, feature) -> ParameterSet:
    """The sliders' hyperparameters with ``feature`` (an inducing feature, or inducing inputs [M, D])."""
    kernel = make_kernel(s)
    if ds.input_dim > 1:
        kernel.set_parameters(lengthscale=np.full(ds.input_dim, s.lengthscale))
    feature = feature.copy() if isinstance(feature, InducingFeature) else np.array(feature, dtype=float)
    return ParameterSet(kernel, s.noise_variance, feature, float(s.jitter))


def initial_feature(ds, s: LabSettings, Z):
    """The chosen feature type at inducing locations ``Z``; ValueError when it cannot be used here."""
    if not supports(s.feature, s.kernel):
        usable = [kernels.KERNELS[k].label for k in kernel_choices().values() if supports(s.feature, k)]
        raise ValueError(f"{inducing.FEATURES[s.feature].label} features have no covariances with the "
                         f"{kernels.KERNELS[s.kernel].label.lower()} kernel (thesis ch. 4); choose "
                         f"{' or '.join(usable) or 'another feature type'}, or inducing points")
    return features.build(s.feature, Z, s)


def adopt(s: LabSettings, p: ParameterSet):
    """Write fitted hyperparameters back into the settings (ARD lengthscales averaged)."""
    values = {"variance": float(p.kernel.variance), "noise_variance": float(p.noise_variance)}
    for name in p.kernel.param_names:
        values[name] = float(np.mean(getattr(p.kernel, name)))  # ARD lengthscales averaged
    values = {k: float(np.clip(v, *s.param[k].bounds)) for k, v in values.items()}
    s.param.update(values)


def fixed_names(s: LabSettings):
    out = []
    if not s.optimise_kernel:
        out.append("kernel")
    if not s.optimise_noise:
        out.append("noise_variance")
    if not s.optimise_Z:
        out.append("inducing")  # every parameter of the inducing feature
    return tuple(out)


def state_extras(Z=None, fitted=None) -> dict:
    """What the JSON export holds besides the settings: the current inducing inputs and any
    fitted parameters."""
    state = {}
    if Z is not None:
        state["Z"] = np.asarray(Z).tolist()
    if fitted:
        state["fitted"] = {name: {**{k: np.asarray(v).tolist() for k, v in p.kernel.parameters.items()},
                                  "noise_variance": p.noise_variance,
                                  **({} if p.inducing is None else
                                     {k: v.tolist() for k, v in p.inducing.parameters.items()})}
                           for name, p in fitted.items()}
    return state
