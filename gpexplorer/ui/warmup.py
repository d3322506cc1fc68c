"""``gpexplorer warmup``: compile the numba kernels the dashboards use and cache them on disk.

numba compiles each jitted function on its first call and keeps the machine code in its cache
(``gpexplorer._jit``). On a fresh install that cache is empty, and the first page would wait
20-40 s for the compiler. This module runs, on small data, every numerical path the two labs
take (the sparse comparison with each approximation and kernel, the joint fit, the M sweep and
the add-one curve; EGP / UGP / EKS / UKS evaluation, learning and the free-energy profile; the
black-box lab's SAVIGP fits; the patches lab's convolutional and SE models; the random-features
lab's features, fits and ARD), so
that afterwards a page only loads machine code from disk. It lives with the serving code
(:mod:`gpexplorer.ui.serve` starts it, :mod:`gpexplorer.ui.preparing` waits for it) and imports
no Panel: the workloads call the library as the pages do.

The paths are split into independent workloads run in parallel worker processes (one per core,
at most :data:`MAX_WORKERS`): numba compiles while holding the GIL, so threads would not help,
but separate processes fill the same on-disk cache. ``tests/ui/test_warmup.py`` checks that
after a warm-up the labs compile nothing.

A finished warm-up leaves a marker in the cache directory (which is keyed by the jitted sources,
see ``gpexplorer._jit``), so :func:`is_warm` tells whether this install still needs one;
``gpexplorer serve`` starts one in the background when it does (:func:`start_in_background`),
and the pages show its progress (:func:`progress`) instead of compiling the same code again.

A warm-up holds an exclusive ``flock`` on :data:`LOCK_FILE` in the cache directory for its whole
life, and the kernel releases it the moment its process dies, however it dies. A progress file
that says "not finished" counts only while that lock is held: a warm-up killed with its server
(SIGKILL, a closed terminal) used to stall the next server's pages for up to five minutes, until
the file was :data:`STALE_SECONDS` old (issue 24 defect 10); now the next server starts a new
warm-up at once. ``gpexplorer serve`` takes the lock before it starts the background process and
hands it over (the child inherits the locked descriptor), so no page ever sees a warm-up under
way without its lock. Without ``fcntl`` (Windows) the age of the progress file decides, as before.
"""

from __future__ import annotations

import contextlib
import json
import os
import pathlib
import subprocess
import sys
import time
from concurrent.futures import ProcessPoolExecutor, as_completed

import numpy as np

try:
    import fcntl
except ImportError:  # Windows: no advisory locks, the age of the progress file decides
    fcntl = None

MAX_WORKERS = 4
MARKER = "warmed-up"
PROGRESS_FILE = "warmup-progress.json"
LOCK_FILE = "warmup.lock"  # flock-ed by the warm-up under way for as long as it lives
STALE_SECONDS = 300  # without fcntl: a progress file not updated for this long belongs to a dead warm-up


def cache_dir() -> pathlib.Path | None:
    """The numba cache directory of this install's jitted sources (None if not writable)."""
    import numba

    from gpexplorer import _jit  # noqa: F401  (sets numba.config.CACHE_DIR)

    path = pathlib.Path(numba.config.CACHE_DIR) if numba.config.CACHE_DIR else None
    return path if path is not None and os.access(path, os.W_OK) else None


def is_warm() -> bool:
    """Whether a warm-up finished for these jitted sources (or the cache is not ours to fill)."""
    folder = cache_dir()
    return folder is None or (folder / MARKER).exists()


def progress() -> dict | None:
    """{"done", "total", "finished", "error"} of a warm-up under way or finished, else None.

    None too when the progress file says "under way" but no process holds the warm-up lock (its
    warm-up died; without ``fcntl``: the file was not updated for :data:`STALE_SECONDS`)."""
    folder = cache_dir()
    if folder is None:
        return None
    path = folder / PROGRESS_FILE
    try:
        state = json.loads(path.read_text())
        age = time.time() - path.stat().st_mtime
    except (OSError, ValueError):
        return None
    if not state.get("finished"):
        held = lock_held(folder)
        if held is False or (held is None and age > STALE_SECONDS):
            return None
    return state


