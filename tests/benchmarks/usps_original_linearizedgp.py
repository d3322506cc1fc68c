#!/usr/bin/env python
"""USPS 3-vs-5 (EGP paper section 4.2, Table 2) with the original ``linearizedGP`` 1.0 and with gpexplorer.

    python tests/benchmarks/usps_original_linearizedgp.py [--python /work/lgp-venv/bin/python]
        [--methods EGP UGP] [--seed 0]

The original runs in its own virtual environment (see bench_original_linearizedgp.py for how to
make it) with the settings of its own experiment script ``experiments/uspsbclass.py``:
squared-exponential kernel with log parameters (``kern_selog``), amplitude and lengthscale
started at 1.0 and bounded below by 0.1, noise standard deviation started at and bounded below
by 1e-7, ``learn`` with its defaults (NLopt BOBYQA, ftol_rel 1e-5, 200 evaluations), then
``predict`` (EGP) / ``quadpredict`` (UGP). gpexplorer then computes the posterior at the
hyperparameters the original learnt, and both sides' free energy (eq. 41), test error rate and
Bernoulli NLP are printed beside EGP paper Table 2.

What it is for: on USPS with the noise at its bound the free energy has no maximum inside the
box (it keeps rising with the kernel variance), so a learnt hyperparameter is where a search
stops, not a property of the model. This script separates the two questions: at the same
hyperparameters, do both implementations agree (F, error, NLP)? And does the original itself
still give the numbers in its paper?
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
for _path in (ROOT, Path(__file__).resolve().parent):
    if str(_path) not in sys.path:
        sys.path.insert(0, str(_path))

from gpexplorer import datasets, metrics  # noqa: E402
from gpexplorer.experiments import linearized_papers as lx  # noqa: E402
from gpexplorer.experiments.reproduce import EGP_TABLE2, EGP_TABLE2_HYPERPARAMETERS  # noqa: E402
from bench_original_linearizedgp import run_driver  # noqa: E402  (one BLAS thread, as there)

DEFAULT_PYTHON = "/work/lgp-venv/bin/python"

#: Runs inside the original package's interpreter: python -c DRIVER in.npz out.npz
DRIVER = r'''
import sys, time, warnings
import numpy as np
from linearizedGP import extendedGP, unscentedGP, kernels

warnings.simplefilter("ignore")
data = np.load(sys.argv[1])
x, y, xs = data["X"].T, data["y"], data["Xs"].T
np.random.seed(int(data["seed"]))
lgsig = lambda f: 1.0 / (1 + np.exp(-f))
dlgsig = lambda f: lgsig(f) * lgsig(-f)
out = {}
for method in [str(m) for m in data["methods"]]:
    if method == "EGP":
        gp = extendedGP.extendedGP(nlfunc=lgsig, dnlfunc=dlgsig, kfunc=kernels.kern_selog)
    else:
        gp = unscentedGP.unscentedGP(nlfunc=lgsig, kfunc=kernels.kern_selog)
    gp.learnLB(np.log((0.1, 0.1)), ynoise=1e-7)
    t0 = time.perf_counter()
    F = gp.learn(x, y, np.log((1.0, 1.0)), ynoise=1e-7)
    out[method + "_seconds"] = time.perf_counter() - t0
    out[method + "_free_energy"] = F
    out[method + "_params"] = np.array([gp.kparams[0], gp.kparams[1], gp.ynoise])  # log sigma, log l, noise std
    out[method + "_prob"] = (gp.predict(xs) if method == "EGP" else gp.quadpredict(xs))[0]
np.savez(sys.argv[2], **out)
'''


def run_original(python, methods, seed, timeout=3600):
    ds = datasets.load("usps_3vs5")
    return ds, run_driver(python, DRIVER, timeout, X=ds.X, y=ds.y, Xs=ds.X_test, methods=np.array(methods),
                          seed=seed)


def ours_at(ds, method, log_amplitude, log_lengthscale, noise_std):
    """gpexplorer's posterior at the given hyperparameters: (F, error rate, NLP)."""
    model = lx.make_model(method, ds.X, ds.y, "logistic", kernel="se", variance=math.exp(2.0 * log_amplitude),
                          lengthscale=math.exp(log_lengthscale), noise_variance=noise_std ** 2)
    model.fit_posterior()
    _, _, prob = lx.predict_moments(model, method, ds.X_test)
    prob = np.clip(prob, 0.0, 1.0)
    return model.free_energy(), metrics.error_rate(ds.y_test, prob), metrics.nlp(ds.y_test, prob)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--python", default=DEFAULT_PYTHON, help="interpreter with linearizedGP 1.0 installed")
    parser.add_argument("--methods", nargs="+", default=["EGP", "UGP"], choices=["EGP", "UGP"])
    parser.add_argument("--seed", type=int, default=0, help="numpy seed of the original (its inner loops start "
                                                               "at a random mean)")
    args = parser.parse_args(argv)
    if not Path(args.python).exists():
        print(f"error: {args.python} not found; create the venv as bench_original_linearizedgp.py says",
              file=sys.stderr)
        return 2
    t0 = time.perf_counter()
    ds, res = run_original(args.python, args.methods, args.seed)
    print(f"{'method':<7}{'side':<34}{'log sigma':>10}{'log l':>8}{'noise sd':>10}{'F':>11}{'error':>8}{'NLP':>8}")
    for method in args.methods:
        log_amp, log_len, noise_sd = (float(v) for v in res[method + "_params"])
        prob = np.clip(res[method + "_prob"], 1e-12, 1.0 - 1e-12)
        orig = (float(res[method + "_free_energy"]), metrics.error_rate(ds.y_test, prob), metrics.nlp(ds.y_test, prob))
        ours = ours_at(ds, method, log_amp, log_len, noise_sd)
        paper_amp, paper_len = EGP_TABLE2_HYPERPARAMETERS[method]
        paper = EGP_TABLE2[method]
        rows = [(f"original, learnt ({res[method + '_seconds']:.0f} s)", log_amp, log_len, noise_sd, *orig),
                ("gpexplorer at the original's values", log_amp, log_len, noise_sd, *ours)]
        for side, a, b, s, F, err, nlp in rows:
            print(f"{method:<7}{side:<34}{a:>10.3f}{b:>8.3f}{s:>10.2e}{F:>11.2f}{err:>8.4f}{nlp:>8.4f}")
        print(f"{method:<7}{'EGP paper Table 2':<34}{paper_amp:>10.3f}{paper_len:>8.3f}{'':>10}{'':>11}"
              f"{paper['error_rate'].mean:>8.4f}{paper['nlp'].mean:>8.4f}")
    print(f"wall time: {time.perf_counter() - t0:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
