#!/usr/bin/env python
"""One library's side of ``bench_sparse.py``, run as a worker process in that library's own venv.

    python sparse_peers.py LIBRARY        (then one JSON task per line on stdin)

LIBRARY is ``gpexplorer`` (this repository, or whatever ``PYTHONPATH`` puts first: the
pre-move worktree for the A/B comparison), ``gpflow`` (GPflow 2.11 in its own venv, which
needs numpy < 2) or ``gpytorch``. The worker stays up, so the parent can alternate single timed
calls of every side (``equal_timing.alternate``: the same number of calls per side). Each task names its
``kind`` and the data file (an ``.npz`` with X, y, Z written by the parent, so every library
sees the same bytes); each answer is one line ``@@RESULT@@{json}`` on stdout:

* ``info``: versions, and the BLAS the process loaded (threadpoolctl, where installed).
* ``eval``: objective + gradient w.r.t. variance, lengthscale, noise and every inducing input,
  ``repeats`` (default 1) single-call timings (ms), call indices from ``start`` (the parent's round
  index, which nudges the parameters), after warm-up (the first call of a model, numba compilation
  or tf.function tracing included, is never timed); the log marginal likelihood (or bound) at the
  start parameters is returned for comparison.
* ``fit``: Snelson's fit with L-BFGS-B to convergence (GPflow: its ``Scipy`` optimiser,
  ``compile=True``, the compiled loss reused across fits), ``repeats`` (default 1) wall times (s)
  of whole fits from the same start, after one untimed fit.
* ``big``: one objective + gradient at N = 10^6, run in a fresh worker: the time of the first
  call, the minimum of ``repeats`` more, and the peak resident memory of the process
  (``VmHWM``) after loading the data and at the end, MB.

Only the standard library and numpy are imported at the top: this file runs in every venv.
"""

from __future__ import annotations

import os
import sys

# A worker pins its pools before numpy is imported. Imported by a process that already has numpy
# or numba (bench_sparse.py under pytest), it leaves the environment alone: numba re-reads it at
# every compilation and refuses a NUMBA_NUM_THREADS different from its running pool's.
if "numpy" not in sys.modules and "numba" not in sys.modules:
    for _name in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "NUMBA_NUM_THREADS",
                  "VECLIB_MAXIMUM_THREADS", "TF_NUM_INTRAOP_THREADS", "TF_NUM_INTEROP_THREADS"):
        os.environ[_name] = "1"
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import gc  # noqa: E402
import inspect  # noqa: E402
import json  # noqa: E402
import subprocess  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # equal_timing, beside this file
import equal_timing  # noqa: E402

VARIANCE, LENGTHSCALE, NOISE_VARIANCE, JITTER = 1.0, 0.5, 0.09, 1e-6


