#!/usr/bin/env python
"""Measure known defects of revrand 1.0 on its own (unmodified) code.

    /work/peers/revrand/venv/bin/python tests/benchmarks/revrand_peer_defects.py [--out defects.json]

Sections: orf (i), laplace (ii), isograd (iii), entropy (iv),
logpdf (v), hypergrad (extra: GLM hyperparameter gradient batch factor).
Each prints a summary and the whole result is written as JSON.
"""
import argparse
import inspect
import json
import os
import sys
import time

import numpy as np
from scipy.stats import gamma, norm
from scipy.spatial.distance import cdist
from scipy.linalg import qr

import revrand.basis_functions as bf
from revrand import GeneralizedLinearModel, StandardLinearModel
from revrand.btypes import Parameter, Positive
from revrand.likelihoods import Gaussian
from revrand.optimize import Adam
from revrand.mathfun.special import logsumexp

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import revrand_peer_timings as pt  # noqa: E402  (data loaders / basis builders)


def relfro(A, B):
    return float(np.linalg.norm(A - B) / np.linalg.norm(B))


def rbf_kernel(X, l):
    return np.exp(-cdist(X, X, "sqeuclidean") / (2 * l ** 2))


# ---------------------------------------------------------------- (i) ORF
def corrected_orf_weights(d, n, rs):
    """Yu et al. (2016) ORF: each frequency (column) gets its own chi_d norm.
    Not revrand code; reference only."""
    reps = int(np.ceil(n / d))
    Q = np.hstack([qr(rs.randn(d, d))[0] for _ in range(reps)])[:, :n]
    S = np.sqrt(rs.chisquare(df=d, size=Q.shape[1]))
    return Q * S[np.newaxis, :]


def orf(npts_list=(200, 300, 500), seeds=range(5), d=10, nbases=1500, l=3.0):
    rows = []
    for npts in npts_list:
        for s in seeds:
            X = np.random.RandomState(1000 + s).randn(npts, d)
            K = rbf_kernel(X, l)
            errs = {}
            for name, cls in (("RandomRBF", bf.RandomRBF),
                              ("OrthogonalRBF", bf.OrthogonalRBF)):
                b = cls(nbases=nbases, Xdim=d,
                        lenscale=Parameter(l, Positive()), random_state=s)
                Phi = b.transform(X, l)
                assert Phi.shape == (npts, 2 * nbases)
                errs[name] = relfro(Phi @ Phi.T, K)
                if name == "OrthogonalRBF":
                    norms = np.linalg.norm(b.W, axis=0)
                    errs["orf_freq_norm_mean"] = float(norms.mean())
                    errs["orf_freq_norm_std"] = float(norms.std())
            Wc = corrected_orf_weights(d, nbases, np.random.RandomState(s))
            WX = X @ (Wc / l)
            Phic = np.hstack((np.cos(WX), np.sin(WX))) / np.sqrt(nbases)
            errs["corrected_ORF(reference)"] = relfro(Phic @ Phic.T, K)
            rows.append(dict(npts=npts, seed=s, **errs))
    summ = {}
    for npts in npts_list:
        r = [x for x in rows if x["npts"] == npts]
        summ[npts] = {k: float(np.mean([x[k] for x in r])) for k in
                      ("RandomRBF", "OrthogonalRBF",
                       "corrected_ORF(reference)")}
    from scipy.special import gammaln
    chi = {"mean": float(np.sqrt(2) * np.exp(gammaln((d + 1) / 2) -
                                             gammaln(d / 2)))}
    chi["std"] = float(np.sqrt(d - chi["mean"] ** 2))
    return {"setup": {"X": "N(0, I_d) rows, RandomState(1000+seed)",
                      "d": d, "nbases": nbases, "columns": 2 * nbases,
                      "lenscale": l, "basis random_state": "seed",
                      "seeds": list(seeds),
                      "error": "||Phi Phi^T - K||_F / ||K||_F, "
                               "K = exp(-|x-x'|^2 / (2 l^2))"},
            "rows": rows, "mean_over_seeds": summ,
            "chi_d_norm_for_reference": chi}


