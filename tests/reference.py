"""Dense, deliberately naive numpy/scipy reference implementation.

This module is the *independent oracle* against which the fast
(numba / Woodbury) engine in ``gpexplorer`` is tested.  Everything here is
written directly from the formulas in van der Wilk's thesis
(``/work/shared/papers/vanderwilk-thesis-sparse-gp.txt``):

* eq. 2.8-2.13  DTC / SoR evidence and the DTC predictive (eq. 2.10),
* eq. 2.14-2.17 FITC,
* eq. 2.19-2.24 the q(u)-induced predictive process and its g/h split,
* eq. 2.37-2.39 the VFE collapsed lower bound and Titsias' upper bound,
* eq. 3.1-3.3   the common "F = constant + complexity + data fit + trace"
  notation.

Rules followed on purpose (do NOT "optimise" this file):

* full N x N matrices are formed explicitly;
* every inverse is a ``np.linalg.solve`` (or ``slogdet``) on a dense matrix,
  no Cholesky tricks, no Woodbury, no matrix-determinant lemma;
* kernels compute r via explicit broadcasting of pairwise differences,
  never via ``|x|^2 + |x'|^2 - 2 x.x'``;
* jitter is the caller's business: ``Kuu`` is used exactly as passed in.

Only numpy and scipy are imported, so the module can be used even when the
engine package does not import.
"""

from __future__ import annotations

import math

import numpy as np

__all__ = [
    # kernels
    "se",
    "matern12",
    "matern32",
    "matern52",
    "rq",
    "periodic",
    "linear",
    "KERNELS",
    "ref_kernel",
    "ref_sum",
    "ref_product",
    # objectives
    "ref_qff",
    "ref_exact",
    "ref_dtc",
    "ref_sor",
    "ref_fitc",
    "ref_vfe",
    "ref_upper_bound",
    # posteriors / predictions
    "ref_qu",
    "ref_predict_sparse",
    "ref_predict_exact",
    "ref_gh_split",
    # gradient checking
    "numerical_grad",
    "check_grad_close",
]

LOG_2PI = math.log(2.0 * math.pi)


# --------------------------------------------------------------------------
# Input handling
# --------------------------------------------------------------------------
def _as_inputs(X):
    """Return X as a float (N, D) array; a 1-D array is treated as (N, 1)."""
    X = np.asarray(X, dtype=float)
    if X.ndim == 1:
        X = X[:, None]
    if X.ndim != 2:
        raise ValueError(f"inputs must be (N, D) or (N,), got shape {X.shape}")
    return X


def _pairwise_diff(X1, X2):
    """(N1, N2, D) array of differences x_d - x'_d, by explicit broadcasting."""
    X1 = _as_inputs(X1)
    X2 = _as_inputs(X2)
    if X1.shape[1] != X2.shape[1]:
        raise ValueError(f"input dimension mismatch: {X1.shape} vs {X2.shape}")
    return X1[:, None, :] - X2[None, :, :]


def _scaled_r2(X1, X2, lengthscale):
    """r^2 = sum_d (x_d - x'_d)^2 / l_d^2 (l scalar or (D,))."""
    diff = _pairwise_diff(X1, X2)
    ell = np.asarray(lengthscale, dtype=float)
    return np.sum((diff / ell) ** 2, axis=-1)


# --------------------------------------------------------------------------
# 1. Dense kernels
# --------------------------------------------------------------------------
def se(X1, X2, variance=1.0, lengthscale=1.0):
    """Squared exponential: s exp(-r^2 / 2)."""
    r2 = _scaled_r2(X1, X2, lengthscale)
    return float(variance) * np.exp(-0.5 * r2)


def matern12(X1, X2, variance=1.0, lengthscale=1.0):
    """Matern 1/2 (exponential): s exp(-r)."""
    r = np.sqrt(_scaled_r2(X1, X2, lengthscale))
    return float(variance) * np.exp(-r)


def matern32(X1, X2, variance=1.0, lengthscale=1.0):
    """Matern 3/2: s (1 + sqrt(3) r) exp(-sqrt(3) r)."""
    r = np.sqrt(_scaled_r2(X1, X2, lengthscale))
    a = math.sqrt(3.0) * r
    return float(variance) * (1.0 + a) * np.exp(-a)


