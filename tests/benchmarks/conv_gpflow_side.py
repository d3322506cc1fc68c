#!/usr/bin/env python
"""GPflow 2.11's ``Convolutional`` kernel with ``InducingPatches`` in an SVGP (Bernoulli, full q)
as a worker of ``sparse_peers.py``'s protocol, run in GPflow's venv by ``bench_convolutional.py``.

    python conv_gpflow_side.py          (then one JSON task per line on stdin, as sparse_peers.py)

**The GPflow model** (GPflow 2.11.2: ``kernels/convolutional.py``, ``covariances/kufs.py:
Kuf_conv_patch``, ``kuus.py: Kuu_conv_patch``, ``models/svgp.py``):

* ``Convolutional(SquaredExponential(variance, lengthscales), image_shape, patch_shape)``:
  f(x) = (1/P) sum_p w_p g(x^[p]), GPflow's "mean" form (gpexplorer's ``scaling="mean"``). Its
  ``weights`` (all ones) are a trainable Parameter by default; they are set non-trainable here, so
  that both sides compute the same function and differentiate the same parameters (gpexplorer's
  ``weighted=False``); the products with the weights are still computed. K_diag materialises the
  [N, P, P] patch Gram matrices and Kuf the [M, N, P] cross-covariances;
* ``InducingPatches(Z)``, Kuu = k_g(Z, Z) + jitter I (jitter 1e-6, ``set_default_jitter``);
* ``Bernoulli(invlink=probit, quadrature=NDiagGHQuadrature(1, n_gh))`` with the *exact* probit
  Phi(f) = (1 + erf(f / sqrt 2)) / 2: GPflow's default ``inv_probit`` squashes Phi into
  [1e-3, 1 - 1e-3], which moves the ELBO by ~1e-3 relative, so it would not equal gpexplorer's
  ``bernoulli_probit``. The cost is the same (one erf per quadrature node); the variational
  expectations are Gauss-Hermite quadrature either way (20 points, as gpexplorer's for Q = 1);
* ``SVGP(..., whiten=True, q_diag=False, num_data=N)``: GPflow's default, whitened full q(v)
  (q_mu = 0, q_sqrt = I, i.e. q(u) = p(u), at the start). The loss on a minibatch of B rows is
  -(N / B sum_b E_q[log p(y_b | f_b)] - KL[q || p]): the same estimate as gpexplorer's
  ``fitting.batch_elbo``.

The timed call is the loss and its gradient with respect to every trainable variable (q_mu,
q_sqrt, base variance and lengthscale, Z) in one ``tf.function`` (what a compiled training step
evaluates before the optimiser's update), on minibatch ``batches[i % K]`` of the parent's table
(the same rows gpexplorer's call i uses), the lengthscale moved by ~1e-12 relative per call as
``sparse_peers.nudge`` does. The first call (the tracing) is timed apart and returned.

Each ``.npz`` the parent writes (:func:`write_data`) holds X [N, H*W] in [0, 1], Y [N, 1] in
{0, 1}, Z [M, h*w], batches [K, B] (row indices), q_mu [M, 1], q_sqrt [1, M, M] (a valid q for
the unwhitened check), X_pred (images to predict), the shapes, variance, lengthscale, jitter and
n_gh. Task kinds: ``info`` (sparse_peers', plus the seconds this process took to import GPflow),
``eval`` (``repeats`` single timed calls, indices from ``start``), ``predict`` (``predict_y`` on
X_pred in chunks of ``chunk`` rows, each chunk one compiled call; a timed call predicts all of
X_pred), ``check`` (untimed, on batch 0: the whitened model's ELBO at its default q, and the
unwhitened model's at q = N(q_mu, q_sqrt q_sqrt^T) with its two terms and its gradient with respect
to the constrained variance, lengthscale and Z, and predict_f on the first ``n_pred`` rows of X_pred).
"""

from __future__ import annotations

import time

_T_START = time.perf_counter()

import sys  # noqa: E402
from pathlib import Path  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
import sparse_peers as peers  # noqa: E402  (pins the worker's thread pools before numpy is imported)

import os  # noqa: E402
import subprocess  # noqa: E402
import tempfile  # noqa: E402