def peak_rss_mb():
    """Peak resident set size of this process so far (VmHWM), MB."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024.0
    except OSError:
        pass
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def nudge(i):
    """~1e-12 relative per call: numerically nothing, never a cache hit."""
    return 1.0 + 1e-12 * (i + 10)


# ------------------------------------------------------------------------------------------
# gpexplorer
class GPExplorer:
    version = None

    def __init__(self):
        import gpexplorer
        from gpexplorer import kernels, models

        self.version = getattr(gpexplorer, "__version__", "?")
        self.path = os.path.dirname(gpexplorer.__file__)
        self.kernels, self.models = kernels, models

    def model(self, X, y, Z, approximation):
        kern = self.kernels.SquaredExponential(variance=VARIANCE, lengthscale=LENGTHSCALE)
        return self.models.SparseGPR(X, y, kernel=kern, Z=Z.copy(), approximation=approximation,
                                     noise_variance=NOISE_VARIANCE, jitter=JITTER)

    def evaluator(self, X, y, Z, approximation):
        m = self.model(X, y, Z, approximation)
        # set_parameters(**values) here; an older checkout (the pre-move baseline) takes one dict
        keywords = any(p.kind is p.VAR_KEYWORD for p in inspect.signature(m.set_parameters).parameters.values())

        def call(i):
            s = nudge(i)
            values = {"lengthscale": LENGTHSCALE * s, "noise_variance": NOISE_VARIANCE * s}
            m.set_parameters(**values) if keywords else m.set_parameters(values)
            return m.objective_and_gradient()

        return call, lambda: float(m.log_marginal_likelihood())

    def fit(self, X, y, Z, approximation, max_iter):
        m = self.model(X, y, Z, approximation)
        res = m.fit(max_iter=max_iter)
        return {"nlml": float(res.objective), "n_iter": int(res.n_iter), "n_eval": int(res.n_eval)}


# ------------------------------------------------------------------------------------------
# GPflow 2.11 (SGPR = Titsias' bound; GPRFITC), compiled (tf.function) as its Scipy optimiser runs
class GPflow:
    def __init__(self):
        import tensorflow as tf

        tf.config.threading.set_intra_op_parallelism_threads(1)
        tf.config.threading.set_inter_op_parallelism_threads(1)
        import gpflow

        gpflow.config.set_default_jitter(JITTER)  # added to diag(Kuu), as ours
        self.tf, self.gpflow, self.version = tf, gpflow, gpflow.__version__

    def model(self, X, y, Z, approximation):
        gpflow = self.gpflow
        kern = gpflow.kernels.SquaredExponential(variance=VARIANCE, lengthscales=LENGTHSCALE)
        cls = {"vfe": gpflow.models.SGPR, "fitc": gpflow.models.GPRFITC}[approximation]
        return cls((X, y[:, None]), kernel=kern, inducing_variable=Z.copy(), noise_variance=NOISE_VARIANCE)

    def evaluator(self, X, y, Z, approximation):
        m = self.model(X, y, Z, approximation)
        opt = self.gpflow.optimizers.Scipy()
        variables = m.trainable_variables
        fn = opt.eval_func(m.training_loss, variables, tf_fun_args={}, compile=True)
        x0 = opt.initial_parameters(variables).numpy()

        def call(i):
            return fn(x0 * nudge(i))

        def lml():
            fn(x0)
            return -float(m.training_loss().numpy())

        return call, lml

    def fit(self, X, y, Z, approximation, max_iter):
        """Scipy L-BFGS-B through GPflow's ``Scipy`` optimiser, ``compile=True``. The model and
        the optimiser are built once and reset to the start before each fit, so every fit after
        the first reuses the compiled (tf.function) loss and gradient, as a user refitting does."""
        key = (approximation, X.shape, max_iter)
        if getattr(self, "_fit_key", None) != key:
            self._fit_key = key
            self._fit_model = self.model(X, y, Z, approximation)
            self._fit_start = [v.numpy().copy() for v in self._fit_model.trainable_variables]
            self._fit_opt = self.gpflow.optimizers.Scipy()
        m = self._fit_model
        for v, start in zip(m.trainable_variables, self._fit_start):
            v.assign(start)
        res = self._fit_opt.minimize(m.training_loss, m.trainable_variables, compile=True,
                                     options={"maxiter": max_iter})
        return {"nlml": float(m.training_loss().numpy()), "n_iter": int(res.nit), "n_eval": int(res.nfev)}


# ------------------------------------------------------------------------------------------
# GPyTorch: SGPR (InducingPointKernel: Titsias' bound through its added loss term), Cholesky
class GPyTorch:
    def __init__(self):
        import torch

        torch.set_num_threads(1)
        torch.set_num_interop_threads(1)
        import gpytorch

        self.torch, self.gpytorch, self.version = torch, gpytorch, gpytorch.__version__

    def model(self, X, y, Z, approximation):
        if approximation != "vfe":
            raise ValueError("GPyTorch has no FITC")
        torch, gpytorch = self.torch, self.gpytorch
        Xt, yt = torch.as_tensor(X), torch.as_tensor(y)

        class SGPR(gpytorch.models.ExactGP):
            def __init__(self, likelihood):
                super().__init__(Xt, yt, likelihood)
                self.mean_module = gpytorch.means.ZeroMean()
                base = gpytorch.kernels.ScaleKernel(gpytorch.kernels.RBFKernel())
                base.outputscale = VARIANCE
                base.base_kernel.lengthscale = LENGTHSCALE
                self.covar_module = gpytorch.kernels.InducingPointKernel(
                    base, inducing_points=torch.as_tensor(Z.copy()), likelihood=likelihood)

            def forward(self, x):
                return gpytorch.distributions.MultivariateNormal(self.mean_module(x), self.covar_module(x))

        lik = gpytorch.likelihoods.GaussianLikelihood()
        lik.noise = NOISE_VARIANCE
        m = SGPR(lik).double()
        m.train()
        lik.train()
        return m, lik, gpytorch.mlls.ExactMarginalLogLikelihood(lik, m), Xt, yt

    def evaluator(self, X, y, Z, approximation):
        torch, gpytorch = self.torch, self.gpytorch
        m, lik, mll, Xt, yt = self.model(X, y, Z, approximation)
        N = len(y)
        ls = m.covar_module.base_kernel.base_kernel.raw_lengthscale
        ls0 = ls.detach().clone()

        def loss():  # GPyTorch's defaults: Woodbury through the inducing points, O(N M^2)
            return -mll(m(Xt), yt) * N

        def call(i):
            with torch.no_grad():
                ls.copy_(ls0 * nudge(i))
            m.zero_grad()
            value = loss()
            value.backward()
            return float(value)

        def lml():
            with torch.no_grad():
                ls.copy_(ls0)
            return -float(loss().detach())

        return call, lml


LIBRARIES = {"gpexplorer": GPExplorer, "gpflow": GPflow, "gpytorch": GPyTorch}


def blas_info():
    try:
        from threadpoolctl import threadpool_info
    except ImportError:
        return []
    return [{k: p.get(k) for k in ("internal_api", "architecture", "num_threads", "version")} for p in threadpool_info()]


class Worker:
    def __init__(self, library):
        self.library = library
        self.lib = LIBRARIES[library]()
        self.evaluators = {}  # (data, approximation) -> (call, lml): built, warmed up and traced once

    def data(self, path):
        d = np.load(path)
        return tuple(np.ascontiguousarray(d[k], dtype=float) for k in ("X", "y", "Z"))

    def run(self, task):
        kind = task["kind"]
        out = {"library": self.library, "kind": kind}
        if kind == "info":
            out.update(version=self.lib.version, numpy=np.__version__, python=sys.version.split()[0],
                       blas=blas_info(), path=getattr(self.lib, "path", None))
            return out
        approximation = task.get("approximation", "vfe")
        if kind == "eval":
            key = (task["data"], approximation)
            if key not in self.evaluators:
                call, lml = self.lib.evaluator(*self.data(task["data"]), approximation)
                for i in range(task.get("warmup", 2)):
                    call(-1 - i)
                self.evaluators[key] = (call, lml)
            call, lml = self.evaluators[key]
            out["times_ms"] = timed(call, task.get("repeats", 1), start=task.get("start", 0))
            out["log_marginal_likelihood"] = lml()
        elif kind == "fit":
            X, y, Z = self.data(task["data"])
            max_iter = task.get("max_iter", 1000)
            key = ("fit", task["data"], approximation, max_iter)
            if key not in self.evaluators:
                self.lib.fit(X, y, Z, approximation, max_iter)  # untimed: compilation, tracing
                self.evaluators[key] = True
            result = {}

            def fit(i):
                result.update(self.lib.fit(X, y, Z, approximation, max_iter))

            out["times_s"] = [1e-3 * ms for ms in timed(fit, task.get("repeats", 1))]
            out.update(result)
        elif kind == "big":
            X, y, Z = self.data(task["data"])
            out["rss_data_mb"] = peak_rss_mb()
            call, _ = self.lib.evaluator(X, y, Z, approximation)
            t0 = time.perf_counter()
            call(0)
            out["first_seconds"] = time.perf_counter() - t0
            times = []
            for i in range(task.get("repeats", 2)):
                t0 = time.perf_counter()
                call(i + 1)
                times.append(time.perf_counter() - t0)
            out["times_s"] = times
            out["peak_rss_mb"] = peak_rss_mb()
        else:
            raise ValueError(f"unknown task kind {kind!r}")
        return out


def timed(fn, repeats=1, start=0):
    """Wall times (ms) of ``repeats`` single calls ``fn(start)``, ``fn(start + 1)``, ... timed one by
    one in this worker by ``equal_timing.local`` (the benchmarks' one timing helper). The parent asks
    for one call at a time (``repeats`` 1, ``start`` its round index), alternating with its other
    sides; the garbage collector is paused during the call and run, untimed, before every 25th."""
    side = equal_timing.local(fn)
    times = []
    for i in range(start, start + repeats):
        if i % 25 == 0:
            gc.collect()
        enabled = gc.isenabled()
        gc.disable()
        try:
            times.append(side(i))
        finally:
            if enabled:
                gc.enable()
    return times


# ------------------------------------------------------------------------------------------
# the parent's end
class PeerProcess:
    """A worker process of one library (``python`` of its venv), asked one task at a time.

    ``pythonpath`` puts another gpexplorer checkout first (the pre-move worktree). The worker's
    stderr goes to a temporary file, shown if it fails.
    """

    def __init__(self, name, python, library, pythonpath=None):
        self.name, self.library = name, library
        env = dict(os.environ)
        if pythonpath:
            env["PYTHONPATH"] = os.pathsep.join([str(pythonpath)] + ([env["PYTHONPATH"]] if env.get("PYTHONPATH") else []))
        self.log = tempfile.NamedTemporaryFile("w+", prefix=f"peer-{name}-", suffix=".log", delete=False)
        self.proc = subprocess.Popen([str(python), str(Path(__file__).resolve()), library], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=self.log, text=True, env=env, bufsize=1)

    def ask(self, task):
        self.proc.stdin.write(json.dumps(task) + "\n")
        self.proc.stdin.flush()
        for line in self.proc.stdout:
            if line.startswith("@@RESULT@@"):
                out = json.loads(line[len("@@RESULT@@"):])
                if "error" in out:
                    raise RuntimeError(f"{self.name}: {out['error']}")
                return out
        self.log.seek(0)
        raise RuntimeError(f"{self.name} worker ended (exit {self.proc.wait()}): {self.log.read()[-2000:]}")

    def close(self):
        if self.proc.poll() is None:
            try:
                self.proc.stdin.write(json.dumps({"kind": "quit"}) + "\n")
                self.proc.stdin.close()
                self.proc.wait(timeout=60)
            except (OSError, subprocess.TimeoutExpired):
                self.proc.kill()
        self.log.close()
        os.unlink(self.log.name)


def big_run(python, library, data, approximation, repeats=2, pythonpath=None):
    """One objective + gradient at a large N in a fresh worker (so its peak memory is its own)."""
    peer = PeerProcess(f"{library}-big", python, library, pythonpath)
    try:
        return peer.ask({"kind": "big", "data": str(data), "approximation": approximation, "repeats": repeats})
    finally:
        peer.close()


def main(library):
    worker = Worker(library)
    for line in sys.stdin:
        if not line.strip():
            continue
        task = json.loads(line)
        if task.get("kind") == "quit":
            break
        try:
            result = worker.run(task)
        except Exception as err:  # reported to the parent, which decides
            result = {"library": library, "kind": task.get("kind"), "error": f"{type(err).__name__}: {err}"}
        sys.stdout.write("@@RESULT@@" + json.dumps(result) + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    main(sys.argv[1])