def lock_held(folder=None) -> bool | None:
    """Whether a live process holds the warm-up lock of ``folder`` (the cache directory); None
    when this cannot be known (no ``fcntl``, or no cache directory of ours)."""
    folder = cache_dir() if folder is None else folder
    if fcntl is None or folder is None:
        return None
    try:
        fd = os.open(pathlib.Path(folder) / LOCK_FILE, os.O_RDONLY)
    except FileNotFoundError:
        return False  # no warm-up ever ran here
    except OSError:
        return None
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)  # a shared probe: probes never block each other
    except BlockingIOError:
        return True
    finally:
        os.close(fd)  # also releases the probe's shared lock
    return False


def take_lock(folder=None, wait=False) -> int | None:
    """Take the warm-up lock: the open file descriptor holding it (keep it open for as long as the
    warm-up runs; closing it, or the process ending, releases it), or None when another process
    holds it (``wait``: block until it is free). -1 without ``fcntl`` or a cache directory of ours."""
    folder = cache_dir() if folder is None else folder
    if fcntl is None or folder is None:
        return -1
    fd = os.open(pathlib.Path(folder) / LOCK_FILE, os.O_RDWR | os.O_CREAT, 0o644)
    for attempt in range(3):  # a page's probe holds a shared lock for microseconds: try again
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | (0 if wait else fcntl.LOCK_NB))
            return fd
        except BlockingIOError:
            time.sleep(0.01)
    os.close(fd)
    return None


def release_lock(fd) -> None:
    """Give back what :func:`take_lock` returned (this process's copy of the descriptor)."""
    if fd is not None and fd >= 0:
        with contextlib.suppress(OSError):
            os.close(fd)


def _write_progress(**state):
    folder = cache_dir()
    if folder is None:
        return
    tmp = folder / f".{PROGRESS_FILE}.{os.getpid()}"
    tmp.write_text(json.dumps(state))
    os.replace(tmp, folder / PROGRESS_FILE)  # readers never see half a file


def start_in_background() -> subprocess.Popen | None:
    """Start ``python -m gpexplorer.ui.warmup`` unless the cache is warm or a warm-up is running.

    The lock is taken here and inherited by the child (``--lock-fd``), so the warm-up counts as
    under way from the first instant, and stops counting the instant the child dies."""
    if is_warm():
        return None
    fd = take_lock()
    if fd is None:
        return None  # a live warm-up holds the lock
    if fd < 0:  # no locks here: the progress file's age decides
        state = progress()
        if state is not None and not state.get("finished"):
            return None
    try:
        _write_progress(done=0, total=len(WORKLOADS), finished=False, error=None)
        handed = ["--lock-fd", str(fd)] if fd >= 0 else []
        return subprocess.Popen([sys.executable, "-m", "gpexplorer.ui.warmup", "--quiet", *handed],
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
                                pass_fds=(fd,) if fd >= 0 else ())
    finally:
        release_lock(fd)  # the child's copy keeps it locked


def _snelson_small():
    """Snelson's 200 points: K(Z, X) must be large enough to take the SIMD path (SIMD_MIN_ENTRIES)
    while Kuu takes the loop path, as on the lab's first page."""
    from gpexplorer import datasets

    return datasets.snelson()


def vector_kernels():
    """The registered kernels on vectors (the sparse lab's; kernels on images have an input shape)."""
    from gpexplorer import kernels

    return [cls for cls in kernels.KERNELS.values() if cls.input_shape is None]


