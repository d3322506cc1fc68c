"""Slow, literal numpy transcription of the EGP / UGP (Steinberg & Bonilla 2014, eq. 31-41).

Written for readability, not speed: explicit inverses of K and of Lambda + A K A, full N x N
covariances, the linearisation coefficients computed here from g and its derivative rather than
through ``gpexplorer.linearized.linearization``. ``gpexplorer.linearized.gp`` is tested against it.

The iteration is the same as the fast code's (see ``inner_loop``): iteration k linearises g
about the current mean m_k (and, for the UGP, the marginals N(m_k, C_nn) of the posterior of the
previous linearisation; the prior K before the first), forms the Gauss-Newton target
H_k (y - b_k) (eq. 34) and multiplies alpha by ``shrink`` (0.75, as the original linearizedGP
code) from 1 until the MAP objective (31) is no worse; after ``max_cuts`` cuts it stops
('diverged') with the last good mean *and the posterior that came with it* (the linearisation of
the iteration before; the start's own when the first iteration diverges). A step that is worse
by at most tol (1 + |obj|) ends the loop as converged ('stalled'), and so does an accepted step
that improves the objective by at most that much, or (Taylor only) whose gain shrank by a ratio
r < 1/2 from the previous one with gain r / (1 - r) below it. Otherwise the returned posterior
pairs the final mean with the linearisation of the last iteration: C = (I - H A) K (eq. 35).
"""

from __future__ import annotations

import numpy as np
from scipy import integrate


def taylor_coefficients(forward, m):
    """EGP paper eq. 36: a_n = g'(m_n), b_n = g(m_n) - g'(m_n) m_n."""
    a = forward.jacobian(m[:, None])[:, 0, 0]
    b = forward.value(m[:, None])[:, 0] - a * m
    return a, b


def unscented_coefficients(forward, m, c, kappa):
    """EGP paper eq. 37 with the scalar sigma points and weights of eq. 21-26.

    M_n = {m_n, m_n + sqrt((1 + kappa) c_n), m_n - sqrt((1 + kappa) c_n)},
    w_0 = kappa / (1 + kappa), w_1 = w_2 = 1 / (2 (1 + kappa)),
    y-bar_n = sum_i w_i g(M_ni), Gamma_n = sum_i w_i (g(M_ni) - y-bar_n) (M_ni - m_n),
    a_n = Gamma_n / c_n, b_n = y-bar_n - a_n m_n.
    """
    w = np.array([kappa / (1 + kappa), 1 / (2 * (1 + kappa)), 1 / (2 * (1 + kappa))])
    a = np.empty_like(m)
    b = np.empty_like(m)
    for n in range(len(m)):
        spread = np.sqrt((1 + kappa) * c[n])
        M = np.array([m[n], m[n] + spread, m[n] - spread])
        Y = forward.value(M[:, None])[:, 0]
        ybar = np.sum(w * Y)
        gamma = np.sum(w * (Y - ybar) * (M - m[n]))
        a[n] = gamma / c[n]
        b[n] = ybar - a[n] * m[n]
    return a, b


def map_objective(forward, y, m, K, noise_variance):
    """EGP paper eq. 31: -(y - g(m))^T Lambda^-1 (y - g(m)) / 2 - m^T K^-1 m / 2."""
    r = y - forward.value(m[:, None])[:, 0]
    return -0.5 * r @ r / noise_variance - 0.5 * m @ np.linalg.inv(K) @ m


def inner_loop(K, y, noise_variance, forward, method="taylor", kappa=0.5, max_iter=100, tol=1e-6,
               max_cuts=24, shrink=0.75):
    """Gauss-Newton on m (eq. 34) with C (eq. 35); returns a dict with m, C, a, b, trace."""
    N = len(y)
    Lam = noise_variance * np.eye(N)
    m = np.zeros(N)
    C = K.copy()
    obj = map_objective(forward, y, m, K, noise_variance)
    trace = [(0, obj, 0.0, 0, "start")]
    status = "max_iter"
    previous = 0.0  # the last accepted gain (none yet)
    kept = None     # (C, a, b) of the linearisation that produced the current mean
    for k in range(1, max_iter + 1):
        if method == "taylor":
            a, b = taylor_coefficients(forward, m)
        else:
            a, b = unscented_coefficients(forward, m, np.diag(C).copy(), kappa)
        A = np.diag(a)
        H = K @ A @ np.linalg.inv(Lam + A @ K @ A)                    # eq. 34
        target = H @ (y - b)
        tolerance = tol * (1 + abs(obj))
        alpha, cuts = 1.0, 0
        while True:
            m_new = (1 - alpha) * m + alpha * target                 # eq. 34
            obj_new = map_objective(forward, y, m_new, K, noise_variance)
            if obj_new >= obj:
                step = "accepted"
                break
            if obj_new >= obj - tolerance:
                step = "stalled"
                break
            if cuts == max_cuts:
                step = "diverged"
                break
            alpha *= shrink
            cuts += 1
        if step == "diverged" and kept is not None:
            C, a, b = kept
            trace.append((k, obj, alpha, cuts, step))
            status = step
            break
        C = (np.eye(N) - H @ A) @ K                                   # eq. 35
        kept = (C, a, b)
        if step != "accepted":
            trace.append((k, obj, alpha, cuts, step))
            status = step
            break
        improvement = obj_new - obj
        m, obj = m_new, obj_new
        trace.append((k, obj, alpha, cuts, step))
        # converged: a small gain, or (Taylor) a fast geometric decay (ratio r < 1/2) whose
        # remainder gain * r / (1 - r) is small; the UGP's C keeps moving after m settles
        ratio = improvement / previous if previous > 0 else np.inf
        fast = method == "taylor" and ratio < 0.5 and improvement * ratio / (1 - ratio) <= tolerance
        if improvement <= tolerance or fast:
            status = "converged"
            break
        previous = improvement
    return {"m": m, "C": C, "a": a, "b": b, "trace": trace, "status": status, "map": obj}


