"""The ``gpexplorer`` console script.

    gpexplorer snelson [--seeds 0 1 2] [--M 15]   thesis ch. 3 on Snelson: exact vs FITC vs VFE
    gpexplorer sweep [--Ms 4 6 8 10 15 20]        VFE bound and upper bound against M
    gpexplorer serve [--port 5006] [--show] [--num-procs N] [--prepare PAGE[?QUERY] ...]
                                                  all dashboards (apps/*.py) with `panel serve`; --prepare
                                                  keeps sessions of a link built ahead for a class
    gpexplorer lessons [ID ...] [--folder DIR]    run every lesson step headless and check its claims
                                                  against the labs' numbers (a teacher's own too)
    gpexplorer warmup                             compile and cache the numerical kernels once
                                                  (a fresh install's first page then opens at once)
    gpexplorer reproduce egp-table1|eks-figure1|usps|seismic [--folds N] [--quick]
                                                  linearised-GP paper results beside the papers'
    gpexplorer reproduce inter-domain-snelson [--quick]
                                                  thesis figs 4.3-4.5: M = 3 multiscale on Snelson
    gpexplorer reproduce inter-domain-grid [--quick] [--scheduler ADDRESS] [--out DIR]
                                                  thesis §4.5 sum-of-deltas grid on abalone, via dask
    gpexplorer reproduce savigp-boston|savigp-abalone|savigp-breast-cancer|savigp-coal|savigp-usps
                         [--quick] [--folds N] [--scheduler ADDRESS] [--workers N] [--out DIR]
                                                  SAVIGP paper sec. 6 sweeps over SF, via dask
    gpexplorer reproduce savigp-mnist [--quick] [--num-inducing M] [--estimator reparam|score]
                                                  SAVIGP softmax on the 5k MNIST subset
    gpexplorer reproduce conv-rectangles|conv-mnist01|conv-theory|conv-mnist10|conv-fashion|conv-colour
                         [--quick] [--seed S] [--max-iter N] [--num-inducing M] [--scheduler ADDRESS]
                         [--workers N] [--out DIR]
                                                  thesis ch. 5 (convolutional GPs) beside its numbers
    gpexplorer reproduce revrand-boston|revrand-usps|revrand-kernels|revrand-abalone [--quick] [--seed S] [--max-iter N]
                         [--scheduler ADDRESS] [--workers N] [--out DIR]
                                                  revrand report Tables 2-4 and fig. 1 beside its numbers
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

WEBSOCKET_MAX_BYTES = 20_000_000  # uploads are checked again (and capped lower) by the pages


def _snelson(args):
    from gpexplorer.experiments import thesis_chapter3 as experiments

    result = experiments.fitc_vfe_snelson(M=args.M, seeds=tuple(args.seeds), fitc_iters=args.fitc_iters,
                                          dataset=args.dataset)
    print(experiments.format_comparison(result))


def _sweep(args):
    from gpexplorer.experiments import thesis_chapter3 as experiments

    rows = experiments.vfe_m_sweep(Ms=tuple(args.Ms), dataset=args.dataset)
    print(f"{'M':>4} {'VFE bound':>10} {'noise':>8} {'upper bound':>12}")
    for r in rows:
        print(f"{r['M']:>4} {r['bound']:>10.2f} {r['noise_variance']:>8.4f} {r['upper_bound']:>12.2f}")


INTER_DOMAIN = ("inter-domain-snelson", "inter-domain-grid")
SAVIGP = ("savigp-boston", "savigp-abalone", "savigp-coal", "savigp-breast-cancer", "savigp-mnist", "savigp-usps")
#: experiment -> module of gpexplorer.experiments with ``run(quick, seed, max_iter, num_inducing, scheduler,
#: n_workers, out) -> result`` and ``format_report(result) -> str``
CONVOLUTIONAL = {"conv-rectangles": "conv_rectangles", "conv-mnist01": "conv_mnist01", "conv-theory": "conv_theory",
                 "conv-mnist10": "conv_mnist10", "conv-fashion": "conv_fashion", "conv-colour": "conv_colour"}
REVRAND = {"revrand-boston": "revrand_boston", "revrand-usps": "revrand_usps", "revrand-kernels": "revrand_kernels",
           "revrand-abalone": "revrand_abalone"}
MODULE_EXPERIMENTS = {**CONVOLUTIONAL, **REVRAND}


def _reproduce_inter_domain(args):
    if args.experiment == "inter-domain-snelson":
        from gpexplorer.experiments import inter_domain_snelson as snelson

        print(snelson.format_report(snelson.run(quick=args.quick)))
        return
    from gpexplorer.experiments import inter_domain_grid as grid

    out = args.out or "inter-domain-grid"
    try:
        result = grid.run(quick=args.quick, scheduler=args.scheduler, out=out, max_iter=args.max_iter,
                          n_workers=args.workers)
    except ImportError as err:  # dask missing: the message names the extra to install
        raise ValueError(str(err)) from None
    from gpexplorer.ui.grid_figure import write_figure  # the dashboards' side draws it (bokeh)

    result["files"]["figure"] = str(write_figure(result, Path(out) / "grid.html"))
    print(grid.format_report(result))


def _reproduce_savigp(args):
    out = args.out or args.experiment
    if args.experiment == "savigp-mnist":
        from gpexplorer.experiments import savigp_large as large

        print(large.format_mnist(large.run_mnist(quick=args.quick, M=args.num_inducing, steps=args.max_iter,
                                                 estimator=args.estimator, seed=args.seed, out=out)))
        return
    from gpexplorer.experiments import savigp_coal as coal
    from gpexplorer.experiments import savigp_large as large
    from gpexplorer.experiments import savigp_papers as papers

    common = dict(quick=args.quick, max_iter=args.max_iter, scheduler=args.scheduler, n_workers=args.workers, out=out)
    try:
        if args.experiment == "savigp-coal":
            print(coal.format_coal(coal.run_coal(**common)))
        elif args.experiment == "savigp-usps":
            print(large.format_usps(large.run_usps(**common)))
        else:
            name = args.experiment.removeprefix("savigp-")
            print(papers.format_sweep(papers.run_sweep(name, folds=args.folds, **common)))
    except ImportError as err:  # dask missing: the message names the extra to install
        raise ValueError(str(err)) from None


def _reproduce_module(args):
    import importlib

    module = importlib.import_module(f"gpexplorer.experiments.{MODULE_EXPERIMENTS[args.experiment]}")
    try:
        result = module.run(quick=args.quick, seed=args.seed, max_iter=args.max_iter, num_inducing=args.num_inducing,
                            scheduler=args.scheduler, n_workers=args.workers, out=args.out or args.experiment)
    except ImportError as err:  # dask missing: the message names the extra to install
        raise ValueError(str(err)) from None
    print(module.format_report(result))


def _reproduce(args):
    if args.experiment in MODULE_EXPERIMENTS:
        _reproduce_module(args)
        return
    if args.experiment in INTER_DOMAIN:
        _reproduce_inter_domain(args)
        return
    if args.experiment in SAVIGP:
        _reproduce_savigp(args)
        return
    from gpexplorer.experiments import reproduce

    def progress(text):
        if args.verbose:
            print(f"  done: {text}", file=sys.stderr, flush=True)

    text, _, _ = reproduce.reproduce(args.experiment, folds=args.folds, quick=args.quick, seed=args.seed,
                                     latent_kernel=args.latent_kernel, draws=args.draws, progress=progress)
    print(text)


def _warmup(args):
    from gpexplorer.ui import warmup

    warmup.main()


def apps_dir() -> Path:
    """The repository's ``apps/`` folder, next to the installed (editable) package."""
    return Path(__file__).resolve().parent.parent / "apps"