def matern52(X1, X2, variance=1.0, lengthscale=1.0):
    """Matern 5/2: s (1 + sqrt(5) r + 5 r^2 / 3) exp(-sqrt(5) r)."""
    r2 = _scaled_r2(X1, X2, lengthscale)
    r = np.sqrt(r2)
    a = math.sqrt(5.0) * r
    return float(variance) * (1.0 + a + 5.0 * r2 / 3.0) * np.exp(-a)


def rq(X1, X2, variance=1.0, lengthscale=1.0, alpha=1.0):
    """Rational quadratic: s (1 + r^2 / (2 alpha))^(-alpha)."""
    r2 = _scaled_r2(X1, X2, lengthscale)
    alpha = float(alpha)
    return float(variance) * (1.0 + r2 / (2.0 * alpha)) ** (-alpha)


def periodic(X1, X2, variance=1.0, lengthscale=1.0, period=1.0):
    """Periodic: s exp(-2 sum_d sin^2(pi (x_d - x'_d) / p) / l_d^2).

    ``lengthscale`` and ``period`` may each be a scalar or a (D,) array.
    """
    diff = _pairwise_diff(X1, X2)
    ell = np.asarray(lengthscale, dtype=float)
    p = np.asarray(period, dtype=float)
    s2 = np.sin(np.pi * diff / p) ** 2
    return float(variance) * np.exp(-2.0 * np.sum(s2 / ell**2, axis=-1))


def linear(X1, X2, variance=1.0):
    """Linear: sum_d v_d x_d x'_d, ``variance`` v scalar or (D,)."""
    A = _as_inputs(X1)
    B = _as_inputs(X2)
    if A.shape[1] != B.shape[1]:
        raise ValueError(f"input dimension mismatch: {A.shape} vs {B.shape}")
    v = np.asarray(variance, dtype=float)
    return np.sum(A[:, None, :] * B[None, :, :] * v, axis=-1)


KERNELS = {
    "se": se,
    "matern12": matern12,
    "matern32": matern32,
    "matern52": matern52,
    "rq": rq,
    "periodic": periodic,
    "linear": linear,
}


def ref_kernel(name, X1, X2, **params):
    """Dense kernel matrix K[i, j] = k(X1[i], X2[j]) for kernel ``name``.

    Parameters (keyword): ``variance``, ``lengthscale`` (stationary kernels),
    ``alpha`` (``rq``), ``period`` (``periodic``).  Unknown keywords raise
    ``TypeError`` so that typos are not silently ignored.
    """
    try:
        fn = KERNELS[name]
    except KeyError:
        raise ValueError(f"unknown kernel {name!r}; known: {sorted(KERNELS)}") from None
    return fn(X1, X2, **params)


def ref_sum(kspecs, X1, X2):
    """Sum kernel: sum over (name, params) in ``kspecs`` of ref_kernel."""
    kspecs = list(kspecs)
    if not kspecs:
        raise ValueError("ref_sum needs at least one kernel")
    K = None
    for name, params in kspecs:
        Ki = ref_kernel(name, X1, X2, **dict(params))
        K = Ki if K is None else K + Ki
    return K


def ref_product(kspecs, X1, X2):
    """Product kernel: elementwise product of the ref_kernel matrices."""
    kspecs = list(kspecs)
    if not kspecs:
        raise ValueError("ref_product needs at least one kernel")
    K = None
    for name, params in kspecs:
        Ki = ref_kernel(name, X1, X2, **dict(params))
        K = Ki if K is None else K * Ki
    return K


# --------------------------------------------------------------------------
# 2. Dense objectives (thesis eq. 3.1, negative form)
# --------------------------------------------------------------------------
def _vec(y):
    y = np.asarray(y, dtype=float)
    if y.ndim == 2 and y.shape[1] == 1:
        y = y[:, 0]
    if y.ndim != 1:
        raise ValueError(f"y must be (N,) or (N, 1), got shape {y.shape}")
    return y


