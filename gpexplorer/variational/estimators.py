"""The expected log likelihood of SAVIGP (eq. 12, 17) and its gradients, three ways.

For every mixture component k and data point n, q_k(f_n.) = N(b_kn, diag(sigma^2_kn)) over the
Q latents (eq. 14-15), and

    ell_kn = E_{q_k(f_n.)}[log p(y_n | f_n.)]

with d ell_kn / d b_kn, d ell_kn / d sigma^2_kn and d ell_kn / d theta_lik. ``estimate`` gives
them behind one interface:

* ``"quadrature"``: a Gauss-Hermite product grid (n points per latent, n^Q nodes, from
  :mod:`gpexplorer.likelihoods.quadrature`, evaluated here for K components at once): the
  reference. The derivatives are those of the quadrature sum itself (nodes fixed), i.e.
  E[dlogp/df] and E[dlogp/df x / (2 sigma)] at f = b + sigma x;
* ``"reparam"``: f = b + sigma eps with eps (S, N, Q) drawn once (seeded, or given) and reused,
  so the objective is deterministic (as the paper's optimiser): d/db = mean dlogp/df,
  d/dsigma^2 = mean dlogp/df eps / (2 sigma);
* ``"score"``: the score-function identity (eq. 13), l = log p(y | f):
  d/db = E[l eps / sigma], d/dsigma^2 = E[l (eps^2 - 1) / (2 sigma^2)]. With
  ``control_variate=True`` the score h itself (mean zero) is subtracted, g - c h with
  c = Cov(l h, h) / Var(h) estimated per element on the first ``holdout`` fraction of the
  samples, which are then left out of the estimate: c is independent of the samples it is
  applied to, so the estimator stays unbiased (the paper's authors reuse the samples).

Likelihood-parameter derivatives are E[d logp / d theta] (same samples / nodes) in every mode.
Each evaluation reports the Monte Carlo variance of its estimates (``Estimate.report``).
:func:`estimator_variance` and :func:`variance_curve` measure it over repeated seeds.

A likelihood with ``reduced_expectation`` (robust max: log p piecewise constant, so the
reparameterised gradient is zero and the grid would need n^Q nodes) gives ell_kn and its exact
derivatives itself (``expected_log_density_exact``, ``n_points`` passed on) for "quadrature" and
"reparam", whatever Q; the score estimator stays the black box it is. The result is
deterministic (``report`` zero).

Fast path: for a :class:`~gpexplorer.likelihoods.pointwise_base.PointwiseLikelihood` (public
evaluation methods not overridden) the nodes or samples go through in cache-sized row blocks,
the likelihood is evaluated once per point, and the sums over the nodes / samples are
accumulated block by block. Quadrature and reparameterised: the unchecked ``log_density_terms``
(value, slope and parameter derivatives sharing their work; Y validated once per call), weighted
sums as matrix-vector products. Score: f and log p once per sample (not twice), by the checked
``log_density`` per block (no slope is needed; parameter derivatives only for a likelihood with
parameters); without control variate only the running sums of l, l^2, l eps, (l eps)^2,
l (eps^2 - 1) and its square are kept, so no (S, N) temporary outlives its block; with it, log p
is stored once and reused by the held-out coefficient. Other likelihoods
(duck-typed objects) take the plain path, :func:`estimate_reference`, which the tests compare the
fast path against.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from gpexplorer.likelihoods import quadrature
from gpexplorer.likelihoods.pointwise_base import PointwiseLikelihood
from gpexplorer.variational import _loops as loops

METHODS = ("quadrature", "reparam", "score")
#: Gauss-Hermite points per latent by Q (n^Q nodes in all)
DEFAULT_POINTS = {1: 20, 2: 20, 3: 10}
#: largest (nodes x N x Q) block evaluated at once
BLOCK = 2_000_000
#: rows (nodes or samples) x N x Q per block on the fast path: the temporaries stay in cache
FAST_BLOCK = 32_768


@dataclass
class Estimate:
    """ell_kn and its derivatives; ``report`` holds the variance of each Monte Carlo mean."""

    value: np.ndarray  # (K, N)
    dmean: np.ndarray  # (K, N, Q)
    dvar: np.ndarray  # (K, N, Q)
    dparams: dict  # name -> (K, N) or (K, N, size)
    report: dict = field(default_factory=dict)  # "value", "dmean", "dvar": variance of the estimate
    method: str = ""
    num_samples: int = 0


def gauss_hermite_grid(Q, n):
    """Nodes (n^Q, Q) and weights (n^Q,) of the product rule for E_{N(0, I_Q)}[g(x)]
    (:func:`gpexplorer.likelihoods.quadrature.product_rule`: probabilists' Hermite, weights
    summing to one)."""
    return quadrature.product_rule(int(n), int(Q))


def draw_eps(num_samples, N, Q, seed=0):
    """Standard normal draws (S, N, Q) from ``numpy.random.default_rng(seed)``."""
    if int(num_samples) < 2:
        raise ValueError(f"num_samples must be at least 2; got {num_samples}")
    return np.random.default_rng(seed).standard_normal((int(num_samples), N, Q))


def _check(lik, b, var, Y):
    Y = lik.validate(Y)
    b = np.asarray(b, dtype=float)
    var = np.asarray(var, dtype=float)
    if b.ndim == 2:
        b, var = b[None], var[None]
    N, Q = Y.shape[0], lik.n_latent
    if b.ndim != 3 or b.shape[1:] != (N, Q) or var.shape != b.shape:
        raise ValueError(f"b and var must have shape (K, N={N}, Q={Q}); got {b.shape} and {var.shape}")
    if not (np.all(np.isfinite(b)) and np.all(np.isfinite(var))):
        raise ValueError("b and var must be finite")
    if np.any(var <= 0):
        raise ValueError(f"the marginal variances must be positive; got minimum {var.min():g}")
    return b, var, Y


def _moments(lik, bk, sk, x, w, Y, need_df=True):
    """sum_p w_p of (l, dl/df, dl/df x / (2 sigma), dl/dtheta) at f = b + sigma x, in blocks.
    x is (P, N or 1, Q); also returns the weighted second moments for the report."""
    P = x.shape[0]
    step = max(1, BLOCK // max(1, bk.size))
    acc = None
    for i in range(0, P, step):
        xi, wi = x[i:i + step], w[i:i + step]
        F = bk[None] + sk[None] * xi
        parts = {"value": lik.log_density(F, Y)}
        if need_df:  # the score estimator never calls dlog_density_df (black-box likelihood)
            parts["dmean"] = lik.dlog_density_df(F, Y)
            parts["dvar"] = parts["dmean"] * xi / (2.0 * sk[None])
        for name, g in lik.dlog_density_dparams(F, Y).items():
            parts["p:" + name] = g
        sums = {n: np.tensordot(wi, a, axes=(0, 0)) for n, a in parts.items()}
        sq = {n: np.tensordot(wi, parts[n] ** 2, axes=(0, 0)) for n in ("value", "dmean", "dvar") if n in parts}
        if acc is None:
            acc = (sums, sq)
        else:
            for n in sums:
                acc[0][n] = acc[0][n] + sums[n]
            for n in sq:
                acc[1][n] = acc[1][n] + sq[n]
    return acc


def _score(lik, bk, sk, eps, Y, control_variate, holdout, lp=None):
    """The score-function estimates of (d/db, d/dsigma^2) and their variances for one component
    (``lp`` (S, N): log p at f = b + sigma eps when already evaluated)."""
    S = eps.shape[0]
    if lp is None:
        lp = lik.log_density(bk[None] + sk[None] * eps, Y)
    lp = lp[..., None]  # (S, N, 1)
    out, var_out = [], []
    for h in (eps / sk[None], (eps ** 2 - 1.0) / (2.0 * sk[None] ** 2)):
        g = lp * h
        if control_variate:
            n0 = max(2, int(round(holdout * S)))
            if S - n0 < 2:
                raise ValueError(f"the control variate needs more samples than its hold-out ({n0} of {S})")
            gh, hh = g[:n0], h[:n0]
            cov = np.mean((gh - gh.mean(0)) * (hh - hh.mean(0)), axis=0)
            c = cov / np.maximum(np.var(hh, axis=0), 1e-300)
            g = g[n0:] - c[None] * h[n0:]
        out.append(g.mean(0))
        var_out.append(g.var(0, ddof=1) / g.shape[0])
    return out, var_out


def _fast_terms(lik):
    """The likelihood's unchecked ``log_density_terms`` if the fast path applies, else None."""
    if not isinstance(lik, PointwiseLikelihood):
        return None
    cls = type(lik)
    if any(getattr(cls, n) is not getattr(PointwiseLikelihood, n)
           for n in ("log_density", "dlog_density_df", "dlog_density_dparams")):
        return None
    return lik.log_density_terms


