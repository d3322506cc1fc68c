"""The evidence of Bayesian linear regression on features and its gradients (revrand report
eq. 12-18).

Model: y = Phi w + e, w ~ N(0, Lambda), e ~ N(0, s2 I), Lambda = diag(lam) (eq. 12-13), so

    log p(y) = log N(y | 0, K),  K = s2 I + Phi Lambda Phi^T                              (14)

((14) prints Phi^T Lambda Phi.) Everything is computed on the scaled features Psi = Phi Lambda^{1/2},
whose factorisations cannot fail for any positive lam and s2 (the matrices below have every
eigenvalue >= 1; revrand's users met Cholesky failures factorising Lambda^{-1} + Phi^T Phi / s2):

* D <= N, "weight form": B = I_D + Psi^T Psi / s2, log|K| = N log s2 + log|B|,
  y^T K^-1 y = y^T y / s2 - |L_B^-1 Psi^T y|^2 / s2^2; cost N D^2 + D^3;
* D > N, "data form": K = s2 (I_N + Psi Psi^T / s2); cost N^2 D + N^3.

Posterior (eq. 15-17): C = Lambda^{1/2} B^-1 Lambda^{1/2} = (Lambda^-1 + Phi^T Phi / s2)^-1 and
m = C Phi^T y / s2. Gradients, with alpha = K^-1 y and the whitened posterior (m~ = Lambda^{-1/2} m,
C~ = B^-1):

    dL/dPsi = alpha m~^T - K^-1 Psi = alpha m~^T - Psi C~ / s2,
    dL/dPhi = dL/dPsi Lambda^{1/2},   dL/dlam_j = sum_n (dL/dPsi)_nj Psi_nj / (2 lam_j),
    dL/ds2 = (alpha^T alpha - tr K^-1) / 2,   tr K^-1 = (N - D + tr C~) / s2.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np
from scipy import linalg as sla
from scipy.linalg import blas, lapack

from gpexplorer.linalg import CholeskyError, inv_from_cholesky

__all__ = ["Evidence", "Predictive", "log_evidence", "weight_posterior"]

LOG_2PI = math.log(2.0 * math.pi)


class Evidence(NamedTuple):
    value: float  # log p(y)
    dPhi: np.ndarray  # [N, D]
    dlam: np.ndarray  # [D]
    dnoise: float
    weight_mean: np.ndarray  # m [D]
    form: str  # "weight" or "data"


def log_evidence(Phi, y, lam, s2, gradients=True) -> Evidence:
    """log p(y) of eq. 14 and its gradients (module docstring); ``lam`` [D] weight variances."""
    N, D = Phi.shape
    if D > N:
        return _data_form(Phi, y, lam, s2, gradients)
    root = np.sqrt(lam)
    Psi = Phi * root
    yy = float(y @ y)
    B = Psi.T @ Psi
    B /= s2
    B[np.diag_indices(D)] += 1.0
    LB = _cholesky(B, Phi)
    Psy = Psi.T @ y
    c = sla.solve_triangular(LB, Psy, lower=True, check_finite=False) / s2
    m_w = sla.solve_triangular(LB, c, lower=True, trans="T", check_finite=False)  # B^-1 Psi^T y / s2
    value = -0.5 * (N * LOG_2PI + N * math.log(s2) + 2.0 * np.log(np.diag(LB)).sum() + yy / s2 - c @ c)
    if not gradients:
        return Evidence(value, None, None, None, root * m_w, "weight")
    alpha = (y - Psi @ m_w) / s2
    Ct = inv_from_cholesky(LB)
    dPsi = np.outer(alpha, m_w)
    dPsi -= (Psi @ Ct) / s2
    tr_Kinv = (N - D + np.trace(Ct)) / s2
    dlam = (dPsi * Psi).sum(0) / (2.0 * lam)
    dnoise = 0.5 * (alpha @ alpha - tr_Kinv)
    return Evidence(value, dPsi * root, dlam, dnoise, root * m_w, "weight")


def _data_form(Phi, y, lam, s2, gradients):
    """Eq. 14 through K~ = I_N + Psi Psi^T / s2 (D > N). With alpha alpha^T Psi = alpha m~^T and
    S = K~^-1 Psi (one potrs), dL/dPhi = alpha (lam u)^T - S Lambda^{1/2} / s2 with u = Phi^T alpha;
    dL/dlam_j = (u_j^2 - c_j / s2) / 2 with c_j = S_:j . Phi_:j / lam_j^{1/2}; and
    tr K~^-1 = N - c . lam / s2 (from K~^-1 (I + Psi Psi^T / s2) = I). One [N, D] array is made,
    Fortran-ordered, and everything after is in place: no inverse, no outer product, no copies
    (each fresh [N, D] array costs its page faults, ~1 ms at Boston's 404 x 813)."""
    N = Phi.shape[0]
    root = np.sqrt(lam)
    Psi = np.multiply(Phi, root, out=np.empty(Phi.shape, order="F"))
    Kt = blas.dsyrk(1.0 / s2, Psi, lower=1)  # the lower triangle is all potrf reads
    Kt[np.diag_indices(N)] += 1.0
    LK = _cholesky(Kt, Phi)
    alpha = sla.cho_solve((LK, True), y, check_finite=False) / s2
    value = -0.5 * (N * LOG_2PI + N * math.log(s2) + 2.0 * np.log(np.diag(LK)).sum() + y @ alpha)
    u = Phi.T @ alpha
    if not gradients:
        return Evidence(value, None, None, None, lam * u, "data")
    S, info = lapack.dpotrs(LK, Psi, lower=1, overwrite_b=1)
    if info != 0:
        raise CholeskyError("the solve with the evidence's Gram matrix failed")
    c = np.einsum("nj,nj->j", S, Phi) / root
    dlam = 0.5 * (u * u - c / s2)
    S *= root * (-1.0 / s2)
    dPhi = blas.dger(1.0, alpha, lam * u, a=S, overwrite_a=1)
    dnoise = 0.5 * (alpha @ alpha - (N - c @ lam / s2) / s2)
    return Evidence(value, dPhi, dlam, dnoise, lam * u, "data")


def _cholesky(A, Phi):
    """The factor of I + (scaled Gram matrix), or a CholeskyError naming the inputs: exact arithmetic
    keeps every eigenvalue >= 1, but features of enormous magnitude swamp the identity in float64."""
    try:
        return sla.cholesky(A, lower=True, check_finite=False)
    except np.linalg.LinAlgError:
        raise CholeskyError(f"the evidence's Gram matrix is not numerically positive definite: the features reach "
                            f"{np.max(np.abs(Phi)):.3g} in magnitude (standardise X, or bound the weight variance "
                            "and the lengthscales)") from None


def weight_posterior(Phi, y, lam, s2):
    """(m [D], C [D, D]) of the weights (eq. 15): C = Lambda^{1/2} B^-1 Lambda^{1/2}."""
    D = Phi.shape[1]
    root = np.sqrt(lam)
    Psi = Phi * root
    B = Psi.T @ Psi
    B /= s2
    B[np.diag_indices(D)] += 1.0
    Ct = inv_from_cholesky(_cholesky(B, Phi))
    m = root * (Ct @ (Psi.T @ y)) / s2
    return m, Ct * root[:, None] * root[None, :]


class Predictive:
    """p(f* | y) for new features P* [S, D] (eq. 15-17) in the cheaper of the two forms: with the
    weights' posterior (D <= N) or, for D > N, through the data,
    Var f* = |P* Lambda^{1/2}|^2 - |L_K^-1 Psi Lambda^{1/2} P*^T|^2 / s2, never forming a D x D matrix."""

    def __init__(self, Phi, y, lam, s2):
        N, D = Phi.shape
        self.root, self.s2 = np.sqrt(lam), s2
        self.form = "weight" if D <= N else "data"
        if self.form == "weight":
            self.mean_w, C = weight_posterior(Phi, y, lam, s2)
            self.C = C
        else:
            self.Psi = Phi * self.root
            Kt = self.Psi @ self.Psi.T
            Kt /= s2
            Kt[np.diag_indices(N)] += 1.0
            self.LK = _cholesky(Kt, Phi)
            alpha = sla.cho_solve((self.LK, True), y, check_finite=False) / s2
            self.mean_w = self.root * (self.Psi.T @ alpha)

    def __call__(self, P, full_cov=False):
        """(E[f*], Var[f*] or Cov[f*])."""
        mean = P @ self.mean_w
        if self.form == "weight":
            A = P @ self.C
            cov = A @ P.T if full_cov else np.einsum("ij,ij->i", A, P)
        else:
            Ps = P * self.root  # [S, D]
            V = sla.solve_triangular(self.LK, self.Psi @ Ps.T, lower=True, check_finite=False)  # [N, S]
            cov = Ps @ Ps.T - V.T @ V / self.s2 if full_cov else (Ps * Ps).sum(1) - (V * V).sum(0) / self.s2
        return mean, (cov if full_cov else np.maximum(cov, 0.0))
