"""Time-frequency inducing features (TFIF, thesis eq. 4.7 and A.1; Lázaro-Gredilla and
Figueiras-Vidal, 2009): u_m = integral f(x) v(x; z_m) dx with the Gabor window

    v(x; z_m) = |2 pi Delta|^(-1/2) exp(-(x - mu_m)^T Delta^(-1) (x - mu_m) / 2)
                * cos(omega0_m + omega_m^T (x - mu_m)),          Delta = diag(delta_d^2),

a Gaussian bump at mu_m of widths delta (standard deviations, shared by all members as in
the thesis' appendix A.1) modulated by a cosine of angular frequency omega_m and phase
omega0_m. With omega = 0 and omega0 = 0 it is a multiscale feature (eq. 4.5) of width delta;
as delta -> 0 it tends to an inducing point at mu_m scaled by cos(omega0_m).

The closed-form covariances with the squared-exponential kernel are registered in
:mod:`gpexplorer.covariances.time_frequency`. The validation helpers here are shared with the
frequency feature (:mod:`gpexplorer.inducing.frequency`).
"""

from __future__ import annotations

import numpy as np

from gpexplorer.inducing.base import ANGLE_LIMIT, InducingFeature
from gpexplorer.inducing.placement import kmeans, random_subset
from gpexplorer.parameters import Parameter

TWO_PI = 2.0 * np.pi


def member_rows(owner, name, value, D=None):
    """``value`` as an [M, D] float array (a 1-D array is one column, D = 1)."""
    a = owner._checked(name, value)
    if a.ndim == 1:
        a = a[:, None]
    if a.ndim != 2 or a.shape[0] == 0:
        raise ValueError(f"{type(owner).__name__}.{name} must have shape (M, D) with M >= 1; got {a.shape}")
    if D is not None and a.shape[1] != D:
        raise ValueError(f"{type(owner).__name__}.{name} must have {D} column(s) (one per input dimension); "
                         f"got shape {a.shape}")
    return np.ascontiguousarray(a)


def member_phases(owner, value, M):
    """omega0 as an [M] float array (a scalar is shared by every member)."""
    a = owner._checked("omega0", value)
    if np.ndim(value) == 0:  # (_checked returns at least 1-D)
        a = np.full(M, a.reshape(-1)[0])
    if a.shape != (M,):
        raise ValueError(f"{type(owner).__name__}.omega0 must have shape ({M},), one phase per member; got {a.shape}")
    return np.ascontiguousarray(a)


def shared_widths(owner, value, D):
    """delta as a [D] array of positive widths (a scalar is used in every dimension)."""
    a = owner._checked("delta", value)
    if np.ndim(value) == 0:
        a = np.full(D, a.reshape(-1)[0])
    if a.shape != (D,):
        raise ValueError(f"{type(owner).__name__}.delta must have shape ({D},), one width per input dimension "
                         f"shared by every member; got {a.shape}")
    if np.any(a <= 0):
        raise ValueError(f"{type(owner).__name__}.delta must be positive (standard deviations of the window); got {a}")
    return np.ascontiguousarray(a)


def data_scale(X):
    """[D] standard deviation of the data per dimension (1 where a column is constant)."""
    X = np.asarray(X, dtype=float)
    X = X[:, None] if X.ndim == 1 else X
    scale = X.std(axis=0)
    return np.where(scale > 0, scale, 1.0)


def spectral_frequencies(kernel, M, D, rng):
    """[M, D] angular frequencies spread over the SE spectral density N(0, diag(1/l_d^2)):
    evenly spaced quantiles in one dimension (shuffled), draws in more."""
    from scipy.stats import norm  # on use: scipy.stats is slow to import

    ls = getattr(kernel, "lengthscale", None)
    if ls is None:
        raise ValueError(f"spreading frequencies needs a kernel with a lengthscale (SE); got {type(kernel).__name__}")
    ls = np.broadcast_to(np.asarray(ls, dtype=float), (D,))
    if D == 1:
        q = norm.ppf((np.arange(M) + 0.5) / M)
        return rng.permutation(q)[:, None] / ls
    return rng.normal(size=(M, D)) / ls


def _rng(seed):
    return seed if isinstance(seed, np.random.Generator) else np.random.default_rng(seed)