def sparse_comparison():
    """The sparse lab's first plot: every approximation at fixed parameters, samples, badges."""
    from gpexplorer.sparse.comparison import APPROXIMATIONS, ParameterSet, compare, default_grid

    ds = _snelson_small()
    grid = default_grid(ds.X, n=50)
    for kernel in vector_kernels():
        p = ParameterSet(kernel(), 0.1, ds.X[::13].copy())
        compare(ds, {name: p for name in APPROXIMATIONS}, grid, num_samples=3)


def sparse_fit():
    """*Optimise*: every approximation fitted jointly with the exact GP, for each kernel."""
    from gpexplorer.sparse.comparison import APPROXIMATIONS, ParameterSet
    from gpexplorer.sparse.joint_fit import fit_all

    ds = _snelson_small()
    for kernel in vector_kernels():
        start = ParameterSet(kernel(), 0.1, ds.X[::13].copy())
        fit_all(ds, start, [n for n in APPROXIMATIONS if n != "exact"], max_iter=3)
        fit_all(ds, start, ["fitc", "vfe"], fixed=("inducing",), max_iter=2, vfe_from_fitc=True)


def sparse_studies():
    """The M sweep (with the tightened upper bound) and the add-one curve."""
    from gpexplorer import kernels
    from gpexplorer.sparse import studies

    ds = _snelson_small()
    kernel = kernels.SquaredExponential()
    studies.m_sweep(ds, kernel, 0.1, [2, 4], max_iter=3, tighten_upper_bound=2)
    candidates = np.linspace(float(ds.X.min()), float(ds.X.max()), 7)[:, None]
    for approximation in ("fitc", "vfe"):
        studies.add_one_inducing_curve(ds.X, ds.y, kernel, 0.1, ds.X[::6].copy(), approximation, candidates)


def sparse_features():
    """Every inter-domain feature type in the lab: the first plot, its strip and position sweep, a fit."""
    from gpexplorer import covariances, inducing, kernels
    from gpexplorer.sparse.comparison import APPROXIMATIONS, ParameterSet, basis_functions, build_model, compare
    from gpexplorer.sparse.comparison import default_grid
    from gpexplorer.sparse.feature_position import near_duplicates, position_curve
    from gpexplorer.sparse.joint_fit import fit_all

    ds = _snelson_small()
    kernel = kernels.SquaredExponential()
    grid = default_grid(ds.X, n=50)
    for name, cls in inducing.FEATURES.items():
        if cls is inducing.InducingPoints or covariances.Kuu.find(cls, type(kernel)) is None:
            continue  # warmed up by the other stages, or a feature of image kernels (inducing patches)
        try:
            feature = cls.from_data(ds.X, 6, kernel, seed=0)
        except (AttributeError, TypeError):  # a feature without that initialiser
            feature = cls(ds.X[::40].copy())
        p = ParameterSet(kernel, 0.1, feature)
        compare(ds, {n: p for n in APPROXIMATIONS}, grid)
        basis_functions(p, grid)
        near_duplicates(feature, kernel)
        position_curve(build_model(ds, "vfe", p), 0, grid[:5, 0])
        fit_all(ds, p, [n for n in APPROXIMATIONS if n != "exact"], max_iter=3)


def linearized_methods():
    """The linearised lab: each method's inner loop, predictions and close-up on the toy problem."""
    from gpexplorer.linearized import comparison as lin

    for forward_name in ("sin", "tanh2"):
        data, forward = _toy_problem(forward_name)
        for kernel in ("matern52", "se"):
            for how in ("quadrature", "unscented"):
                s = lin.ComparisonSettings(kernel=kernel, max_iter=5, n_features=20, y_prediction=how)
                for method in lin.active_methods(lin.METHODS, forward)[0]:
                    result = lin.evaluate(method, data, forward, s)
                    if result.error is None:
                        lin.closeup(result, forward, 0.0, s.kappa)


