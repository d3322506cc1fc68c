"""The ``gpexplorer`` console script.

    gpexplorer snelson [--seeds 0 1 2] [--M 15]   thesis ch. 3 on Snelson: exact vs FITC vs VFE
    gpexplorer sweep [--Ms 4 6 8 10 15 20]        VFE bound and upper bound against M
"""

from __future__ import annotations

import argparse
import sys


def _snelson(args):
    from gpexplorer import experiments

    result = experiments.fitc_vfe_snelson(M=args.M, seeds=tuple(args.seeds), fitc_iters=args.fitc_iters,
                                          dataset=args.dataset)
    print(experiments.format_comparison(result))


def _sweep(args):
    from gpexplorer import experiments

    rows = experiments.vfe_m_sweep(Ms=tuple(args.Ms), dataset=args.dataset)
    print(f"{'M':>4} {'VFE bound':>10} {'noise':>8} {'upper bound':>12}")
    for r in rows:
        print(f"{r['M']:>4} {r['bound']:>10.2f} {r['noise_variance']:>8.4f} {r['upper_bound']:>12.2f}")


def main(argv=None):
    parser = argparse.ArgumentParser(prog="gpexplorer", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("snelson", help="FITC vs VFE vs exact GP on Snelson (thesis §3.2.1-3.2.2)")
    p.add_argument("--M", type=int, default=15)
    p.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2, 3])
    p.add_argument("--fitc-iters", type=int, default=1000)
    p.add_argument("--dataset", default="snelson")
    p.set_defaults(func=_snelson)
    p = sub.add_parser("sweep", help="VFE bound and upper bound against M (thesis fig. 3.5-3.7)")
    p.add_argument("--Ms", type=int, nargs="+", default=[4, 6, 8, 10, 15, 20])
    p.add_argument("--dataset", default="snelson")
    p.set_defaults(func=_sweep)
    args = parser.parse_args(argv)
    try:
        args.func(args)
    except ValueError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
