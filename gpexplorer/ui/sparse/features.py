"""The lab's inducing features (thesis ch. 4): the type a user picks, built at the lab's
locations from the settings, and the edits the page makes to one (a drag, the selected
feature's width or frequency slider).

Every type comes from :data:`gpexplorer.inducing.FEATURES` and says what the page needs: its
``label``, which editor settings it reads (``editable``), whether its members can be dragged
(``draggable``; frequency features all sit at the origin, the page draws their basis functions
only), how it is built from the editor (``from_editor``), the width and frequency it starts from
relative to the kernel's lengthscale (``editor_defaults``: a width or frequency carried over from
another type would show time-frequency features as plain bumps) and how an edit applies
(``with_width``, ``with_frequency``). Which kernels a type works with is
:mod:`gpexplorer.covariances`' to say (:func:`supports`).
"""

from __future__ import annotations

import numpy as np

from gpexplorer import covariances, inducing, kernels

#: the settings the editor attributes of a feature type (``editable``) map to
EDITOR_SETTINGS = {"width": "feature_width", "frequency": "feature_frequency", "member": "selected_feature",
                   "count": "C"}
FEATURE_SETTINGS = tuple(EDITOR_SETTINGS.values())


def supports(feature_key, kernel_key):
    """Whether covariances are registered for the feature type with the kernel (both registry names)."""
    return covariances.Kuu.find(inducing.FEATURES[feature_key], kernels.KERNELS[kernel_key]) is not None


def feature_choices():
    """{label: registry name} of the registered feature types that have covariances with some
    registered kernel on vectors (a selector's objects; inducing patches need a kernel on images)."""
    return inducing.FEATURES.choices(lambda cls: any(covariances.Kuu.find(cls, k) is not None
                                                     for k in kernels.KERNELS.values() if k.input_shape is None))


def uses(kind):
    """The settings feature type ``kind`` reads, besides M and the locations (the page shows only those)."""
    return tuple(EDITOR_SETTINGS[a] for a in inducing.FEATURES[kind].editable if a in EDITOR_SETTINGS)


def is_draggable(feature):
    return feature is not None and type(feature).draggable


def type_defaults(kind, lengthscale, X, M):
    """{setting: value}: the width and frequency feature type ``kind`` starts from, for a kernel of
    ``lengthscale`` on inputs ``X`` [N, D] with M features (the type's ``editor_defaults``)."""
    values = inducing.FEATURES[kind].editor_defaults(lengthscale, X, M)
    return {EDITOR_SETTINGS[k]: float(v) for k, v in values.items() if k in EDITOR_SETTINGS}


def build(kind, Z, s):
    """A feature of type ``kind`` with one member at each row of ``Z`` [M, D]; widths, frequency
    and C from the settings ``s`` (``feature_width`` is an absolute standard deviation)."""
    if kind not in inducing.FEATURES:
        raise ValueError(f"unknown inducing feature type {kind!r}; valid: {sorted(inducing.FEATURES)}")
    return inducing.FEATURES[kind].from_editor(np.asarray(Z, dtype=float), width=float(s.feature_width),
                                               frequency=float(s.feature_frequency), count=int(s.C))


def kind_of(feature):
    """The page's key for ``feature``'s type (its registry name)."""
    try:
        return inducing.FEATURES.name_of(feature)
    except ValueError:
        raise ValueError(f"the lab does not draw {type(feature).__name__} features") from None


def moved(feature, member, x):
    """``feature`` with ``member`` dragged to ``x`` along the first input dimension."""
    location = np.array(feature.locations[member], dtype=float)
    location[0] = x
    return feature.moved(member, location)


def with_width(feature, member, width):
    """The width slider (the feature type's ``with_width``)."""
    return feature.with_width(member, width)


def with_frequency(feature, member, omega):
    """The frequency slider: the selected member's angular frequency (first input dimension)."""
    return feature.with_frequency(member, omega)


def member_values(feature, member):
    """(width, frequency) the sliders show for ``member`` (None where the type has none)."""
    return feature.member_values(member)


def delta_positions(feature):
    """[M, C] positions (first input dimension) of each member's deltas (sums of deltas), or None."""
    return feature.delta_positions()


def dragged(feature, Z):
    """``feature`` after a drag left its members at ``Z`` [M, D] (the URL's or the page's inducing
    inputs): the members that moved are moved; a new count of members rebuilds a type without
    editor settings (inducing points) at ``Z``."""
    Z = np.asarray(Z, dtype=float)
    if feature is None:
        return inducing.InducingPoints(Z)
    if Z.shape != np.shape(feature.locations):
        return feature.at_locations(Z) if not type(feature).editable else feature
    for m in np.flatnonzero(np.any(np.abs(Z - feature.locations) > 0, axis=1)):
        feature = feature.moved(int(m), Z[m])
    return feature