def _logdet(C):
    sign, logdet = np.linalg.slogdet(C)
    if sign <= 0:
        raise np.linalg.LinAlgError(f"matrix is not positive definite (slogdet sign={sign})")
    return float(logdet)


def ref_qff(Kuf, Kuu):
    """Qff = Kfu Kuu^{-1} Kuf, dense, via np.linalg.solve (eq. 2.13)."""
    Kuf = np.asarray(Kuf, dtype=float)
    Kuu = np.asarray(Kuu, dtype=float)
    return Kuf.T @ np.linalg.solve(Kuu, Kuf)


def _terms(C, y, trace_T, noise):
    """Terms of eq. 3.1 for covariance C = Qff + G and trace matrix trace Tr(T)."""
    y = _vec(y)
    N = y.shape[0]
    constant = 0.5 * N * LOG_2PI
    complexity = 0.5 * _logdet(C)
    data_fit = 0.5 * float(y @ np.linalg.solve(C, y))
    trace = float(trace_T) / (2.0 * float(noise))
    return {
        "constant": constant,
        "complexity": complexity,
        "data_fit": data_fit,
        "trace": trace,
        "neg_lml": constant + complexity + data_fit + trace,
    }


def ref_exact(Kff, y, noise):
    """Exact GP regression: -log N(y; 0, Kff + noise I).  trace term = 0."""
    Kff = np.asarray(Kff, dtype=float)
    N = Kff.shape[0]
    C = Kff + float(noise) * np.eye(N)
    return _terms(C, y, 0.0, noise)


def ref_dtc(Kff, Kuf, Kuu, y, noise):
    """DTC / SoR evidence (eq. 2.12): -log N(y; 0, Qff + noise I).

    ``Kff`` is accepted for a uniform signature but is not used.
    """
    Qff = ref_qff(Kuf, Kuu)
    N = Qff.shape[0]
    C = Qff + float(noise) * np.eye(N)
    return _terms(C, y, 0.0, noise)


ref_sor = ref_dtc  # SoR and DTC share the training objective (eq. 2.12)


def ref_fitc(Kff, Kuf, Kuu, y, noise):
    """FITC (eq. 2.17): -log N(y; 0, Qff + diag[Kff - Qff] + noise I)."""
    Kff = np.asarray(Kff, dtype=float)
    Qff = ref_qff(Kuf, Kuu)
    N = Qff.shape[0]
    G = np.diag(np.diag(Kff - Qff)) + float(noise) * np.eye(N)
    return _terms(Qff + G, y, 0.0, noise)


def ref_vfe(Kff, Kuf, Kuu, y, noise):
    """VFE collapsed bound (eq. 2.37), negated:
    -log N(y; 0, Qff + noise I) + Tr(Kff - Qff) / (2 noise)."""
    Kff = np.asarray(Kff, dtype=float)
    Qff = ref_qff(Kuf, Kuu)
    N = Qff.shape[0]
    C = Qff + float(noise) * np.eye(N)
    T = Kff - Qff
    return _terms(C, y, np.trace(T), noise)


def ref_upper_bound(Kff, Kuf, Kuu, y, noise):
    """Titsias' upper bound on log p(y) (eq. 2.38-2.39); returns the VALUE
    (an upper bound on the log marginal likelihood, not negated):

        -N/2 log 2pi - 1/2 log|Qff + s I| - 1/2 y^T (Qff + (c + s) I)^{-1} y,
        c = Tr(Kff - Qff).
    """
    Kff = np.asarray(Kff, dtype=float)
    y = _vec(y)
    noise = float(noise)
    Qff = ref_qff(Kuf, Kuu)
    N = Qff.shape[0]
    I = np.eye(N)
    c = float(np.trace(Kff - Qff))
    logdet = _logdet(Qff + noise * I)
    quad = float(y @ np.linalg.solve(Qff + (c + noise) * I, y))
    return -0.5 * N * LOG_2PI - 0.5 * logdet - 0.5 * quad


