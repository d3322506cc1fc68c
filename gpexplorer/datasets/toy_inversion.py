"""The toy inversion problems of the EGP paper (Steinberg & Bonilla 2014, section 4.1, Table 1) and
the EKS paper (section 7.1): a latent f drawn from a zero-mean GP (Matern 5/2, or squared
exponential for EKS; amplitude 0.8 i.e. variance 0.64, lengthscale 0.6) at 1000 points evenly
spaced on [-2 pi, 2 pi], observed through a forward model as y = g(f) + N(0, 0.2^2). Each forward
model gets its own latent draw, as in the original ``experiments/datagen.py``. The experiments'
folds are :func:`gpexplorer.experiments.linearized_papers.cv_folds`.
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass

import numpy as np

from gpexplorer.datasets.arrays import Dataset
from gpexplorer.linalg import jittered_cholesky

__all__ = ["TOY_N_POINTS", "TOY_NOISE_STD", "TOY_PRIOR_SD", "ToyData", "toy_inversion"]

TOY_N_POINTS, TOY_NOISE_STD = 1000, 0.2
#: the latent prior's amplitude (variance 0.8^2)
TOY_PRIOR_SD = 0.8


@dataclass(frozen=True, eq=False)
class ToyData(Dataset):
    """One toy inversion data set: ``X`` (N, 1), observations ``y`` (N,), the latent ``f`` (N,)
    they were drawn from, and how (``forward`` model name, ``latent_kernel``, ``seed``)."""

    f: np.ndarray | None = None
    forward: str = ""
    latent_kernel: str = "matern52"
    seed: int = 0


def toy_inversion(forward="sin", seed=0, n_points=TOY_N_POINTS, latent_kernel="matern52",
                  noise_std=TOY_NOISE_STD) -> ToyData:
    """EGP paper section 4.1 data for one forward model (a name or a forward-model object; seeded
    per model name).

    f ~ N(0, K) with K from ``latent_kernel`` ("matern52": EGP paper; "se": EKS section 7.1),
    variance 0.8^2, lengthscale 0.6, on ``n_points`` points evenly spaced in [-2 pi, 2 pi];
    y = g(f) + N(0, noise_std^2).
    """
    from gpexplorer import kernels
    from gpexplorer.likelihoods.forward_models import get_forward_model

    usable = [name for name, cls in kernels.KERNELS.items() if cls.has_lengthscale()]
    if latent_kernel not in usable:
        raise ValueError(f"latent_kernel must be a registered kernel with a lengthscale, one of {usable}; "
                         f"got {latent_kernel!r}")
    if isinstance(n_points, bool) or not isinstance(n_points, (int, np.integer)) or n_points < 2:
        raise ValueError(f"n_points must be an integer >= 2; got {n_points!r}")
    if not (np.isfinite(noise_std) and noise_std >= 0):
        raise ValueError(f"noise_std must be finite and >= 0; got {noise_std!r}")
    model = get_forward_model(forward)
    name = model.name
    rng = np.random.default_rng((int(seed), zlib.crc32(f"toy:{name}:{latent_kernel}".encode())))
    x = np.linspace(-2.0 * np.pi, 2.0 * np.pi, int(n_points))[:, None]
    K = kernels.KERNELS[latent_kernel](variance=0.64, lengthscale=0.6).K(x)
    L, _ = jittered_cholesky(K, 1e-10, what="the latent prior covariance", warn=False)
    f = L @ rng.standard_normal(int(n_points))
    y = model.value(f[:, None])[:, 0] + noise_std * rng.standard_normal(int(n_points))
    return ToyData(X=x, y=y, name="toy_inversion", f=f, forward=name, latent_kernel=latent_kernel, seed=int(seed),
                   meta={"provenance": "EGP paper (Steinberg & Bonilla 2014) section 4.1; regenerated with numpy "
                                       f"default_rng(({int(seed)}, crc32('toy:{name}:{latent_kernel}')))",
                         "true_function": f"y = {name}(f) + N(0, {noise_std:g}^2), f ~ GP({latent_kernel})",
                         "noise_std": float(noise_std), "columns": ["x", "y"]})
