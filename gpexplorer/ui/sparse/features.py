"""The lab's inducing features (thesis ch. 4): the type a user picks, built at the lab's
locations from the settings, and the edits the page makes to one (a drag, the selected
feature's width or frequency slider).

Every feature type has locations [M, D] (the centres the page draws and drags), except
frequency features, which all sit at the origin: the page draws their basis functions only,
and their frequencies are changed with the slider. Picking a type starts it from that type's
own width and frequency (:func:`type_defaults`), relative to the kernel's lengthscale: a width
or frequency carried over from another type would show time-frequency features as plain bumps.
"""

from __future__ import annotations

import numpy as np

from gpexplorer import inducing

#: label -> key of the feature types the page offers (keys as ``gpexplorer.inducing.FEATURES``)
FEATURE_CHOICES = {"Inducing points": "points", "Multiscale": "multiscale", "Frequency": "frequency",
                   "Time-frequency": "time-frequency", "Sum of deltas": "sum-of-deltas"}
#: types whose members have a place in input space the page can drag
DRAGGABLE = ("points", "multiscale", "time-frequency", "sum-of-deltas")
#: the settings each type reads, besides M and the locations (the page shows only those)
USES = {"points": (), "multiscale": ("feature_width", "selected_feature"),
        "frequency": ("feature_width", "feature_frequency", "selected_feature"),
        "time-frequency": ("feature_width", "feature_frequency", "selected_feature"),
        "sum-of-deltas": ("feature_width", "C")}
FEATURE_SETTINGS = ("C", "feature_width", "feature_frequency", "selected_feature")
#: types whose covariances are worked out for the squared-exponential kernel only
SE_ONLY = ("multiscale", "frequency", "time-frequency")
#: a type's starting width, in lengthscales (a frequency feature's window covers the data instead)
WIDTH_IN_LENGTHSCALES = {"multiscale": 0.5, "time-frequency": 1.5, "sum-of-deltas": 0.6}
#: a time-frequency feature's starting angular frequency, in 1 / lengthscale: with its width of 1.5
#: lengthscales the basis function swings a third of its height below zero (a Gabor wavelet, not a bump)
TIME_FREQUENCY_IN_INVERSE_LENGTHSCALES = 1.5
#: a frequency feature's highest harmonic, in 1 / lengthscale (about where the SE spectrum has faded)
FREQUENCY_SPAN = 2.5


