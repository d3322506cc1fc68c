"""Forward models g: R^Q -> R^P applied per data point, with analytic Jacobians.

A forward model maps the Q latent function values at one input, f_n, to the P noiseless
observations g(f_n) (EKS eq. 2 and 8; EGP paper eq. 1, Q = P = 1). The linearisations in
:mod:`gpexplorer.linearized.linearization` need ``value`` (EKS eq. 29) and, for the Taylor variant,
``jacobian`` (EKS eq. 22; EGP paper eq. 36).

Registered models (``FORWARD_MODELS``; option defaults in brackets):

=============  ============================  =====  ======  ===================================
name           g                             Q      P       source
=============  ============================  =====  ======  ===================================
identity       f                             1      1       EGP paper Table 1 (plain GP)
poly3          f^3 + f^2 + f                 1      1       EGP paper Table 1
exp            exp(f)                        1      1       EGP paper Table 1
sin            sin(f)                        1      1       EGP paper Table 1
tanh2          tanh(2 f)                     1      1       EGP paper Table 1
sign_cubic     2 sign(f) + f^3               1      1       EGP paper Fig. 1 (not differentiable)
logistic       1 / (1 + exp(-f))             1      1       EGP paper sec. 4.2, EKS sec. 7.2-7.3
softmax        exp(f_k) / sum_j exp(f_j)     K      K       EKS sec. 7.3 (n_classes=K [3])
seismic        two-way reflection times      2P     P       EKS eq. 38 (n_layers=P [4])
=============  ============================  =====  ======  ===================================

``get_forward_model`` also turns a user expression in ``f`` (e.g. ``"2*sign(f) + f**3"``) into an
:class:`ExpressionForwardModel`, evaluated by the whitelist evaluator of
:mod:`gpexplorer.likelihoods.expressions`.

Scalar models (Q = P = 1) apply elementwise: ``value`` accepts an array of any shape (in
particular (N, 1)), ``derivative`` gives dg/df elementwise, ``jacobian`` maps (N, 1) -> (N, 1, 1).
"""

from __future__ import annotations

import difflib

import numpy as np
from scipy import special

__all__ = [
    "ForwardModel", "ScalarForwardModel", "Identity", "Poly3", "Exp", "Sin", "Tanh2", "SignCubic",
    "Logistic", "Softmax", "Seismic", "ExpressionForwardModel", "FORWARD_MODELS",
    "SCALAR_FORWARD_MODELS", "get_forward_model", "not_differentiable_message",
]


def not_differentiable_message(name, reason):
    """The error text every Taylor-type caller shows for a non-differentiable g."""
    return (f"forward model {name!r} is not differentiable ({reason}), so the Taylor linearisation "
            "(EGP / EKS) cannot be used; use the unscented linearisation instead "
            "(UGP / UKS, linearization='unscented'), which needs no derivatives")


class ForwardModel:
    """Base class: g maps latent values F (N, Q) to outputs (N, P).

    Subclasses implement ``_value`` and ``_jacobian`` on validated (N, Q) float arrays.
    """

    name: str = "forward"
    n_latent: int = 1
    n_outputs: int = 1
    differentiable: bool = True
    #: human-readable formula for displays
    formula: str = ""
    #: why the model is not differentiable (used in the error message)
    _kink: str = ""

    def value(self, F):
        """g(F): (N, Q) -> (N, P)."""
        return self._value(self._latent(F))

    def jacobian(self, F):
        """dg/df at each row of F: (N, Q) -> (N, P, Q); ValueError if g is not differentiable."""
        if not self.differentiable:
            raise ValueError(not_differentiable_message(self.name, self._kink or "no Jacobian"))
        return self._jacobian(self._latent(F))

    def _latent(self, F):
        F = np.asarray(F, dtype=float)
        if F.ndim != 2 or F.shape[1] != self.n_latent:
            raise ValueError(f"forward model {self.name!r} expects latent values of shape (N, {self.n_latent}); "
                             f"got shape {F.shape}")
        if not np.all(np.isfinite(F)):
            raise ValueError(f"latent values passed to forward model {self.name!r} contain NaN or inf")
        return F

    def _value(self, F):
        raise NotImplementedError

    def _jacobian(self, F):
        raise NotImplementedError

    def __repr__(self):
        return f"{type(self).__name__}(name={self.name!r}, Q={self.n_latent}, P={self.n_outputs})"