import numpy as np  # noqa: E402

LIBRARY = "gpflow-conv"
ARRAYS = ("X", "Y", "Z", "batches", "q_mu", "q_sqrt", "X_pred")
SCALARS = ("variance", "lengthscale", "jitter", "n_gh")
SHAPES = ("image_shape", "patch_shape")


def write_data(directory, name, *, X, Y, Z, batches, q_mu, q_sqrt, X_pred, image_shape, patch_shape, variance,
               lengthscale, jitter, n_gh):
    """The .npz a worker reads (parent side; pure numpy). ``q_mu`` (M,), ``q_sqrt`` (M, M) lower."""
    path = Path(directory) / f"{name}.npz"
    np.savez(path, X=np.asarray(X, dtype=float), Y=np.asarray(Y, dtype=float).reshape(-1, 1),
             Z=np.asarray(Z, dtype=float), batches=np.asarray(batches, dtype=np.int64),
             q_mu=np.asarray(q_mu, dtype=float).reshape(-1, 1), q_sqrt=np.tril(np.asarray(q_sqrt, dtype=float))[None],
             X_pred=np.asarray(X_pred, dtype=float), image_shape=np.asarray(image_shape, dtype=np.int64),
             patch_shape=np.asarray(patch_shape, dtype=np.int64), variance=float(variance),
             lengthscale=float(lengthscale), jitter=float(jitter), n_gh=int(n_gh))
    return str(path)


def read_data(path):
    with np.load(path) as d:
        out = {k: np.ascontiguousarray(d[k], dtype=np.int64 if k == "batches" else float) for k in ARRAYS}
        out.update({k: d[k].item() for k in SCALARS})
        out.update({k: [int(v) for v in d[k]] for k in SHAPES})
    out["n_gh"] = int(out["n_gh"])
    return out


# ------------------------------------------------------------------------------------------
# the worker (runs in GPflow's venv)
class GPflowConv:
    def __init__(self):
        import tensorflow as tf

        tf.config.threading.set_intra_op_parallelism_threads(1)
        tf.config.threading.set_inter_op_parallelism_threads(1)
        import gpflow

        self.tf, self.gpflow, self.version = tf, gpflow, gpflow.__version__
        self.path = os.path.dirname(gpflow.__file__)
        self.import_seconds = time.perf_counter() - _T_START

    def probit(self, f):
        tf = self.tf
        return 0.5 * (1.0 + tf.math.erf(f / np.sqrt(2.0)))

    def model(self, d, whiten=True, q=False):
        gpflow = self.gpflow
        gpflow.config.set_default_jitter(d["jitter"])
        base = gpflow.kernels.SquaredExponential(variance=d["variance"], lengthscales=d["lengthscale"])
        kern = gpflow.kernels.Convolutional(base, d["image_shape"], d["patch_shape"])
        gpflow.set_trainable(kern.weights, False)
        lik = gpflow.likelihoods.Bernoulli(invlink=self.probit,
                                           quadrature=gpflow.quadrature.NDiagGHQuadrature(1, d["n_gh"]))
        extra = {"q_mu": d["q_mu"].copy(), "q_sqrt": d["q_sqrt"].copy()} if q else {}
        return gpflow.models.SVGP(kern, lik, gpflow.inducing_variables.InducingPatches(d["Z"].copy()),
                                  whiten=whiten, q_diag=False, num_data=d["X"].shape[0], **extra)

    def batch(self, d, i):
        rows = d["batches"][i % len(d["batches"])]
        return self.tf.constant(d["X"][rows]), self.tf.constant(d["Y"][rows])

    def evaluator(self, d):
        """call(i): one compiled loss + gradient on minibatch i (module docstring)."""
        tf = self.tf
        m = self.model(d)
        variables = m.trainable_variables
        ls = m.kernel.base_kernel.lengthscales

        @tf.function
        def step(Xb, Yb):
            with tf.GradientTape() as tape:
                loss = m.training_loss((Xb, Yb))
            return loss, tape.gradient(loss, variables)

        def call(i):
            ls.assign(d["lengthscale"] * peers.nudge(i))
            loss, grads = step(*self.batch(d, i))
            return float(loss.numpy())

        return call

    def predictor(self, d, chunk):
        tf = self.tf
        m = self.model(d)
        predict = tf.function(m.predict_y)
        X = d["X_pred"]

        def call(i):
            m.kernel.base_kernel.lengthscales.assign(d["lengthscale"] * peers.nudge(i))
            for a in range(0, len(X), chunk):
                mean, var = predict(tf.constant(X[a:a + chunk]))
            return float(mean.numpy()[0, 0])

        return call

    def check(self, d, n_pred):
        tf = self.tf
        Xb, Yb = self.batch(d, 0)
        prior = self.model(d, whiten=True)
        out = {"elbo_whitened_prior": -float(prior.training_loss((Xb, Yb)).numpy())}
        m = self.model(d, whiten=False, q=True)
        params = {"variance": m.kernel.base_kernel.variance, "lengthscale": m.kernel.base_kernel.lengthscales,
                  "Z": m.inducing_variable.Z}
        raw = [p.unconstrained_variable for p in params.values()]
        with tf.GradientTape() as tape:
            loss = m.training_loss((Xb, Yb))
        d_raw = tape.gradient(loss, raw)
        f_mean, f_var = m.predict_f(Xb, full_cov=False)
        var_exp = tf.reduce_sum(m.likelihood.variational_expectations(Xb, f_mean, f_var, Yb))
        scale = d["X"].shape[0] / int(Xb.shape[0])
        out.update(elbo_q=-float(loss.numpy()), var_exp_scaled=scale * float(var_exp.numpy()),
                   kl=float(m.prior_kl().numpy()))
        for (name, p), u, g in zip(params.items(), raw, d_raw):
            if p.transform is None:
                grad = g
            else:  # softplus: d constrained / d unconstrained, elementwise
                with tf.GradientTape() as t:
                    t.watch(u)
                    c = p.transform.forward(u)
                grad = g / t.gradient(c, u)
            out[f"grad_{name}"] = np.asarray(grad.numpy()).tolist()  # of the loss = -ELBO
        mean, var = m.predict_f(tf.constant(d["X_pred"][:n_pred]))
        out.update(pred_mean=mean.numpy()[:, 0].tolist(), pred_var=var.numpy()[:, 0].tolist())
        return out


