"""Dense algebra of the kitchen-sinks posterior (EKS eq. 17-19, 36), shared by
:mod:`gpexplorer.linearized.kitchen_sinks`.

* :class:`TaskPrecision` -- Lambda_q = I / omega_q^2 + Phi^T diag(w_q) Phi (eq. 18-19) and
  C_q = Lambda_q^-1, factorised in the cheaper of the primal (D x D) and dual (N x N, Woodbury) forms.
* :func:`newton_system` -- the factors of eq. 18-19 and the Newton step of eq. 16, per task or
  coupled across tasks, solved by :func:`preconditioned_cg`.
* :func:`coupled_latent_variances` -- latent marginal variances of the Gaussian posterior of the
  linearised model *without* the factorisation over tasks of eq. 9 (a diagnostic for how much
  the mean-field C_q of eq. 19 understate the spread when tasks trade off against each other).
* :func:`monte_carlo_moments` -- mean and variance of g(f*) by sampling (EKS eq. 37).
"""

from __future__ import annotations

import math

import numpy as np
from scipy import linalg as sla
from scipy.linalg.blas import dsyrk

from gpexplorer.linalg import jittered_cholesky

__all__ = ["TaskPrecision", "newton_system", "preconditioned_cg", "coupled_latent_variances", "monte_carlo_moments",
           "MAX_COUPLED_SIZE"]

#: largest N P (observations) for which :func:`coupled_latent_variances` builds its dense system
MAX_COUPLED_SIZE = 6000


def _cholesky(G, what):
    """Lower Cholesky factor of the symmetric G whose lower triangle is filled. G is kept: LAPACK
    leaves a failed factorisation's partial factor in its input, and the jittered retry must start
    from G itself (it once retried on that debris and failed at any jitter)."""
    try:
        return sla.cholesky(G, lower=True, overwrite_a=False, check_finite=False)
    except np.linalg.LinAlgError:
        G = np.tril(G) + np.tril(G, -1).T
        return jittered_cholesky(G, 1e-10 * np.mean(np.diag(G)), what=what)[0]


class TaskPrecision:
    """Lambda_q = I / omega_q^2 + Phi^T diag(w_q) Phi (EKS eq. 18-19) and C_q = Lambda_q^-1, factorised
    in the cheaper form: primal (D x D Cholesky of Lambda_q) when D <= N, else dual via Woodbury,
    C_q = omega^2 I - omega^4 U^T B^-1 U with U = diag(sqrt(w)) Phi, B = I_N + omega^2 U U^T
    (eigenvalues >= 1, so zero weights, e.g. a saturated logistic, are harmless)."""

    def __init__(self, Phi, weights, omega2, what):
        N, D = Phi.shape
        self.omega2, self.D = float(omega2), D
        self.dual = D > N
        if self.dual:
            self.U = Phi * np.sqrt(weights)[:, None]  # [N, D]
            B = dsyrk(omega2, self.U.T, trans=1, lower=1)  # omega^2 U U^T, lower triangle
            B[np.diag_indices_from(B)] += 1.0
        else:
            S = Phi * np.sqrt(weights)[:, None]
            B = dsyrk(1.0, S.T, trans=0, lower=1)  # Phi^T diag(w) Phi; S.T is Fortran-ordered: no copy
            B[np.diag_indices_from(B)] += 1.0 / omega2
        self.L = _cholesky(B, what)

    def solve(self, r):
        """Lambda^-1 r = C r for a vector r [D]."""
        if not self.dual:
            return sla.cho_solve((self.L, True), r, check_finite=False)
        inner = sla.cho_solve((self.L, True), self.U @ r, check_finite=False)
        return self.omega2 * r - self.omega2 ** 2 * (self.U.T @ inner)

    def variances(self, Phi):
        """phi_n^T C phi_n for every row of Phi (EKS eq. 25 / 36), [n]."""
        if not self.dual:
            V = sla.solve_triangular(self.L, Phi.T, lower=True, check_finite=False)  # [D, n]
            return np.einsum("dn,dn->n", V, V)
        V = sla.solve_triangular(self.L, self.U @ Phi.T, lower=True, check_finite=False)  # [N, n]
        prior = self.omega2 * np.einsum("nd,nd->n", Phi, Phi)
        return np.maximum(prior - self.omega2 ** 2 * np.einsum("kn,kn->n", V, V), 0.0)

    def log_det(self):
        """log|Lambda| = -log|C|."""
        half = float(np.sum(np.log(np.diagonal(self.L))))
        return 2.0 * half - (self.D * math.log(self.omega2) if self.dual else 0.0)

    def covariance(self):
        """C as a dense [D, D] array."""
        if not self.dual:
            Linv = sla.solve_triangular(self.L, np.eye(self.D), lower=True, check_finite=False)
            return Linv.T @ Linv
        V = sla.solve_triangular(self.L, self.U, lower=True, check_finite=False)  # [N, D]
        return self.omega2 * np.eye(self.D) - self.omega2 ** 2 * (V.T @ V)


def preconditioned_cg(apply, precondition, b, rtol=1e-9, max_iter=500):
    """Solve H x = b (H symmetric positive definite, given as ``apply``) by preconditioned CG."""
    x = np.zeros_like(b)
    r = b.copy()
    z = precondition(r)
    p = z.copy()
    rz = float(np.sum(r * z))
    target = rtol * rtol * rz
    for _ in range(max_iter):
        if rz <= target:
            break
        Hp = apply(p)
        alpha = rz / float(np.sum(p * Hp))
        x += alpha * p
        r -= alpha * Hp
        z = precondition(r)
        rz, rz_old = float(np.sum(r * z)), rz
        p = z + (rz / rz_old) * p
    return x


