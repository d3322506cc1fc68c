"""Where one objective + gradient evaluation spends its time, part by part (one thread).

    python tests/benchmarks/profile_parts.py

cProfile cannot look inside the single compiled call of the fused path, so this times its
parts separately on the benchmark's data: the kernel matrices, the matrix algebra of the
objective (gpexplorer.sparse._core) and the gradient contraction. Minimum of repeats, in ms.
"""

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "NUMBA_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import time  # noqa: E402

import numpy as np  # noqa: E402

from gpexplorer.kernels import _loops as kl  # noqa: E402
from gpexplorer.sparse import _core as core  # noqa: E402

EMPTY = np.empty(0)


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
    print("| approx | N | M | K(Z,X) + K(Z,Z) | objective algebra | gradient contraction | fused total |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for N, M in ((200, 10), (2000, 50), (20000, 200)):
        X = rng.uniform(0, 6, (N, 1))
        y = np.sin(3 * X[:, 0]) + 0.3 * np.cos(7 * X[:, 0]) + 0.3 * rng.normal(size=N)
        Z = np.linspace(0, 6, M)[:, None]
        ls = np.array([0.5])
        Xs, Zs = X / 0.5, Z / 0.5
        Kuu = kl.stationary_K_symmetric(kl.SE, Zs, 1.0, 1.0)
        Kuf = kl.stationary_K(kl.SE, Zs, Xs, 1.0, 1.0)
        kdiag = np.ones(N)
        seconds = 1.0 if N < 20000 else 3.0
        t_k = best_of(lambda: (kl.stationary_K_symmetric(kl.SE, Zs, 1.0, 1.0), kl.stationary_K(kl.SE, Zs, Xs, 1.0, 1.0)),
                      seconds)
        for name, code in (("VFE", core.VFE), ("FITC", core.FITC)):
            if code == core.FITC:
                def algebra():
                    return core.fitc(Kuu, Kuf, kdiag, y, 0.09, 1e-6, True)
            else:
                def algebra():
                    return core.homoscedastic(Kuu, Kuf, kdiag, y, 0.09, 1e-6, True, True)
            out = algebra()
            dKuu, dKuf, a, b = out[5], out[6], out[7], out[8]

            def contraction():
                kl.stationary_grads(kl.SE, Zs, Zs, Kuu, dKuu, EMPTY, EMPTY, 1.0, ls, 1.0, True)
                kl.stationary_grads(kl.SE, Zs, Xs, Kuf, dKuf, a, b, 1.0, ls, 1.0, False)

            t_a = best_of(algebra, seconds)
            t_c = best_of(contraction, seconds)
            t_f = best_of(lambda: core.fused_stationary(kl.SE, X, y, Z, 1.0, ls, 1.0, 0.09, 1e-6, code), seconds)
            print(f"| {name} | {N} | {M} | {t_k:.3f} | {t_a:.3f} | {t_c:.3f} | {t_f:.3f} |")


if __name__ == "__main__":
    main()