def linearized_learning():
    """*Learn* and *Profile free energy* of the linearised lab."""
    from gpexplorer.linearized import comparison as lin

    data, forward = _toy_problem("sin")
    for search in ("fisher", "cobyla"):
        s = lin.ComparisonSettings(max_iter=5, n_features=20, max_evals=6, gp_search=search)
        lin.learn_hyperparameters(list(lin.METHODS), data, forward, s)
    s = lin.ComparisonSettings(max_iter=5, n_features=20)
    params = {m: s.hyperparameters for m in lin.METHODS}
    lin.profile_methods(list(lin.METHODS), data, forward, s, params, "lengthscale")


def _toy_problem(forward_name):
    """A small copy of the lab's toy inversion problem, arrays read-only as the lab shares them."""
    from gpexplorer.datasets import toy_inversion
    from gpexplorer.likelihoods.forward_models import get_forward_model
    from gpexplorer.linearized.comparison import InversionProblem

    forward = get_forward_model(forward_name)
    d = toy_inversion(forward, n_points=120)  # a 60 x 60 K(X, X): the SIMD path, as in the lab
    x, f, y = d.X[:, 0].copy(), d.f.copy(), d.y.copy()
    for a in (x, f, y):
        a.setflags(write=False)
    train = np.arange(0, 120, 2)
    test = np.setdiff1d(np.arange(120), train)
    return InversionProblem(x[train, None], y[train], x, "warm-up", f_true=f, y_grid=y, test=test), forward


def black_box_fits():
    """The black-box lab's models: each posterior family and estimator, on counts and on labels
    (the one-latent FG fits with quadrature take the fused path and its compiled loops; FG with
    exact gradients is fitted by natural gradients too, as the lab does)."""
    from gpexplorer import kernels
    from gpexplorer.variational import SparseVariationalGP

    rng = np.random.default_rng(0)
    X = rng.uniform(size=(60, 1))
    f = np.sin(6.0 * X[:, 0])
    data = {"bernoulli_logit": (rng.uniform(size=60) < 1.0 / (1.0 + np.exp(-2.0 * f))).astype(float),
            "poisson": rng.poisson(np.exp(f)).astype(float)}
    for likelihood, Y in data.items():
        for posterior in ("fg", "mog1", "mog2"):
            for estimator, cv in (("quadrature", False), ("reparam", False), ("score", True), ("score", False)):
                m = SparseVariationalGP(X, Y, kernels.SquaredExponential(lengthscale=0.2), 6, likelihood,
                                        posterior=posterior, estimator=estimator, num_samples=20,
                                        control_variate=cv)
                m.fit(max_iter=3, method="block-lbfgs")
                if posterior == "fg" and estimator != "score":  # the lab fits these by natural gradients
                    m.fit(max_iter=2, method="natgrad")
                m.predict_y(X[:5])


def patches_lab():
    """The patches lab's models on a few images: the race's four kernels (the SE one on whole
    images takes the fused full-Gaussian path with image-sized inputs, which the black-box lab's
    1-D fits do not compile), an inducing patch moved, MNIST pooled, the digit model's Adam steps."""
    from gpexplorer import convolutional_fits as fits
    from gpexplorer import convolutional_views as views

    problem = fits.load_problem("rectangles", 30, n_test=20)
    race = fits.race(problem, fits.KINDS, {"M": 4, "patch": 3, "iterations": 2})
    model = race["conv"].model
    views.move_inducing_patch(model, 0, 1.0 - model.features[0].Z[0])
    views.read_off(model, problem.X_test, problem.y_test)
    fits.fit_one(fits.load_problem("mnist01", 30, n_test=10), "weighted", {"M": 4, "patch": 5, "iterations": 2})
    fits.digit_model({"n_train": 60, "M": 4, "steps": 2, "n_test": 10, "trace_every": 1})


