"""The patches lab's configuration as Param parameters.

One :class:`PatchesSettings` per session is the single source of truth: widgets are generated
from it (``pn.Param``), the URL mirrors it and the JSON export serialises it. :func:`fit_options`
and :func:`digit_options` take plain snapshots for the background fits. Nothing here touches Bokeh.
"""

from __future__ import annotations

import param

from gpexplorer.convolutional_fits import DIGIT_DEFAULTS
from gpexplorer.inducing.patches import PATCH_INITIALISATIONS
from gpexplorer.ui import url_state

DATASETS = {"Rectangles (28x28 binary, tall vs wide)": "rectangles", "MNIST 0 vs 1": "mnist01"}
KERNELS = {"Convolutional": "conv", "Weighted convolutional": "weighted"}
RACE = ("se", "conv", "weighted", "weighted+se")
#: most training images per data set (the training splits' sizes)
N_TRAIN_MAX = {"rectangles": 1200, "mnist01": 800}
INITS = {"unique training patches": "unique", "random training patches": "random",
         "uniform U(0, 1)": "uniform", "k-means of patches": "kmeans"}

DATA = ("dataset", "n_train", "mnist_side")
MODEL = ("kernel", "patch", "M", "z_init", "iterations")
VIEW = ("image", "tile")
DIGITS = ("digit_train", "digit_M", "digit_steps")


class PatchesSettings(param.Parameterized):
    """Everything a user can set on the patches lab."""

    dataset = param.Selector(default="rectangles", objects=DATASETS, doc="Images to classify")
    n_train = param.Integer(default=200, bounds=(20, 1200), label="N train",
                            doc="Training images (the first N of the data set's training split)")
    mnist_side = param.Selector(default=14, objects=[14, 28], label="MNIST image side",
                                doc="MNIST average-pooled to 14 x 14 (fast) or at full 28 x 28 (the thesis'; "
                                    "the kernel's diagonal costs 3,300 times more patch pairs per image)")
    kernel = param.Selector(default="conv", objects=KERNELS, label="Kernel",
                            doc="f = (1/P) sum_p g(patch p), or with a learnt weight w_p per patch position")
    patch = param.Integer(default=3, bounds=(2, 7), label="Patch size (h = w)",
                          doc="Patches of h x h pixels (the thesis: 3 x 3 rectangles, 5 x 5 MNIST)")
    # 45 = U, every distinct 3 x 3 patch of the rectangles: Theorem 1's optimum, so the fit leaves the
    # patches where they are and they stay readable; at M = 16 (the thesis') they drift to values from
    # -2.6 to 3.7 and the ELBO ends 23 nats lower (200 images, 40 iterations, as fast)
    M = param.Integer(default=45, bounds=(2, 100), label="M (inducing patches)",
                      doc="Inducing patches (the thesis: 16 for the rectangles, 50 for MNIST 0 vs 1)")
    z_init = param.Selector(default="unique", objects=INITS, label="Inducing patches start at",
                            doc="Where the inducing patches start (Theorem 1: the unique patches are optimal)")
    iterations = param.Integer(default=40, bounds=(1, 500), label="Iterations",
                               doc="L-BFGS-B iterations over the kernel and Z, q(u) at its optimum at each "
                                   "(natural-gradient steps); also each fit of the race")
    image = param.Integer(default=0, bounds=(0, 199), label="Test image (contributions)",
                          doc="The test image whose patch contributions the heat map shows")
    tile = param.Integer(default=0, bounds=(0, 99), label="Inducing patch to edit",
                         doc="Which inducing patch the editor holds (its number, not its rank by mean)")
    digit_train = param.Integer(default=DIGIT_DEFAULTS["n_train"], bounds=(100, 4000), label="Digits: N train",
                                doc="Training images of the 10-class digit model (14 x 14 MNIST)")
    digit_M = param.Integer(default=DIGIT_DEFAULTS["M"], bounds=(5, 100), label="Digits: M",
                            doc="Inducing 5 x 5 patches of the digit model (shared by the ten classes)")
    digit_steps = param.Integer(default=DIGIT_DEFAULTS["steps"], bounds=(10, 3000), label="Digits: Adam steps",
                                doc="Minibatch Adam steps (batch 100) of the digit model's fit")

    def _show(self, name, visible):
        order = url_parameters()
        self.param[name].precedence = 1 + order.index(name) if visible else -1

    @param.depends("dataset", watch=True, on_init=True)
    def _data_controls(self):
        self._show("mnist_side", self.dataset == "mnist01")
        high = N_TRAIN_MAX.get(self.dataset, 1200)
        self.param.n_train.bounds = (20, high)
        if self.n_train > high:
            self.n_train = high


def control_groups():
    """Parameter names of each control panel, in display order."""
    return {
        "Data": ["dataset", "n_train", "mnist_side"],
        "Model": ["kernel", "patch", "M", "z_init", "iterations"],
        "Views": ["image", "tile"],
        "Digit model (drawing canvas)": ["digit_train", "digit_M", "digit_steps"],
    }


def url_parameters():
    """Settings mirrored in the URL (all of them)."""
    return url_state.grouped_names(control_groups())



def fit_options(s):
    """A plain snapshot of what a fit (the lab's model or the race) needs."""
    return {"M": int(s.M), "patch": int(s.patch), "init": s.z_init, "iterations": int(s.iterations), "seed": 0}


def digit_options(s):
    return {"n_train": int(s.digit_train), "M": int(s.digit_M), "steps": int(s.digit_steps)}


def fit_context(s):
    """The settings a fit belongs to: a fit of another context is stale."""
    return tuple(getattr(s, n) for n in DATA + MODEL)


def race_context(s):
    """The settings the race belongs to (all but the lab's own kernel choice)."""
    return tuple(getattr(s, n) for n in DATA + MODEL if n != "kernel")


url_state.order_controls(PatchesSettings, url_parameters())
