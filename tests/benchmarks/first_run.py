"""What a teacher feels on a fresh install: numba's cache empty, then the README's commands.

A script, not a test. Each scenario gets its own empty NUMBA_CACHE_DIR (a fresh install) and a
fresh browser context, serves the dashboards as ``gpexplorer serve`` does, and measures on the
wall clock, with the page helpers of ``dashboard_latency.py``:

* ``warmup-first`` (the README's first command runs ``gpexplorer warmup``): the warm-up's own
  time, then server start -> first rendered plot of the sparse lab, then the first *Optimise*
  (click -> job finished);
* ``serve-only`` (no warm-up run): server start -> first plot, while the server's background
  warm-up compiles and the page shows "preparing (first run only)"; then the first *Optimise*;
* ``warm`` (a second start on the now-warm cache): server start -> first plot, first *Optimise*.

Usage (from the repository root)::

    python tests/benchmarks/first_run.py                 # every scenario once, ~2 min
    python tests/benchmarks/first_run.py --reps 3 --json out.json

Targets (issue 14): first plot under 8 s, first Optimise under 3 s, on an empty cache.
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))

from dashboard_latency import (CHROMIUM_ARGS, ROOT, Server, _click_optimise, _wait_done,  # noqa: E402
                               goto_until_answers, load_average, log, new_page, wait_first_plot)

SCENARIOS = ("warmup-first", "serve-only", "warm")
TARGETS_S = {"first_plot": 8.0, "first_optimise": 3.0}


def run_warmup(cache):
    """``gpexplorer warmup`` into ``cache``; its wall time in s."""
    t0 = time.perf_counter()
    subprocess.run([sys.executable, "-m", "gpexplorer.cli", "warmup"], cwd=ROOT, check=True,
                   env={**os.environ, "NUMBA_CACHE_DIR": str(cache)}, stdout=subprocess.DEVNULL)
    return time.perf_counter() - t0


def first_page(browser, cache, log_dir):
    """Server start -> first plot, then the first Optimise, with NUMBA_CACHE_DIR = ``cache``."""
    os.environ["NUMBA_CACHE_DIR"] = str(cache)  # Server.start passes it on
    server = Server(log_dir)
    context, page = new_page(browser)
    try:
        t0 = time.perf_counter()
        server.start()
        server.wait_listening(timeout=180)
        goto_until_answers(page, server.url)
        wait_first_plot(page, timeout=180_000)
        first_plot = time.perf_counter() - t0
        t1 = time.perf_counter()
        _click_optimise(page)
        text = _wait_done(page, timeout_ms=180_000)
        first_optimise = time.perf_counter() - t1
    finally:
        context.close()
        server.stop()
    return {"first_plot_s": first_plot, "first_optimise_s": first_optimise, "job_status": text}


def scenario(browser, name, log_dir):
    cache = pathlib.Path(tempfile.mkdtemp(prefix="gpx-numba-"))
    try:
        row = {"scenario": name, "load_before": load_average()}
        if name == "warmup-first":
            row["warmup_s"] = run_warmup(cache)
        if name == "warm":
            run_warmup(cache)
            first_page(browser, cache, log_dir)  # the start that the measured one follows
        row.update(first_page(browser, cache, log_dir))
        row["load_after"] = load_average()
        return row
    finally:
        shutil.rmtree(cache, ignore_errors=True)


def markdown(rows):
    lines = ["| scenario | warm-up (s) | server start -> first plot (s) | first Optimise (s) | load before |",
             "|---|---|---|---|---|"]
    for r in rows:
        warm = f"{r['warmup_s']:.1f}" if "warmup_s" in r else "-"
        lines.append(f"| {r['scenario']} | {warm} | {r['first_plot_s']:.1f} | {r['first_optimise_s']:.2f} | "
                     f"{r['load_before']} |")
    lines.append(f"\nTargets: first plot < {TARGETS_S['first_plot']:.0f} s, first Optimise < "
                 f"{TARGETS_S['first_optimise']:.0f} s (empty numba cache). {os.cpu_count()} CPUs.")
    return "\n".join(lines)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--reps", type=int, default=1, help="repetitions of each scenario (default 1)")
    parser.add_argument("--scenario", action="append", choices=SCENARIOS, help="repeat; default: all")
    parser.add_argument("--json", help="also write the rows to this JSON file")
    parser.add_argument("--chromium", default=os.environ.get("CHROMIUM", "/usr/bin/chromium"))
    args = parser.parse_args(argv)
    from playwright.sync_api import sync_playwright

    rows = []
    log_dir = tempfile.mkdtemp(prefix="gpx-first-run-")
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=args.chromium, headless=True, args=CHROMIUM_ARGS)
        try:
            for _ in range(args.reps):
                for name in args.scenario or SCENARIOS:
                    row = scenario(browser, name, log_dir)
                    log(f"{name}: {json.dumps({k: v for k, v in row.items() if k != 'job_status'}, default=str)}")
                    rows.append(row)
        finally:
            browser.close()
    text = markdown(rows)
    print(text)
    if args.json:
        pathlib.Path(args.json).write_text(json.dumps({"rows": rows, "markdown": text}, indent=1, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main())
