"""The black-box lab's data sets: coal-mining counts, breast cancer, two 1-D toys, an uploaded CSV.

The data come from their :mod:`gpexplorer.datasets` entries (``coal_mining``, ``breast_cancer``,
``toy_binary``, ``toy_gaussian``); this module splits, standardises and describes them for the page. Nothing
here touches Bokeh or runs inference.

Every loader returns a :class:`gpexplorer.variational.comparison.Problem`: training and test
arrays, the likelihood the data call for, where the 1-D views draw (``grid``) and a sentence
saying what was done to the data.
"""

from __future__ import annotations

import numpy as np

from gpexplorer import datasets
from gpexplorer.datasets.tables import COAL_EVENTS, COAL_PAPER_BINS as PAPER_BINS
from gpexplorer.ui.uploads import read_upload
from gpexplorer.variational.comparison import Problem

#: the years the page bins the coal-mining dates over (they run from 1851.20 to 1962.22); the
#: paper's set-up (Dezfouli & Bonilla 2015, sec. 6) is PAPER_BINS bins of 50 days
COAL_RANGE = (1851.0, 1963.0)
GRID_POINTS = 200
MAX_UPLOAD_ROWS = 2000
UPLOAD_TEST_FRACTION = 0.2


def coal(n_bins):
    """Counts of the 191 disasters in ``n_bins`` equal bins over 1851-1963; a bin's rate is
    binsize exp(f + offset) with offset log(191 / n_bins), the paper's choice (log(191/811))."""
    ds = datasets.coal_mining(int(n_bins), span=COAL_RANGE)
    dates, width = ds.meta["dates"], ds.meta["bin_years"]
    X, Y = ds.X, ds.y[:, None]
    note = (f"{len(dates)} coal-mining disasters (Jarrett 1979) counted in {n_bins} bins of {365.25 * width:.0f} days; "
            f"the paper uses {PAPER_BINS} bins of 50 days; fewer bins here by default, for a fit of a few "
            f"seconds. Rate per bin exp(f + log({COAL_EVENTS}/{n_bins})); metrics on the training bins.")
    return Problem("coal", X, Y, X, Y, "count", "poisson", note, grid=np.linspace(*COAL_RANGE, GRID_POINTS),
                   options={"offset": ds.meta["offset"]}, lengthscale=10.0, x_label="year",
                   test_label="training bins", extra={"bin_years": width, "dates": np.asarray(dates)})


def _split(n, n_train, seed):
    order = np.random.default_rng((int(seed), 0xB1AC)).permutation(n)
    n_train = int(min(max(n_train, 2), n - 1))
    return np.sort(order[:n_train]), np.sort(order[n_train:])


def _standardise(X, rows):
    mu, sd = X[rows].mean(0), X[rows].std(0)
    return (X - mu) / np.where(sd > 0, sd, 1.0)


def cancer(n_train, seed):
    """Breast cancer Wisconsin (diagnostic), 569 x 30, target 1 = benign; standardised with the
    training rows' means and sds; ``n_train`` random rows train, the rest test."""
    ds = datasets.breast_cancer()
    names, X, y = ds.meta["features"], ds.X, ds.y[:, None]
    train, test = _split(len(y), n_train, seed)
    X = _standardise(X, train)
    note = (f"Breast cancer Wisconsin (diagnostic, scikit-learn copy): 569 x 30, {len(train)} training and "
            f"{len(test)} test rows, inputs standardised. A substitute for the paper's 9-feature UCI breast-cancer "
            "set, which is not available offline.")
    return Problem("cancer", X[train], y[train], X[test], y[test], "binary", "bernoulli_logit", note,
                   lengthscale=float(np.sqrt(X.shape[1])), x_label="test point (ordered by predicted f)",
                   extra={"features": names})


def toy_binary(n_train, seed):
    """The ``toy_binary`` data set: x ~ U(-3, 3), y ~ Bernoulli(sigmoid(2.5 sin 1.5x))."""
    ds = datasets.toy_binary(int(n_train), seed)
    grid = np.linspace(-3.2, 3.2, GRID_POINTS)
    note = (f"1-D binary toy: {n_train} points, x ~ U(-3, 3), y ~ Bernoulli(sigmoid(2.5 sin 1.5x)); "
            "500 test points from the same distribution.")
    return Problem("toy_binary", ds.X, ds.y[:, None], ds.X_test, ds.y_test[:, None], "binary", "bernoulli_logit",
                   note, grid=grid, extra={"f_true": ds.meta["f"](grid)})


