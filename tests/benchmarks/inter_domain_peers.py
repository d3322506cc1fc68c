#!/usr/bin/env python
"""GPflow 2.11's ``Multiscale`` inducing variables as a worker of ``sparse_peers.py``'s protocol
(run in GPflow's venv by ``bench_inter_domain.py``), and the conversion between GPflow's width
parameterisation and gpexplorer's.

    python inter_domain_peers.py          (then one JSON task per line on stdin, as sparse_peers.py)

**GPflow's widths** (``gpflow/covariances/kufs.py: Kuf_sqexp_multiscale`` and ``kuus.py:
Kuu_sqexp_multiscale``, GPflow 2.11.2). With lengthscale l and GPflow's ``scales`` s_m:

    Kuf[m, n] = sigma^2 (l / (l + s_m)) exp(-(x_n - Z_m)^2 / (2 (l + s_m)^2))
    Kuu[i, j] = sigma^2 (l / c_ij) exp(-(Z_i - Z_j)^2 / (2 c_ij^2)),  c_ij^2 = (l + s_i)^2 + (l + s_j)^2 - l^2

(per dimension, multiplied over dimensions). gpexplorer's multiscale feature (thesis eq. 4.8) has
l^2 + delta_m^2 where GPflow has (l + s_m)^2, so the two agree when

    delta_m = sqrt(2 l s_m + s_m^2),    s_m = sqrt(l^2 + delta_m^2) - l,

and GPflow's Kuu is then the thesis' (c_ij^2 = l^2 + delta_i^2 + delta_j^2). GPflow's docstring
calls ``scales`` the "std. dev. of Gaussian", which it is not: the window's standard deviation
is delta, and GPflow's s is a width *added to the lengthscale*, so a fixed s means a different
window whenever l moves. The gradients therefore differ by a chain rule (``to_gpflow_gradient``).

Each ``.npz`` the parent writes holds X, y, Z and, for a multiscale model, ``scales`` (GPflow's
s, [M, D]); without ``scales`` the worker builds GPflow's ordinary inducing points. Task kinds
are sparse_peers.py's (``info``, ``eval``), plus ``check``: the loss and its gradient with respect
to GPflow's *constrained* parameters (variance, lengthscales, noise variance, Z, scales) at the
start, untimed, for the agreement check.
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

LIBRARY = "gpflow-multiscale"


# ------------------------------------------------------------------------------------------
# the width conversion (used by the parent; pure numpy)
def gpflow_scales(delta, lengthscale):
    """GPflow's ``scales`` s for gpexplorer's window widths delta (s.d.): sqrt(l^2 + delta^2) - l."""
    lengthscale = np.asarray(lengthscale, dtype=float)
    return np.sqrt(lengthscale ** 2 + np.asarray(delta, dtype=float) ** 2) - lengthscale


def delta_from_scales(scales, lengthscale):
    """gpexplorer's widths for GPflow's scales s: sqrt(2 l s + s^2)."""
    s = np.asarray(scales, dtype=float)
    return np.sqrt(2.0 * np.asarray(lengthscale, dtype=float) * s + s ** 2)


def to_gpflow_gradient(grads, delta, lengthscale):
    """gpexplorer's dF/d(variance, lengthscale, noise_variance, mu, delta) at widths ``delta``
    [M, D] (one lengthscale) as GPflow's dF/d(variance, lengthscales, noise variance, Z, scales).

    delta_m = sqrt((l + s_m)^2 - l^2), so d delta / d s = (l + s) / delta and, at fixed s,
    d delta / d l = s / delta: GPflow's lengthscale moves every window with it.
    """
    delta = np.asarray(delta, dtype=float)
    s = gpflow_scales(delta, lengthscale)
    g_delta = np.asarray(grads["delta"], dtype=float)
    return {"variance": float(grads["variance"]),
            "lengthscale": float(np.sum(grads["lengthscale"]) + np.sum(g_delta * s / delta)),
            "noise_variance": float(grads["noise_variance"]), "Z": np.asarray(grads["mu"], dtype=float),
            "scales": g_delta * (lengthscale + s) / delta}


# ------------------------------------------------------------------------------------------
# the worker (runs in GPflow's venv)
class GPflowMultiscale(peers.GPflow):
    """sparse_peers.GPflow with ``Multiscale(Z, scales)`` when the data file has scales."""

    scales = None  # set from the data file before a model is built

    def model(self, X, y, Z, approximation):
        if self.scales is None:
            return super().model(X, y, Z, approximation)
        gpflow = self.gpflow
        kern = gpflow.kernels.SquaredExponential(variance=peers.VARIANCE, lengthscales=peers.LENGTHSCALE)
        feature = gpflow.inducing_variables.Multiscale(Z.copy(), self.scales.copy())
        cls = {"vfe": gpflow.models.SGPR, "fitc": gpflow.models.GPRFITC}[approximation]
        return cls((X, y[:, None]), kernel=kern, inducing_variable=feature, noise_variance=peers.NOISE_VARIANCE)

    def check(self, X, y, Z, approximation):
        """Loss and dLoss/d(constrained parameters) at the start (GradientTape, eager)."""
        tf = self.tf
        m = self.model(X, y, Z, approximation)
        params = {"variance": m.kernel.variance, "lengthscale": m.kernel.lengthscales,
                  "noise_variance": m.likelihood.variance, "Z": m.inducing_variable.Z}
        if self.scales is not None:
            params["scales"] = m.inducing_variable.scales
        raw = [p.unconstrained_variable for p in params.values()]
        with tf.GradientTape() as tape:
            loss = m.training_loss()
        d_raw = tape.gradient(loss, raw)
        out = {"loss": float(loss.numpy())}
        for (name, p), u, g in zip(params.items(), raw, d_raw):
            with tf.GradientTape() as t:  # elementwise bijectors: d constrained / d unconstrained
                t.watch(u)
                c = p.transform.forward(u) if p.transform is not None else tf.identity(u)
            jac = t.gradient(c, u)
            out[name] = (g / jac).numpy().tolist()
        return out


peers.LIBRARIES[LIBRARY] = GPflowMultiscale


class Worker(peers.Worker):
    def data(self, path):
        with np.load(path) as d:
            self.lib.scales = np.ascontiguousarray(d["scales"], dtype=float) if "scales" in d.files else None
        return super().data(path)

    def run(self, task):
        if task["kind"] == "check":
            out = self.lib.check(*self.data(task["data"]), task.get("approximation", "vfe"))
            return {"library": self.library, "kind": "check", **out}
        if task["kind"] == "eval":
            self.data(task["data"])  # the scales belong to the model the task names
        return super().run(task)


# ------------------------------------------------------------------------------------------
# the parent's end
class MultiscalePeer(peers.PeerProcess):
    """sparse_peers.PeerProcess running this file (GPflow with multiscale features) in ``python``."""

    def __init__(self, name, python):
        self.name, self.library = name, LIBRARY
        self.log = tempfile.NamedTemporaryFile("w+", prefix=f"peer-{name}-", suffix=".log", delete=False)
        self.proc = subprocess.Popen([str(python), str(Path(__file__).resolve())], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=self.log, text=True, env=dict(os.environ),
                                     bufsize=1)


def write_multiscale_data(directory, name, X, y, mu, scales=None):
    """The .npz a worker reads: X, y, Z (= mu) and, for a multiscale model, GPflow's scales."""
    path = Path(directory) / f"{name}.npz"
    arrays = {"X": X, "y": y, "Z": mu}
    if scales is not None:
        arrays["scales"] = scales
    np.savez(path, **arrays)
    return str(path)


if __name__ == "__main__":
    peers.Worker = Worker  # sparse_peers.main's protocol loop, with this worker
    peers.main(LIBRARY)
