#!/usr/bin/env python
"""GPflow 2.11's side of ``bench_natgrad.py``: SVGP fitted by GPflow's documented natural-gradient
recipe, run as a worker in GPflow's own venv (numpy < 2, TensorFlow 2.16).

    /work/peers/gpflow211/bin/python natgrad_peers.py     (then one JSON task per line on stdin)

**The recipe** (GPflow 2.11, ``gpflow/optimizers/natgrad.py`` and the "natural gradients"
notebook): ``SVGP(SquaredExponential(variance, lengthscales), Gaussian(variance),
InducingPoints(Z), whiten=...)`` with q(u) at GPflow's default start (q_mu = 0, q_sqrt = I);
``q_mu`` and ``q_sqrt`` set non-trainable; each iteration is one
``NaturalGradient(gamma=1.0).minimize(loss, [(q_mu, q_sqrt)])`` step followed by one
``tf.optimizers.Adam(lr)`` step on the remaining trainable variables (kernel variance and
lengthscale, Z, noise variance), both inside one ``tf.function``. The Adam step is written out
(tape + ``apply_gradients``, what ``minimize`` does) so that the loss it computes, -ELBO at the
iterate after the natural-gradient step, is returned and recorded every iteration at no extra
cost: for a Gaussian likelihood q(u) is then at its optimum for the current hyperparameters, so
the value is the collapsed bound there. Jitter 1e-6 (``gpflow.config.set_default_jitter``), as
gpexplorer adds it to Kuu.

**Cold and warm.** A fitter (one model, one compiled step per ``whiten``; Adam's learning rate is
a variable the step reads, assigned before each fit) is built once; its first fit traces the
``tf.function`` (the first step's time, ``trace_s``, is reported on its own) and is the *cold*
fit. Later fits restore every model variable and Adam's state (its moments and iteration
counter) to their start values and reuse the compiled step: *warm* fits. Times run from just
before the first step; model construction is not timed; the time budget counts from the end of
the first step.

Tasks (``kind``), each answered by one line ``@@RESULT@@{json}`` on stdout:

* ``info``: versions.
* ``fit``: ``data`` (the parent's ``.npz``: X [N, 1], y [N], Z [M, 1], the start values and the
  likelihood: ``gaussian`` (default), ``bernoulli_logit``, ``poisson`` with ``offset``), ``whiten``,
  ``lr``, ``gamma`` (the natural-gradient step, default 1.0), ``max_iter``, ``max_seconds``,
  optional ``stop_at`` (an ELBO at which to stop early; None runs the whole budget). Returns
  ``t`` (s after the start, per iteration), ``elbo`` (per iteration), ``final_elbo`` (the last
  iteration's, at q just brought to its optimum by the natural-gradient step), ``end_state_elbo``
  (at the state the fit leaves, after the last Adam step, untimed), ``iterations``, ``seconds``,
  ``trace_s`` (the first step, tracing included), ``cold`` (whether this fit traced).
* ``sgpr``: GPflow's collapsed SGPR (Titsias' bound) from the same start, fitted by its ``Scipy``
  optimiser (L-BFGS-B): the optimum as a cross-check of the parent's.

Only the standard library and numpy are imported at the top; the thread pools are pinned (to
``NATGRAD_THREADS``, default 1) before numpy and TensorFlow load.
"""

from __future__ import annotations

import os
import sys

THREADS = os.environ.get("NATGRAD_THREADS", "1")
for _name in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "VECLIB_MAXIMUM_THREADS",
              "TF_NUM_INTRAOP_THREADS", "TF_NUM_INTEROP_THREADS"):
    os.environ[_name] = THREADS
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import json  # noqa: E402
import time  # noqa: E402
import traceback  # noqa: E402

import numpy as np  # noqa: E402

MARK = "@@RESULT@@"


class GPflowSide:
    def __init__(self):
        import tensorflow as tf

        tf.config.threading.set_intra_op_parallelism_threads(int(THREADS))
        tf.config.threading.set_inter_op_parallelism_threads(int(THREADS))
        import gpflow

        self.tf, self.gpflow = tf, gpflow
        self.fitters = {}
        self.data = {}

    def info(self):
        return {"gpflow": self.gpflow.__version__, "tensorflow": self.tf.__version__, "numpy": np.__version__,
                "threads": THREADS, "python": sys.version.split()[0]}

    def load(self, path):
        if path not in self.data:
            with np.load(path) as f:
                self.data[path] = {k: f[k] for k in f.files}
        return self.data[path]

    def fitter(self, path, whiten, gamma):
        key = (path, bool(whiten), float(gamma))
        if key not in self.fitters:
            self.fitters[key] = Fitter(self, self.load(path), bool(whiten), float(gamma))
        return self.fitters[key]

    def sgpr(self, path):
        gpflow, tf = self.gpflow, self.tf
        d = self.load(path)
        gpflow.config.set_default_jitter(float(d["jitter"]))
        kern = gpflow.kernels.SquaredExponential(variance=float(d["variance"]), lengthscales=float(d["lengthscale"]))
        m = gpflow.models.SGPR((d["X"], d["y"][:, None]), kernel=kern, inducing_variable=d["Z"].copy(),
                               noise_variance=float(d["noise_variance"]))
        t0 = time.perf_counter()
        res = gpflow.optimizers.Scipy().minimize(m.training_loss, m.trainable_variables,
                                                 options={"maxiter": 5000})
        return {"elbo": float(m.elbo().numpy()), "seconds": time.perf_counter() - t0, "nit": int(res.nit),
                "message": str(res.message), "success": bool(res.success), "dtype": str(tf.float64)}


