"""Server time of one update of the linearised-inference lab (no browser).

    python tests/benchmarks/linearized_lab_update.py [--reps 10]

For each forward model the lab (N = 200 toy inversion, all four methods EGP/UGP/EKS/UKS shown,
D = 200) is refreshed ``--reps`` times after a noise-slider change; printed are the median and
minimum of the lab's own ``timing_ms`` (inner loops of every method + rewriting every view) and
the load average, since other processes on the two cores inflate the figures.
"""

import argparse
import os
import statistics

from gpexplorer.ui.linearized_lab import LinearizedLab


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=10)
    args = parser.parse_args(argv)
    print(f"load average at start: {os.getloadavg()}")
    print("forward      inference ms (median / min)   views ms (median / min)   total ms (median / min)")
    for forward in ("sin", "tanh2", "poly3", "exp", "sign_cubic"):
        lab = LinearizedLab()
        lab.settings.forward = forward
        rows = {"inference": [], "views": [], "total": []}
        for i in range(args.reps + 1):
            lab.settings.noise_variance = 0.04 + 0.001 * (i % 2)  # each change re-runs every method
            if i == 0:
                continue  # first update also compiles / loads numba code
            for key in rows:
                rows[key].append(lab.timing_ms[key])
        cells = [f"{statistics.median(v):7.1f} / {min(v):7.1f}" for v in rows.values()]
        print(f"{forward:12s} " + "         ".join(cells))
    print(f"load average at end: {os.getloadavg()}")


if __name__ == "__main__":
    main()
