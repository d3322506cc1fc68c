#!/usr/bin/env python
"""Per-call timings of the original revrand 1.0 (NICTA/revrand) objectives.

Run with the peer venv's interpreter:

    /work/peers/revrand/venv/bin/python tests/benchmarks/revrand_peer_timings.py --calls 20
    /work/peers/revrand/venv/bin/python tests/benchmarks/revrand_peer_timings.py --calls 20 --cases slm_boston
    /work/peers/revrand/venv/bin/python tests/benchmarks/revrand_peer_timings.py --list
    /work/peers/revrand/venv/bin/python tests/benchmarks/revrand_peer_timings.py --serve

Batch mode prints one JSON object: {case: {"min_ms", "median_ms", "calls",
"warmup", "shapes", "timed"}} plus a "_meta" entry (library versions).

Serve mode (for alternating calls with another implementation): the script
prints "READY <json list of cases>" once, then reads one command per stdin
line and answers with exactly one line:
    <case>          -> one timed call of that case; prints elapsed seconds
                       (float, e.g. "0.0123456")
    <case> <n>      -> n timed calls; prints n space-separated floats
    list            -> JSON list of case names
    describe <case> -> JSON with shapes and what is timed
    quit / EOF      -> exit
Errors are answered with a line starting "ERROR ". Cases are built lazily on
first use (building is not timed); call each case once untimed to warm up.

From Python (same interpreter):  import peer_timings as pt;
pt.timed_call("slm_boston") -> seconds.

What is timed (all revrand code, unmodified apart from COMPAT.patch):

slm_boston
    ``StandardLinearModel._elbo(slm, X, y, var, reg, hypers)`` -- the
    function ``StandardLinearModel.fit`` closes over with
    ``functools.partial(StandardLinearModel._elbo, self, X, y)`` and hands to
    ``structured_minimizer(logtrick_minimizer(scipy.optimize.minimize))``
    (L-BFGS-B, jac=True). One call = negative ELBO (= negative log evidence,
    the bound is tight for a full covariance) and its gradient w.r.t. the
    noise variance (1), the 2 regularisers and the 13 ARD lengthscales.
    X: (404, 13) standardised Boston inputs (first fold of the authors'
    KFold(5, shuffle=True, random_state=100)), y: (404,) centred medv.
    Basis: RandomRBF(nbases=400, Xdim=13, ARD lenscale (13,)) +
    LinearBasis(onescol=True) -> Phi (404, 814), posterior C (814, 814), basis
    gradient tensor (404, 814, 13). Parameters: one random-start draw from
    the demo priors (var ~ Gamma(1), reg ~ Gamma(1, scale=10), lenscale ~
    Gamma(1, scale=20)), seed 100.

glm_boston_step, glm_usps_step
    One iteration of revrand's SGD loop exactly as in
    ``revrand.optimize.sgd.sgd`` under
    ``structured_sgd(logtrick_sgd(sgd))`` as used by
    ``GeneralizedLinearModel.fit``: draw the next minibatch (gen_batch,
    batch_size 10), call the flattened, log-trick-warped
    ``GeneralizedLinearModel._elbo(m, C, reg, lpars, bpars, X_b, y_b)``,
    clip the gradient at the bounds, ``Adam.__call__`` update, clip x.
    As in revrand's own loop, the ELBO value itself is NOT evaluated on
    these iterations (revrand only evaluates it every 500th iteration / in
    random starts); gradients are.

glm_boston_objgrad, glm_usps_objgrad
    One direct call of ``GeneralizedLinearModel._elbo`` on a fixed
    minibatch of 10 rows with the ELBO value evaluated as well
    (calc_ll=True, as in revrand's random starts; achieved by setting the
    private iteration counter to -1 before the call so no log line is
    formatted). No Adam update, no flattening.

    Boston GLM: X_b (10, 13), RandomRBF(100, 13, ARD) + LinearBasis ->
    Phi (10, 214); m, C (214, 10) (K = 10, glm.py default), nsamples = 20
    (report set-up), Gaussian likelihood, B = 404/10.
    USPS 3 vs 5 GLM: train split 767 x 256 (label 1 = digit 5 as in
    revrand's classification_demo.ipynb), Bernoulli likelihood,
    RandomRBF(800, 256, isotropic lenscale) -> Phi (10, 1600); m, C
    (1600, 10), K = 10, nsamples = 50, batch 10, B = 76.7.
"""
import argparse
import json
import os
import sys
import time