# ---------------------------------------------------------------- (ii) Laplace
def laplace(d_list=(2, 5, 10), npts=300, nbases=20000, l=3.0, seed=0):
    out = []
    for d in d_list:
        X = np.random.RandomState(2000 + d).randn(npts, d)
        b = bf.RandomLaplace(nbases=nbases, Xdim=d,
                             lenscale=Parameter(l, Positive()),
                             random_state=seed)
        Phi = b.transform(X, l)
        Kh = Phi @ Phi.T
        K1 = np.exp(-cdist(X, X, "cityblock") / l)
        K2 = np.exp(-cdist(X, X, "euclidean") / l)
        # Control: plain RandomRBF with the same nbases vs its own kernel
        # gives the Monte-Carlo noise level.
        r = bf.RandomRBF(nbases=nbases, Xdim=d,
                         lenscale=Parameter(l, Positive()), random_state=seed)
        Pr = r.transform(X, l)
        out.append({"d": d, "err_vs_L1_laplace": relfro(Kh, K1),
                    "err_vs_L2_laplace": relfro(Kh, K2),
                    "max_abs_vs_L1": float(np.abs(Kh - K1).max()),
                    "max_abs_vs_L2": float(np.abs(Kh - K2).max()),
                    "RandomRBF_control_err": relfro(Pr @ Pr.T,
                                                    rbf_kernel(X, l))})
    return {"setup": {"X": "N(0, I_d), %d points" % npts, "nbases": nbases,
                      "lenscale": l,
                      "L1": "exp(-||x-x'||_1 / l)",
                      "L2": "exp(-||x-x'||_2 / l) (docstring)"},
            "rows": out}


def laplace_convergence(d=10, npts=300, l=3.0, nbases_list=(2000, 20000, 80000),
                        seed=0):
    X = np.random.RandomState(2000 + d).randn(npts, d)
    K1 = np.exp(-cdist(X, X, "cityblock") / l)
    K2 = np.exp(-cdist(X, X, "euclidean") / l)
    rows = []
    for n in nbases_list:
        b = bf.RandomLaplace(nbases=n, Xdim=d,
                             lenscale=Parameter(l, Positive()),
                             random_state=seed)
        Phi = b.transform(X, l)
        Kh = Phi @ Phi.T
        rows.append({"nbases": n, "err_vs_L1": relfro(Kh, K1),
                     "err_vs_L2": relfro(Kh, K2)})
    return {"setup": {"d": d, "npts": npts, "lenscale": l}, "rows": rows}


def orf20():
    r = orf(npts_list=(300,), seeds=range(20))
    vals = {k: [x[k] for x in r["rows"]] for k in
            ("RandomRBF", "OrthogonalRBF", "corrected_ORF(reference)")}
    return {"setup": "as orf, 300 points, seeds 0..19",
            "summary": {k: {"mean": float(np.mean(v)),
                            "median": float(np.median(v)),
                            "min": float(np.min(v)), "max": float(np.max(v))}
                        for k, v in vals.items()}}


# ---------------------------------------------------------------- (iii) iso grad
def isograd(npts=200, d=10, nbases=300, l=2.0, h=1e-6):
    rows = []
    X = np.random.RandomState(3).randn(npts, d)
    for name in ("RandomRBF", "RandomLaplace", "RandomCauchy",
                 "RandomMatern32", "RandomMatern52", "OrthogonalRBF"):
        cls = getattr(bf, name)
        b = cls(nbases=nbases, Xdim=d, lenscale=Parameter(l, Positive()),
                random_state=1)
        G = b.grad(X, l)
        FD = (b.transform(X, l + h) - b.transform(X, l - h)) / (2 * h)
        # what the code computes: only X[:, 0] and W[0, :]
        WX = X @ (b.W / l)
        dWX0 = np.outer(X[:, 0], -b.W[0, :] / l ** 2)
        only0 = np.hstack((dWX0 * -np.sin(WX), dWX0 * np.cos(WX))) / \
            np.sqrt(b.n)
        # the correct isotropic gradient
        dWX = -(X @ b.W) / l ** 2
        correct = np.hstack((dWX * -np.sin(WX), dWX * np.cos(WX))) / \
            np.sqrt(b.n)
        # ARD version of the same basis, summed over dims (control)
        ba = cls(nbases=nbases, Xdim=d,
                 lenscale=Parameter(l * np.ones(d), Positive()),
                 random_state=1)
        Ga = ba.grad(X, l * np.ones(d)).sum(axis=2)
        rows.append({"basis": name, "grad_shape": list(G.shape),
                     "relerr_iso_grad_vs_FD": relfro(G, FD),
                     "relerr_X0W0_formula_vs_iso_grad": relfro(only0, G),
                     "relerr_correct_formula_vs_FD": relfro(correct, FD),
                     "relerr_ARD_grad_summed_vs_FD": relfro(Ga, FD)})

    # Effect on a model gradient: SLM evidence on Boston, isotropic lenscale
    Xb, yb = pt.boston_fold()
    base = bf.RandomRBF(Xdim=13, nbases=400,
                        lenscale=Parameter(gamma(1., scale=20), Positive()),
                        random_state=100,
                        regularizer=Parameter(gamma(1., scale=10), Positive())) \
        + bf.LinearBasis(onescol=True,
                         regularizer=Parameter(gamma(1., scale=10), Positive()))
    slm = StandardLinearModel(base)
    slm.obj_ = -np.inf
    var, reg = 10.0, [5.0, 5.0]
    slmrows = []
    for ls in (1.0, 3.0, 10.0):
        o, g = slm._elbo(Xb, yb, var, reg, ls)
        e = 1e-5 * ls
        fd = (slm._elbo(Xb, yb, var, reg, ls + e)[0] -
              slm._elbo(Xb, yb, var, reg, ls - e)[0]) / (2 * e)
        slmrows.append({"lenscale": ls, "neg_elbo": float(o),
                        "revrand_dnegELBO_dl": float(np.squeeze(g[2])),
                        "finite_difference": float(fd)})
    return {"setup": {"X": "N(0, I_10), 200 points", "nbases": nbases,
                      "lenscale": l, "fd_step": h},
            "bases": rows,
            "slm_boston_isotropic": {"setup": "Boston fold (404x13), "
                                     "RandomRBF(400)+Linear, var=10, "
                                     "reg=[5,5]", "rows": slmrows}}


