"""Plain-numpy reference for EKS / UKS: a literal, slow transcription of the EKS paper.

Explicit loops over data points n, tasks q and sigma points i; dense inverses; no BLAS tricks.
It shares nothing with gpexplorer.linearized.kitchen_sinks or gpexplorer.linearized.linearization except the forward
model's ``value`` / ``jacobian`` evaluated one point at a time. Used by tests only.

Algorithm (the same as the fast code, so converged results must agree):
M = 0, C_q = omega_q^2 I; repeat: linearise each point (eq. 21-23 or 24-34, E_n from the latest
C_q), Hessian eq. 18, gradient eq. 17 with the full linearised residual, C_q = inverse Hessian
(eq. 19); stop when half the Newton decrement is below tol (1 + |MAP|); else Newton step eq. 16
with alpha halved until the MAP objective (EGP eq. 31) does not decrease ('stalled' within the
tolerance, 'diverged' after max_cuts halvings: keep the mean, and after an accepted step the
linearisation and C_q that came with it).
The "coupled" step solves the full all-task Gauss-Newton system (a dense [Q D, Q D] matrix
here); "per_task" uses the block-diagonal Hessian of eq. 18 as printed.
"""

import numpy as np


def features(X, frequencies):
    """EKS eq. 6 with angular frequencies w_i [m, d]: phi = m^-1/2 [cos(w_i.x)..., sin(w_i.x)...]."""
    N, m = X.shape[0], frequencies.shape[0]
    Phi = np.zeros((N, 2 * m))
    for n in range(N):
        for i in range(m):
            z = float(np.dot(frequencies[i], X[n]))
            Phi[n, i] = np.cos(z) / np.sqrt(m)
            Phi[n, m + i] = np.sin(z) / np.sqrt(m)
    return Phi


def taylor_point(forward, mu_n):
    """EKS eq. 21-23 for one point: A_n = J_n, b_n = g(mu_n) - J_n mu_n, y-bar = g(mu_n)."""
    g = forward.value(mu_n[None, :])[0]
    J = forward.jacobian(mu_n[None, :])[0]
    return J, g - J @ mu_n, g


def unscented_point(forward, mu_n, E_diag, kappa):
    """EKS eq. 26-34 for one point with diagonal E_n (eq. 25): A_n = Gamma_n E_n^-1."""
    Q = mu_n.shape[0]
    E = np.diag(E_diag)
    root = np.diag(np.sqrt((Q + kappa) * E_diag))  # sqrt((Q + kappa) E_n) of a diagonal matrix
    points = [mu_n.copy()]  # eq. 26
    for i in range(Q):  # eq. 27
        points.append(mu_n + root[:, i])
    for i in range(Q):  # eq. 28
        points.append(mu_n - root[:, i])
    weights = [kappa / (Q + kappa)] + [1.0 / (2.0 * (Q + kappa))] * (2 * Q)  # eq. 30
    values = [forward.value(p[None, :])[0] for p in points]  # eq. 29
    y_bar = sum(u * v for u, v in zip(weights, values))  # eq. 33
    Gamma = sum(u * np.outer(v - y_bar, p - mu_n) for u, v, p in zip(weights, values, points))  # eq. 34
    A = Gamma @ np.linalg.inv(E)  # eq. 32
    b = y_bar - A @ mu_n  # eq. 31
    return A, b, y_bar


def linearize(forward, method, M, Phi, prior_mean, C, kappa):
    """Per-point (A_n, b_n, y-bar_n) about mu_n = M phi_n + c with E_n from eq. 25."""
    N, Q = Phi.shape[0], M.shape[0]
    out = []
    for n in range(N):
        mu_n = np.array([M[q] @ Phi[n] + prior_mean[q] for q in range(Q)])
        if method == "taylor":
            out.append(taylor_point(forward, mu_n))
        else:
            E_diag = np.array([Phi[n] @ C[q] @ Phi[n] for q in range(Q)])  # eq. 25
            out.append(unscented_point(forward, mu_n, E_diag, kappa))
    return out