def _early_threads():
    # Must run before numpy is imported: optional BLAS thread pinning.
    if "--threads" in sys.argv:
        n = sys.argv[sys.argv.index("--threads") + 1]
        for v in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
            os.environ[v] = n


if __name__ == "__main__":
    _early_threads()

import numpy as np  # noqa: E402
from scipy.stats import gamma  # noqa: E402
from sklearn.model_selection import KFold  # noqa: E402
from sklearn.preprocessing import StandardScaler  # noqa: E402

import revrand  # noqa: E402
import revrand.btypes as bt  # noqa: E402
import revrand.basis_functions as bf  # noqa: E402
from revrand import StandardLinearModel, GeneralizedLinearModel  # noqa: E402
from revrand.btypes import Parameter, Positive, Bound  # noqa: E402
from revrand.likelihoods import Gaussian, Bernoulli  # noqa: E402
from revrand.optimize import Adam  # noqa: E402
from revrand.optimize.sgd import gen_batch, normalize_bound  # noqa: E402
from revrand.optimize.decorators import (flatten_args, flatten_func_grad,  # noqa: E402
                                         _logtrick_gen)
from revrand.utils import flatten  # noqa: E402
from revrand import glm as _glm_mod  # noqa: E402

DATA = os.environ.get("GPX_ASSETS", os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "assets"))
SEED = 100


# --------------------------------------------------------------------------
# Data
# --------------------------------------------------------------------------

def boston_fold():
    raw = np.genfromtxt(os.path.join(DATA, "boston_housing.csv"),
                        delimiter=",", skip_header=1)
    X, y = raw[:, :13], raw[:, 13] - raw[:, 13].mean()
    tr, _ = next(KFold(n_splits=5, shuffle=True, random_state=SEED).split(X))
    Xtr = StandardScaler().fit_transform(X[tr])
    return Xtr, y[tr]


def usps_train():
    raw = np.genfromtxt(os.path.join(DATA, "usps_3vs5.csv"), delimiter=",",
                        dtype=str, skip_header=1)
    train = raw[raw[:, 0] == "train"]
    X = train[:, 3:].astype(float)
    y = (train[:, 2].astype(float).astype(int) == 5).astype(float)
    return X, y


def boston_basis(nbases):
    D = 13
    lenscale = gamma(1., scale=20)
    regularizer = gamma(1., scale=10)
    return bf.RandomRBF(Xdim=D, nbases=nbases,
                        lenscale=Parameter(lenscale, Positive(), shape=(D,)),
                        random_state=SEED,
                        regularizer=Parameter(regularizer, Positive())) \
        + bf.LinearBasis(onescol=True,
                         regularizer=Parameter(regularizer, Positive()))


# --------------------------------------------------------------------------
# Cases: each builder returns (callable doing one call, description dict)
# --------------------------------------------------------------------------

def build_slm_boston():
    X, y = boston_fold()
    basis = boston_basis(400)
    slm = StandardLinearModel(basis, random_state=SEED)
    slm.obj_ = -np.inf                      # as set at the top of fit()
    rs = np.random.RandomState(SEED)
    var = slm.var.rvs(rs)
    reg = [p.rvs(rs) for p in basis.regularizer]
    hypers = basis.params.rvs(rs)           # (13,) ARD lengthscales
    elbo = StandardLinearModel._elbo

    def call():
        return elbo(slm, X, y, var, reg, hypers)

    D = basis.get_dim(X)
    desc = {
        "timed": "revrand.slm.StandardLinearModel._elbo(self, X, y, var, "
                 "reg, hypers) -> (-ELBO, [dvar, [dreg1, dreg2], dlenscale])",
        "solve": "solve_posdef takes the Cholesky path at these parameters",
        "params": {"var": float(var), "reg": [float(r) for r in reg],
                   "lenscale": [round(float(h), 4) for h in hypers]},
        "shapes": {"X": list(X.shape), "y": [len(y)], "Phi": [len(y), int(D)],
                   "C": [int(D), int(D)], "lenscale": [13],
                   "dPhi": [len(y), int(D), 13]},
    }
    return call, desc