def serve_command(port=5006, address="127.0.0.1", show=False, apps=None, num_procs=1, index=None):
    """The ``panel serve`` command line that starts every page in ``apps/``; with ``index`` (an
    HTML file, see ``gpexplorer.ui.front_page``) that page is the front page at ``/``."""
    folder = apps_dir() if apps is None else Path(apps)
    pages = sorted(str(p) for p in folder.glob("*.py") if not p.name.startswith("_"))
    if not pages:
        raise ValueError(f"no dashboard pages found in {folder}; install gpexplorer from a checkout "
                         "(pip install -e .) so that apps/ is available")
    cmd = [sys.executable, "-m", "panel", "serve", *pages, "--port", str(port), "--address", address,
           "--allow-websocket-origin", f"{address}:{port}", "--allow-websocket-origin", f"localhost:{port}",
           "--websocket-max-message-size", str(WEBSOCKET_MAX_BYTES)]
    if index is not None:
        from gpexplorer.ui.front_page import FRONT_DIR, STATIC_ROUTE  # a path only: no panel import

        cmd += ["--index", str(index), "--static-dirs", f"{STATIC_ROUTE}={FRONT_DIR}"]
    if num_procs != 1:
        cmd += ["--num-procs", str(num_procs)]  # Bokeh forks this many server processes (0: one per core)
    return cmd + (["--show"] if show else [])