class TimeFrequency(InducingFeature):
    """M Gabor windows: centres ``mu`` [M, D], angular frequencies ``omega`` [M, D], phases
    ``omega0`` [M] (real) and widths ``delta`` [D] (positive, log scale, shared by all
    members). ``locations`` are the centres mu."""

    name, label = "time-frequency", "Time-frequency"
    param_names = ("mu", "omega", "omega0", "delta")
    editable = ("width", "frequency", "member")
    #: a lab's starting width in lengthscales and angular frequency in 1 / lengthscale: the basis
    #: function swings a third of its height below zero (a Gabor wavelet, not a bump)
    EDITOR_WIDTH, EDITOR_FREQUENCY = 1.5, 1.5
    parameter_limits = {
        "omega": (ANGLE_LIMIT, "angular frequencies: the phase omega . x loses all precision beyond it"),
        "omega0": (ANGLE_LIMIT, "phases in radians: beyond it a float64 step is a sizeable fraction of a turn"),
        "delta": (1e50, "widths: delta^2 omega^2 must stay far from float64's overflow"),
    }

    def __init__(self, mu, omega=None, omega0=0.0, delta=1.0):
        self.mu = member_rows(self, "mu", mu)
        M, D = self.mu.shape
        self.omega = np.zeros((M, D)) if omega is None else member_rows(self, "omega", omega, D)
        if self.omega.shape[0] != M:
            raise ValueError(f"TimeFrequency.omega must have shape ({M}, {D}) like mu; got {self.omega.shape}")
        self.omega0 = member_phases(self, omega0, M)
        self.delta = shared_widths(self, delta, D)
        self._check_joint()

    def _check_joint(self):
        """The phase omega_m . mu_m of every member within ANGLE_LIMIT (as omega0 is)."""
        phase = float(np.max(np.abs(np.sum(self.omega * self.mu, axis=1))))
        if phase > ANGLE_LIMIT:
            raise ValueError(f"TimeFrequency.mu and TimeFrequency.omega give a phase omega . mu of {phase:.3g} "
                             f"radians; at most {ANGLE_LIMIT:.0e} is accepted (beyond it a float64 step is a "
                             "sizeable fraction of a turn): move the centres nearer the origin or lower the frequencies")

    def _checked(self, name, value):
        a = super()._checked(name, value)
        if name == "delta" and np.any(a <= 0):
            raise ValueError(f"{type(self).__name__}.delta must be positive (standard deviations of the window); got {a}")
        return a

    @property
    def parameter_specs(self) -> dict:
        return {"mu": Parameter.real("mu"), "omega": Parameter.real("omega"),
                "omega0": Parameter.real("omega0"), "delta": Parameter("delta")}

    @property
    def locations(self):
        return self.mu

    @classmethod
    def from_data(cls, X, M, kernel, delta=None, seed=None):
        """M windows at k-means centres of X with frequencies spread over the SE kernel's
        spectral density N(0, 1/l^2), phases uniform on [0, 2 pi) and widths ``delta`` (the
        kernel's lengthscales unless given)."""
        rng = _rng(seed)
        mu = kmeans(X, M, rng)
        D = mu.shape[1]
        omega = spectral_frequencies(kernel, len(mu), D, rng)
        if delta is None:
            delta = np.broadcast_to(np.asarray(kernel.lengthscale, dtype=float), (D,)).copy()
        return cls(mu, omega, rng.uniform(0.0, TWO_PI, len(mu)), delta)

    @classmethod
    def from_editor(cls, locations, *, width=1.0, frequency=1.0, count=1):
        Z = np.asarray(locations, dtype=float)
        return cls(Z, np.full(Z.shape, float(frequency)), 0.0, np.full(Z.shape[1], float(width)))

    @classmethod
    def editor_defaults(cls, lengthscale, X, M):
        ls = float(np.mean(lengthscale))
        return {"width": cls.EDITOR_WIDTH * ls, "frequency": cls.EDITOR_FREQUENCY / ls}

    def with_width(self, member, width):
        """Every member's: the widths are shared."""
        return self.copy().set_parameters(delta=np.full_like(self.delta, width))

    def with_frequency(self, member, omega):
        values = np.array(self.omega)
        values[member, 0] = omega
        return self.copy().set_parameters(omega=values)

    def member_values(self, member):
        return float(self.delta[0]), float(self.omega[member, 0])

    def restart_from(self, X, rng):
        """Centres from the data, frequencies ~ N(0, 1/s_d^2) with s_d the data's standard
        deviation (the SE spectral density at a lengthscale of the data's scale), phases
        uniform; the widths keep their value (the optimiser perturbs them on the log scale)."""
        M, D = self.mu.shape
        return {"mu": random_subset(X, M, rng), "omega": rng.normal(size=(M, D)) / data_scale(X),
                "omega0": rng.uniform(0.0, TWO_PI, M)}

    def at_locations(self, locations):
        """Unmodulated windows (omega = 0, omega0 = 0: multiscale bumps) at ``locations``."""
        locations = np.asarray(locations, dtype=float).reshape(-1, self.input_dim)
        return TimeFrequency(locations, None, 0.0, self.delta)

    def concatenate(self, other):
        if not isinstance(other, TimeFrequency):
            raise ValueError(f"can only concatenate TimeFrequency with TimeFrequency; got {type(other).__name__}")
        if not np.array_equal(other.delta, self.delta):
            raise ValueError(f"the widths delta are shared by every member: {self.delta} != {other.delta}")
        return TimeFrequency(np.vstack([self.mu, other.mu]), np.vstack([self.omega, other.omega]),
                             np.concatenate([self.omega0, other.omega0]), self.delta)
