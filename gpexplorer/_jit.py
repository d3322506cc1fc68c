"""numba presets shared by every jitted leaf, and where their machine code is cached.

``njit_cached`` compiles once and keeps the machine code on disk so a dashboard cold-starts
without recompiling. ``fastmath`` is off near Cholesky factors and log-determinants
(reassociation there costs accuracy that the gradient checks would catch); the kernel loops
allow only the harmless flags.

numba re-validates a cached function only against its *own* source file, so a cached caller
would keep an inlined copy of a callee edited in another module. The cache directory is
therefore keyed by a hash of every jitted module's source: any edit starts a fresh cache.
"""

import hashlib
import os
import pathlib

import numba

_HERE = pathlib.Path(__file__).resolve().parent
#: every module holding jitted code, relative to the package (a test checks each exists)
JIT_MODULES = ("_jit.py", "_blas.py", "kernels/_loops.py", "sparse/_core.py", "linearized/_loops.py",
               "covariances/time_frequency_loops.py")
JIT_MODULES += ("covariances/multiscale_loops.py", "variational/_loops.py", "random_features/hadamard_loops.py",
                "random_features/trig_loops.py", "random_features/mixture_loops.py")


def _source_hash():
    digest = hashlib.sha256(numba.__version__.encode())
    for name in JIT_MODULES:
        digest.update((_HERE / name).read_bytes())
    return digest.hexdigest()[:16]


def _configure_cache_dir():
    base = os.environ.get("NUMBA_CACHE_DIR") or str(_HERE / "__pycache__")
    target = pathlib.Path(base) / f"gpexplorer-{_source_hash()}"
    try:
        target.mkdir(parents=True, exist_ok=True)
    except OSError:  # read-only install: numba falls back to its own user-wide locator
        return
    numba.config.CACHE_DIR = str(target)


_configure_cache_dir()

njit_cached = numba.njit(cache=True, nogil=True, error_model="numpy")

#: kernel value/gradient loops only: allow FMA contraction, reciprocal division and the
#: fast exp/log paths, but never reassociation (the reductions keep their order).
njit_kernel_loop = numba.njit(cache=True, nogil=True, error_model="numpy",
                              fastmath={"contract", "arcp", "afn"})