def map_objective(Y, forward, M, Phi, prior_mean, noise_variance, weight_variance):
    """EGP paper eq. 31 for this model: -1/2 sum_n |y_n - g(mu_n)|^2_Sigma^-1 - 1/2 sum_q |m_q|^2 / omega_q^2."""
    value = 0.0
    Q = M.shape[0]
    for n in range(Phi.shape[0]):
        mu_n = np.array([M[q] @ Phi[n] + prior_mean[q] for q in range(Q)])
        eps = Y[n] - forward.value(mu_n[None, :])[0]
        value -= 0.5 * float(eps @ np.diag(1.0 / noise_variance) @ eps)
    for q in range(Q):
        value -= 0.5 * float(M[q] @ M[q]) / weight_variance[q]
    return value if np.isfinite(value) else -np.inf


def newton_terms(Y, Phi, lins, M, prior_mean, noise_variance, weight_variance):
    """Per task: Hessian of eq. 18 (as the positive precision) and gradient of eq. 17."""
    N, D = Phi.shape
    Q = M.shape[0]
    Sinv = np.diag(1.0 / noise_variance)
    precisions, gradients = [], []
    for q in range(Q):
        H = np.eye(D) / weight_variance[q]
        grad = -M[q] / weight_variance[q]
        for n in range(N):
            A, b, _ = lins[n]
            mu_n = np.array([M[k] @ Phi[n] + prior_mean[k] for k in range(Q)])
            eps = Y[n] - (A @ mu_n + b)
            a = A[:, q]
            H += np.outer(Phi[n], Phi[n]) * float(a @ Sinv @ a)
            grad += Phi[n] * float(a @ Sinv @ eps)
        precisions.append(H)
        gradients.append(grad)
    return precisions, gradients


def coupled_precision(Phi, lins, noise_variance, weight_variance):
    """The full Gauss-Newton precision over vec(M) [Q D, Q D]: block (q, k) is
    delta_qk I / omega_q^2 + sum_n phi_n phi_n^T a_nq^T Sigma^-1 a_nk (eq. 18 plus cross-task blocks)."""
    N, D = Phi.shape
    Q = len(weight_variance)
    Sinv = np.diag(1.0 / noise_variance)
    H = np.zeros((Q * D, Q * D))
    for q in range(Q):
        H[q * D:(q + 1) * D, q * D:(q + 1) * D] += np.eye(D) / weight_variance[q]
        for k in range(Q):
            for n in range(N):
                A = lins[n][0]
                H[q * D:(q + 1) * D, k * D:(k + 1) * D] += np.outer(Phi[n], Phi[n]) * float(A[:, q] @ Sinv @ A[:, k])
    return H


def fit(X, Y, forward, frequencies, weight_variance, noise_variance, prior_mean=None, method="taylor",
        kappa=0.5, max_iter=200, tol=1e-12, max_cuts=10, newton_step="coupled"):
    """The Newton loop; returns dict(M, C, lins, Phi, objectives) at convergence."""
    Phi = features(X, frequencies)
    D, Q = Phi.shape[1], len(weight_variance)
    prior_mean = np.zeros(Q) if prior_mean is None else np.asarray(prior_mean, float)
    M = np.zeros((Q, D))
    C = [np.eye(D) * weight_variance[q] for q in range(Q)]  # the prior, for the first E_n

    def objective_at(M):
        return map_objective(Y, forward, M, Phi, prior_mean, noise_variance, weight_variance)

    value = objective_at(M)
    objectives, statuses = [value], ["start"]
    lins = None
    came_with_M = None  # (lins, C) of the linearisation whose step produced M
    for _ in range(max_iter):
        lins = linearize(forward, method, M, Phi, prior_mean, C, kappa)
        precisions, gradients = newton_terms(Y, Phi, lins, M, prior_mean, noise_variance, weight_variance)
        if newton_step == "coupled":
            full = coupled_precision(Phi, lins, noise_variance, weight_variance)
            steps = list(np.linalg.solve(full, np.concatenate(gradients)).reshape(Q, D))
        else:
            steps = [np.linalg.solve(H, g) for H, g in zip(precisions, gradients)]
        C = [np.linalg.inv(H) for H in precisions]  # eq. 19 for this linearisation
        decrement = sum(float(g @ s) for g, s in zip(gradients, steps))
        tolerance = tol * (1.0 + abs(value))
        if 0.5 * decrement <= tolerance:
            break
        alpha, status = 1.0, "diverged"  # EGP paper sec. 2.5
        for cut in range(max_cuts + 1):
            if cut:
                alpha /= 2.0
            candidate = M + alpha * np.array(steps)
            new_value = objective_at(candidate)
            if new_value >= value:
                status = "accepted"
                break
            if new_value >= value - tolerance:
                status = "stalled"
                break
        statuses.append(status)
        if status != "accepted":
            objectives.append(value)
            if status == "diverged" and came_with_M is not None:
                lins, C = came_with_M
            break
        M, value = candidate, new_value
        came_with_M = (lins, C)
        objectives.append(value)
    else:
        lins = linearize(forward, method, M, Phi, prior_mean, C, kappa)
        C = [np.linalg.inv(H) for H in newton_terms(Y, Phi, lins, M, prior_mean, noise_variance, weight_variance)[0]]
    return {"M": M, "C": C, "lins": lins, "Phi": Phi, "objectives": objectives, "statuses": statuses,
            "prior_mean": prior_mean}