def _accumulate(acc, name, value):
    acc[name] = value if name not in acc else acc[name] + value


def _fast_moments(terms, bk, sk, x, w, y, squares):
    """:func:`_moments` on the fast path (module docstring); x (P, N or 1, Q)."""
    P, (N, Q) = x.shape[0], bk.shape
    step = max(1, FAST_BLOCK // max(1, bk.size))
    sums, sq, shapes = {}, {}, {"value": (N,), "dmean": (N, Q), "dvar": (N, Q)}
    for i in range(0, P, step):
        xi, wi = x[i:i + step], w[i:i + step]
        lp, g, dp = terms(bk + sk * xi, y, True, True)
        parts = {"value": lp, "dmean": g, **{"p:" + n: d for n, d in dp.items()}}
        if squares or xi.shape[1] != 1:
            parts["dvar"] = g * xi
        else:  # quadrature nodes (P, 1, Q): the node weights fold into the weighted sum
            wx = wi[:, None] * xi[:, 0, :]
            dv = (wx[:, 0] @ g.reshape(g.shape[0], -1)) if Q == 1 else np.einsum("pq,pnq->nq", wx, g).reshape(-1)
            _accumulate(sums, "dvar", dv)
        for name, a in parts.items():
            shapes.setdefault(name, a.shape[1:])
            a = a.reshape(a.shape[0], -1)
            _accumulate(sums, name, wi @ a)
            if squares and name in ("value", "dmean", "dvar"):
                _accumulate(sq, name, wi @ (a * a))
    for acc, power in ((sums, 1), (sq, 2)):
        for name in acc:
            acc[name] = acc[name].reshape(shapes[name])
        if "dvar" in acc:
            acc["dvar"] = acc["dvar"] / (2.0 * sk) ** power
    return sums, sq


def _checked_log_density(lik, Y):
    """(F, y, slope, params) -> the terms by the likelihood's checked public methods (Y is
    validated in each call: a few microseconds per block): the score estimator never needs the
    slope, and a likelihood without parameters is not asked for their derivatives."""
    def terms(F, y, slope, params):
        return lik.log_density(F, Y), None, (lik.dlog_density_dparams(F, Y) if params and lik.param_layout else {})

    return terms


def _fast_score(terms, bk, sk, eps, y, lp_out):
    """The score estimator's :func:`_moments` part (value, parameter derivatives) and, unless
    ``lp_out`` is given (the control variate: log p is stored there for :func:`_score`), its
    (d/db, d/dsigma^2) and their variances from running sums over the samples. The loop over the
    samples is compiled (:mod:`._loops`: forming f, the score weights and their running sums, on
    (samples x N Q) blocks); only log p, the black box, is the likelihood's own code, called once
    per block."""
    S, (N, Q) = eps.shape[0], bk.shape
    step = max(1, FAST_BLOCK // max(1, bk.size))
    acc = np.zeros((6, N, Q))
    params = {}
    F = np.empty((min(step, S), N, Q))
    b, sd = np.ascontiguousarray(bk).reshape(-1), np.ascontiguousarray(sk).reshape(-1)
    for i in range(0, S, step):
        e = np.ascontiguousarray(eps[i:i + step]).reshape(-1, N * Q)
        f = F[:e.shape[0]]
        loops.form_samples(b, sd, e, f.reshape(-1, N * Q))
        lp, _, dp = terms(f, y, False, True)
        lp = np.ascontiguousarray(lp, dtype=float)
        for name, d in dp.items():
            _accumulate(params, "p:" + name, d.sum(axis=0))
        if lp_out is not None:  # the control variate needs log p itself, not the running sums
            lp_out[i:i + step] = lp
            acc[0, :, 0] += lp.sum(axis=0)
            acc[1, :, 0] += np.einsum("sn,sn->n", lp, lp)
            continue
        for q in range(Q):
            loops.score_sums(lp, np.ascontiguousarray(e.reshape(-1, N, Q)[:, :, q]), acc[:, :, q])
    sums = {"value": acc[0, :, 0] / S, **{n: v / S for n, v in params.items()}}
    sq = {"value": acc[1, :, 0] / S}
    if lp_out is not None:
        return sums, sq, None
    out, var_out = [], []
    for (total, total2), scale in (((acc[2], acc[3]), sk), ((acc[4], acc[5]), 2.0 * sk ** 2)):
        out.append(total / (S * scale))
        var_out.append(np.maximum(total2 - total ** 2 / S, 0.0) / (S - 1) / scale ** 2 / S)
    return sums, sq, (out, var_out)


def estimate(lik, b, var, Y, method="quadrature", *, eps=None, num_samples=2000, seed=0, n_points=None,
             control_variate=False, holdout=0.1):
    """ell_kn = E_{q_k(f_n.)}[log p(y_n | f_n.)] and its derivatives (eq. 12, 13, 17).

    ``b``, ``var``: (K, N, Q) means and variances of the marginals ((N, Q) for K = 1);
    ``eps``: (S, N, Q) standard normal draws to reuse (else ``num_samples`` drawn with ``seed``).
    Returns an :class:`Estimate`.
    """
    return _estimate(lik, b, var, Y, method, eps=eps, num_samples=num_samples, seed=seed, n_points=n_points,
                     control_variate=control_variate, holdout=holdout, fast=True)


def estimate_reference(lik, b, var, Y, method="quadrature", *, eps=None, num_samples=2000, seed=0, n_points=None,
                       control_variate=False, holdout=0.1):
    """:func:`estimate` by the plain path (every likelihood call checked, f formed per call): the
    reference the fast path is tested against."""
    return _estimate(lik, b, var, Y, method, eps=eps, num_samples=num_samples, seed=seed, n_points=n_points,
                     control_variate=control_variate, holdout=holdout, fast=False)


def _estimate(lik, b, var, Y, method, *, eps, num_samples, seed, n_points, control_variate, holdout, fast):
    if method not in METHODS:
        raise ValueError(f"method must be one of {METHODS}; got {method!r}")
    if control_variate and method != "score":
        raise ValueError("a control variate is only defined for the 'score' estimator")
    if not 0.0 < holdout < 1.0:
        raise ValueError(f"holdout must be a fraction in (0, 1); got {holdout}")
    b, var, Y = _check(lik, b, var, Y)
    if method != "score" and getattr(lik, "reduced_expectation", False):
        return _reduced(lik, b, var, Y, method, n_points)
    K, N, Q = b.shape
    sd = np.sqrt(var)
    if method == "quadrature":
        n = int(n_points or DEFAULT_POINTS.get(Q, 6))
        if Q > 3 and n_points is None:
            raise ValueError(f"quadrature with Q = {Q} latents needs n_points (n^Q nodes); use 'reparam'")
        nodes, w = gauss_hermite_grid(Q, n)
        x, S = nodes[:, None, :], nodes.shape[0]
    else:
        if eps is None:
            eps = draw_eps(num_samples, N, Q, seed)
        eps = np.asarray(eps, dtype=float)
        if eps.ndim != 3 or eps.shape[1:] != (N, Q):
            raise ValueError(f"eps must have shape (S, N={N}, Q={Q}); got {eps.shape}")
        S = eps.shape[0]
        x, w = eps, np.full(S, 1.0 / S)
    value = np.empty((K, N))
    dmean = np.empty((K, N, Q))
    dvar = np.empty((K, N, Q))
    dparams = {}
    report = {n: np.zeros_like(a) for n, a in (("value", value), ("dmean", dmean), ("dvar", dvar))}
    terms = _fast_terms(lik) if fast else None
    for k in range(K):
        sums = scored = lp = None
        if terms is not None and method != "score":
            sums, sq = _fast_moments(terms, b[k], sd[k], x, w, Y[:, 0], squares=method != "quadrature")
        elif terms is not None:
            lp = np.empty((S, N)) if control_variate else None
            sums, sq, scored = _fast_score(_checked_log_density(lik, Y), b[k], sd[k], eps, Y[:, 0], lp)
        if sums is None or not all(np.all(np.isfinite(a)) for a in sums.values()):
            # the plain path: also where it raises for non-finite f (or gives the same non-finite sums)
            sums, sq = _moments(lik, b[k], sd[k], x, w, Y, need_df=method != "score")
            scored = lp = None
        value[k] = sums["value"]
        if method != "score":
            dmean[k], dvar[k] = sums["dmean"], sums["dvar"]
        for name in sums:
            if name.startswith("p:"):
                dparams.setdefault(name[2:], []).append(sums[name])
        if method != "quadrature":
            for n in sq:
                report[n][k] = np.maximum(sq[n] - sums[n] ** 2, 0.0) * S / (S - 1) / S
        if method == "score":
            if scored is None:
                scored = _score(lik, b[k], sd[k], eps, Y, control_variate, holdout, lp)
            (dmean[k], dvar[k]), (report["dmean"][k], report["dvar"][k]) = scored
    dparams = {n: np.stack(v) for n, v in dparams.items()}
    return Estimate(value=value, dmean=dmean, dvar=dvar, dparams=dparams, report=report, method=method,
                    num_samples=int(S))


def _reduced(lik, b, var, Y, method, n_points):
    """ell_kn per component from the likelihood's own exact expectation (module docstring)."""
    parts = [lik.expected_log_density_exact(b[k], var[k], Y, n_points=n_points) for k in range(b.shape[0])]
    value, dmean, dvar = (np.stack([getattr(p, n) for p in parts]) for n in ("value", "dmean", "dvar"))
    dparams = {n: np.stack([p.dparams[n] for p in parts]) for n in parts[0].dparams}
    report = {"value": np.zeros_like(value), "dmean": np.zeros_like(dmean), "dvar": np.zeros_like(dvar)}
    return Estimate(value=value, dmean=dmean, dvar=dvar, dparams=dparams, report=report, method=method,
                    num_samples=int(n_points or getattr(lik, "n_points", 0)))


def estimator_variance(lik, b, var, Y, method, num_samples, *, n_repeats=20, seed=0, control_variate=False):
    """Empirical spread of an estimator over ``n_repeats`` seeds (seed, seed + 1, ...).

    Returns {"mean": {...}, "variance": {...}} for "value", "dmean", "dvar" (arrays shaped like
    the estimates: the across-seed mean and variance, ddof=1) and "summary": the variance
    averaged over elements per quantity."""
    if int(n_repeats) < 2:
        raise ValueError(f"n_repeats must be at least 2; got {n_repeats}")
    draws = {"value": [], "dmean": [], "dvar": []}
    for r in range(int(n_repeats)):
        est = estimate(lik, b, var, Y, method, num_samples=num_samples, seed=seed + r,
                       control_variate=control_variate)
        for n in draws:
            draws[n].append(getattr(est, n))
    stacks = {n: np.stack(v) for n, v in draws.items()}
    variance = {n: a.var(axis=0, ddof=1) for n, a in stacks.items()}
    return {"mean": {n: a.mean(axis=0) for n, a in stacks.items()}, "variance": variance,
            "summary": {n: float(v.mean()) for n, v in variance.items()}}


def variance_curve(lik, b, var, Y, sample_sizes, n_repeats=20, seed=0,
                   estimators=(("score", False), ("score", True), ("reparam", False))):
    """The mean (over elements) across-seed variance of d/db and d/dsigma^2 against S, for a
    plot of gradient variance against the number of samples with and without the control
    variate. Returns {"S": [...], "<method>[+cv]": {"dmean": [...], "dvar": [...]}}."""
    out = {"S": [int(s) for s in sample_sizes]}
    for method, cv in estimators:
        label = method + ("+cv" if cv else "")
        curves = {"dmean": [], "dvar": []}
        for s in out["S"]:
            summary = estimator_variance(lik, b, var, Y, method, s, n_repeats=n_repeats, seed=seed,
                                         control_variate=cv)["summary"]
            for n in curves:
                curves[n].append(summary[n])
        out[label] = curves
    return out


__all__ = ["Estimate", "METHODS", "draw_eps", "estimate", "estimate_reference", "estimator_variance",
           "gauss_hermite_grid", "variance_curve"]