#: what ``gpexplorer serve`` runs under, unless the user set it: see :func:`_use_server_environment`
SERVER_ENVIRONMENT = {"PYTHONMALLOC": "malloc", "OPENBLAS_NUM_THREADS": "1"}


def _use_server_environment(argv):
    """Re-run this command once with :data:`SERVER_ENVIRONMENT` (a user's own settings are kept);
    both must be set before the interpreter (and numpy's OpenBLAS) starts.

    - ``PYTHONMALLOC=malloc``: memory freed by closed sessions then sits in glibc's heap, which
      ``gpexplorer.ui.sessions`` trims back to the system; CPython's own small-object arenas are
      kept while any object in them lives, so a server without this grew 35-43 % over 30 sessions
      opened and closed (``tests/benchmarks/classroom_load.py``).
    - ``OPENBLAS_NUM_THREADS=1``: a server's sessions run side by side, and on a page's small
      matrices OpenBLAS's threads cost more than they save: the primer's redraw with 500 points took
      23.5 ms with two threads and 5.5 ms with one, on two cores (the sparse lab's re-evaluations
      and fits were unchanged)."""
    missing = {k: v for k, v in SERVER_ENVIRONMENT.items() if k not in os.environ}
    if not missing:
        return
    env = {**os.environ, **missing}
    os.execve(sys.executable, [sys.executable, "-m", "gpexplorer.cli", *argv], env)


def _check_prepare(links, sessions, pages):
    """Refuse a ``--prepare`` link that is not one of ``pages`` and a count out of range, before
    the server starts."""
    from gpexplorer.ui.session_pool import MAX_SIZE, parse_link  # no panel import

    if links and not 1 <= sessions <= MAX_SIZE:
        raise ValueError(f"--prepare-sessions must be 1 to {MAX_SIZE} (each holds a page: about 7 MB), not {sessions}")
    for link in links:
        page = parse_link(link)[0].strip("/")
        if page not in pages:
            raise ValueError(f"--prepare {link!r}: no page {page!r}; the pages are {', '.join(pages)}")


def _serve(args):
    if args.num_procs < 0:
        raise ValueError(f"--num-procs must be 0 (one per core) or more, not {args.num_procs}")
    if not args.dry_run:
        _use_server_environment(args.argv)
    import tempfile

    from gpexplorer.ui.front_page import write_index
    from gpexplorer.ui.lessons import LABS

    index = write_index(tempfile.mkdtemp(prefix="gpexplorer-front-"))
    cmd = serve_command(args.port, args.address, args.show, num_procs=args.num_procs, index=index)
    pages = [Path(p).stem for p in cmd if p.endswith(".py")]
    _check_prepare(args.prepare, args.prepare_sessions, pages)
    base = f"http://{args.address}:{args.port}"
    print(f"gpexplorer: front page with the labs and lessons at {base}/", flush=True)
    for page in pages:
        print(f"  {LABS.get(page, page)}: {base}/{page}", flush=True)
    if args.dry_run:
        print(" ".join(cmd))
        return
    from gpexplorer.ui.serve import run_panel_serve  # the dashboards' side: it may import panel

    run_panel_serve(cmd[4:], prepare=args.prepare, prepare_sessions=args.prepare_sessions)  # cmd: [python, -m, panel, serve, ...]