def free_energy_eq20(Y, fitted, noise_variance, weight_variance):
    """EKS eq. 20."""
    N, P = Y.shape
    M, C, lins, Phi = fitted["M"], fitted["C"], fitted["lins"], fitted["Phi"]
    D, Q = Phi.shape[1], M.shape[0]
    value = -0.5 * N * (P * np.log(2 * np.pi) + np.log(np.prod(noise_variance)))
    for n in range(N):
        A, b, _ = lins[n]
        mu_n = np.array([M[q] @ Phi[n] + fitted["prior_mean"][q] for q in range(Q)])
        eps = Y[n] - (A @ mu_n + b)
        value -= 0.5 * float(eps @ np.diag(1.0 / noise_variance) @ eps)
    for q in range(Q):
        logdet_C = np.linalg.slogdet(C[q])[1]
        value -= 0.5 * (float(M[q] @ M[q]) / weight_variance[q] - logdet_C + D * np.log(weight_variance[q]))
    return value


def elbo_eq11(Y, fitted, noise_variance, weight_variance):
    """Linearised ELBO before the trace cancellation: eq. 15 minus the KL of eq. 12."""
    N, P = Y.shape
    M, C, lins, Phi = fitted["M"], fitted["C"], fitted["lins"], fitted["Phi"]
    D, Q = Phi.shape[1], M.shape[0]
    Sinv = np.diag(1.0 / noise_variance)
    expected = -0.5 * N * (P * np.log(2 * np.pi) + np.log(np.prod(noise_variance)))  # eq. 15
    for n in range(N):
        A, b, _ = lins[n]
        mu_n = np.array([M[q] @ Phi[n] + fitted["prior_mean"][q] for q in range(Q)])
        eps = Y[n] - (A @ mu_n + b)
        expected -= 0.5 * float(eps @ Sinv @ eps)
        for q in range(Q):
            expected -= 0.5 * float(Phi[n] @ C[q] @ Phi[n]) * float(A[:, q] @ Sinv @ A[:, q])
    kl = 0.0  # eq. 12
    for q in range(Q):
        w = weight_variance[q]
        kl += 0.5 * (np.trace(C[q]) / w + float(M[q] @ M[q]) / w - np.linalg.slogdet(C[q])[1] + D * np.log(w) - D)
    return expected - kl


def predict_f(Xnew, frequencies, fitted):
    """EKS eq. 35-36 point by point."""
    Phi = features(Xnew, frequencies)
    M, C = fitted["M"], fitted["C"]
    Q = M.shape[0]
    mean = np.zeros((Phi.shape[0], Q))
    var = np.zeros_like(mean)
    for n in range(Phi.shape[0]):
        for q in range(Q):
            mean[n, q] = M[q] @ Phi[n] + fitted["prior_mean"][q]
            var[n, q] = Phi[n] @ C[q] @ Phi[n]
    return mean, var


def coupled_predict_var(Xnew, frequencies, fitted, noise_variance, weight_variance):
    """Latent marginal variances under the unfactorised Gaussian of the linearised model: the dense
    inverse of the all-task Gauss-Newton precision (``coupled_precision``) at the final linearisation,
    var f*_q = phi*^T [H^-1]_qq phi* point by point."""
    Phi_new = features(Xnew, frequencies)
    H = coupled_precision(fitted["Phi"], fitted["lins"], noise_variance, weight_variance)
    cov = np.linalg.inv(H)
    D, Q = fitted["Phi"].shape[1], len(weight_variance)
    var = np.zeros((Phi_new.shape[0], Q))
    for n in range(Phi_new.shape[0]):
        for q in range(Q):
            block = cov[q * D:(q + 1) * D, q * D:(q + 1) * D]
            var[n, q] = Phi_new[n] @ block @ Phi_new[n]
    return var