def newton_system(Phi, A, SA, weight_variance, gradient=None, coupled=True):
    """(TaskPrecision per task, Newton step [Q, D] or None, decrement gradient . step).

    ``A`` [N, P, Q] slopes, ``SA`` = Sigma^-1 A, ``gradient`` [Q, D] the gradient eq. 17 (None:
    only the factors, e.g. for the final C_q). Per-task step (``coupled=False``):
    step_q = Lambda_q^-1 grad_q (eq. 16-18 literally, all tasks at once). Coupled: the Gauss-Newton
    step of all tasks jointly, whose Hessian also has the cross-task blocks
    Phi^T diag(a_nq^T Sigma^-1 a_nk) Phi, solved by conjugate gradients preconditioned with the
    per-task factors (identical to per-task when Q = 1 or the tasks do not interact through g).
    """
    Q = A.shape[2]
    coupled = coupled and Q > 1
    W = np.einsum("npq,npk->nqk", A, SA) if coupled else None  # a_nq^T Sigma^-1 a_nk, [N, Q, Q]
    w = np.einsum("nqq->nq", W) if coupled else np.einsum("npq,npq->nq", A, SA)
    precisions = [TaskPrecision(Phi, w[:, q], weight_variance[q], f"the precision of task {q} (EKS eq. 19)")
                  for q in range(Q)]
    if gradient is None:
        return precisions, None, 0.0

    def per_task(R):
        return np.stack([precisions[q].solve(R[q]) for q in range(Q)])

    if coupled:
        step = preconditioned_cg(lambda V: (np.einsum("nqk,nk->nq", W, Phi @ V.T).T @ Phi
                                            + V / weight_variance[:, None]), per_task, gradient)
    else:
        step = per_task(gradient)
    return precisions, step, float(np.sum(gradient * step))


def coupled_latent_variances(Phi, A, noise_variance, weight_variance, Phi_new):
    """Latent marginal variances [n, Q] at the rows of ``Phi_new`` under the full Gaussian posterior
    of the linearised model (EKS eq. 7 and 14 with fixed A_n), i.e. eq. 9 without its
    factorisation over tasks.

    That posterior has the precision of the coupled Gauss-Newton system, block (q, k) =
    delta_qk I / omega_q^2 + Phi^T diag(a_nq^T Sigma^-1 a_nk) Phi; the mean-field C_q of eq. 19 are
    the inverses of its diagonal blocks, which understate the marginal variances whenever the
    tasks trade off (EKS section 7.4: only the ratios depth / velocity are observed). Computed in
    observation space: with K_q = omega_q^2 Phi Phi^T, the N P observations y = A f + b + e have
    covariance S = sum_q A_q K_q A_q^T + I (x) Sigma, and
    var f*_q = omega_q^2 |phi*|^2 - c_q^T S^-1 c_q with c_q = A_q K_q(X, x*) (Gaussian
    conditioning; O((N P)^3), so N P is capped at :data:`MAX_COUPLED_SIZE`).

    ``Phi`` [N, D] training features, ``A`` [N, P, Q] slopes of the final linearisation,
    ``noise_variance`` [P], ``weight_variance`` [Q], ``Phi_new`` [n, D].
    """
    N, P, Q = A.shape
    if N * P > MAX_COUPLED_SIZE:
        raise ValueError(f"coupled variances need a dense (N P) x (N P) system; N P = {N * P} exceeds "
                         f"{MAX_COUPLED_SIZE}")
    gram = Phi @ Phi.T  # [N, N]
    cross = Phi @ Phi_new.T  # [N, n]
    S = np.zeros((N, P, N, P))
    for q in range(Q):
        S += weight_variance[q] * np.einsum("np,nm,mr->npmr", A[:, :, q], gram, A[:, :, q])
    S = S.reshape(N * P, N * P)
    S[np.diag_indices_from(S)] += np.tile(noise_variance, N)
    L = jittered_cholesky(S, 1e-12 * float(np.mean(np.diag(S))), what="the coupled observation covariance",
                          warn=False)[0]
    prior = np.einsum("nd,nd->n", Phi_new, Phi_new)
    out = np.empty((Phi_new.shape[0], Q))
    for q in range(Q):
        C = (weight_variance[q] * A[:, :, q, None] * cross[:, None, :]).reshape(N * P, -1)  # [N P, n]
        V = sla.solve_triangular(L, C, lower=True, check_finite=False)
        out[:, q] = np.maximum(weight_variance[q] * prior - np.einsum("kn,kn->n", V, V), 0.0)
    return out


def monte_carlo_moments(forward, mean, var, num_samples, rng, n_outputs):
    """Mean and variance [n, P] of g(f*) with f* ~ N(mean, diag var) ([n, Q] each; EKS eq. 37) from
    ``num_samples`` draws of ``rng``, in chunks of about 2e6 latent values."""
    n, Q = mean.shape
    g_mean = np.empty((n, n_outputs))
    g_var = np.empty_like(g_mean)
    chunk = max(1, 2_000_000 // (num_samples * Q))
    for start in range(0, n, chunk):
        sl = slice(start, min(n, start + chunk))
        draws = mean[sl] + np.sqrt(var[sl]) * rng.standard_normal((num_samples,) + mean[sl].shape)
        g = forward.value(draws.reshape(-1, Q)).reshape(num_samples, -1, n_outputs)
        g_mean[sl] = g.mean(axis=0)
        g_var[sl] = g.var(axis=0, ddof=1)
    return g_mean, g_var