def type_defaults(kind, lengthscale, X, M):
    """{setting: value}: the width and frequency feature type ``kind`` starts from, for a kernel of
    ``lengthscale`` on inputs ``X`` [N, D] with M features. Multiscale bumps half a lengthscale
    wide; time-frequency wavelets 1.5 lengthscales wide at 1.5 / lengthscale; frequency features'
    window the data's root mean square about the origin (it is centred there), their harmonics up
    to FREQUENCY_SPAN / lengthscale; a sum of deltas spread over 0.6 lengthscales."""
    ls = float(np.mean(lengthscale))
    out = {}
    if kind in WIDTH_IN_LENGTHSCALES:
        out["feature_width"] = WIDTH_IN_LENGTHSCALES[kind] * ls
    if kind == "time-frequency":
        out["feature_frequency"] = TIME_FREQUENCY_IN_INVERSE_LENGTHSCALES / ls
    if kind == "frequency":
        rms = np.sqrt(np.mean(np.asarray(X, dtype=float) ** 2, axis=0))
        out["feature_width"] = float(np.mean(np.where(rms > 0, rms, 1.0)))
        out["feature_frequency"] = FREQUENCY_SPAN / (ls * max(int(M) // 2, 1))
    return out


def frequency_layout(M, base):
    """(omega [M], phase [M]) of M frequency features on harmonics of ``base``: a cosine and a sine
    at base, 2 base, ..., and, for odd M, a constant (frequency 0, a cosine) last. No sine at
    frequency 0: it is identically zero (its u has no variance, Kuu is singular)."""
    m = np.arange(M)
    k = m // 2 + 1
    phase = np.where(m % 2 == 0, 0.0, -np.pi / 2)
    if M % 2:
        k[-1], phase[-1] = 0, 0.0
    return k * float(base), phase


def build(kind, Z, s):
    """A feature of type ``kind`` with one member at each row of ``Z`` [M, D]; widths, frequency
    and C from the settings ``s`` (``feature_width`` is an absolute standard deviation)."""
    Z = np.asarray(Z, dtype=float)
    M, D = Z.shape
    width = float(s.feature_width)
    if kind == "points":
        return inducing.InducingPoints(Z)
    if kind == "multiscale":
        return inducing.Multiscale(Z, np.full((M, D), width))
    if kind == "time-frequency":
        return inducing.TimeFrequency(Z, np.full((M, D), float(s.feature_frequency)), 0.0, np.full(D, width))
    if kind == "frequency":
        # harmonics of the chosen frequency, a cosine and a sine at each (phases 0 and -pi/2)
        omega, phase = frequency_layout(M, s.feature_frequency)
        return inducing.Frequency(np.outer(omega, np.ones(D)), phase, np.full(D, width))
    if kind == "sum-of-deltas":
        C = int(s.C)
        offsets = np.linspace(-1.0, 1.0, C) * width if C > 1 else np.zeros(1)
        deltas = Z[:, None, :] + offsets[None, :, None]
        return inducing.SumOfDeltas(deltas, np.ones((M, C)))
    raise ValueError(f"unknown inducing feature type {kind!r}; valid: {sorted(FEATURE_CHOICES.values())}")


def kind_of(feature):
    """The page's key for ``feature``'s type."""
    for key, cls in inducing.FEATURES.items():
        if type(feature) is cls:
            return key
    raise ValueError(f"the lab does not draw {type(feature).__name__} features")


def moved(feature, member, x):
    """``feature`` with ``member`` dragged to ``x`` along the first input dimension."""
    location = np.array(feature.locations[member], dtype=float)
    location[0] = x
    return feature.moved(member, location)


def with_width(feature, member, width):
    """The width slider: the selected member's (multiscale), every member's (time-frequency and
    frequency features share one), or the spread of every member's deltas (sum of deltas)."""
    kind = kind_of(feature)
    if kind == "multiscale":
        delta = np.array(feature.delta)
        delta[member] = width
        return feature.copy().set_parameters(delta=delta)
    if kind in ("time-frequency", "frequency"):
        return feature.copy().set_parameters(delta=np.full_like(feature.delta, width))
    if kind == "sum-of-deltas":
        Z = np.array(feature.Z)
        centre = Z.mean(axis=1, keepdims=True)
        spread = np.abs(Z - centre).max(axis=1, keepdims=True)
        scale = np.divide(width, spread, out=np.ones_like(spread), where=spread > 0)
        return feature.copy().set_parameters(Z=centre + (Z - centre) * scale)
    return feature


def with_frequency(feature, member, omega):
    """The frequency slider: the selected member's angular frequency (first input dimension)."""
    if kind_of(feature) not in ("time-frequency", "frequency"):
        return feature
    values = np.array(feature.omega)
    values[member, 0] = omega
    return feature.copy().set_parameters(omega=values)


def member_values(feature, member):
    """(width, frequency) the sliders show for ``member`` (None where the type has none)."""
    kind = kind_of(feature)
    width = frequency = None
    if kind == "multiscale":
        width = float(feature.delta[member, 0])
    elif kind in ("time-frequency", "frequency"):
        width, frequency = float(feature.delta[0]), float(feature.omega[member, 0])
    return width, frequency


def delta_positions(feature):
    """[M, C] positions (first input dimension) of each member's deltas, for sums of deltas."""
    return np.asarray(feature.Z)[:, :, 0] if kind_of(feature) == "sum-of-deltas" else None


def dragged(feature, Z):
    """``feature`` after a drag left its members at ``Z`` [M, D] (the URL's or the page's inducing
    inputs): the members that moved are moved; a new count of members rebuilds inducing points."""
    Z = np.asarray(Z, dtype=float)
    if feature is None or Z.shape != np.shape(feature.locations):
        return inducing.InducingPoints(Z) if feature is None or kind_of(feature) == "points" else feature
    if kind_of(feature) == "points":
        return inducing.InducingPoints(Z)
    for m in np.flatnonzero(np.any(np.abs(Z - feature.locations) > 0, axis=1)):
        feature = feature.moved(int(m), Z[m])
    return feature