# ---------------------------------------------------------------- (iv) entropy
def entropy(K_list=(1, 2, 5, 10), seed=7):
    Xb, yb = pt.boston_fold()
    rows = []
    for K in K_list:
        basis = pt.boston_basis(100)
        glm = GeneralizedLinearModel(Gaussian(), basis, K=K, nsamples=20,
                                     batch_size=10, random_state=seed)
        glm.B_ = Xb.shape[0] / glm.batch_size
        glm.D_ = D = basis.get_dim(Xb)
        rs = np.random.RandomState(seed)
        m = rs.randn(D, K)
        C = gamma(a=2, scale=0.5).rvs(size=(D, K), random_state=rs)
        reg = [2.0, 3.0]
        lvar = 4.0
        ls = 5.0 * np.ones(13)
        idx = rs.choice(Xb.shape[0], 10, replace=False)
        X, y = Xb[idx], yb[idx]

        glm.random_ = np.random.RandomState(123)
        glm._GeneralizedLinearModel__it = -1      # calc_ll, no log line
        negelbo, _ = glm._elbo(m, C, reg, lvar, ls, X, y)
        code_elbo = -negelbo

        # independent recomputation with the report's eq. (24)
        glm.random_ = np.random.RandomState(123)   # same MC draws
        Phi = basis.transform(X, ls)
        L, _ = basis.regularizer_diagonal(X, *reg)
        Ell = np.array([glm._reparam_k(m[:, k], C[:, k], y, Phi, (lvar,))[4]
                        for k in range(K)])
        prior = np.mean([norm.logpdf(m[:, k], 0, np.sqrt(L)).sum()
                         - 0.5 * (C[:, k] / L).sum() for k in range(K)])
        logN = np.array([[norm.logpdf(m[:, k], m[:, j],
                                      np.sqrt(C[:, k] + C[:, j])).sum()
                          for j in range(K)] for k in range(K)])
        H24 = -np.mean(logsumexp(logN - np.log(K), axis=1))
        eq24_elbo = glm.B_ * Ell.mean() + prior + H24
        rows.append({"K": K, "code_elbo": float(code_elbo),
                     "eq24_elbo": float(eq24_elbo),
                     "code_minus_eq24": float(code_elbo - eq24_elbo),
                     "predicted_-(1-1/K)logK": float(-(1 - 1 / K) *
                                                     np.log(K))})
    src = inspect.getsource(GeneralizedLinearModel._elbo).splitlines()
    lines = [s for s in src if "logzk" in s or "ELBO = (" in s
             or "np.log(K)" in s]
    return {"rows": rows, "code_lines": lines}


