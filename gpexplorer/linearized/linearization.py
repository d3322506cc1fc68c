"""Per-point linearisation of a forward model, g(f_n) ~= A_n f_n + b_n (EKS eq. 14).

Two ways to choose (A_n, b_n), vectorised over the N points:

* :func:`taylor` -- first-order Taylor series about the posterior mean mu_n (EKS eq. 21-23;
  EGP paper eq. 36): A_n = J_n = dg/df at mu_n, b_n = g(mu_n) - J_n mu_n.
* :func:`unscented` -- statistical linearisation with the unscented transform (EKS eq. 24-34;
  EGP paper eq. 21-26 and 37): weighted least squares through the 2Q + 1 sigma points of
  N(mu_n, E_n), A_n = Gamma_n E_n^{-1}, b_n = y-bar_n - A_n mu_n.

Unscented details (Q latent dimensions, s = sqrt(Q + kappa)):

* sigma points F_0 = mu, F_i = mu +/- s S_{:, i} for a square root S S^T = E (eq. 26-28): for a
  diagonal E (the paper's eq. 25) S = diag(sqrt(E)); for a full E the Cholesky factor, as the
  EGP paper does following Julier & Uhlmann;
* weights u_0 = kappa / (Q + kappa), u_i = 1 / (2 (Q + kappa)) (eq. 30);
* because the sigma points are symmetric, eq. 34 collapses to
  Gamma = (1 / (2 s)) sum_i (Y_i^+ - Y_i^-) S_{:, i}^T, and A = Gamma E^{-1} (eq. 32) to
  A = (1 / (2 s)) [Y_i^+ - Y_i^-]_i S^{-1}: a secant slope along each sigma direction. That form
  is what is computed (no explicit E^{-1}, no cancellation against y-bar); it is algebraically
  identical to eq. 32-34, which the tests check with a literal transcription.

Zero variance guard: a direction whose spread s_i = sqrt(var) is below
``MIN_RELATIVE_STD * max(1, |mu|)`` carries no statistical information (and 0/0 in eq. 32). Its
slope falls back to the Taylor slope J(mu) along that direction when g is differentiable (the
UT slope converges to it as the variance vanishes), else to the secant slope through
mu +/- s * MIN_RELATIVE_STD * max(1, |mu|), i.e. the UT slope at the floor variance, so the
result is continuous in the variance. A full covariance that is singular or nearly so
(lambda_min below the floor or below 1e-10 lambda_max) is square-rooted by its eigenvectors
(S = V Lambda^{1/2}, also a valid UT square root) so that the guard applies per eigen-direction.
(When the batched Cholesky succeeds, its pivots L_jj^2 -- conditional variances, each >= lambda_min
-- stand in for lambda_min in that test, which avoids an eigen-decomposition per point.)
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from gpexplorer.likelihoods.forward_models import ForwardModel, get_forward_model, not_differentiable_message

__all__ = ["Linearization", "taylor", "unscented", "sigma_point_weights", "linearize", "MIN_RELATIVE_STD",
           "LINEARIZATION_ALIASES"]

#: every accepted name of a linearisation -> its canonical name: "taylor" (EGP / EKS, the
#: extended filter's) or "unscented" (UGP / UKS, statistical linearisation)
LINEARIZATION_ALIASES = {"taylor": "taylor", "egp": "taylor", "eks": "taylor", "extended": "taylor",
                         "unscented": "unscented", "ugp": "unscented", "uks": "unscented",
                         "statistical": "unscented"}

#: spread below which a sigma direction counts as degenerate, relative to max(1, |mu|); at this
#: step a secant still has ~eps / 1e-7 ~ 1e-9 relative rounding error
MIN_RELATIVE_STD = 1e-7
#: lambda_min / lambda_max below which a full covariance is rooted by eigenvectors, not Cholesky
_MIN_CONDITION = 1e-10
#: negative variances (eigenvalues) down to -_ROUNDING * max(1, largest) are rounding noise from
#: the caller's posterior algebra and are treated as 0; anything more negative is an error
_ROUNDING = 1e-9


@dataclass(frozen=True)
class Linearization:
    """Linearisation coefficients for N points: g(f_n) ~= A_n f_n + b_n.

    A (N, P, Q) slopes, b (N, P) intercepts, y_mean (N, P): g(mu_n) for Taylor, y-bar_n (EKS eq.
    33) for unscented. The sigma points (N, 2Q+1, Q), their forward values (N, 2Q+1, P) and the
    weights (2Q+1,) are kept for display; they are None for Taylor.
    """

    A: np.ndarray
    b: np.ndarray
    y_mean: np.ndarray
    sigma_points: np.ndarray | None = None
    sigma_values: np.ndarray | None = None
    weights: np.ndarray | None = None

    @property
    def method(self):
        """'taylor' or 'unscented'."""
        return "taylor" if self.sigma_points is None else "unscented"

    def predict(self, F):
        """The linear approximation A_n f_n + b_n at latent values F (N, Q) -> (N, P)."""
        F = np.asarray(F, dtype=float)
        if F.shape != (self.A.shape[0], self.A.shape[2]):
            raise ValueError(f"F must have shape {(self.A.shape[0], self.A.shape[2])}; got {F.shape}")
        return np.einsum("npq,nq->np", self.A, F) + self.b


def sigma_point_weights(Q, kappa=0.5):
    """Unscented weights (u_0, u_1, ..., u_2Q) (EKS eq. 30; EGP paper eq. 26).

    u_0 = kappa / (Q + kappa), u_i = 1 / (2 (Q + kappa)); they sum to 1 and kappa = 1/2 makes
    them uniform. kappa may be negative (u_0 < 0) as long as Q + kappa > 0.
    """
    if isinstance(Q, bool) or not isinstance(Q, (int, np.integer)) or Q < 1:
        raise ValueError(f"the latent dimension Q must be a positive integer; got {Q!r}")
    kappa = float(kappa)
    if not np.isfinite(kappa) or Q + kappa <= 0.0:
        raise ValueError(f"kappa must be finite with Q + kappa > 0 (Q = {Q}); got kappa = {kappa!r}")
    if abs(kappa) > 1e6:
        raise ValueError(f"kappa = {kappa!r} is absurdly large; the sigma points would be far in the tails")
    weights = np.full(2 * Q + 1, 1.0 / (2.0 * (Q + kappa)))
    weights[0] = kappa / (Q + kappa)
    return weights


def _model(forward):
    model = get_forward_model(forward)
    if not isinstance(model, ForwardModel):  # pragma: no cover - get_forward_model guarantees it
        raise ValueError(f"cannot use {forward!r} as a forward model")
    return model


def _means(mean, Q, name="mean"):
    mu = np.asarray(mean, dtype=float)
    if mu.ndim == 1 and Q == 1:
        mu = mu[:, None]
    if mu.ndim != 2 or mu.shape[1] != Q:
        raise ValueError(f"{name} must have shape (N, {Q}) for a forward model with Q = {Q}; got {mu.shape}")
    if not np.all(np.isfinite(mu)):
        raise ValueError(f"{name} contains NaN or inf")
    return mu


def _finite_output(array, model, where):
    if not np.all(np.isfinite(array)):
        raise ValueError(f"forward model {model.name!r} gave NaN or inf {where}; the latent mean or "
                         "variance is out of the model's range (e.g. exp overflow, zero velocity)")
    return array


def taylor(forward, mean):
    """First-order Taylor linearisation about the mean (EKS eq. 21-23; EGP paper eq. 36).

    forward: a ForwardModel or anything :func:`get_forward_model` accepts; mean (N, Q)
    ((N,) for Q = 1). Returns A = J(mu) (N, P, Q), b = g(mu) - J(mu) mu, y_mean = g(mu).
    Raises ValueError for a non-differentiable model (use :func:`unscented`).
    """
    model = _model(forward)
    if not model.differentiable:
        raise ValueError(not_differentiable_message(model.name, getattr(model, "_kink", "") or "no Jacobian"))
    mu = _means(mean, model.n_latent)
    y0 = _finite_output(np.asarray(model.value(mu), dtype=float).reshape(mu.shape[0], model.n_outputs),
                        model, "at the mean")
    A = _finite_output(np.asarray(model.jacobian(mu), dtype=float), model, "in its Jacobian at the mean")
    b = y0 - np.einsum("npq,nq->np", A, mu)
    return Linearization(A=A, b=b, y_mean=y0)


def _square_roots(cov, mu):
    """Validate cov and return (roots, lengths, rotated).

    Diagonal cov: (None, sqrt(variances) (N, Q), None) -- the root is diag(lengths).
    Full cov: roots (N, Q, Q) with roots[n] roots[n]^T = E_n (Cholesky factors), except at the
    singular or ill-conditioned points flagged by ``ill`` in rotated = (ill, V), whose roots are
    V diag(lengths) from the eigen-decomposition; ``lengths`` then covers those points only.
    """
    N, Q = mu.shape
    cov = np.asarray(cov, dtype=float)
    if Q == 1 and cov.shape == (N,):
        cov = cov[:, None]
    if not np.all(np.isfinite(cov)):
        raise ValueError("cov contains NaN or inf")
    if cov.shape == (N, Q):
        if np.any(cov < -_ROUNDING * max(1.0, float(np.abs(cov).max(initial=0.0)))):
            raise ValueError(f"variances must be non-negative; smallest is {cov.min():.3g}")
        return None, np.sqrt(np.clip(cov, 0.0, None)), None
    if cov.shape != (N, Q, Q):
        raise ValueError(f"cov must hold diagonal variances (N, Q) = {(N, Q)} or full covariances "
                         f"(N, Q, Q) = {(N, Q, Q)}; got {cov.shape}")
    scale = np.abs(cov).max(axis=(1, 2), keepdims=True)
    if np.any(np.abs(cov - np.swapaxes(cov, 1, 2)) > 1e-8 * np.maximum(scale, 1e-300)):
        raise ValueError("covariance matrices must be symmetric")
    cov = 0.5 * (cov + np.swapaxes(cov, 1, 2))
    floor = MIN_RELATIVE_STD * np.maximum(1.0, np.abs(mu).max(axis=1))
    try:  # fast path: every E_n numerically positive definite
        roots = np.linalg.cholesky(cov)
        pivots = np.diagonal(roots, axis1=1, axis2=2) ** 2  # conditional variances, >= lambda_min
        ill = (pivots.min(axis=1) <= floor ** 2) | (pivots.min(axis=1) <= _MIN_CONDITION * pivots.max(axis=1))
    except np.linalg.LinAlgError:
        lam = np.linalg.eigvalsh(cov)
        if np.any(lam[:, 0] < -_ROUNDING * np.maximum(lam[:, -1], 1.0)):
            raise ValueError("covariance matrices must be positive semi-definite; smallest eigenvalue "
                             f"{lam[:, 0].min():.3g}") from None
        ill = (lam[:, 0] <= floor ** 2) | (lam[:, 0] <= _MIN_CONDITION * lam[:, -1])
        roots = np.empty_like(cov)
        if np.any(~ill):
            roots[~ill] = np.linalg.cholesky(cov[~ill])
    lam_ill, vecs = np.linalg.eigh(cov[ill])
    lengths = np.sqrt(np.clip(lam_ill, 0.0, None))
    roots[ill] = vecs * lengths[:, None, :]
    return roots, lengths, (ill, vecs)


def unscented(forward, mean, cov, kappa=0.5):
    """Statistical linearisation by the unscented transform (EKS eq. 24-34; EGP paper eq. 21-26, 37).

    forward: a ForwardModel or anything :func:`get_forward_model` accepts; mean (N, Q); cov
    (N, Q) diagonal variances (EKS eq. 25) or (N, Q, Q) full covariances ((N,) for Q = 1);
    kappa: the UT spread parameter (eq. 27-30), Q + kappa > 0.
    Returns A (eq. 32), b (eq. 31), y_mean = y-bar (eq. 33), the sigma points (eq. 26-28), their
    forward values (eq. 29) and the weights (eq. 30). Works for non-differentiable g; see the
    module docstring for the zero-variance guard.
    """
    model = _model(forward)
    Q, P = model.n_latent, model.n_outputs
    mu = _means(mean, Q)
    N = mu.shape[0]
    weights = sigma_point_weights(Q, kappa)
    s = np.sqrt(Q + float(kappa))
    roots, lengths, rotated = _square_roots(cov, mu)

    # offsets[n, i] = s * (column i of the square root of E_n)
    if roots is None:
        offsets = s * lengths[:, :, None] * np.eye(Q)[None]
    else:
        offsets = s * np.swapaxes(roots, 1, 2)
    points = np.concatenate([mu[:, None, :], mu[:, None, :] + offsets, mu[:, None, :] - offsets], axis=1)
    values = np.asarray(model.value(points.reshape(N * (2 * Q + 1), Q)), dtype=float).reshape(N, 2 * Q + 1, P)
    _finite_output(values, model, "at the sigma points")
    y_bar = np.einsum("i,nip->np", weights, values)
    spread = values[:, 1:Q + 1] - values[:, Q + 1:]  # (N, Q directions, P)

    if roots is None:  # diagonal E: directions are the coordinate axes
        A = _axis_slopes(model, mu, np.swapaxes(spread, 1, 2), lengths, s, np.eye(Q)[None])
    else:
        ill, vecs = rotated
        A = np.empty((N, P, Q))
        good = ~ill
        if np.any(good):
            # A = (1/2s) D^T L^{-1}  <=>  A^T = L^{-T} D / (2s)
            solved = np.linalg.solve(np.swapaxes(roots[good], 1, 2), spread[good])
            A[good] = np.swapaxes(solved, 1, 2) / (2.0 * s)
        if np.any(ill):
            slopes = _axis_slopes(model, mu[ill], np.swapaxes(spread[ill], 1, 2), lengths, s, vecs)
            A[ill] = slopes @ np.swapaxes(vecs, 1, 2)
    b = y_bar - np.einsum("npq,nq->np", A, mu)
    return Linearization(A=A, b=b, y_mean=y_bar, sigma_points=points, sigma_values=values, weights=weights)


def _axis_slopes(model, mu, spread, lengths, s, directions):
    """Secant slopes (Y_j^+ - Y_j^-) / (2 s r_j) along orthonormal directions, guarded.

    spread (N, P, Q), lengths r (N, Q), directions V (N or 1, Q, Q) with column j the direction
    of sigma pair j. Returns slopes (N, P, Q) in the direction basis.
    """
    floor = MIN_RELATIVE_STD * np.maximum(1.0, np.abs(mu).max(axis=1))  # (N,)
    degenerate = lengths <= floor[:, None]
    with np.errstate(divide="ignore", invalid="ignore"):
        slopes = spread / (2.0 * s * np.where(degenerate, 1.0, lengths))[:, None, :]
    if not np.any(degenerate):
        return slopes
    rows = np.flatnonzero(degenerate.any(axis=1))
    V = np.broadcast_to(directions, (mu.shape[0],) + directions.shape[1:])[rows]
    if model.differentiable:
        J = _finite_output(np.asarray(model.jacobian(mu[rows]), dtype=float), model, "in its Jacobian")
        fallback = J @ V  # directional derivatives J v_j
    else:
        h = (s * floor[rows])[:, None, None]
        Q = mu.shape[1]
        steps = h * np.swapaxes(V, 1, 2)  # [n, j, :] = h v_j
        up = mu[rows][:, None, :] + steps
        down = mu[rows][:, None, :] - steps
        g_up = np.asarray(model.value(up.reshape(-1, Q)), dtype=float).reshape(len(rows), Q, -1)
        g_down = np.asarray(model.value(down.reshape(-1, Q)), dtype=float).reshape(len(rows), Q, -1)
        fallback = np.swapaxes(_finite_output(g_up - g_down, model, "near the mean"), 1, 2) / (2.0 * h)
    chosen = slopes[rows]
    mask = np.broadcast_to(degenerate[rows][:, None, :], chosen.shape)
    slopes[rows] = np.where(mask, fallback, chosen)
    return slopes


def linearize(forward, mean, cov=None, method="taylor", kappa=0.5):
    """Dispatch to :func:`taylor` or :func:`unscented` ('egp'/'eks' and 'ugp'/'uks' accepted)."""
    key = LINEARIZATION_ALIASES.get(str(method).lower())
    if key == "taylor":
        return taylor(forward, mean)
    if key == "unscented":
        if cov is None:
            raise ValueError("the unscented linearisation needs the latent covariance (cov)")
        return unscented(forward, mean, cov, kappa=kappa)
    raise ValueError(f"unknown linearisation {method!r}; use 'taylor' or 'unscented'")