def toy_gaussian(n_train, seed):
    """The ``toy_gaussian`` data set: y = sin(3x) + 0.3 cos(7x) + N(0, 0.2^2) on x in (0, 6)."""
    ds = datasets.toy_gaussian(int(n_train), seed)
    grid = np.linspace(-0.2, 6.2, GRID_POINTS)
    note = f"1-D Gaussian toy: {n_train} points, y = sin 3x + 0.3 cos 7x + N(0, 0.2^2); 300 test points."
    return Problem("toy_gaussian", ds.X, ds.y[:, None], ds.X_test, ds.y_test[:, None], "real", "gaussian", note,
                   grid=grid, lengthscale=0.5, extra={"f_true": ds.meta["f"](grid)})


def parse_upload(contents, filename="upload.csv"):
    """An uploaded CSV (inputs first, target last) as a Dataset; ValueError says what is wrong."""
    ds = read_upload(contents, filename, MAX_UPLOAD_ROWS, min_rows=5)
    if ds.input_dim > 50:
        raise ValueError(f"{filename} has {ds.input_dim} input columns; this page takes at most 50")
    return ds


def kind_of(y):
    """"binary" for 0/1 (or -1/1) targets, "count" for non-negative integers, else "real"."""
    values = set(np.unique(y).tolist())
    if values <= {0.0, 1.0} or values <= {-1.0, 1.0}:
        return "binary"
    if np.all(y >= 0) and np.all(y == np.round(y)):
        return "count"
    return "real"


DEFAULT_LIKELIHOOD = {"binary": "bernoulli_logit", "count": "poisson", "real": "gaussian"}


def uploaded(ds, seed):
    """An uploaded Dataset: 80 % train, 20 % test (all of it for both below 20 rows); 1-D inputs
    are drawn over a grid, N-D ones as ordered test points; inputs standardised."""
    X, y = np.asarray(ds.X, float), np.asarray(ds.y, float)[:, None]
    kind = kind_of(y)
    if kind == "binary" and y.min() < 0:
        y = (y > 0).astype(float)
    if len(y) >= 20:
        train, test = _split(len(y), int(round((1 - UPLOAD_TEST_FRACTION) * len(y))), seed)
        label = "held-out 20 %"
    else:
        train = test = np.arange(len(y))
        label = "training rows (fewer than 20 rows)"
    X = _standardise(X, train)
    grid = None
    if X.shape[1] == 1:
        lo, hi = float(X[:, 0].min()), float(X[:, 0].max())
        pad = 0.05 * max(hi - lo, 1e-9)
        grid = np.linspace(lo - pad, hi + pad, GRID_POINTS)
    note = (f"Uploaded {ds.name}: {ds.n} rows, {ds.input_dim} input column(s), {kind} target; "
            f"inputs standardised; metrics on the {label}.")
    return Problem("upload", X[train], y[train], X[test], y[test], kind, DEFAULT_LIKELIHOOD[kind], note, grid=grid,
                   lengthscale=1.0 if X.shape[1] == 1 else float(np.sqrt(X.shape[1])),
                   x_label="x (standardised)" if grid is not None else "test point (ordered by predicted f)",
                   test_label=label)


def load(dataset, n_bins=100, n_train=150, seed=0, upload=None):
    """The Problem for a dataset name (``upload``: the parsed Dataset, ValueError without one)."""
    if dataset == "coal":
        return coal(n_bins)
    if dataset == "cancer":
        return cancer(n_train, seed)
    if dataset == "toy_binary":
        return toy_binary(n_train, seed)
    if dataset == "toy_gaussian":
        return toy_gaussian(n_train, seed)
    if dataset == "upload":
        if upload is None:
            raise ValueError("no CSV uploaded yet: choose a file (input columns first, the target last)")
        return uploaded(upload, seed)
    raise ValueError(f"unknown data set {dataset!r}")
