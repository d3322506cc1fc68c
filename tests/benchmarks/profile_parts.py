"""Where one objective + gradient evaluation spends its time, part by part (one thread).

    python tests/benchmarks/profile_parts.py [--keep-openblas-env]

cProfile cannot look inside the compiled calls of the fused path, so this times its parts
separately on the benchmark's data: K(Z, X) (the scalar compiled loop, and the exponent loop +
numpy's SIMD exp the fused path uses from SIMD_MIN_ENTRIES on), the matrix algebra of the
objective (gpexplorer.sparse._core.collapsed) and the gradient contraction; then the whole fused
call with its work arrays reused, as a model's Workspace does. Minimum of repeats, in ms.
OPENBLAS_CORETYPE / OPENBLAS_L2_SIZE are unset as in bench_sparse.py unless asked not to.
"""

import os
import sys

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "NUMBA_NUM_THREADS"):
    os.environ.setdefault(_var, "1")
if "--keep-openblas-env" not in sys.argv:
    for _var in ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE"):
        os.environ.pop(_var, None)

import time  # noqa: E402

import numpy as np  # noqa: E402

from gpexplorer.kernels import _loops as kl  # noqa: E402
from gpexplorer.sparse import _core as core  # noqa: E402
from gpexplorer.sparse import objectives  # noqa: E402
from gpexplorer.workspace import Workspace  # noqa: E402


def best_of(fn, seconds=1.0):
    fn()
    times, start = [], time.perf_counter()
    while time.perf_counter() - start < seconds or len(times) < 5:
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return 1e3 * min(times)


def main():
    rng = np.random.default_rng(0)
    print("| approx | N | M | K(Z,X) scalar | K(Z,X) exponent + np.exp | objective algebra | gradient contraction "
          "| fused total (workspace) |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    for N, M in ((200, 10), (2000, 50), (20000, 200)):
        X = rng.uniform(0, 6, (N, 1))
        y = np.sin(3 * X[:, 0]) + 0.3 * np.cos(7 * X[:, 0]) + 0.3 * rng.normal(size=N)
        Z = np.linspace(0, 6, M)[:, None]
        ls = np.array([0.5])
        kern = kl.stationary_params(kl.SE, 1.0, ls, 1.0)
        Xs, Zs = X / ls, Z / ls
        Kuf = np.empty((M, N))
        Kuu = kl.stationary_K_symmetric(kl.SE, Zs, 1.0, 1.0)
        seconds = 1.0 if N < 20000 else 3.0
        t_scalar = best_of(lambda: kl.fill_stationary_K(tuple(kern), Zs, Xs, Kuf), seconds)
        saved, kl.SIMD_MIN_ENTRIES = kl.SIMD_MIN_ENTRIES, 0
        t_simd = best_of(lambda: kl.kernel_matrix(kern, Zs, Xs, out=Kuf), seconds)
        kl.SIMD_MIN_ENTRIES = saved
        for name, code in (("VFE", core.VFE), ("FITC", core.FITC)):
            arrays = {}
            buf = objectives._buffers(arrays, M, N, 1, code, False)
            mats = (Kuu, Kuf, np.ones(N), y)
            settings = (0.09, 1e-6, code, True)
            grads = core.collapsed(mats, settings, buf).grads
            t_a = best_of(lambda: core.collapsed(mats, settings, buf), seconds)

            def contraction():
                kl.stationary_contract(tuple(kern), Zs, Zs, Kuu, (grads.dKuu, np.empty(0), np.empty(0)), True)
                kl.stationary_contract(tuple(kern), Zs, Xs, Kuf, (grads.dKuf, grads.a, grads.b), False)

            t_c = best_of(contraction, seconds)
            ws = Workspace()
            def fused(approximation=name.lower()):
                return objectives.fused_stationary_objective(kl.SE, X, y, Z, 1.0, ls, 1.0, 0.09, jitter=1e-6,
                                                             approximation=approximation, workspace=ws)

            t_f = best_of(fused, seconds)
            print(f"| {name} | {N} | {M} | {t_scalar:.3f} | {t_simd:.3f} | {t_a:.3f} | {t_c:.3f} | {t_f:.3f} |")


if __name__ == "__main__":
    main()