# --------------------------------------------------------------------------
# 3. Dense posteriors and predictions
# --------------------------------------------------------------------------
def ref_qu(Kuf, Kuu, y, g):
    """Optimal / model posterior q(u) = N(mu, Sigma) for diagonal G = diag(g):

        Sigma = Kuu (Kuu + Kuf G^{-1} Kfu)^{-1} Kuu
        mu    = Sigma Kuu^{-1} Kuf G^{-1} y

    VFE / DTC / SoR: g = noise * ones(N);  FITC: g = diag(Kff - Qff) + noise.
    """
    Kuf = np.asarray(Kuf, dtype=float)
    Kuu = np.asarray(Kuu, dtype=float)
    y = _vec(y)
    g = np.broadcast_to(np.asarray(g, dtype=float), y.shape)
    Ginv = np.diag(1.0 / g)
    A = Kuu + Kuf @ Ginv @ Kuf.T
    Sigma = Kuu @ np.linalg.solve(A, Kuu)
    Sigma = 0.5 * (Sigma + Sigma.T)
    mu = Sigma @ np.linalg.solve(Kuu, Kuf @ Ginv @ y)
    return mu, Sigma


def ref_predict_sparse(Kss, Ksu, Kuu, mu, Sigma, conditional="exact"):
    """Predictive distribution of f* under q(u) = N(mu, Sigma).

    conditional="exact" (DTC/FITC/VFE, eq. 2.10 / 2.19):
        mean = Ksu Kuu^{-1} mu
        cov  = Kss - Ksu Kuu^{-1} (Kuu - Sigma) Kuu^{-1} Kus
    conditional="deterministic" (SoR, fig. 2.3):
        cov  = Ksu Kuu^{-1} Sigma Kuu^{-1} Kus          (Kss is ignored)

    Returns (mean (S,), full covariance (S, S)).
    """
    Ksu = np.asarray(Ksu, dtype=float)
    Kuu = np.asarray(Kuu, dtype=float)
    mu = np.asarray(mu, dtype=float)
    Sigma = np.asarray(Sigma, dtype=float)
    Kus = Ksu.T
    mean = Ksu @ np.linalg.solve(Kuu, mu)
    # B = Kuu^{-1} Kus  (M, S);  Ksu Kuu^{-1} = B^T by symmetry of Kuu
    B = np.linalg.solve(Kuu, Kus)
    if conditional == "exact":
        Kss = np.asarray(Kss, dtype=float)
        cov = Kss - B.T @ (Kuu - Sigma) @ B
    elif conditional == "deterministic":
        cov = B.T @ Sigma @ B
    else:
        raise ValueError(f"conditional must be 'exact' or 'deterministic', got {conditional!r}")
    return mean, cov


def ref_predict_exact(Kss, Ksf, Kff, y, noise):
    """Exact GP regression posterior of f* (noise-free latent):

        mean = Ksf (Kff + s I)^{-1} y
        cov  = Kss - Ksf (Kff + s I)^{-1} Kfs
    """
    Kss = np.asarray(Kss, dtype=float)
    Ksf = np.asarray(Ksf, dtype=float)
    Kff = np.asarray(Kff, dtype=float)
    y = _vec(y)
    C = Kff + float(noise) * np.eye(Kff.shape[0])
    mean = Ksf @ np.linalg.solve(C, y)
    cov = Kss - Ksf @ np.linalg.solve(C, Ksf.T)
    return mean, cov


def ref_gh_split(Kss, Ksu, Kuu, mu, Sigma):
    """The split f = g + h of eq. 2.22-2.24.

        g ~ GP(Ksu Kuu^{-1} mu,  Ksu Kuu^{-1} Sigma Kuu^{-1} Kus)
        h ~ GP(0,                Kss - Ksu Kuu^{-1} Kus)

    Returns ((g_mean, g_cov), h_cov).
    """
    Kss = np.asarray(Kss, dtype=float)
    Ksu = np.asarray(Ksu, dtype=float)
    Kuu = np.asarray(Kuu, dtype=float)
    mu = np.asarray(mu, dtype=float)
    Sigma = np.asarray(Sigma, dtype=float)
    Kus = Ksu.T
    g_mean = Ksu @ np.linalg.solve(Kuu, mu)
    B = np.linalg.solve(Kuu, Kus)
    g_cov = B.T @ Sigma @ B
    h_cov = Kss - Ksu @ B
    return (g_mean, g_cov), h_cov


