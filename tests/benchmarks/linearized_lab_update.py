"""Server time of one update of the linearised-inference lab (no browser).

    python tests/benchmarks/linearized_lab_update.py [--reps 10] [--profiles 3]

For each forward model the lab (N = 200 toy inversion, all four methods EGP/UGP/EKS/UKS shown,
D = 200) is refreshed ``--reps`` times after a noise-slider change; printed are the median and
minimum of the lab's own ``timing_ms`` (inner loops of every method + rewriting every view) and
the load average, since other processes on the two cores inflate the figures. Then the
"Profile free energy" job (21 inner loops per method along the kernel variance) is timed
``--profiles`` times per forward model, from the button to the drawn profile.
"""

import argparse
import os
import statistics
import time

from gpexplorer.ui.linearized.lab import LinearizedLab


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=10)
    parser.add_argument("--profiles", type=int, default=3)
    args = parser.parse_args(argv)
    if args.reps < 1 or args.profiles < 0:
        parser.error("need --reps >= 1 and --profiles >= 0")
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
    print("forward      'Profile free energy', 84 inner loops: s (median / min)" if args.profiles > 0 else "")
    for forward in ("sin", "tanh2", "poly3", "exp", "sign_cubic") if args.profiles > 0 else ():
        lab = LinearizedLab()
        lab.settings.forward = forward
        seconds = []
        for _ in range(args.profiles):
            t0 = time.perf_counter()
            lab.start_profile()
            lab.job.join()
            lab.poll_job()
            seconds.append(time.perf_counter() - t0)
        print(f"{forward:12s} {statistics.median(seconds):7.2f} / {min(seconds):7.2f}")
    print(f"load average at end: {os.getloadavg()}")


if __name__ == "__main__":
    main()