def _glm_setup(X, y, basis, likelihood, K, nsamples, batch_size):
    glm = GeneralizedLinearModel(likelihood, basis, K=K, nsamples=nsamples,
                                 batch_size=batch_size, maxiter=10 ** 9,
                                 random_state=SEED)
    N = X.shape[0]
    # exactly the attributes fit() sets before optimising
    glm.B_ = N / glm.batch_size
    glm.D_ = glm.basis.get_dim(X)
    params = [Parameter(_glm_mod.WGTRND, Bound(), shape=(glm.D_, glm.K)),
              Parameter(_glm_mod.COVRND, Positive(), shape=(glm.D_, glm.K)),
              glm.basis.regularizer,
              glm.likelihood.params,
              glm.basis.params]
    return glm, params


def _glm_step_builder(X, y, basis, likelihood, K, nsamples, batch_size):
    """One iteration of revrand.optimize.sgd.sgd's loop, with the same
    decorators (structured_sgd(logtrick_sgd(sgd))) GLM.fit uses."""
    glm, params = _glm_setup(X, y, basis, likelihood, K, nsamples, batch_size)
    rs = np.random.RandomState(SEED)
    # structured_sgd: flatten Parameters (a random draw, as in a random start)
    (x0, fbounds), shapes = flatten(
        params, hstack=bt.hstack, shape=bt.shape,
        ravel=lambda p: bt.ravel(p, random_state=rs))
    new_fun = flatten_func_grad(flatten_args(shapes)(glm._elbo))
    # logtrick_sgd
    logx, expx, gradx, bounds = _logtrick_gen(list(fbounds))

    def lt_fun(x, *fargs):
        o, g = new_fun(expx(x), *fargs)
        return o, gradx(g, x)

    # sgd() set-up
    updater = Adam()
    updater.reset()
    lower, upper = zip(*map(normalize_bound, bounds))
    lower, upper = np.array(lower), np.array(upper)
    batches = gen_batch((X, y), batch_size, np.inf, glm.random_)
    state = {"x": np.array(logx(x0), copy=True, dtype=float)}

    def call():
        # typical training iteration: counter > 0, not a logging iteration
        glm._GeneralizedLinearModel__it = 1
        batch = next(batches)
        x = state["x"]
        obj, grad = lt_fun(x, *batch)
        xlower = x <= lower
        grad[xlower] = np.minimum(grad[xlower], 0)
        xupper = x >= upper
        grad[xupper] = np.maximum(grad[xupper], 0)
        x = updater(x, grad)
        state["x"] = np.clip(x, lower, upper)
        return obj

    return glm, call, len(x0)


def _glm_objgrad_builder(X, y, basis, likelihood, K, nsamples, batch_size):
    glm, params = _glm_setup(X, y, basis, likelihood, K, nsamples, batch_size)
    rs = np.random.RandomState(SEED)
    vals = [p.rvs(rs) if not isinstance(p, list) else [q.rvs(rs) for q in p]
            for p in params]
    idx = rs.choice(X.shape[0], batch_size, replace=False)
    Xb, yb = X[idx], y[idx]

    def call():
        glm._GeneralizedLinearModel__it = -1   # calc_ll=True, no logging
        return glm._elbo(*vals, Xb, yb)

    return glm, call


def _glm_desc(kind, X, basis, K, nsamples, batch, lik, extra):
    D = int(basis.get_dim(X))
    timed = {
        "step": "one revrand SGD iteration: gen_batch -> flattened + "
                "log-trick GeneralizedLinearModel._elbo (gradient only, ELBO "
                "not evaluated, as on revrand's non-logging iterations) -> "
                "bound clipping -> revrand.optimize.Adam update",
        "objgrad": "GeneralizedLinearModel._elbo(m, C, reg, lpars, bpars, "
                   "X_b, y_b) with ELBO evaluated (calc_ll=True) on a fixed "
                   "minibatch",
    }[kind]
    d = {"timed": timed,
         "shapes": {"X_train": list(X.shape), "X_batch": [batch, X.shape[1]],
                    "Phi_batch": [batch, D], "m": [D, K], "C": [D, K],
                    "K": K, "nsamples": nsamples, "batch_size": batch,
                    "likelihood": lik}}
    d["shapes"].update(extra)
    return d