def _lessons(args):
    """Run every step of the lessons headless and report each claim with its values (ui/claims.py)."""
    from gpexplorer.ui.lesson_runner import report, run_lessons
    from gpexplorer.ui.lessons import LESSONS_DIR, load_lessons

    lessons = load_lessons(args.folder or LESSONS_DIR)
    if not lessons:
        raise ValueError(f"no lesson files (*.json) in {args.folder}")
    unknown = set(args.lesson or ()) - set(lessons)
    if unknown:
        raise ValueError(f"no lesson {', '.join(sorted(unknown))}; the lessons are {', '.join(lessons)}")
    runs = run_lessons(lessons, only=args.lesson, progress=lambda run: print(report(run), flush=True))
    failed = [run for run in runs if run.failed or not run.lesson.steps[run.k - 1].checks]
    print(f"{len(runs)} steps, {sum(len(r.outcomes) for r in runs)} checks; "
          f"{len(failed)} step(s) with a claim that does not hold or no claim")
    if failed:
        raise ValueError("some lesson claims do not hold: " + "; ".join(run.where for run in failed))


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
    p = sub.add_parser("serve", help="start the dashboards (panel serve apps/*.py) on localhost")
    p.add_argument("--port", type=int, default=5006)
    p.add_argument("--address", default="127.0.0.1")
    p.add_argument("--show", action="store_true", help="open a browser tab")
    p.add_argument("--dry-run", action="store_true", help="print the command instead of running it")
    p.add_argument("--num-procs", type=int, default=1,
                   help="server processes sharing the port (Bokeh's multi-process serving; 0: one per core)")
    p.add_argument("--prepare", action="append", default=[], metavar="PAGE[?QUERY]",
                   help="keep sessions of this link built ahead for a class opening it together "
                        "(e.g. sparse_regression, or 'primer?lesson=...&step=1'); repeatable")
    p.add_argument("--prepare-sessions", type=int, default=30,
                   help="sessions kept prepared per --prepare link, in each server process (default 30, about 7 MB each)")
    p.set_defaults(func=_serve)
    p = sub.add_parser("lessons", help="check every lesson's claims against the labs' numbers (headless)")
    p.add_argument("lesson", nargs="*", help="lesson ids (default: all)")
    p.add_argument("--folder", default=None, help="a folder of lesson JSON files (default: the bundled lessons)")
    p.set_defaults(func=_lessons)
    p = sub.add_parser("warmup", help="compile and cache the numerical kernels (run once after installing)")
    p.set_defaults(func=_warmup)
    p = sub.add_parser("reproduce", help="paper and thesis experiments beside the reported numbers")
    p.add_argument("experiment", choices=["egp-table1", "eks-figure1", "usps", "seismic", *INTER_DOMAIN, *SAVIGP,
                                                  *MODULE_EXPERIMENTS])
    p.add_argument("--folds", type=int, default=None,
                   help="toy problems: how many of the five 200/800 folds (default 5); seismic: surveys (3); "
                        "savigp-boston / -breast-cancer / -abalone: random splits (default 5, 5, 1)")
    p.add_argument("--quick", action="store_true", help="fewer folds and features (a check, not the result)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--draws", type=int, default=1,
                   help="toy problems: independent latent draws to average (the paper used one)")
    p.add_argument("--latent-kernel", choices=["matern52", "se"], default=None,
                   help="put every method on one latent GP: matern52 (EGP paper 4.1) or se (EKS paper "
                        "7.1); by default each paper's methods run on that paper's own data")
    p.add_argument("-v", "--verbose", action="store_true", help="report each finished row on stderr")
    p.add_argument("--scheduler", default=None, metavar="ADDRESS",
                   help="inter-domain-grid, savigp sweeps: an existing Dask scheduler (tcp://host:8786); default: "
                        "a local cluster with one single-threaded worker per core")
    p.add_argument("--workers", type=int, default=None,
                   help="inter-domain-grid, savigp sweeps: local workers (default: cores)")
    p.add_argument("--out", default=None, metavar="DIR",
                   help="inter-domain-grid: folder for grid.csv, grid.json and the figure; savigp-*: folder for "
                        "the CSV and JSON (default: a folder named after the experiment)")
    p.add_argument("--max-iter", type=int, default=None,
                   help="inter-domain-grid: L-BFGS-B iterations per cell (default 200; --quick 30); savigp-*: "
                        "L-BFGS-B iterations per fit (savigp-mnist: Adam steps)")
    p.add_argument("--num-inducing", type=int, default=None, metavar="M",
                   help="savigp-mnist: inducing inputs per latent, at most 200 (default 100; --quick 10); "
                        "conv-*: inducing patches (default: each experiment's own)")
    p.add_argument("--estimator", choices=["reparam", "score"], default="reparam",
                   help="savigp-mnist: Monte Carlo estimator of the expected log likelihood")
    p.set_defaults(func=_reproduce)
    args = parser.parse_args(argv)
    args.argv = list(sys.argv[1:] if argv is None else argv)
    try:
        args.func(args)
    except ValueError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
