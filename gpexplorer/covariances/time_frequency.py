"""Time-frequency inducing features with the squared-exponential kernel (thesis eq. 4.7, A.1,
A.5): Kuu, Kuf and the gradient contraction, in closed form. Also the maths the frequency
feature (:mod:`gpexplorer.covariances.frequency`: the same with every centre at the origin)
uses.

Kernel sigma^2 exp(-sum_d (x_d - x'_d)^2 / (2 l_d^2)); window widths delta_d shared by every
member; u = delta^2, v = l^2, s = u + v, r = u / s; t = x - mu; tau = mu - mu'; A = v + 2u.

Kuf (eq. 4.3 with A.1; the FIF form of eq. 4.9 shifted by mu, as A.1 says)::

    Kuf = sigma^2 prod_d (v_d / s_d)^(1/2) exp(-sum_d (t_d^2 + u_d v_d omega_d^2) / (2 s_d))
          * cos(omega0 + sum_d r_d omega_d t_d)

The *printed* eq. 4.9 is wrong on three counts, corrected here: the exponent has the wrong
sign (it must be negative), the phase carries a spurious factor 1/2 (it is u omega x / s, not
u omega x / (2 s)), and sigma^2 is missing. Quadrature of eq. 4.3 gives 0.44150 at x = 0.4,
omega = 2, omega0 = 0.3, delta = 0.5, l = 0.7, sigma^2 = 1; the printed form gives 0.47562.

Kuu (eq. 4.4; the corrected form of A.5)::

    Kuu = sigma^2 / 2 prod_d (v_d / A_d)^(1/2) exp(-sum_d [tau_d^2 + u_d v_d (omega_d^2 + omega'_d^2)] / (2 A_d))
          * [ exp(-sum_d u_d^2 (omega_d - omega'_d)^2 / (2 A_d)) cos(sum_d u_d (omega_d + omega'_d) tau_d / A_d - (omega0 - omega0'))
            + exp(-sum_d u_d^2 (omega_d + omega'_d)^2 / (2 A_d)) cos(sum_d u_d (omega_d - omega'_d) tau_d / A_d - (omega0 + omega0')) ]

The printed A.5 has (l^2 / (l^2 + c^2))^(1/2) where (l^2 / (l^2 + 2 c^2))^(1/2) is right, and
(omega + omega') where (omega^2 + omega'^2) is right in the first exponent (and sigma^2 is
missing). Both closed forms are checked against quadrature in tests/test_feature_frequency.py.

Gradients: Kuf = e^E cos(theta), S = e^E sin(theta); dKuf = Kuf dE - S dtheta. The [M, N]
contraction with dL/dKuf needs only the row sums sum_n w Kuf {1, t_d, t_d^2} and
sum_n w S {1, t_d}, which two matrix products give (x centred at the data mean, so t_d^2 is
expanded without cancellation); the rank-one part of the weight, a b^T, is one more product
with b. Kuu and its contraction are compiled loops over the pairs i <= j
(:mod:`gpexplorer.covariances.time_frequency_loops`).
"""

from __future__ import annotations

import weakref

import numpy as np

from gpexplorer.covariances import time_frequency_loops as loops
from gpexplorer.covariances.dispatch import Kuf, Kuu, gradients
from gpexplorer.inducing.time_frequency import TimeFrequency
from gpexplorer.kernels import SquaredExponential


def se_arguments(feature, kernel, X=None):
    """(variance, v = l^2 [D], X [N, D] or None) checked against the feature's dimension."""
    D = feature.input_dim
    _, variance, ls, _ = kernel.fused_arguments(D)
    if X is not None:
        X = np.asarray(X, dtype=float)
        X = X[:, None] if X.ndim == 1 else X
        if X.ndim != 2 or X.shape[1] != D:
            raise ValueError(f"X must have shape (N, {D}) for inducing features in {D} dimension(s); got {X.shape}")
        X = np.ascontiguousarray(X)
    return float(variance), ls * ls, X


def kuf_parts(mu, omega, omega0, delta, variance, v, X):
    """(Kuf, S) [M, N]: Kuf = e^E cos(theta) and S = e^E sin(theta) of the module docstring."""
    u = delta * delta
    s = u + v
    r = u / s
    const = (np.log(variance) + 0.5 * np.sum(np.log(v / s))) - 0.5 * (omega * omega) @ (u * v / s)
    M, N = mu.shape[0], X.shape[0]
    E, C, S = np.empty((M, N)), np.empty((M, N)), np.empty((M, N))
    loops.exponent_and_phase(np.ascontiguousarray(X.T), (np.ascontiguousarray(mu), omega, omega0, const),
                             (1.0 / s, r), (E, C, S))
    np.exp(E, out=E)
    C *= E
    S *= E
    return C, S


#: id(Kuf) -> (weak reference to that Kuf matrix, its S): the sine half of every Kuf handed out
#: and still alive, so the gradient contraction given ``Kuf=`` need not recompute it (an entry
#: leaves with its matrix; a lookup checks identity, so a reused id can never match)
SINES = {}


def kuf_matrix(mu, omega, omega0, delta, variance, v, X):
    """Kuf [M, N], its S remembered for :func:`sine_of`."""
    K, S = kuf_parts(mu, omega, omega0, delta, variance, v, X)
    key = id(K)
    SINES[key] = (weakref.ref(K), S)
    weakref.finalize(K, SINES.pop, key, None)
    return K


def sine_of(Kuf):
    """S of a Kuf matrix made by :func:`kuf_matrix` (the very object), else None."""
    entry = SINES.get(id(Kuf))
    return entry[1] if entry is not None and entry[0]() is Kuf else None