class ScalarForwardModel(ForwardModel):
    """Q = P = 1 model defined by an elementwise function and its derivative."""

    n_latent = 1
    n_outputs = 1

    def value(self, F):
        """g applied elementwise; any shape (the interface's (N, 1) included) is kept."""
        f = np.asarray(F, dtype=float)
        if not np.all(np.isfinite(f)):
            raise ValueError(f"latent values passed to forward model {self.name!r} contain NaN or inf")
        with np.errstate(over="ignore"):
            return self._g(f)

    def derivative(self, F):
        """dg/df elementwise, same shape as F; ValueError if g is not differentiable."""
        if not self.differentiable:
            raise ValueError(not_differentiable_message(self.name, self._kink or "no derivative"))
        f = np.asarray(F, dtype=float)
        if not np.all(np.isfinite(f)):
            raise ValueError(f"latent values passed to forward model {self.name!r} contain NaN or inf")
        with np.errstate(over="ignore"):
            return self._dg(f)

    def jacobian(self, F):
        """(N, 1) (or (N,)) -> (N, 1, 1)."""
        f = np.asarray(F, dtype=float)
        if f.ndim == 1:
            f = f[:, None]
        if f.ndim != 2 or f.shape[1] != 1:
            raise ValueError(f"forward model {self.name!r} expects latent values of shape (N, 1); got shape {f.shape}")
        return self.derivative(f)[:, :, None]

    def _g(self, f):
        raise NotImplementedError

    def _dg(self, f):
        raise NotImplementedError


class Identity(ScalarForwardModel):
    """g(f) = f: the linear-Gaussian case in which EGP/UGP reduce to GP regression."""

    name = "identity"
    formula = "f"

    def _g(self, f):
        return f.copy()

    def _dg(self, f):
        return np.ones_like(f)


class Poly3(ScalarForwardModel):
    """g(f) = f^3 + f^2 + f (EGP paper Table 1)."""

    name = "poly3"
    formula = "f^3 + f^2 + f"

    def _g(self, f):
        return ((f + 1.0) * f + 1.0) * f

    def _dg(self, f):
        return (3.0 * f + 2.0) * f + 1.0


class Exp(ScalarForwardModel):
    """g(f) = exp(f) (EGP paper Table 1); overflows to inf beyond f ~ 709."""

    name = "exp"
    formula = "exp(f)"

    def _g(self, f):
        return np.exp(f)

    def _dg(self, f):
        return np.exp(f)


class Sin(ScalarForwardModel):
    """g(f) = sin(f) (EGP paper Table 1)."""

    name = "sin"
    formula = "sin(f)"

    def _g(self, f):
        return np.sin(f)

    def _dg(self, f):
        return np.cos(f)


class Tanh2(ScalarForwardModel):
    """g(f) = tanh(2 f) (EGP paper Table 1)."""

    name = "tanh2"
    formula = "tanh(2 f)"

    def _g(self, f):
        return np.tanh(2.0 * f)

    def _dg(self, f):
        # 2 sech^2(2f) = 8 e^{-4|f|} / (1 + e^{-4|f|})^2: no overflow and no 1 - tanh^2 cancellation
        z = np.exp(-4.0 * np.abs(f))
        return 8.0 * z / (1.0 + z) ** 2


