"""How long the linearised lab takes on an uploaded CSV of N rows: load + all four inner loops,
then one slider move (the four inner loops again), and the peak memory. A script, not a test.

    python tests/benchmarks/linearized_upload_rows.py 3000
    python tests/benchmarks/linearized_upload_rows.py 6000     # past the page's limit, for comparison

It lifts the page's row and byte limits for this process only, to measure past them.
"""

import resource
import sys
import time

import numpy as np

import gpexplorer.ui.uploads as uploads
from gpexplorer.ui.linearized import settings as cfg
from gpexplorer.ui.linearized.lab import LinearizedLab


def main(n):
    rng = np.random.default_rng(0)
    x = np.sort(rng.uniform(-6, 6, n))
    y = np.sin(np.sin(x) * 1.5) + 0.2 * rng.standard_normal(n)
    csv = ("x,y\n" + "".join(f"{a:.6f},{b:.6f}\n" for a, b in zip(x, y))).encode()
    cfg.MAX_UPLOAD_ROWS = max(cfg.MAX_UPLOAD_ROWS, n)
    uploads.MAX_UPLOAD_BYTES = max(uploads.MAX_UPLOAD_BYTES, len(csv) + 1)
    lab = LinearizedLab()
    lab.upload.filename = "big.csv"
    t0 = time.perf_counter()
    lab.upload.value = csv
    print(f"N={n}: load + update (4 methods) {time.perf_counter() - t0:.2f} s;",
          {m: f"{r.seconds:.2f}s {r.error or ''}" for m, r in lab.results.items()})
    t0 = time.perf_counter()
    lab.settings.noise_variance = 0.05
    print(f"N={n}: slider move (4 inner loops) {time.perf_counter() - t0:.2f} s")
    print(f"peak RSS {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1e6:.2f} GB")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 3000)
