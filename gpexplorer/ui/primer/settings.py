"""The primer lab's configuration as Param parameters.

One :class:`PrimerSettings` per session is the single source of truth: widgets are generated from
it (``pn.Param``), the URL mirrors it and the JSON export serialises it. The data points are a
setting too (``points``, "x:y" pairs; a tap, a drag or a removal rewrites it), so a link carries
them; no widget shows the text. :func:`kernel_for` turns the expression and the sliders into a
kernel, :func:`decode_points` / :func:`encode_points` the text into points and back. Nothing here
touches Bokeh.
"""

from __future__ import annotations

import numpy as np
import param

from gpexplorer.kernels.expression import MAX_LENGTH, parse_kernel
from gpexplorer.ui import url_state

#: the function plots' inputs: x in [-1, 4] on a 0.025 grid (the x1 / x2 sliders move on it)
GRID = np.linspace(-1.0, 4.0, 201)
GRID_STEP = 0.025
#: the inputs the kept functions of the filter are drawn at (coarser: 100,000 joint draws)
FILTER_GRID = np.linspace(-1.0, 4.0, 51)
N_PRIOR, N_POSTERIOR = 5, 3
#: the data points the page starts with (and "Default points" restores)
DEFAULT_X = (0.5, 1.0, 1.5, 2.2)
DEFAULT_Y = (-0.3, 0.4, 0.8, 0.3)
#: points a tap may add up to (every view stays at milliseconds: one factorisation of 500 x 500)
MAX_POINTS = 500
#: |y| a data point may have (the plots span a few units; this only refuses absurd values)
MAX_ABS_Y = 1000.0
#: the filter: prior draws per lengthscale and the lengthscales compared with the page's
FILTER_SAMPLES = 100_000
SHORT, LONG = 0.1, 3.0

#: the invariance view's image noise variance (the stamps' values are 1, -1 and 0.3)
IMAGE_NOISE = 0.01
#: which settings change what: the kernel (everything), the conditioning, the pair view, the bars
KERNEL = ("kernel", "lengthscale", "variance")
PRIOR = KERNEL + ("seed",)
FILTER = KERNEL + ("noise_variance", "tolerance", "seed", "points")


def encode_points(X, y):
    """The ``points`` text of data points: "x:y" pairs, four decimals, comma-separated."""
    return ",".join(f"{float(a):.4f}".rstrip("0").rstrip(".") + ":" + f"{float(b):.4f}".rstrip("0").rstrip(".")
                    for a, b in zip(X, y))


def decode_points(text):
    """(X, y) lists from a ``points`` text; ValueError naming the first bad pair. Numbers only (no
    expression is evaluated); x within the plotted inputs, |y| <= MAX_ABS_Y, at most MAX_POINTS."""
    text = (text or "").strip()
    if not text:
        return [], []
    pairs = text.split(",")
    if len(pairs) > MAX_POINTS:
        raise ValueError(f"{len(pairs)} data points; at most {MAX_POINTS} are allowed")
    X, y = [], []
    for k, pair in enumerate(pairs):
        parts = pair.split(":")
        try:
            a, b = (float(v) for v in parts) if len(parts) == 2 else (None, None)
        except ValueError:
            a = b = None
        if a is None or not (np.isfinite(a) and np.isfinite(b)):
            raise ValueError(f"data point {k + 1} ({pair.strip()[:30]!r}) is not a pair of numbers x:y")
        if not GRID[0] <= a <= GRID[-1] or abs(b) > MAX_ABS_Y:
            raise ValueError(f"data point {k + 1} ({a:g}, {b:g}) is outside x in [{GRID[0]:g}, {GRID[-1]:g}], "
                             f"|y| <= {MAX_ABS_Y:g}")
        X.append(a)
        y.append(b)
    return X, y





class PrimerSettings(param.Parameterized):
    """Everything a user can set on the primer page."""

    kernel = param.String(default="se", label="Kernel expression",
                          doc="Kernel names joined by + and *, e.g. se + periodic * linear")
    lengthscale = param.Number(default=0.7, bounds=(0.05, 5.0), step=0.01, label="Lengthscale",
                               doc="Lengthscale of every kernel in the expression that has one")
    variance = param.Number(default=1.0, bounds=(0.05, 5.0), step=0.01, label="Variance",
                            doc="Variance of every kernel in the expression")
    noise_variance = param.Number(default=0.01, bounds=(1e-4, 1.0), step=0.001, label="Noise variance",
                                  doc="Variance of the noise on y = f(x) + e")
    seed = param.Integer(default=0, bounds=(0, 100_000), label="Seed",
                         doc="Seed of the prior and posterior samples and of the filter (Resample: a new one)")
    x1 = param.Number(default=0.5, bounds=(-1.0, 4.0), step=GRID_STEP, label="x1",
                      doc="First input of the pair (f(x1), f(x2))")
    x2 = param.Number(default=1.5, bounds=(-1.0, 4.0), step=GRID_STEP, label="x2",
                      doc="Second input of the pair (f(x1), f(x2))")
    reverse = param.Boolean(default=False, label="Reverse order",
                            doc="Predict the points last to first: every bar changes, their sum does not")
    tolerance = param.Number(default=0.3, bounds=(0.02, 2.0), step=0.01, label="Filter tolerance",
                             doc="A prior draw is kept when every y_s is within this of the data")
    fix_x1 = param.Boolean(default=False, label="Fix f(x1)",
                           doc="Condition the prior on f(x1) = the value below, in both views")
    f_x1 = param.Number(default=1.0, bounds=(-3.0, 3.0), step=0.05, label="Value of f(x1)",
                        doc="The value f(x1) is fixed at when 'Fix f(x1)' is on")
    images = param.Integer(default=40, bounds=(5, 120), label="Images",
                           doc="Stamped 6 x 6 images that arrive one at a time in the invariance view")
    points = param.String(default="", label="Data points",
                          doc="The data points as x:y pairs, comma-separated (tap, drag or remove them on the plot)")


def control_groups():
    """Parameter names of each control panel, in display order."""
    return {
        "Prior": ["kernel", "lengthscale", "variance", "noise_variance", "seed"],
        "Two views of one Gaussian": ["x1", "x2", "fix_x1", "f_x1"],
        "Evidence and Occam's razor": ["reverse", "tolerance"],
        "Invariance (images)": ["images"],
    }


def url_parameters():
    """Settings mirrored in the URL (all of them; the data points last)."""
    return url_state.grouped_names(control_groups()) + ["points"]



def kernel_for(expression, lengthscale, variance):
    """The kernel ``expression`` names with every lengthscale and variance set to the sliders'
    (a composite's children by their prefixed names, ``0.lengthscale``, ``1.0.variance``, ...).
    ValueError with the parser's message for a refused expression."""
    if isinstance(expression, str) and len(expression) > MAX_LENGTH:
        raise ValueError(f"the kernel expression is {len(expression)} characters long; at most {MAX_LENGTH} "
                         "are allowed")
    kernel = parse_kernel(expression)
    values = {"lengthscale": float(lengthscale), "variance": float(variance)}
    chosen = {name: values[name.rsplit(".", 1)[-1]] for name in kernel.parameters
              if name.rsplit(".", 1)[-1] in values}
    if chosen:
        kernel.set_parameters(**chosen)
    return kernel


PrimerSettings.param.points.default = encode_points(DEFAULT_X, DEFAULT_Y)
url_state.order_controls(PrimerSettings, url_parameters())