class Fitter:
    """One SVGP and its compiled natgrad + Adam step; ``fit`` restores the start, sets Adam's
    learning rate (a variable the compiled step reads, so a new rate needs no new trace) and runs."""

    def __init__(self, side, d, whiten, gamma):
        tf, gpflow = side.tf, side.gpflow
        gpflow.config.set_default_jitter(float(d["jitter"]))
        self.tf = tf
        X, Y = d["X"], d["y"][:, None]
        kern = gpflow.kernels.SquaredExponential(variance=float(d["variance"]), lengthscales=float(d["lengthscale"]))
        lik = likelihood(gpflow, tf, d)
        model = gpflow.models.SVGP(kern, lik, gpflow.inducing_variables.InducingPoints(d["Z"].copy()),
                                   whiten=whiten, num_data=X.shape[0])  # q_mu = 0, q_sqrt = I (defaults)
        gpflow.set_trainable(model.q_mu, False)
        gpflow.set_trainable(model.q_sqrt, False)
        loss = model.training_loss_closure((X, Y), compile=False)
        natgrad = gpflow.optimizers.NaturalGradient(gamma=gamma)
        adam = tf.optimizers.Adam(0.01)
        adam_vars = list(model.trainable_variables)
        adam.build(adam_vars)

        @tf.function
        def step():
            natgrad.minimize(loss, [(model.q_mu, model.q_sqrt)])
            with tf.GradientTape(watch_accessed_variables=False) as tape:
                tape.watch(adam_vars)
                value = loss()
            grads = tape.gradient(value, adam_vars)
            adam.apply_gradients(zip(grads, adam_vars))
            return value

        self.model, self.loss, self.step = model, loss, step
        self.model_vars = list(model.variables)
        self.model_start = [v.numpy() for v in self.model_vars]
        self.adam = adam
        self.adam_vars = [v for v in adam.variables if v is not adam.learning_rate]
        self.adam_start = [v.numpy() for v in self.adam_vars]
        self.traced = False
        self.names = sorted({p.name for p in model.trainable_parameters} | {"q_mu", "q_sqrt"})

    def reset(self):
        for v, x in zip(self.model_vars, self.model_start):
            v.assign(x)
        for v, x in zip(self.adam_vars, self.adam_start):
            v.assign(x)

    def fit(self, lr, max_iter, max_seconds, stop_at=None):
        """``max_seconds`` counts from the end of the first step (tracing is not part of the budget)."""
        self.reset()
        self.adam.learning_rate.assign(float(lr))
        cold = not self.traced
        ts, elbos = [], []
        step = self.step
        t0 = time.perf_counter()
        first = None
        for _ in range(int(max_iter)):
            value = -float(step())
            t = time.perf_counter() - t0
            if first is None:
                first = t
            ts.append(t)
            elbos.append(value)
            if t - first >= max_seconds or (stop_at is not None and value >= stop_at):
                break
        seconds = time.perf_counter() - t0
        self.traced = True
        end_state = -float(self.loss())
        k = self.model.kernel
        lik = self.model.likelihood
        return {"t": ts, "elbo": elbos, "final_elbo": elbos[-1], "end_state_elbo": end_state,
                "lr": float(self.adam.learning_rate.numpy()),
                "iterations": len(ts), "seconds": seconds,
                "trace_s": first if cold else None, "first_step_s": first, "cold": cold,
                "hyper": {"variance": float(k.variance.numpy()), "lengthscale": float(k.lengthscales.numpy()),
                          "noise_variance": float(lik.variance.numpy()) if hasattr(lik, "variance") else None}}


def likelihood(gpflow, tf, d):
    """The data's likelihood: Gaussian (``noise_variance``), Bernoulli with the logistic link (GPflow's
    default is the probit) or Poisson with the exp link and ``binsize`` = exp(offset) (rate
    binsize exp(f) = exp(f + offset), gpexplorer's coal set-up); Gauss-Hermite with GPflow's default
    20 points for the Bernoulli's expectations, the Poisson's and Gaussian's in closed form."""
    name = str(d.get("likelihood", "gaussian"))
    if name == "gaussian":
        return gpflow.likelihoods.Gaussian(variance=float(d["noise_variance"]))
    if name == "bernoulli_logit":
        return gpflow.likelihoods.Bernoulli(invlink=tf.sigmoid)
    if name == "poisson":
        return gpflow.likelihoods.Poisson(invlink=tf.exp, binsize=float(np.exp(float(d.get("offset", 0.0)))))
    raise ValueError(f"unknown likelihood {name!r}")


def handle(side, task):
    kind = task["kind"]
    if kind == "info":
        return side.info()
    if kind == "fit":
        f = side.fitter(task["data"], task.get("whiten", True), task.get("gamma", 1.0))
        return f.fit(task.get("lr", 0.01), task.get("max_iter", 5000), task.get("max_seconds", 60.0),
                     task.get("stop_at"))
    if kind == "sgpr":
        return side.sgpr(task["data"])
    raise ValueError(f"unknown task kind {kind!r}")


def main():
    side = GPflowSide()
    print(MARK + json.dumps({"ready": True, **side.info()}), flush=True)
    for line in sys.stdin:
        line = line.strip()
        if not line:
            continue
        try:
            out = handle(side, json.loads(line))
        except Exception as err:  # noqa: BLE001 - reported to the parent, which decides
            out = {"error": f"{type(err).__name__}: {err}", "traceback": traceback.format_exc()}
        print(MARK + json.dumps(out), flush=True)


if __name__ == "__main__":
    main()
