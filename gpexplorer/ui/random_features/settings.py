"""The random-features lab's configuration as Param parameters.

One :class:`RandomFeaturesSettings` per session is the single source of truth: widgets are
generated from it (``pn.Param``), the URL mirrors it and the JSON export serialises it.
:func:`fit_options` and :func:`ard_options` take plain snapshots for the background fits. The bases
offered are the registry's (``gpexplorer.random_features.RANDOM_BASES``, a basis registered later
included). Nothing here touches Bokeh.
"""

from __future__ import annotations

import param

from gpexplorer.random_features.lab_backend import FIT_DEFAULTS, MAX_FEATURES, basis_choices
from gpexplorer.ui import url_state

#: which settings redraw what: the kernel views (at once), the four fits, the weight view, the ARD fit
KERNEL = ("basis", "lengthscale", "n_features", "seed", "x0", "dim")
MODEL = ("basis", "seed", "fit_features", "M", "components", "glm_steps", "iterations")
WEIGHTS = ("weights_auto", "weight_i", "weight_j")
ARD = ("basis", "seed", "ard_features", "ard_iterations")
#: settings counting features: even (cos / sin pairs)
EVEN = ("n_features", "fit_features", "ard_features")


class RandomFeaturesSettings(param.Parameterized):
    """Everything a user can set on the random-features lab."""

    basis = param.Selector(default="rbf", objects=basis_choices(), label="Basis (kernel)",
                           doc="Random features phi(x) whose inner products estimate a kernel (revrand's bases)")
    lengthscale = param.Number(default=0.7, bounds=(0.01, 100.0), softbounds=(0.05, 3.0), label="Lengthscale",
                               doc="Lengthscale of the kernel and of its features (the estimate's views)")
    n_features = param.Integer(default=100, bounds=(2, MAX_FEATURES), step=2, label="D (features)",
                               doc="Columns of Phi: D/2 random frequencies, a cos and a sin each (even)")
    seed = param.Integer(default=0, bounds=(0, 10_000), label="Seed",
                         doc="Seed of the frequency draws (the estimate's views and the models' features)")
    x0 = param.Number(default=0.0, bounds=(-3.0, 3.0), label="x0 (slice)", doc="Where the slice k(x0, x) is taken")
    dim = param.Integer(default=1, bounds=(1, 16), label="d (inputs of the error curve)",
                        doc="Input dimension of the error curve: orthogonal features differ from plain ones for d > 1")
    fit_features = param.Integer(default=FIT_DEFAULTS["n_features"], bounds=(2, 2000), step=2,
                                 label="D (features of the SLM and GLM)",
                                 doc="Features of the SLM and GLM (the same draw for both; even)")
    M = param.Integer(default=FIT_DEFAULTS["M"], bounds=(2, 100), label="M (VFE inducing points)",
                      doc="Inducing points of VFE, placed by k-means and then optimised")
    components = param.Integer(default=FIT_DEFAULTS["components"], bounds=(1, 20), label="K (GLM components)",
                               doc="Diagonal Gaussians in the GLM's mixture q(w)")
    glm_steps = param.Integer(default=FIT_DEFAULTS["glm_steps"], bounds=(50, 5000), label="GLM Adam steps",
                              doc="Adam steps on the GLM's bound (learning rate 0.05)")
    iterations = param.Integer(default=FIT_DEFAULTS["iterations"], bounds=(10, 1000),
                               label="L-BFGS-B iterations (GP, VFE, SLM)",
                               doc="Most iterations of the exact GP's, VFE's and the SLM's fits")
    weights_auto = param.Boolean(default=True, label="the two weights that spread most",
                                 doc="Show the two weights whose component means differ most, or the two chosen")
    weight_i = param.Integer(default=0, bounds=(0, 1999), label="Weight i", doc="First weight shown (feature number)")
    weight_j = param.Integer(default=1, bounds=(0, 1999), label="Weight j", doc="Second weight shown (feature number)")
    ard_features = param.Integer(default=200, bounds=(20, 1000), step=2, label="D (ARD features)",
                                 doc="Features of the ARD model on Boston housing (even)")
    ard_iterations = param.Integer(default=200, bounds=(10, 1000), label="ARD iterations",
                                   doc="Most L-BFGS-B iterations of the ARD fit")

    def __init__(self, **values):
        type(self).param.basis.objects = basis_choices()  # a basis registered after import is offered
        super().__init__(**values)

    @param.depends("weights_auto", watch=True, on_init=True)
    def _weight_controls(self):
        order = url_parameters()
        for name in ("weight_i", "weight_j"):
            self.param[name].precedence = -1 if self.weights_auto else 1 + order.index(name)


def control_groups():
    """Parameter names of each control panel, in display order."""
    return {
        "Kernel estimate (redrawn at once)": ["basis", "lengthscale", "n_features", "seed", "x0", "dim"],
        "Models (fitted in the background)": ["fit_features", "M", "components", "glm_steps", "iterations"],
        "GLM weight space": ["weights_auto", "weight_i", "weight_j"],
        "ARD on Boston housing": ["ard_features", "ard_iterations"],
    }


def url_parameters():
    """Settings mirrored in the URL (all of them)."""
    return url_state.grouped_names(control_groups())



def fit_options(s):
    """A plain snapshot of what the four fits need (``lab_backend.fit_models``' options)."""
    return {"n_features": int(s.fit_features), "seed": int(s.seed), "M": int(s.M), "components": int(s.components),
            "glm_steps": int(s.glm_steps), "iterations": int(s.iterations)}


def ard_options(s):
    return {"n_features": int(s.ard_features), "seed": int(s.seed), "iterations": int(s.ard_iterations)}


def fit_context(s):
    """The settings the four fits belong to: fits of another context are stale."""
    return tuple(getattr(s, n) for n in MODEL)


def ard_context(s):
    return tuple(getattr(s, n) for n in ARD)


def weight_pick(s):
    """None (the two that spread most) or the chosen (i, j)."""
    return None if s.weights_auto else (int(s.weight_i), int(s.weight_j))


url_state.order_controls(RandomFeaturesSettings, url_parameters())