class SignCubic(ScalarForwardModel):
    """g(f) = 2 sign(f) + f^3 (EGP paper Fig. 1): a jump at 0, so only UGP/UKS apply."""

    name = "sign_cubic"
    formula = "2 sign(f) + f^3"
    differentiable = False
    _kink = "2 sign(f) jumps at f = 0"

    def _g(self, f):
        return 2.0 * np.sign(f) + f ** 3


class Logistic(ScalarForwardModel):
    """g(f) = 1 / (1 + exp(-f)), the class-1 probability (EGP paper sec. 4.2, EKS sec. 7.2).

    Evaluated with ``scipy.special.expit`` (no overflow for any finite f); the derivative
    s(f) s(-f) keeps full relative accuracy in both tails.
    """

    name = "logistic"
    formula = "1 / (1 + exp(-f))"

    def _g(self, f):
        return special.expit(f)

    def _dg(self, f):
        return special.expit(f) * special.expit(-f)


class Softmax(ForwardModel):
    """g_k(f) = exp(f_k) / sum_j exp(f_j), Q = P = n_classes (EKS sec. 7.3, multi-class MNIST).

    Stable: the row maximum is subtracted before exponentiating. Jacobian
    dg_k/df_j = g_k (delta_kj - g_j).
    """

    name = "softmax"

    def __init__(self, n_classes=3):
        if isinstance(n_classes, bool) or not isinstance(n_classes, (int, np.integer)) or not 2 <= n_classes <= 1000:
            raise ValueError(f"softmax needs an integer n_classes between 2 and 1000; got {n_classes!r}")
        self.n_classes = int(n_classes)
        self.n_latent = self.n_outputs = self.n_classes
        self.formula = f"exp(f_k) / sum_j exp(f_j), K = {self.n_classes}"

    def _value(self, F):
        Z = np.exp(F - F.max(axis=1, keepdims=True))
        return Z / Z.sum(axis=1, keepdims=True)

    def _jacobian(self, F):
        G = self._value(F)
        J = -G[:, :, None] * G[:, None, :]
        k = np.arange(self.n_classes)
        J[:, k, k] += G
        return J

    def __repr__(self):
        return f"Softmax(n_classes={self.n_classes})"