def kuf_gradients(mu, omega, omega0, delta, variance, v, X, W, *, K, S, rank_one=None):
    """Contraction of W = dL/dKuf (minus a b^T for ``rank_one`` = (a, b)) with the derivatives
    of Kuf: {"variance", "v" [D], "mu" [M, D], "omega" [M, D], "omega0" [M], "u" [D]}."""
    D = X.shape[1]
    u = delta * delta
    s = u + v
    r = u / s
    centre = X.mean(axis=0) if len(X) else np.zeros(D)  # no rows: a KL-only contraction
    xc = X - centre
    muc = mu - centre
    V = np.empty((X.shape[0], 1 + 2 * D))
    V[:, 0] = 1.0
    V[:, 1:1 + D] = xc
    V[:, 1 + D:] = xc * xc
    W = np.asarray(W, dtype=float)
    RK = (W * K) @ V  # [M, 1 + 2D]: sum_n w K {1, x, x^2}
    RS = (W * S) @ V[:, :1 + D]  # [M, 1 + D]: sum_n w S {1, x}
    if rank_one is not None:
        a, b = (np.asarray(z, dtype=float) for z in rank_one)
        bV = b[:, None] * V
        RK -= a[:, None] * (K @ bV)
        RS -= a[:, None] * (S @ bV[:, :1 + D])
    P0, Q0 = RK[:, :1], RS[:, :1]
    X1 = RK[:, 1:1 + D]
    P1 = X1 - muc * P0  # sum_n w K t
    P2 = RK[:, 1 + D:] - 2.0 * muc * X1 + muc * muc * P0  # sum_n w K t^2
    Q1 = RS[:, 1:] - muc * Q0  # sum_n w S t
    s2 = s * s
    return {
        "variance": float(P0.sum()) / variance,
        "mu": P1 / s + Q0 * omega * r,
        "omega": -P0 * omega * (u * v / s) - Q1 * r,
        "omega0": -Q0[:, 0],
        "u": np.sum(P2 / (2 * s2) - P0 * (0.5 / s + (v * v / (2 * s2)) * omega * omega) - Q1 * omega * (v / s2), axis=0),
        "v": np.sum(P0 * (u / (2 * v * s)) + P2 / (2 * s2) - P0 * (u * u / (2 * s2)) * omega * omega
                    + Q1 * omega * (u / s2), axis=0),
    }


def kuu_dims(delta, variance, v):
    """(u [D], v [D], A [D], log(sigma^2 / 2) + sum_d log(v_d / A_d) / 2): what the Kuu loops need."""
    u = delta * delta
    A = v + 2.0 * u
    return u, v, A, float(np.log(0.5 * variance) + 0.5 * np.sum(np.log(v / A)))


def kuu_value(mu, omega, omega0, delta, variance, v):
    """Kuu [M, M] of the corrected eq. A.5 (module docstring), exactly symmetric."""
    K = np.empty((mu.shape[0], mu.shape[0]))
    loops.kuu_value((np.ascontiguousarray(mu), omega, omega0), kuu_dims(delta, variance, v), K)
    return K


def kuu_gradients(mu, omega, omega0, delta, variance, v, W):
    """Contraction of W = dL/dKuu with the derivatives of Kuu (same keys as kuf_gradients)."""
    M, D = mu.shape
    out = (np.empty((M, D)), np.empty((M, D)), np.empty(M), np.empty(D), np.empty(D), np.empty(1))
    loops.kuu_contract((np.ascontiguousarray(mu), omega, omega0), kuu_dims(delta, variance, v),
                       np.ascontiguousarray(W, dtype=float), out)
    dmu, domega, domega0, du, dv, wk = out
    return {"variance": float(wk[0]) / variance, "mu": dmu, "omega": domega, "omega0": domega0, "u": du, "v": dv}


def contract(feature, kernel, X, dKuu, dKuf, rank_one, mu, Kuf=None):
    """(kernel gradients, {name: gradient}) for a window feature with centres ``mu``; ``Kuf``,
    if it is the matrix Kuf(feature, kernel, X) returned, saves recomputing it and its S."""
    variance, v, X = se_arguments(feature, kernel, X)
    args = (mu, feature.omega, feature.omega0, feature.delta, variance, v)
    S = None if Kuf is None else sine_of(Kuf)
    K, S = (Kuf, S) if S is not None else kuf_parts(*args, X)
    guu = kuu_gradients(*args, dKuu)
    guf = kuf_gradients(*args, X, dKuf, K=K, S=S, rank_one=rank_one)
    g = {n: guu[n] + guf[n] for n in guu}
    ls = np.sqrt(v)
    grads_kernel = kernel.pack_gradients(g["variance"], 2.0 * ls * g["v"], 0.0)
    grads_feature = {"mu": g["mu"], "omega": g["omega"], "omega0": g["omega0"], "delta": 2.0 * feature.delta * g["u"]}
    return grads_kernel, grads_feature


@Kuu.register(TimeFrequency, SquaredExponential)
def time_frequency_Kuu(feature, kernel):
    variance, v, _ = se_arguments(feature, kernel)
    return kuu_value(feature.mu, feature.omega, feature.omega0, feature.delta, variance, v)  # [M, M]


@Kuf.register(TimeFrequency, SquaredExponential)
def time_frequency_Kuf(feature, kernel, X):
    variance, v, X = se_arguments(feature, kernel, X)
    return kuf_matrix(feature.mu, feature.omega, feature.omega0, feature.delta, variance, v, X)  # [M, N]


@gradients.register(TimeFrequency, SquaredExponential)
def time_frequency_gradients(feature, kernel, X, dKuu, dKuf, *, Kuu=None, Kuf=None, rank_one=None):
    return contract(feature, kernel, X, dKuu, dKuf, rank_one, feature.mu, Kuf)
