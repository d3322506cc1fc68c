"""Synthetic four-layer seismic survey for the joint inversion of EKS section 7.4.

The paper inverts an interpreted survey line of the Otway basin (113 sites, four reflectors):
from noisy two-way reflection times Y (N, P) at surface positions X it infers, per site, the
depth of each layer's bottom interface and each layer's seismic velocity (Q = 2P latent tasks),
with the forward model of EKS eq. 38,

    t_0 = 2 d_0 / v_0,      t_p = 2 (d_p - d_{p-1}) / v_p + t_{p-1}   (p > 0),

depths clipped to be at least as deep as the one above. That survey is not public, so
:func:`synthetic_survey` builds a stand-in with the same shape: a 1-D profile of ``n_sites``
sensors, layer thicknesses and velocities that vary smoothly along it (seeded draws of a GP
with a squared-exponential kernel), times from eq. 38 plus Gaussian noise.

Units: positions and depths in km, velocities in km/s, times in s (numbers of order one, so
the GP priors and the noise need no rescaling).

The survey also carries the prior the paper describes: "flat priors for each latent function
centred on average depths and velocities of each layer", i.e. constant prior means (the
generator's nominal depths and velocities) with stated standard deviations. Because depth and
velocity trade off (only h/v is observed per layer), the inversion is under-constrained; the
prior is what makes it well posed, and :func:`inversion_errors` compares the posterior with
the truth *and* with the prior it started from.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from gpexplorer.linalg import jittered_cholesky

__all__ = ["SeismicSurvey", "synthetic_survey", "two_way_times", "inversion_errors",
           "NOMINAL_THICKNESS", "NOMINAL_VELOCITY"]

#: nominal layer thicknesses (km) and velocities (km/s) of the synthetic four-layer model:
#: a sedimentary sequence getting thicker and faster with depth
NOMINAL_THICKNESS = (0.5, 0.6, 0.7, 0.8)
NOMINAL_VELOCITY = (1.8, 2.4, 3.0, 3.6)


@dataclass(frozen=True, eq=False)
class SeismicSurvey:
    """A synthetic survey line: truth, observations and the prior used to invert it.

    ``x`` (N, 1) sensor positions (km); ``depths`` (N, P) true interface depths (km);
    ``velocities`` (N, P) true layer velocities (km/s); ``times`` (N, P) noise-free two-way times
    (s, EKS eq. 38); ``observed`` = times + N(0, noise_std^2); ``prior_depth`` /
    ``prior_velocity`` (P,) the constant prior means and ``prior_depth_std`` /
    ``prior_velocity_std`` (P,) the prior standard deviations.
    """

    x: np.ndarray
    depths: np.ndarray
    velocities: np.ndarray
    times: np.ndarray
    observed: np.ndarray
    noise_std: float
    prior_depth: np.ndarray
    prior_velocity: np.ndarray
    prior_depth_std: np.ndarray
    prior_velocity_std: np.ndarray
    seed: int
    meta: dict = field(default_factory=dict)

    @property
    def n_layers(self) -> int:
        return int(self.depths.shape[1])

    @property
    def latent(self) -> np.ndarray:
        """True latent values in the layout of ``forward_models.Seismic``: [depths, velocities]."""
        return np.hstack([self.depths, self.velocities])

    @property
    def prior_mean(self) -> np.ndarray:
        """(2P,) prior means in the same layout."""
        return np.concatenate([self.prior_depth, self.prior_velocity])

    @property
    def prior_variance(self) -> np.ndarray:
        """(2P,) prior variances in the same layout."""
        return np.concatenate([self.prior_depth_std, self.prior_velocity_std]) ** 2


def two_way_times(depths, velocities) -> np.ndarray:
    """Two-way reflection times of stacked layers (EKS eq. 38), (N, P) from (N, P) and (N, P).

    Depths are first clipped to a running maximum (each at least as deep as the one above, EKS
    section 7.4); thicknesses h_p = d_p - d_{p-1} (d_{-1} = 0) then give t_p = 2 sum_{k<=p} h_k/v_k.
    """
    depths = np.asarray(depths, dtype=float)
    velocities = np.asarray(velocities, dtype=float)
    if depths.ndim != 2 or depths.shape != velocities.shape:
        raise ValueError(f"depths and velocities must both be (N, P) arrays of one shape; got "
                         f"{depths.shape} and {velocities.shape}")
    if not (np.all(np.isfinite(depths)) and np.all(np.isfinite(velocities))):
        raise ValueError("depths and velocities must be finite")
    if np.any(velocities <= 0):
        raise ValueError(f"velocities must be positive; minimum is {float(velocities.min()):.3g}")
    clipped = np.maximum.accumulate(depths, axis=1)
    thickness = np.diff(clipped, axis=1, prepend=0.0)
    return 2.0 * np.cumsum(thickness / velocities, axis=1)


def _smooth_profiles(rng, x, n_profiles, lengthscale):
    """(N, n_profiles) independent draws of a zero-mean, unit-variance SE-kernel GP along x."""
    d2 = (x[:, None] - x[None, :]) ** 2
    K = np.exp(-0.5 * d2 / lengthscale ** 2)
    L, _ = jittered_cholesky(K, 1e-9, what="the profile covariance", warn=False)
    return L @ rng.standard_normal((x.shape[0], n_profiles))


def synthetic_survey(n_sites: int = 113, n_layers: int = 4, length_km: float = 11.2,
                     noise_std: float = 0.01, thickness_variation: float = 0.2,
                     velocity_variation: float = 0.06, lengthscale_km: float = 2.0,
                     seed: int = 0) -> SeismicSurvey:
    """A seeded synthetic survey line in the shape of EKS section 7.4 (113 sites, 4 layers).

    Layer p has thickness h_p(x) = NOMINAL_THICKNESS[p] (1 + thickness_variation s_p(x)) and
    velocity v_p(x) = NOMINAL_VELOCITY[p] (1 + velocity_variation u_p(x)), where s_p, u_p are
    independent draws of a unit-variance GP with a squared-exponential kernel of lengthscale
    ``lengthscale_km`` along the profile; depths are the cumulative thicknesses (the
    variations are small enough that the stack stays ordered), times follow eq. 38 and the
    observations add N(0, noise_std^2) noise.

    The prior stored with the survey is the generating distribution, marginally: means at the
    nominal depths and velocities ("flat priors centred on average depths and velocities"),
    standard deviations sqrt(sum_{k<=p} (thickness_variation h_k)^2) for depth p and
    velocity_variation v_p for velocity p, and the same SE lengthscale (``meta``). The truth is
    therefore a plausible draw from it; only the correlation between the depths of different
    layers (they share thicknesses) is lost when each task gets an independent prior.
    """
    if isinstance(n_sites, bool) or not isinstance(n_sites, (int, np.integer)) or n_sites < 2:
        raise ValueError(f"n_sites must be an integer >= 2; got {n_sites!r}")
    if not isinstance(n_layers, (int, np.integer)) or not 1 <= n_layers <= len(NOMINAL_THICKNESS):
        raise ValueError(f"n_layers must be an integer in [1, {len(NOMINAL_THICKNESS)}]; got {n_layers!r}")
    for name, value, hi in (("length_km", length_km, 1e4), ("noise_std", noise_std, 1.0),
                            ("thickness_variation", thickness_variation, 0.3),
                            ("velocity_variation", velocity_variation, 0.3),
                            ("lengthscale_km", lengthscale_km, 1e4)):
        if not (np.isfinite(value) and 0 <= value <= hi) or (name in ("length_km", "lengthscale_km") and value == 0):
            raise ValueError(f"{name} must lie in [0, {hi:g}] (length_km, lengthscale_km > 0); got {value!r}")
    P = int(n_layers)
    rng = np.random.default_rng(seed)
    x = np.linspace(0.0, float(length_km), int(n_sites))
    h0 = np.asarray(NOMINAL_THICKNESS[:P])
    v0 = np.asarray(NOMINAL_VELOCITY[:P])
    profiles = _smooth_profiles(rng, x, 2 * P, float(lengthscale_km))
    thickness = h0 * (1.0 + thickness_variation * profiles[:, :P])
    velocities = v0 * (1.0 + velocity_variation * profiles[:, P:])
    depths = np.cumsum(thickness, axis=1)
    times = two_way_times(depths, velocities)
    observed = times + noise_std * rng.standard_normal(times.shape)
    depth_spread = np.sqrt(np.cumsum((thickness_variation * h0) ** 2))
    return SeismicSurvey(
        x=x[:, None], depths=depths, velocities=velocities, times=times, observed=observed,
        noise_std=float(noise_std), prior_depth=np.cumsum(h0), prior_velocity=v0.copy(),
        prior_depth_std=np.maximum(depth_spread, 1e-3),
        prior_velocity_std=np.maximum(velocity_variation * v0, 1e-3), seed=seed,
        meta={"provenance": f"synthetic, numpy default_rng(seed={seed}); stand-in for the Otway basin "
                            "survey line of EKS section 7.4 (not public)",
              "units": {"x": "km", "depth": "km", "velocity": "km/s", "time": "s"},
              "thickness_variation": thickness_variation, "velocity_variation": velocity_variation,
              "lengthscale_km": float(lengthscale_km)})


def inversion_errors(survey: SeismicSurvey, mean, var) -> dict:
    """Per-layer errors of an inversion's latent predictions at the survey sites.

    ``mean``, ``var`` (N, 2P) in the [depths, velocities] layout. Returns RMSE of the posterior
    mean against the truth for depths and velocities (per layer and overall), the same RMSE of
    the prior mean (what the data had to improve on), and the fraction of true values inside the
    central 95% posterior interval (mean +- 1.96 sd).
    """
    mean = np.asarray(mean, dtype=float)
    var = np.asarray(var, dtype=float)
    truth = survey.latent
    if mean.shape != truth.shape or var.shape != truth.shape:
        raise ValueError(f"mean and var must have shape {truth.shape}; got {mean.shape} and {var.shape}")
    if np.any(var < 0) or not (np.all(np.isfinite(mean)) and np.all(np.isfinite(var))):
        raise ValueError("mean must be finite and var finite and non-negative")
    P = survey.n_layers
    err = mean - truth
    prior_err = survey.prior_mean[None, :] - truth
    inside = np.abs(err) <= 1.96 * np.sqrt(var)
    out = {}
    for label, cols in (("depth", slice(0, P)), ("velocity", slice(P, 2 * P))):
        out[f"{label}_rmse"] = float(np.sqrt(np.mean(err[:, cols] ** 2)))
        out[f"{label}_rmse_per_layer"] = np.sqrt(np.mean(err[:, cols] ** 2, axis=0))
        out[f"{label}_prior_rmse"] = float(np.sqrt(np.mean(prior_err[:, cols] ** 2)))
        out[f"{label}_coverage95"] = float(np.mean(inside[:, cols]))
    return out
