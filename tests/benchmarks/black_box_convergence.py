#!/usr/bin/env python
"""Do the black-box lab's default fits converge? (issue 23)

    python tests/benchmarks/black_box_convergence.py [--old] [--rounds R] [--evals E] [--samples S]
        [--M M] [--datasets coal,cancer] [--posteriors fg,mog1] [--estimators score] [--json out.json]

Fits every bundled data set x posterior (FG, MoG1, MoG2) x estimator (score, reparameterisation,
quadrature) exactly as the lab does (:func:`gpexplorer.variational.comparison.fit_one` with the
page's default settings, :func:`settings.fit_options`), one after the other on one thread, and
prints per fit the verdict of :mod:`gpexplorer.variational.convergence` (converged / budget /
stalled), the ELBO, the trace entries (L-BFGS iterations), the rounds run and the wall time,
then per data set the wall time of the lab's whole fit (the three posteriors, as the page
fits them, without the estimator-variance curve). ``--old``: the defaults before issue 23
(3 rounds x 10 evaluations per block, no early stop). Other flags override single settings.
"""

from __future__ import annotations

import argparse
import json
import time
import warnings

from gpexplorer.ui.black_box import data
from gpexplorer.variational import comparison
from gpexplorer.ui.black_box import settings as cfg

DATASETS = ("coal", "cancer", "toy_binary", "toy_gaussian")
POSTERIORS = ("fg", "mog1", "mog2")
ESTIMATORS = ("score", "reparam", "quadrature")
OLD = {"rounds": 3, "evals_per_block": 10, "stop_when_converged": False}


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--old", action="store_true", help="the defaults before issue 23")
    p.add_argument("--rounds", type=int)
    p.add_argument("--evals", type=int, help="evaluations per block")
    p.add_argument("--samples", type=int, help="S")
    p.add_argument("--M", type=int)
    p.add_argument("--no-stop", action="store_true", help="no early stop on convergence")
    p.add_argument("--datasets", default=",".join(DATASETS))
    p.add_argument("--posteriors", default=",".join(POSTERIORS))
    p.add_argument("--estimators", default=",".join(ESTIMATORS))
    p.add_argument("--json")
    return p.parse_args(argv)


def options_for(dataset, estimator, args):
    s = cfg.BlackBoxSettings(dataset=dataset, estimator=estimator)
    if args.samples:
        s.num_samples = args.samples
    if args.M:
        s.M = args.M
    problem = data.load(dataset, s.n_bins, s.n_train, s.data_seed)
    options = cfg.fit_options(s, problem)
    if args.old:
        options.update(OLD)
    if args.rounds:
        options["rounds"] = args.rounds
    if args.evals:
        options["evals_per_block"] = args.evals
    if args.no_stop:
        options["stop_when_converged"] = False
    return problem, options


def run(args):
    rows = []
    for dataset in args.datasets.split(","):
        for estimator in args.estimators.split(","):
            problem, options = options_for(dataset, estimator, args)
            for posterior in args.posteriors.split(","):
                t0 = time.perf_counter()
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    r = comparison.fit_one(problem, posterior, options)
                seconds = time.perf_counter() - t0
                c = r.metrics.get("convergence", {}) if r.error is None else {}
                row = {"dataset": dataset, "posterior": posterior, "estimator": estimator,
                       "S": options["num_samples"], "rounds_allowed": options["rounds"],
                       "evals_per_block": options["evals_per_block"], "error": r.error,
                       "reason": c.get("reason"), "converged": c.get("converged"),
                       "elbo": r.metrics.get("elbo"), "iterations": r.metrics.get("iterations"),
                       "rounds": c.get("rounds"), "last_change_per_iteration": c.get("last_change_per_iteration"),
                       "seconds": seconds, "history": _history(r)}
                rows.append(row)
                print(f"{dataset:12s} {posterior:5s} {estimator:10s} {str(row['reason']):10s} "
                      f"ELBO {row['elbo'] if row['elbo'] is None else round(row['elbo'], 2)!s:>9s} "
                      f"iter {row['iterations']!s:>4s} rounds {row['rounds']!s:>3s}/{options['rounds']} "
                      f"d/iter {row['last_change_per_iteration'] or 0:9.2e} {seconds:6.2f} s", flush=True)
    return rows


def _history(result):
    """Per round of the fit: its ELBO gain, evaluations and the blocks whose line search failed."""
    if result.error is not None or result.model is None or result.model.fit_result is None:
        return []
    return result.model.fit_result.details.get("round_history", [])


def summary(rows):
    print("\nwall time of the lab's fit (three posteriors) per data set x estimator:")
    keys = sorted({(r["dataset"], r["estimator"]) for r in rows})
    for d, e in keys:
        part = [r for r in rows if r["dataset"] == d and r["estimator"] == e]
        verdicts = "".join("c" if r["converged"] else "-" for r in part)
        print(f"  {d:12s} {e:10s} {sum(r['seconds'] for r in part):6.2f} s   converged: {verdicts}")
    n = sum(bool(r["converged"]) for r in rows)
    print(f"converged: {n} of {len(rows)}; slowest single fit {max(r['seconds'] for r in rows):.2f} s")


def main(argv=None):
    args = parse_args(argv)
    rows = run(args)
    summary(rows)
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(rows, fh, indent=1)


if __name__ == "__main__":
    main()