def random_features_lab():
    """The random-features lab: every basis' kernel estimate and error curves (the jitted cos / sin
    of the Fourier features, Fastfood's Hadamard transforms), the four fits and the ARD fit, small."""
    from gpexplorer.random_features import RANDOM_BASES
    from gpexplorer.random_features import lab_backend as rf

    for name in RANDOM_BASES:
        rf.kernel_view(name, 0.7, 40)
        rf.error_curves(name, 0.7, 2, 40)
    small = {"n_features": 20, "M": 4, "components": 2, "glm_steps": 3, "iterations": 3}
    for name in ("rbf", "laplace", "matern32", "matern52"):
        rf.fit_models(name, small)
    rf.ard_fit("rbf", 20, 0, 3)


#: name -> workload, the longest first (the pool starts them in this order)
WORKLOADS = {
    "sparse comparison": sparse_comparison,
    "sparse fit": sparse_fit,
    "linearised methods": linearized_methods,
    "linearised learning": linearized_learning,
    "sparse M sweep and add-one curve": sparse_studies,
    "sparse inducing features": sparse_features,
    "black-box fits": black_box_fits,
    "patches lab": patches_lab,
    "random-features lab": random_features_lab,
}


def _run(name):
    import warnings

    start = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # tiny problems: jitter and convergence warnings are expected
        WORKLOADS[name]()
    return name, time.perf_counter() - start


def run(workers=None, progress=None) -> dict:
    """Run every workload (in ``workers`` processes; 0 or 1: in this process); returns name -> s.

    ``progress(done, total, name, seconds)`` is called as each workload finishes."""
    names = list(WORKLOADS)
    workers = min(MAX_WORKERS, os.cpu_count() or 1, len(names)) if workers is None else int(workers)
    timings = {}
    if workers <= 1:
        for name in names:
            timings[name] = _run(name)[1]
            if progress:
                progress(len(timings), len(names), name, timings[name])
        return timings
    import multiprocessing

    with ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("spawn")) as pool:
        for future in as_completed([pool.submit(_run, name) for name in names]):
            name, seconds = future.result()
            timings[name] = seconds
            if progress:
                progress(len(timings), len(names), name, seconds)
    return timings


def main(workers=None, quiet=False, lock_fd=None) -> None:
    """The console command: run the workloads, report each as it finishes, leave the marker.

    Holds the warm-up lock throughout (``lock_fd``: one already taken, handed over by
    :func:`start_in_background`); if another warm-up holds it, waits for that one first."""
    start = time.perf_counter()
    say = (lambda text: None) if quiet else (lambda text: print(text, flush=True))
    if lock_fd is None:
        lock_fd = take_lock()
        if lock_fd is None:
            say("gpexplorer warmup: another warm-up is compiling; waiting for it ...")
            lock_fd = take_lock(wait=True)
            if is_warm():
                release_lock(lock_fd)
                say(f"done in {time.perf_counter() - start:.1f} s (by the other warm-up)")
                return
    try:
        _main(workers, say, start)
    finally:
        release_lock(lock_fd)


def _main(workers, say, start):
    say("gpexplorer warmup: compiling the numerical kernels (once per install) ...")
    total = len(WORKLOADS)
    _write_progress(done=0, total=total, finished=False, error=None)

    def report(done, total, name, seconds):
        _write_progress(done=done, total=total, finished=False, error=None)
        say(f"  [{done}/{total}] {name}: {seconds:.1f} s")

    try:
        run(workers, report)
    except Exception as err:
        _write_progress(done=0, total=total, finished=True, error=f"{type(err).__name__}: {err}")
        raise
    folder = cache_dir()
    if folder is not None:
        (folder / MARKER).write_text(f"{time.time():.0f}\n")
    _write_progress(done=total, total=total, finished=True, error=None)
    say(f"done in {time.perf_counter() - start:.1f} s; the dashboards now start without compiling")


if __name__ == "__main__":  # via the package's module, so the worker processes can find _run
    from gpexplorer.ui.warmup import main as _run_main

    _fd = int(sys.argv[sys.argv.index("--lock-fd") + 1]) if "--lock-fd" in sys.argv else None
    _run_main(quiet="--quiet" in sys.argv, lock_fd=_fd)