class Seismic(ForwardModel):
    """Two-way reflection times of P stacked layers (EKS eq. 38, section 7.4).

    Latent columns (Q = 2P): ``F[:, :P]`` are the interface depths d_0..d_{P-1} (d_p is the depth of
    the bottom of layer p), ``F[:, P:]`` the layer velocities v_0..v_{P-1}. Optional offsets are
    added first (d = F[:, :P] + depth_offset, v = F[:, P:] + velocity_offset), so zero-mean GP
    priors can be centred on average depths and velocities as in the paper.

    Clipping: each depth is made at least as deep as the one above, d'_p = max(d_p, d'_{p-1})
    (the paper's f_p = max{f_p, f_{p-1}} applied in order p = 1, 2, ..., i.e. a running maximum;
    applying it to the unclipped previous depth would not guarantee a monotone stack). The
    first depth is not clipped at the surface. Then, with thicknesses h_p = d'_p - d'_{p-1},
    d'_{-1} = 0,

        t_p = 2 sum_{k <= p} h_k / v_k          (eq. 38 unrolled).

    Jacobian: dt_p/dv_k = -2 h_k / v_k^2 (k <= p); dt_p/dd'_j = 2/v_j - 2/v_{j+1} (j < p) and
    2/v_p (j = p). Each clipped d'_j equals exactly one raw d_i (the deepest raw depth above
    it, ties going to the lower layer j itself), so dd'_j/dd_i is 1 for that i and 0 otherwise;
    the chain rule sums the columns accordingly. At a tie the derivative is the one-sided one
    for moving d_j down; a clipped depth (d_j shallower than the stack above) gets zero
    derivative, which is exact away from the kinks.
    Velocities are not constrained: v -> 0 gives infinite times.
    """

    name = "seismic"

    def __init__(self, n_layers=4, depth_offset=0.0, velocity_offset=0.0):
        if isinstance(n_layers, bool) or not isinstance(n_layers, (int, np.integer)) or not 1 <= n_layers <= 100:
            raise ValueError(f"seismic needs an integer n_layers between 1 and 100; got {n_layers!r}")
        P = int(n_layers)
        self.n_layers = self.n_outputs = P
        self.n_latent = 2 * P
        self.depth_offset = self._offset(depth_offset, P, "depth_offset")
        self.velocity_offset = self._offset(velocity_offset, P, "velocity_offset")
        self.formula = "t_p = 2 sum_{k<=p} (d_k - d_{k-1}) / v_k, depths clipped to increase"

    @staticmethod
    def _offset(value, P, label):
        arr = np.asarray(value, dtype=float)
        if arr.ndim > 1 or (arr.ndim == 1 and arr.shape[0] != P):
            raise ValueError(f"{label} must be a scalar or have length n_layers={P}; got shape {arr.shape}")
        if not np.all(np.isfinite(arr)):
            raise ValueError(f"{label} must be finite; got {value!r}")
        return np.broadcast_to(arr, (P,)).copy()

    def split(self, F):
        """(depths d (N, P) before clipping, velocities v (N, P)) including the offsets."""
        F = self._latent(F)
        P = self.n_layers
        return F[:, :P] + self.depth_offset, F[:, P:] + self.velocity_offset

    def clipped_depths(self, F):
        """Running maximum of the depths, d'_p = max(d_p, d'_{p-1}) (EKS sec. 7.4)."""
        depths, _ = self.split(F)
        return np.maximum.accumulate(depths, axis=1)

    def _clip(self, depths):
        """Clipped depths and, for each d'_j, the index i of the raw depth it equals."""
        N, P = depths.shape
        clipped = np.empty_like(depths)
        source = np.empty((N, P), dtype=np.intp)
        clipped[:, 0] = depths[:, 0]
        source[:, 0] = 0
        for p in range(1, P):
            own = depths[:, p] >= clipped[:, p - 1]
            clipped[:, p] = np.where(own, depths[:, p], clipped[:, p - 1])
            source[:, p] = np.where(own, p, source[:, p - 1])
        return clipped, source

    def _value(self, F):
        P = self.n_layers
        clipped = np.maximum.accumulate(F[:, :P] + self.depth_offset, axis=1)
        velocity = F[:, P:] + self.velocity_offset
        thickness = np.diff(clipped, axis=1, prepend=0.0)
        with np.errstate(divide="ignore", invalid="ignore"):
            return 2.0 * np.cumsum(thickness / velocity, axis=1)

    def _jacobian(self, F):
        N, P = F.shape[0], self.n_layers
        clipped, source = self._clip(F[:, :P] + self.depth_offset)
        velocity = F[:, P:] + self.velocity_offset
        thickness = np.diff(clipped, axis=1, prepend=0.0)
        lower = np.tril(np.ones((P, P)))  # [p, k] = 1 for k <= p
        with np.errstate(divide="ignore", invalid="ignore"):
            inv_v = 1.0 / velocity
            dt_dv = lower[None] * (-2.0 * thickness * inv_v ** 2)[:, None, :]
            # dt_p/dd'_j: 2/v_j - 2/v_{j+1} strictly below the diagonal, 2/v_p on it
            step = 2.0 * (inv_v[:, :-1] - inv_v[:, 1:])
        dt_dclipped = np.zeros((N, P, P))
        if P > 1:
            dt_dclipped[:, :, :-1] = np.tril(np.ones((P, P - 1)), k=-1)[None] * step[:, None, :]
        dt_dclipped[:, np.arange(P), np.arange(P)] = 2.0 * inv_v
        one_hot = (source[:, :, None] == np.arange(P)[None, None, :]).astype(float)  # [n, j, i]
        J = np.empty((N, P, 2 * P))
        J[:, :, :P] = dt_dclipped @ one_hot
        J[:, :, P:] = dt_dv
        return J

    def __repr__(self):
        return f"Seismic(n_layers={self.n_layers})"


