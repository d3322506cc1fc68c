"""Compiled passes of the fused FG path (:mod:`gpexplorer.variational.fused_fg`).

Each loop replaces several numpy passes over an [M, N] or [nodes, N] array with one, writing
into arrays the caller provides (from its work space). The exponentials and logarithms stay
with numpy, whose vectorised exp and log1p are several times faster than the scalar libm calls
a compiled loop makes; the loops do everything around them.
"""

from __future__ import annotations

from gpexplorer._jit import njit_cached


@njit_cached
def marginal_variances(Kuf, CK, kdiag, out):
    """out_n = kdiag_n - sum_m Kuf[m, n] CK[m, n]: sigma^2_n = kdiag_n - [Kuf^T C Kuf]_nn (eq. 11)."""
    M, N = Kuf.shape
    for n in range(N):
        out[n] = 0.0
    for m in range(M):
        for n in range(N):
            out[n] += Kuf[m, n] * CK[m, n]
    for n in range(N):
        out[n] = kdiag[n] - out[n]
    return out


@njit_cached
def scale_columns(At, CK, gv, AG):
    """AG = At diag(gv) and, in place, CK <- -2 CK diag(gv) (the matrix part of dL/dKuf)."""
    M, N = At.shape
    for m in range(M):
        for n in range(N):
            AG[m, n] = At[m, n] * gv[n]
            CK[m, n] *= -2.0 * gv[n]


@njit_cached
def logit_arguments(x, b, sd, s, work):
    """work[0, p, n] = z = s_n (b_n + sd_n x_p), the Bernoulli-logit argument at node p, and
    work[1] = -|z| (which the caller exponentiates into e = exp(-|z|))."""
    P, N = work.shape[1], work.shape[2]
    for p in range(P):
        xp = x[p]
        for n in range(N):
            v = s[n] * (b[n] + sd[n] * xp)
            work[0, p, n] = v
            work[1, p, n] = -abs(v)


@njit_cached
def logit_moments(w, x, work, s, sd, out):
    """The Gauss-Hermite sums of log_expit(z) = min(z, 0) - log1p(e) and of its slope
    expit(-z) = (e if z >= 0 else 1) / (1 + e), from work = [z, e = exp(-|z|), log1p(e)]:

        out[0, n] = sum_p w_p log_expit(z_pn),   out[1, n] = s_n sum_p w_p expit(-z_pn),
        out[2, n] = s_n sum_p w_p x_p expit(-z_pn) / (2 sd_n)     (value, d/db, d/dsigma^2; eq. 12)."""
    P, N = work.shape[1], work.shape[2]
    for n in range(N):
        out[0, n] = 0.0
        out[1, n] = 0.0
        out[2, n] = 0.0
    for p in range(P):
        wp = w[p]
        wx = wp * x[p]
        for n in range(N):
            zz = work[0, p, n]
            ee = work[1, p, n]
            g = (ee if zz >= 0.0 else 1.0) / (1.0 + ee)
            out[0, n] += wp * (min(zz, 0.0) - work[2, p, n])
            out[1, n] += wp * g
            out[2, n] += wx * g
    for n in range(N):
        out[1, n] *= s[n]
        out[2, n] *= s[n] / (2.0 * sd[n])


@njit_cached
def form_samples(b, sd, eps, out):
    """out[s, n] = b[n] + sd[n] eps[s, n]: the Monte Carlo samples of one latent's f (eq. 12);
    several latents go through as N x Q columns."""
    S, N = eps.shape
    for s in range(S):
        for n in range(N):
            out[s, n] = b[n] + sd[n] * eps[s, n]
    return out


@njit_cached
def score_sums(lp, eps, acc):
    """The score estimator's running sums over a block of samples (eq. 13) for one latent,
    l = log p(y | f_s): acc[0..5, n] += sum_s of l, l^2, l eps, (l eps)^2, l (eps^2 - 1) and
    (l (eps^2 - 1))^2. Two-dimensional arrays (samples x points) keep the inner loop vectorised."""
    S, N = lp.shape
    for s in range(S):
        for n in range(N):
            l = lp[s, n]
            e = eps[s, n]
            le = l * e
            lq = le * e - l
            acc[0, n] += l
            acc[1, n] += l * l
            acc[2, n] += le
            acc[3, n] += le * le
            acc[4, n] += lq
            acc[5, n] += lq * lq
