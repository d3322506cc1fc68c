"""Predictive performance measures, following Rasmussen & Williams (2006), GPML.

Regression (GPML section 2.5, "An Example Application", pp. 22-23, where SMSE and MSLL are
defined for the robot-arm inverse-dynamics benchmark):

* ``rmse``  -- root mean squared error.
* ``smse``  -- standardized mean squared error: MSE / var(y_test), so the trivial predictor
  that outputs the test-target mean scores exactly 1.
* ``nlpd``  -- mean negative log predictive density, mean_i -log N(y_i; mu_i, s_i^2).
* ``msll``  -- mean standardized log loss: mean_i of [-log p(y_i | model)] minus
  [-log N(y_i; mean(y_train), var(y_train))]; 0 for the trivial model, negative is better.

Classification (the error rate and negative log probability reported in GPML section 3.7.3):

* ``error_rate`` -- fraction misclassified when predicting positive iff p > threshold.
* ``nlp``        -- mean negative log probability of the true class, p clipped to
  [1e-12, 1 - 1e-12].

All variances are predictive variances of y (i.e. including observation noise when that is what
the model predicts). Inputs of shape (N,) or (N, 1) are accepted.
"""

from __future__ import annotations

import numpy as np

__all__ = ["rmse", "smse", "nlpd", "msll", "error_rate", "nlp"]

_LOG_2PI = float(np.log(2.0 * np.pi))
_CLIP = 1e-12


def _vec(a, label: str) -> np.ndarray:
    try:
        arr = np.asarray(a, dtype=np.float64)
    except (TypeError, ValueError):
        raise ValueError(f"{label} must be numeric") from None
    if arr.ndim == 2 and arr.shape[1] == 1:
        arr = arr[:, 0]
    elif arr.ndim == 0:
        arr = arr.reshape(1)
    if arr.ndim != 1:
        raise ValueError(f"{label} must have shape (N,) or (N, 1); got {arr.shape}")
    if arr.size == 0:
        raise ValueError(f"{label} is empty")
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{label} contains {int(np.sum(~np.isfinite(arr)))} NaN/inf value(s)")
    return arr


def _same_length(**arrays: np.ndarray) -> None:
    lengths = {k: v.shape[0] for k, v in arrays.items()}
    if len(set(lengths.values())) > 1:
        desc = ", ".join(f"{k} has {n}" for k, n in lengths.items())
        raise ValueError(f"length mismatch: {desc}")


def _positive(var: np.ndarray, label: str = "var") -> None:
    if np.any(var <= 0):
        raise ValueError(f"{label} must be strictly positive; {int(np.sum(var <= 0))} value(s) "
                         f"are <= 0 (min {float(var.min()):.3g})")


def _neg_log_normal(y: np.ndarray, mean: np.ndarray, var) -> np.ndarray:
    """Pointwise -log N(y; mean, var) = 0.5 log(2 pi var) + (y - mean)^2 / (2 var)."""
    return 0.5 * (_LOG_2PI + np.log(var)) + 0.5 * (y - mean) ** 2 / var


def rmse(y, mean) -> float:
    """Root mean squared error sqrt(mean_i (y_i - mu_i)^2)."""
    y, mean = _vec(y, "y"), _vec(mean, "mean")
    _same_length(y=y, mean=mean)
    return float(np.sqrt(np.mean((y - mean) ** 2)))


def smse(y, mean) -> float:
    """Standardized MSE (GPML section 2.5): mean_i (y_i - mu_i)^2 / np.var(y).

    The normaliser is the (population, ddof=0) variance of the test targets, so predicting the
    test-target mean everywhere gives exactly 1.
    """
    y, mean = _vec(y, "y"), _vec(mean, "mean")
    _same_length(y=y, mean=mean)
    vy = float(np.var(y))
    if not vy > 0:
        raise ValueError("smse is undefined: the test targets y have zero variance")
    return float(np.mean((y - mean) ** 2) / vy)


def nlpd(y, mean, var) -> float:
    """Mean negative log predictive density, mean_i -log N(y_i; mu_i, var_i) (GPML section 2.5)."""
    y, mean, var = _vec(y, "y"), _vec(mean, "mean"), _vec(var, "var")
    _same_length(y=y, mean=mean, var=var)
    _positive(var)
    return float(np.mean(_neg_log_normal(y, mean, var)))


def msll(y, mean, var, y_train) -> float:
    """Mean standardized log loss (GPML section 2.5, p. 23).

    SLL_i = -log p(y_i | D, x_i) - [-log N(y_i; mean(y_train), var(y_train))], averaged over
    test points; var(y_train) is np.var (ddof=0). Zero for the trivial model, negative is better.
    """
    y, mean, var = _vec(y, "y"), _vec(mean, "mean"), _vec(var, "var")
    y_train = _vec(y_train, "y_train")
    _same_length(y=y, mean=mean, var=var)
    _positive(var)
    v0 = float(np.var(y_train))
    if not v0 > 0:
        raise ValueError("msll is undefined: y_train has zero variance (need at least 2 "
                         "distinct training targets)")
    m0 = float(np.mean(y_train))
    return float(np.mean(_neg_log_normal(y, mean, var) - _neg_log_normal(y, m0, v0)))


def _labels01(labels) -> np.ndarray:
    lab = _vec(labels, "labels")
    values = set(np.unique(lab).tolist())
    if values <= {0.0, 1.0}:
        return lab.astype(bool)
    if values <= {-1.0, 1.0}:
        return lab > 0
    raise ValueError(f"labels must all be in {{0, 1}} or all in {{-1, +1}}; found values "
                     f"{sorted(values)[:6]}")


def _probs(p) -> np.ndarray:
    p = _vec(p, "prob_positive")
    if np.any((p < 0) | (p > 1)):
        raise ValueError(f"prob_positive must lie in [0, 1]; got range "
                         f"[{float(p.min()):.3g}, {float(p.max()):.3g}]")
    return p


def error_rate(labels, prob_positive, threshold: float = 0.5) -> float:
    """Fraction of points misclassified when predicting the positive class iff p > threshold.

    ``labels`` are all in {0, 1} or all in {-1, +1} (GPML section 3.7.3 reports this error rate).
    """
    lab, p = _labels01(labels), _probs(prob_positive)
    _same_length(labels=lab, prob_positive=p)
    if not 0.0 <= threshold <= 1.0:
        raise ValueError(f"threshold must lie in [0, 1]; got {threshold}")
    return float(np.mean((p > threshold) != lab))


def nlp(labels, prob_positive) -> float:
    """Mean negative log probability of the true class, -mean_i log p(y_i | x_i).

    ``prob_positive`` is clipped to [1e-12, 1 - 1e-12] so confident mistakes cost about 27.6 nats
    rather than infinity.
    """
    lab, p = _labels01(labels), _probs(prob_positive)
    _same_length(labels=lab, prob_positive=p)
    p = np.clip(p, _CLIP, 1.0 - _CLIP)
    return float(np.mean(-np.log(np.where(lab, p, 1.0 - p))))
