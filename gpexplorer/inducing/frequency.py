"""Frequency inducing features (FIF, thesis eq. 4.6; Lázaro-Gredilla and Figueiras-Vidal, 2009):
u_m = integral f(x) v(x; z_m) dx with

    v(x; z_m) = |2 pi Delta|^(-1/2) exp(-x^T Delta^(-1) x / 2) cos(omega0_m + omega_m^T x),

one Gaussian window at the origin of widths delta (standard deviations, shared by every
member) modulated by a cosine of angular frequency omega_m and phase omega0_m: a windowed
Fourier coefficient of f. It is the time-frequency feature with every centre at the origin.

Where a member "sits": a frequency feature has no position of its own in input space (all
windows are centred at the origin), so ``locations`` is its frequency omega [M, D], a point of
the same dimension in the frequency domain. The labs draw and drag that (dragging changes the
frequency), the clumping badge measures how close two members' frequencies are (two members
with nearby frequencies are nearly redundant), and ``at_locations`` makes members at given
frequencies (phase 0, the shared widths). This keeps ``len()``, ``input_dim`` and the add-one
curve meaningful; zeros would make every member coincide.

Covariances with the squared-exponential kernel: :mod:`gpexplorer.covariances.frequency`.
"""

from __future__ import annotations

import numpy as np

from gpexplorer.inducing.base import ANGLE_LIMIT, InducingFeature
from gpexplorer.inducing.time_frequency import (
    TWO_PI,
    TimeFrequency,
    data_scale,
    member_phases,
    member_rows,
    shared_widths,
    spectral_frequencies,
)
from gpexplorer.parameters import Parameter


def harmonics(M, base):
    """(omega [M], phase [M]) of M frequency features on harmonics of ``base``: a cosine and a sine
    at base, 2 base, ..., and, for odd M, a constant (frequency 0, a cosine) last. No sine at
    frequency 0: it is identically zero (its u has no variance, Kuu is singular)."""
    m = np.arange(M)
    k = m // 2 + 1
    phase = np.where(m % 2 == 0, 0.0, -np.pi / 2)
    if M % 2:
        k[-1], phase[-1] = 0, 0.0
    return k * float(base), phase


class Frequency(InducingFeature):
    """M windowed cosines at the origin: angular frequencies ``omega`` [M, D], phases ``omega0``
    [M] (real) and widths ``delta`` [D] (positive, log scale, shared). ``locations`` = omega."""

    name, label = "frequency", "Frequency"
    param_names = ("omega", "omega0", "delta")
    editable = ("width", "frequency", "member")
    draggable = False  # every window sits at the origin (module docstring)
    #: a lab's highest harmonic, in 1 / lengthscale (about where the SE spectrum has faded)
    EDITOR_SPAN = 2.5
    parameter_limits = {
        "omega": (ANGLE_LIMIT, "angular frequencies: the phase omega . x loses all precision beyond it"),
        "omega0": (ANGLE_LIMIT, "phases in radians: beyond it a float64 step is a sizeable fraction of a turn"),
        "delta": (1e50, "widths: delta^2 omega^2 must stay far from float64's overflow"),
    }

    def __init__(self, omega, omega0=0.0, delta=1.0):
        self.omega = member_rows(self, "omega", omega)
        M, D = self.omega.shape
        self.omega0 = member_phases(self, omega0, M)
        self.delta = shared_widths(self, delta, D)

    def _checked(self, name, value):
        a = super()._checked(name, value)
        if name == "delta" and np.any(a <= 0):
            raise ValueError(f"{type(self).__name__}.delta must be positive (standard deviations of the window); got {a}")
        return a

    @property
    def parameter_specs(self) -> dict:
        return {"omega": Parameter.real("omega"), "omega0": Parameter.real("omega0"), "delta": Parameter("delta")}

    @property
    def locations(self):
        """[M, D] the frequencies omega (see the module docstring: no position in input space)."""
        return self.omega

    @property
    def mu(self):
        """[M, D] zeros: every window is centred at the origin (the TFIF centres of eq. A.1)."""
        return np.zeros_like(self.omega)

    @classmethod
    def from_data(cls, X, M, kernel, delta=None, seed=None):
        """M frequencies spread over the SE kernel's spectral density N(0, 1/l^2) (quantiles in
        one dimension, draws in more), phases uniform on [0, 2 pi), and one window covering the
        data: ``delta`` defaults to the root mean square of X about the origin per dimension."""
        rng = seed if isinstance(seed, np.random.Generator) else np.random.default_rng(seed)
        X = np.asarray(X, dtype=float)
        X = X[:, None] if X.ndim == 1 else X
        if X.ndim != 2 or X.shape[0] == 0:
            raise ValueError(f"X must be a non-empty (N, D) array; got shape {X.shape}")
        if int(M) != M or M < 1:
            raise ValueError(f"the number of inducing features M must be a positive integer; got {M!r}")
        D = X.shape[1]
        if delta is None:
            rms = np.sqrt(np.mean(X ** 2, axis=0))
            delta = np.where(rms > 0, rms, 1.0)
        omega = spectral_frequencies(kernel, int(M), D, rng)
        return cls(omega, rng.uniform(0.0, TWO_PI, int(M)), delta)

    @classmethod
    def from_editor(cls, locations, *, width=1.0, frequency=1.0, count=1):
        """M members on harmonics of ``frequency`` (:func:`harmonics`), a cosine and a sine at each."""
        M, D = np.shape(locations)
        omega, phase = harmonics(M, frequency)
        return cls(np.outer(omega, np.ones(D)), phase, np.full(D, float(width)))

    @classmethod
    def editor_defaults(cls, lengthscale, X, M):
        """A window of the data's root mean square about the origin, harmonics up to EDITOR_SPAN /
        lengthscale."""
        rms = np.sqrt(np.mean(np.asarray(X, dtype=float) ** 2, axis=0))
        return {"width": float(np.mean(np.where(rms > 0, rms, 1.0))),
                "frequency": cls.EDITOR_SPAN / (float(np.mean(lengthscale)) * max(int(M) // 2, 1))}

    with_width = TimeFrequency.with_width
    with_frequency = TimeFrequency.with_frequency
    member_values = TimeFrequency.member_values

    def restart_from(self, X, rng):
        """Frequencies ~ N(0, 1/s_d^2) with s_d the data's standard deviation, phases uniform;
        the widths keep their value (the optimiser perturbs them on the log scale)."""
        M, D = self.omega.shape
        return {"omega": rng.normal(size=(M, D)) / data_scale(X), "omega0": rng.uniform(0.0, TWO_PI, M)}

    def at_locations(self, locations):
        """Members at the frequencies ``locations`` [K, D], phase 0, the shared widths."""
        locations = np.asarray(locations, dtype=float).reshape(-1, self.input_dim)
        return Frequency(locations, 0.0, self.delta)

    def concatenate(self, other):
        if not isinstance(other, Frequency):
            raise ValueError(f"can only concatenate Frequency with Frequency; got {type(other).__name__}")
        if not np.array_equal(other.delta, self.delta):
            raise ValueError(f"the widths delta are shared by every member: {self.delta} != {other.delta}")
        return Frequency(np.vstack([self.omega, other.omega]), np.concatenate([self.omega0, other.omega0]),
                         self.delta)