# --------------------------------------------------------------------------
# 4. Gradient checking
# --------------------------------------------------------------------------
def numerical_grad(fun, x, eps=1e-6):
    """Central finite-difference gradient of a scalar function.

    ``x`` may be a float array of any shape (or a Python scalar); the result
    has the same shape.  The step for entry i is ``eps * max(1, |x_i|)``.
    ``fun`` always receives a fresh float array of the original shape.
    """
    x0 = np.array(x, dtype=float)  # copy
    grad = np.zeros_like(x0)
    flat = x0.reshape(-1)
    gflat = grad.reshape(-1)
    for i in range(flat.size):
        h = eps * max(1.0, abs(flat[i]))
        xp = flat.copy()
        xm = flat.copy()
        xp[i] += h
        xm[i] -= h
        fp = float(fun(xp.reshape(x0.shape)))
        fm = float(fun(xm.reshape(x0.shape)))
        gflat[i] = (fp - fm) / (xp[i] - xm[i])
    return grad


def check_grad_close(analytic, numeric, rtol=1e-5, atol=1e-7):
    """Assert |analytic - numeric| <= atol + rtol * |numeric| elementwise.

    Raises AssertionError naming the worst entry (largest violation ratio),
    the number of failing entries and both values.
    """
    a = np.asarray(analytic, dtype=float)
    n = np.asarray(numeric, dtype=float)
    if a.shape != n.shape:
        raise AssertionError(f"gradient shape mismatch: analytic {a.shape} vs numeric {n.shape}")
    if not np.all(np.isfinite(a)):
        bad = np.argwhere(~np.isfinite(a))
        raise AssertionError(f"analytic gradient has non-finite entries at {bad[:5].tolist()}")
    if not np.all(np.isfinite(n)):
        bad = np.argwhere(~np.isfinite(n))
        raise AssertionError(f"numeric gradient has non-finite entries at {bad[:5].tolist()}")
    err = np.abs(a - n)
    allowed = atol + rtol * np.abs(n)
    fail = err > allowed
    if np.any(fail):
        ratio = err / allowed
        idx = np.unravel_index(int(np.argmax(ratio)), ratio.shape) if ratio.ndim else ()
        av, nv, ev = float(a[idx]), float(n[idx]), float(err[idx])
        rel = ev / abs(nv) if nv != 0 else math.inf
        where = f"index {tuple(int(i) for i in idx)}" if a.ndim else "scalar"
        raise AssertionError(
            f"gradient mismatch in {int(fail.sum())}/{fail.size} entries; worst at {where}: "
            f"analytic={av:.10g}, numeric={nv:.10g}, abs err={ev:.3g}, rel err={rel:.3g} "
            f"(rtol={rtol:g}, atol={atol:g}, allowed={float(allowed[idx]):.3g})"
        )


#: gpexplorer kernel class name -> reference kernel name
LIBRARY_KERNEL_NAMES = {"SquaredExponential": "se", "Matern12": "matern12", "Matern32": "matern32",
                        "Matern52": "matern52", "RationalQuadratic": "rq", "Periodic": "periodic",
                        "Linear": "linear"}


def ref_K(kernel, X1, X2):
    """Dense reference covariance for a gpexplorer kernel object, recursing into Sum / Product.

    Only the object's class name, ``params`` and ``kernels`` are read, so this module still
    needs nothing from gpexplorer.
    """
    kind = type(kernel).__name__
    if kind == "Sum":
        return sum(ref_K(k, X1, X2) for k in kernel.kernels)
    if kind == "Product":
        out = ref_K(kernel.kernels[0], X1, X2)
        for k in kernel.kernels[1:]:
            out = out * ref_K(k, X1, X2)
        return out
    return ref_kernel(LIBRARY_KERNEL_NAMES[kind], X1, X2, **kernel.parameters)