class ExpressionForwardModel(ScalarForwardModel):
    """A user expression in ``f`` (Q = P = 1), evaluated by :mod:`gpexplorer.likelihoods.expressions`.

    The derivative is numerical: central differences with step h = eps^(1/3) max(1, |f|) (the
    step that balances truncation O(h^2) against rounding O(eps/h) error). The model is marked
    non-differentiable when the expression uses a function with jumps or kinks (sign, abs,
    floor, ceil, minimum, maximum), so Taylor linearisation refuses it like ``sign_cubic``.
    """

    _STEP = float(np.finfo(float).eps) ** (1.0 / 3.0)

    def __init__(self, text):
        from gpexplorer.likelihoods.expressions import parse_expression

        self.expression = parse_expression(text)
        self.name = self.expression.text
        self.formula = self.expression.text
        kinks = sorted(self.expression.non_differentiable_functions)
        self.differentiable = not kinks
        self._kink = f"it uses {', '.join(kinks)}" if kinks else ""
        probe = np.linspace(-3.0, 3.0, 61)
        if not np.any(np.isfinite(self.expression(probe))):
            raise ValueError(f"expression {self.name!r} is not finite anywhere on f in [-3, 3]; "
                             "check for division by zero or log/sqrt of negative values")

    def _g(self, f):
        return self.expression(f)

    def _dg(self, f):
        h = self._STEP * np.maximum(1.0, np.abs(f))
        up, down = f + h, f - h
        return (self.expression(up) - self.expression(down)) / (up - down)

    def __repr__(self):
        return f"ExpressionForwardModel({self.name!r})"


FORWARD_MODELS = {"identity": Identity, "poly3": Poly3, "exp": Exp, "sin": Sin, "tanh2": Tanh2,
                  "sign_cubic": SignCubic, "logistic": Logistic, "softmax": Softmax, "seismic": Seismic}
#: the registered models with one latent and one output value per point (Q = P = 1), in registry order
SCALAR_FORWARD_MODELS = tuple(name for name, cls in FORWARD_MODELS.items() if issubclass(cls, ScalarForwardModel))

_ALIASES = {"linear": "identity", "sigmoid": "logistic", "signcubic": "sign_cubic"}


def get_forward_model(spec, **options):
    """A :class:`ForwardModel` from a registered name, an expression in ``f``, or an instance.

    Names are case-insensitive (aliases: linear, sigmoid, signcubic). Options go to the
    model's constructor (``n_classes`` for softmax; ``n_layers``, ``depth_offset``,
    ``velocity_offset`` for seismic). A string that is not a registered name or alias is parsed
    as an expression in ``f`` unless it is a bare word, which is reported as an unknown name.
    """
    if isinstance(spec, ForwardModel):
        if options:
            raise ValueError(f"options {sorted(options)} cannot be applied to an existing forward model instance")
        return spec
    if not isinstance(spec, str):
        raise ValueError("forward model must be a name, an expression in f or a ForwardModel; "
                         f"got {type(spec).__name__}")
    key = spec.strip().lower()
    key = _ALIASES.get(key, key)
    if key in FORWARD_MODELS:
        factory = FORWARD_MODELS[key]
        try:
            return factory(**options)
        except TypeError:
            raise ValueError(f"forward model {key!r} does not accept the options {sorted(options)}") from None
    if key.isidentifier() and key != "f":
        close = difflib.get_close_matches(key, list(FORWARD_MODELS) + list(_ALIASES), n=1)
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        raise ValueError(f"unknown forward model {spec!r}{hint}. Registered: {', '.join(FORWARD_MODELS)}; "
                         "or give an expression in f such as 'sin(f) + f**2'")
    if options:
        raise ValueError(f"an expression forward model takes no options; got {sorted(options)}")
    return ExpressionForwardModel(spec)