# ---------------------------------------------------------------- (v) logpdf
def logpdf(maxiter=2000, nstarts=20):
    raw = np.genfromtxt(os.path.join(pt.DATA, "boston_housing.csv"),
                        delimiter=",", skip_header=1)
    from sklearn.model_selection import KFold
    from sklearn.preprocessing import StandardScaler
    X, y = raw[:, :13], raw[:, 13] - raw[:, 13].mean()
    tr, ts = next(KFold(n_splits=5, shuffle=True, random_state=100).split(X))
    sc = StandardScaler().fit(X[tr])
    glm = GeneralizedLinearModel(Gaussian(), pt.boston_basis(100),
                                 random_state=100, nsamples=20,
                                 maxiter=maxiter, nstarts=nstarts,
                                 updater=Adam(epsilon=1e-8))
    t = time.time()
    glm.fit(sc.transform(X[tr]), y[tr])
    fit_s = time.time() - t
    Xs, ys = sc.transform(X[ts]), y[ts]
    out = {"fit": "Boston fold 1, 100 RBF + linear, K=10, 20 samples, "
                  "maxiter=%d, nstarts=%d (%.1f s)" % (maxiter, nstarts,
                                                       fit_s)}
    for ns in (200, 2000):
        glm.random_ = np.random.RandomState(5)
        lp_code = glm.predict_logpdf(Xs, ys, nsamples=ns)[0]
        # same samples: recompute the per-sample log-likelihoods
        glm.random_ = np.random.RandomState(5)
        fs = glm._sample_func(Xs, ns)
        ps = np.array([glm.likelihood.loglike(ys, f, glm.like_hypers_)
                       for f in fs]).T
        assert np.allclose(ps.mean(axis=1), lp_code)
        lp_mix = logsumexp(ps, axis=1) - np.log(ns)
        out["nsamples=%d" % ns] = {
            "mean_logp_code(avg of log p)": float(lp_code.mean()),
            "mean_logp_log_of_avg_p": float(lp_mix.mean()),
            "mean_difference": float((lp_mix - lp_code).mean()),
            "max_difference": float((lp_mix - lp_code).max()),
            "min_difference": float((lp_mix - lp_code).min())}
    src = inspect.getsource(GeneralizedLinearModel.predict_logpdf)
    out["code_lines"] = [s for s in src.splitlines()
                         if "ps[:, i]" in s or "ps.mean" in s]
    return out


# ---------------------------------------------------------------- extra
def hypergrad(seed=11):
    """GLM basis/likelihood hyperparameter gradients vs FD of the sampled
    ELBO with common random numbers."""
    Xb, yb = pt.boston_fold()
    basis = pt.boston_basis(100)
    K = 10
    glm = GeneralizedLinearModel(Gaussian(), basis, K=K, nsamples=20,
                                 batch_size=10, random_state=seed)
    glm.B_ = Xb.shape[0] / glm.batch_size
    D = basis.get_dim(Xb)
    rs = np.random.RandomState(seed)
    m = 0.3 * rs.randn(D, K)
    C = gamma(a=2, scale=0.5).rvs(size=(D, K), random_state=rs) * 0.1
    reg, lvar = [2.0, 3.0], 4.0
    ls = 3.0 + rs.rand(13)
    idx = rs.choice(Xb.shape[0], 10, replace=False)
    X, y = Xb[idx], yb[idx]

    def f(lvar_, ls_):
        glm.random_ = np.random.RandomState(99)
        glm._GeneralizedLinearModel__it = -1
        return glm._elbo(m, C, reg, lvar_, ls_, X, y)

    o, g = f(lvar, ls)
    dl, dls = g[3], np.asarray(g[4])
    e = 1e-6
    fd_var = (f(lvar + e, ls)[0] - f(lvar - e, ls)[0]) / (2 * e)
    fd_ls = []
    for i in range(3):
        lp, lm = ls.copy(), ls.copy()
        lp[i] += e
        lm[i] -= e
        fd_ls.append((f(lvar, lp)[0] - f(lvar, lm)[0]) / (2 * e))
    return {"B=N/|B|": glm.B_,
            "noise_var": {"code": float(np.squeeze(dl)),
                          "fd": float(fd_var),
                          "fd/code": float(fd_var / np.squeeze(dl))},
            "lenscale[0:3]": {"code": [float(v) for v in dls[:3]],
                              "fd": [float(v) for v in fd_ls],
                              "fd/code": [float(a / b) for a, b in
                                          zip(fd_ls, dls[:3])]}}


SECTIONS = {"orf": orf, "orf20": orf20, "laplace": laplace,
            "laplace_convergence": laplace_convergence, "isograd": isograd,
            "entropy": entropy, "logpdf": logpdf, "hypergrad": hypergrad}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--only", nargs="*", default=list(SECTIONS))
    ap.add_argument("--out", default=None)
    a = ap.parse_args()
    res = {}
    for k in a.only:
        t = time.time()
        res[k] = SECTIONS[k]()
        res[k]["_seconds"] = round(time.time() - t, 1)
        print("==", k, json.dumps(res[k], indent=1, default=str)[:6000],
              flush=True)
    if a.out:
        with open(a.out, "w") as fh:
            json.dump(res, fh, indent=1, default=str)


if __name__ == "__main__":
    main()