def build_glm_boston(kind):
    X, y = boston_fold()
    basis = boston_basis(100)
    args = (X, y, basis, Gaussian(), 10, 20, 10)
    if kind == "step":
        _, call, nflat = _glm_step_builder(*args)
        extra = {"n_flat_params": nflat}
    else:
        _, call = _glm_objgrad_builder(*args)
        extra = {}
    extra["lenscale"] = [13]
    return call, _glm_desc(kind, X, basis, 10, 20, 10, "Gaussian", extra)


def build_glm_usps(kind):
    X, y = usps_train()
    basis = bf.RandomRBF(800, X.shape[1],
                         lenscale=Parameter(gamma(1, scale=6.), Positive()),
                         random_state=150)
    args = (X, y, basis, Bernoulli(), 10, 50, 10)
    if kind == "step":
        _, call, nflat = _glm_step_builder(*args)
        extra = {"n_flat_params": nflat}
    else:
        _, call = _glm_objgrad_builder(*args)
        extra = {}
    extra["lenscale"] = "isotropic (scalar)"
    return call, _glm_desc(kind, X, basis, 10, 50, 10, "Bernoulli", extra)


BUILDERS = {
    "slm_boston": build_slm_boston,
    "glm_boston_step": lambda: build_glm_boston("step"),
    "glm_boston_objgrad": lambda: build_glm_boston("objgrad"),
    "glm_usps_step": lambda: build_glm_usps("step"),
    "glm_usps_objgrad": lambda: build_glm_usps("objgrad"),
}
CASES = list(BUILDERS)
_BUILT = {}


def get_case(name):
    """Return (call, description) for a case, building it once."""
    if name not in BUILDERS:
        raise KeyError("unknown case %r; known: %s" % (name, CASES))
    if name not in _BUILT:
        _BUILT[name] = BUILDERS[name]()
    return _BUILT[name]


def timed_call(name):
    """Do one call of case `name`; return elapsed wall seconds."""
    call, _ = get_case(name)
    t0 = time.perf_counter()
    call()
    return time.perf_counter() - t0


def meta():
    import scipy
    import sklearn
    return {"revrand": getattr(revrand, "__version__", "1.0.0 (setup.py)"),
            "revrand_path": os.path.dirname(revrand.__file__),
            "numpy": np.__version__, "scipy": scipy.__version__,
            "sklearn": sklearn.__version__, "python": sys.version.split()[0],
            "threads_env": {v: os.environ.get(v) for v in
                            ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS")}}


def serve(stream_in=sys.stdin, stream_out=sys.stdout):
    def out(s):
        stream_out.write(s + "\n")
        stream_out.flush()

    out("READY " + json.dumps(CASES))
    for line in stream_in:
        parts = line.split()
        if not parts:
            continue
        cmd = parts[0]
        try:
            if cmd in ("quit", "exit"):
                break
            elif cmd == "list":
                out(json.dumps(CASES))
            elif cmd == "describe":
                out(json.dumps(get_case(parts[1])[1]))
            elif cmd == "meta":
                out(json.dumps(meta()))
            else:
                n = int(parts[1]) if len(parts) > 1 else 1
                out(" ".join("%.9f" % timed_call(cmd) for _ in range(n)))
        except Exception as e:  # keep serving
            out("ERROR %s: %s" % (type(e).__name__, e))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--calls", type=int, default=20)
    ap.add_argument("--warmup", type=int, default=2)
    ap.add_argument("--cases", nargs="*", default=CASES)
    ap.add_argument("--serve", action="store_true")
    ap.add_argument("--list", action="store_true")
    ap.add_argument("--threads", type=str, default=None,
                    help="set OMP/OPENBLAS/MKL_NUM_THREADS (before numpy "
                         "import)")
    a = ap.parse_args(argv)
    if a.list:
        print(json.dumps(CASES))
        return
    if a.serve:
        serve()
        return
    res = {"_meta": meta()}
    for name in a.cases:
        _, desc = get_case(name)
        for _ in range(a.warmup):
            timed_call(name)
        ts = np.array([timed_call(name) for _ in range(a.calls)]) * 1e3
        res[name] = {"min_ms": round(float(ts.min()), 4),
                     "median_ms": round(float(np.median(ts)), 4),
                     "calls": a.calls, "warmup": a.warmup, **desc}
    # one case per line, valid JSON overall
    print("{\n" + ",\n".join(" %s: %s" % (json.dumps(k), json.dumps(v))
                              for k, v in res.items()) + "\n}")


if __name__ == "__main__":
    main()