def free_energy(y, m, C, K, a, b, noise_variance):
    """EGP paper eq. 41 with log-determinants and K^-1 taken literally."""
    N = len(y)
    r = y - a * m - b
    _, logdet_C = np.linalg.slogdet(C)
    _, logdet_K = np.linalg.slogdet(K)
    return -0.5 * (N * np.log(2 * np.pi * noise_variance) - logdet_C + logdet_K
                   + m @ np.linalg.inv(K) @ m + r @ r / noise_variance)


def predict_f(K, Ks, kss, m, C):
    """EGP paper eq. 38: m* = k*^T K^-1 m, C* = k** - k*^T K^-1 [I - C K^-1] k*."""
    Kinv = np.linalg.inv(K)
    mean = Ks.T @ Kinv @ m
    var = kss - np.einsum("ns,ns->s", Ks, Kinv @ (np.eye(len(m)) - C @ Kinv) @ Ks)
    return mean, var


def predict_y_quad(forward, mean, var, noise_variance):
    """Eq. 39 by adaptive quadrature (scipy.integrate.quad): E[g(f*)], Var[g(f*)] + sigma^2."""
    out_mean, out_var = np.empty_like(mean), np.empty_like(mean)
    for i, (mu, v) in enumerate(zip(mean, var)):
        sd = np.sqrt(v)

        def density(f):
            return np.exp(-0.5 * (f - mu) ** 2 / v) / np.sqrt(2 * np.pi * v)

        def g(f):
            return forward.value(np.array([[f]]))[0, 0]

        lo, hi = mu - 10 * sd, mu + 10 * sd
        e1 = integrate.quad(lambda f: g(f) * density(f), lo, hi, epsabs=1e-12, epsrel=1e-12, limit=200)[0]
        e2 = integrate.quad(lambda f: (g(f) - e1) ** 2 * density(f), lo, hi, epsabs=1e-12, epsrel=1e-12,
                            limit=200)[0]
        out_mean[i], out_var[i] = e1, e2 + noise_variance
    return out_mean, out_var


def predict_y_unscented(forward, mean, var, kappa, noise_variance):
    """Eq. 40: y-bar* = sum_i w_i g(M*_i), var = sum_i w_i (g(M*_i) - y-bar*)^2 (+ sigma^2)."""
    w = np.array([kappa / (1 + kappa), 1 / (2 * (1 + kappa)), 1 / (2 * (1 + kappa))])
    out_mean, out_var = np.empty_like(mean), np.empty_like(mean)
    for i, (mu, v) in enumerate(zip(mean, var)):
        spread = np.sqrt((1 + kappa) * v)
        Y = forward.value(np.array([[mu], [mu + spread], [mu - spread]]))[:, 0]
        out_mean[i] = np.sum(w * Y)
        out_var[i] = np.sum(w * (Y - out_mean[i]) ** 2) + noise_variance
    return out_mean, out_var


def linear_gaussian_evidence(K, y, a, b, noise_variance):
    """log N(y - b | 0, B), B = Lambda + A K A (EGP paper eq. 34), with B formed and inverted
    literally: the log evidence of the model linearised as g(f) ~= A f + b."""
    N = len(y)
    B = noise_variance * np.eye(N) + np.diag(a) @ K @ np.diag(a)
    _, logdet = np.linalg.slogdet(B)
    r = y - b
    return -0.5 * (N * np.log(2 * np.pi) + logdet + r @ np.linalg.solve(B, r))


def fisher_information(covariance, theta, h=1e-5):
    """I_ij = 1/2 tr(B^-1 dB/dtheta_i B^-1 dB/dtheta_j) for a Gaussian N(0, B(theta)), with
    ``covariance(theta)`` the explicit matrix B and its derivatives by central differences."""
    theta = np.asarray(theta, dtype=float)
    B_inv = np.linalg.inv(covariance(theta))
    derivatives = []
    for i in range(len(theta)):
        e = np.zeros_like(theta)
        e[i] = h
        derivatives.append(B_inv @ (covariance(theta + e) - covariance(theta - e)) / (2 * h))
    return np.array([[0.5 * np.trace(Mi @ Mj) for Mj in derivatives] for Mi in derivatives])


def exact_gp(X, y, Xs, kernel, noise):
    """Plain-numpy GP regression: mean and variance of f* (GPML eq. 2.25-2.26)."""
    K = kernel.K(X) + noise * np.eye(len(y))
    Ks = kernel.K(X, Xs)
    mean = Ks.T @ np.linalg.solve(K, y)
    var = kernel.Kdiag(Xs) - np.einsum("ij,ij->j", Ks, np.linalg.solve(K, Ks))
    return mean, var
