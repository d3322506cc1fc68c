#!/usr/bin/env python
"""GPflow 2.11's SVGP with a Bernoulli-logit likelihood as a worker of ``sparse_peers.py``'s
protocol (run in GPflow's venv by ``bench_savigp.py``), evaluated at a q(u), kernel and Z sent by
the parent, so that both libraries compute the ELBO at the same point.

    python savigp_peers.py          (then one JSON task per line on stdin, as sparse_peers.py)

**The GPflow model** (GPflow 2.11.x, ``gpflow/models/svgp.py``, ``likelihoods/scalar_discrete.py``,
``likelihoods/base.py``):

* ``SVGP(kernel, likelihood, InducingPoints(Z), q_mu=m [M, 1], q_sqrt=L [1, M, M], whiten=False,
  q_diag=False)``: q(u) = N(m, L L^T) over u = f(Z), the FG family of gpexplorer's SAVIGP with
  the same parameterisation (gpexplorer stores log L_ii; the values are the same);
* ``SquaredExponential(variance, lengthscales)`` (one lengthscale), jitter 1e-6 added to Kuu
  (``gpflow.config.set_default_jitter``), as gpexplorer adds it; no mean function;
* ``Bernoulli(invlink=tf.sigmoid)``: GPflow's default link is the probit; log p = log(where(y == 1,
  p, 1 - p)) with p = sigmoid(f). Only the probit link has closed-form predictions; the
  variational expectations of every ``ScalarLikelihood`` are Gauss-Hermite quadrature
  (``NDiagGHQuadrature(1, n)``, ``ndiagquad``: nodes sqrt(2) sd x_i + mean of the physicists' rule),
  with n = ``DEFAULT_NUM_GAUSS_HERMITE_POINTS`` = 20 unless a quadrature is passed. The worker
  passes ``NDiagGHQuadrature(1, n_gh)`` with the parent's n (gpexplorer's, 20 for Q = 1).
* loss = -ELBO = -(sum_n E_q[log p(y_n | f_n)] - KL[q(u) || p(u)]) (``num_data`` = N: no
  minibatch scale); -KL = entropy + E_q[log p(u)], gpexplorer's two terms.

The loss and its gradient are compiled as GPflow's ``Scipy`` optimiser runs them
(``Scipy().eval_func(model.training_loss_closure(data, compile=False), variables, compile=True)``:
one ``tf.function`` for loss + gradient of every trainable variable: q_mu, q_sqrt, kernel
variance and lengthscale, Z).

Each ``.npz`` the parent writes holds X [N, D], Y [N, 1] in {0, 1}, Z [M, D], q_mu [M, 1],
q_sqrt [1, M, M] (lower triangular), variance, lengthscale, jitter and n_gh. Task kinds:
``info`` (sparse_peers'), ``eval`` (``repeats`` (default 1) single timed loss + gradient calls
in ms, indices from ``start``, after untimed warm-up / tracing, each call moving every
unconstrained value by ~1e-12 relative as sparse_peers does; also the loss at the start) and
``check`` (eager, untimed: the loss, its terms and its gradient with respect to the *constrained*
q_mu, q_sqrt (lower triangle), variance, lengthscale and Z).
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import sparse_peers as peers  # noqa: E402  (pins the worker's thread pools before numpy is imported)

import os  # noqa: E402
import subprocess  # noqa: E402
import tempfile  # noqa: E402

import numpy as np  # noqa: E402

LIBRARY = "gpflow-svgp"
DATA_KEYS = ("X", "Y", "Z", "q_mu", "q_sqrt")
SCALAR_KEYS = ("variance", "lengthscale", "jitter", "n_gh")


def write_data(directory, name, X, Y, Z, q_mu, q_sqrt, variance, lengthscale, jitter, n_gh):
    """The .npz a worker reads (parent side; pure numpy). ``q_mu`` (M,), ``q_sqrt`` (M, M) lower."""
    path = Path(directory) / f"{name}.npz"
    np.savez(path, X=np.asarray(X, dtype=float), Y=np.asarray(Y, dtype=float).reshape(-1, 1),
             Z=np.asarray(Z, dtype=float), q_mu=np.asarray(q_mu, dtype=float).reshape(-1, 1),
             q_sqrt=np.tril(np.asarray(q_sqrt, dtype=float))[None], variance=float(variance),
             lengthscale=float(lengthscale), jitter=float(jitter), n_gh=int(n_gh))
    return str(path)


def read_data(path):
    with np.load(path) as d:
        out = {k: np.ascontiguousarray(d[k], dtype=float) for k in DATA_KEYS}
        out.update({k: d[k].item() for k in SCALAR_KEYS})
    out["n_gh"] = int(out["n_gh"])
    return out


# ------------------------------------------------------------------------------------------
# the worker (runs in GPflow's venv)
class GPflowSVGP:
    def __init__(self):
        import tensorflow as tf

        tf.config.threading.set_intra_op_parallelism_threads(1)
        tf.config.threading.set_inter_op_parallelism_threads(1)
        import gpflow

        self.tf, self.gpflow, self.version = tf, gpflow, gpflow.__version__
        self.path = os.path.dirname(gpflow.__file__)

    def model(self, d):
        gpflow, tf = self.gpflow, self.tf
        gpflow.config.set_default_jitter(d["jitter"])  # added to diag(Kuu), as gpexplorer's
        kern = gpflow.kernels.SquaredExponential(variance=d["variance"], lengthscales=d["lengthscale"])
        quad = gpflow.quadrature.NDiagGHQuadrature(1, d["n_gh"])
        lik = gpflow.likelihoods.Bernoulli(invlink=tf.sigmoid, quadrature=quad)
        m = gpflow.models.SVGP(kern, lik, gpflow.inducing_variables.InducingPoints(d["Z"].copy()),
                               q_mu=d["q_mu"].copy(), q_sqrt=d["q_sqrt"].copy(), whiten=False, q_diag=False,
                               num_data=d["X"].shape[0])
        data = (tf.constant(d["X"]), tf.constant(d["Y"]))
        return m, data

    def evaluator(self, d):
        m, data = self.model(d)
        opt = self.gpflow.optimizers.Scipy()
        variables = m.trainable_variables
        fn = opt.eval_func(m.training_loss_closure(data, compile=False), variables, tf_fun_args={}, compile=True)
        x0 = opt.initial_parameters(variables).numpy()

        def call(i):
            return fn(x0 * peers.nudge(i))

        def loss():
            return float(fn(x0)[0])

        return call, loss

    def check(self, d):
        """Loss, its terms and d loss / d (constrained parameters), eager, at the start."""
        tf = self.tf
        m, data = self.model(d)
        params = {"q_mu": m.q_mu, "q_sqrt": m.q_sqrt, "variance": m.kernel.variance,
                  "lengthscale": m.kernel.lengthscales, "Z": m.inducing_variable.Z}
        raw = [p.unconstrained_variable for p in params.values()]
        with tf.GradientTape() as tape:
            loss = m.training_loss(data)
        d_raw = tape.gradient(loss, raw)
        X, Y = data
        f_mean, f_var = m.predict_f(X, full_cov=False, full_output_cov=False)
        var_exp = float(tf.reduce_sum(m.likelihood.variational_expectations(X, f_mean, f_var, Y)).numpy())
        out = {"loss": float(loss.numpy()), "var_exp": var_exp, "kl": float(m.prior_kl().numpy()),
               "f_var_min": float(tf.reduce_min(f_var).numpy())}
        for (name, p), u, g in zip(params.items(), raw, d_raw):
            if name == "q_sqrt":  # FillTriangular is a linear permutation: its forward maps d/du to d/dL
                grad = p.transform.forward(g)[0]
            elif p.transform is None:
                grad = g
            else:  # elementwise bijectors (softplus): d constrained / d unconstrained
                with tf.GradientTape() as t:
                    t.watch(u)
                    c = p.transform.forward(u)
                grad = g / t.gradient(c, u)
            out[name] = np.asarray(grad.numpy() if hasattr(grad, "numpy") else grad).tolist()
        return out


peers.LIBRARIES[LIBRARY] = GPflowSVGP


class Worker(peers.Worker):
    def run(self, task):
        kind = task["kind"]
        if kind == "info":
            return super().run(task)
        out = {"library": self.library, "kind": kind}
        if kind == "check":
            out.update(self.lib.check(read_data(task["data"])))
        elif kind == "eval":
            key = task["data"]
            if key not in self.evaluators:
                call, loss = self.lib.evaluator(read_data(key))
                for i in range(task.get("warmup", 3)):  # tf.function tracing: never timed
                    call(-1 - i)
                self.evaluators[key] = (call, loss)
            call, loss = self.evaluators[key]
            out["times_ms"] = peers.timed(call, task.get("repeats", 1), start=task.get("start", 0))
            out["loss"] = loss()
        else:
            raise ValueError(f"unknown task kind {kind!r}")
        return out


# ------------------------------------------------------------------------------------------
# the parent's end
class SVGPPeer(peers.PeerProcess):
    """sparse_peers.PeerProcess running this file (GPflow's SVGP) in ``python`` (GPflow's venv)."""

    def __init__(self, name, python):
        self.name, self.library = name, LIBRARY
        self.log = tempfile.NamedTemporaryFile("w+", prefix=f"peer-{name}-", suffix=".log", delete=False)
        self.proc = subprocess.Popen([str(python), str(Path(__file__).resolve())], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=self.log, text=True, env=dict(os.environ),
                                     bufsize=1)


if __name__ == "__main__":
    peers.Worker = Worker  # sparse_peers.main's protocol loop, with this worker
    peers.main(LIBRARY)
