"""The black-box lab's two seeded 1-D toys (Dezfouli & Bonilla 2015 use such toys to show the
posteriors side by side): a binary classification problem and a Gaussian regression problem.
``meta["f"]`` is the noise-free latent function, so a page can draw it on any grid.
"""

from __future__ import annotations

import numpy as np

from gpexplorer.datasets.arrays import Dataset

__all__ = ["toy_binary", "toy_gaussian"]


def _binary_f(x):
    return 2.5 * np.sin(1.5 * x)


def _gaussian_f(x):
    return np.sin(3 * x) + 0.3 * np.cos(7 * x)


def toy_binary(n: int = 150, seed: int = 0) -> Dataset:
    """1-D classification: x ~ U(-3, 3), f(x) = 2.5 sin(1.5 x), y ~ Bernoulli(sigmoid f), y in {0, 1};
    500 test points from the same distribution."""
    rng = np.random.default_rng((int(seed), 0x70B1))
    X = rng.uniform(-3.0, 3.0, (int(n), 1))
    X_test = rng.uniform(-3.0, 3.0, (500, 1))

    def draw(x):
        return (rng.uniform(size=len(x)) < 1.0 / (1.0 + np.exp(-_binary_f(x[:, 0])))).astype(np.float64)

    y = draw(X)
    return Dataset(X=X, y=y, X_test=X_test, y_test=draw(X_test), name="toy_binary",
                   meta={"provenance": f"synthetic, numpy default_rng(({int(seed)}, 0x70B1))",
                         "true_function": "P(y = 1 | x) = sigmoid(2.5 sin 1.5x)", "f": _binary_f,
                         "columns": ["x", "y"]})


def toy_gaussian(n: int = 150, seed: int = 0) -> Dataset:
    """1-D regression: x ~ U(0, 6), y = sin(3x) + 0.3 cos(7x) + N(0, 0.2^2); 300 test points evenly
    spaced on [0, 6] with the same noise."""
    rng = np.random.default_rng((int(seed), 0x7061))
    X = rng.uniform(0.0, 6.0, (int(n), 1))
    X_test = np.linspace(0.0, 6.0, 300)[:, None]
    y = _gaussian_f(X[:, 0]) + 0.2 * rng.standard_normal(len(X))
    y_test = _gaussian_f(X_test[:, 0]) + 0.2 * rng.standard_normal(len(X_test))
    return Dataset(X=X, y=y, X_test=X_test, y_test=y_test, name="toy_gaussian",
                   meta={"provenance": f"synthetic, numpy default_rng(({int(seed)}, 0x7061))",
                         "true_function": "sin(3x) + 0.3 cos(7x)", "noise_variance": 0.04, "f": _gaussian_f,
                         "columns": ["x", "y"]})