peers.LIBRARIES[LIBRARY] = GPflowConv


class Worker(peers.Worker):
    def run(self, task):
        kind = task["kind"]
        if kind == "info":
            out = super().run(task)
            out["import_seconds"] = self.lib.import_seconds
            return out
        out = {"library": self.library, "kind": kind}
        if kind == "check":
            out.update(self.lib.check(read_data(task["data"]), task.get("n_pred", 10)))
            return out
        if kind not in ("eval", "predict"):
            raise ValueError(f"unknown task kind {kind!r}")
        key = (kind, task["data"], task.get("chunk"))
        if key not in self.evaluators:
            d = read_data(task["data"])
            t0 = time.perf_counter()
            call = self.lib.evaluator(d) if kind == "eval" else self.lib.predictor(d, task["chunk"])
            call(-1)  # the tracing: timed apart, never one of the timed calls
            first = 1e3 * (time.perf_counter() - t0)
            for i in range(task.get("warmup", 1)):
                call(-2 - i)
            self.evaluators[key] = (call, first)
        call, first = self.evaluators[key]
        out["times_ms"] = peers.timed(call, task.get("repeats", 1), start=task.get("start", 0))
        out["first_ms"] = first
        return out


# ------------------------------------------------------------------------------------------
# the parent's end
class ConvPeer(peers.PeerProcess):
    """sparse_peers.PeerProcess running this file (GPflow's convolutional SVGP) in ``python``."""

    def __init__(self, name, python):
        self.name, self.library = name, LIBRARY
        self.log = tempfile.NamedTemporaryFile("w+", prefix=f"peer-{name}-", suffix=".log", delete=False)
        self.proc = subprocess.Popen([str(python), str(Path(__file__).resolve())], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=self.log, text=True, env=dict(os.environ),
                                     bufsize=1)


if __name__ == "__main__":
    peers.Worker = Worker  # sparse_peers.main's protocol loop, with this worker
    peers.main(LIBRARY)
