"""Browser-measured latency of the sparse-regression lab with inter-domain inducing features (issue 15).

A script, not a test (pytest does not collect it). The target (issue 15): "a drag or slider
change with any feature type, Snelson, M <= 50 (C <= 10 for sums of deltas): median < 150 ms to
updated plot data in the page, measured in Chromium like the existing latency benchmark". It is
measured exactly as ``dashboard_latency.py`` measures inducing points, with that script's helpers
(its server, pages, websocket-quiet waits and timers are imported, not copied): one
``gpexplorer serve`` for every cell, a fresh browser context per cell, the lab opened with a query
string that selects the feature type (``?M=..&feature=..``, ``&C=10`` for sums of deltas), and
for each feature type the lab offers (those of ``gpexplorer.inducing.FEATURES`` among the lab's
choices) and each M:

* **noise slider**: "Noise variance" released at a new value -> ``mean-vfe`` rewritten by the
  server (``dashboard_latency.measure_slider``);
* **feature sliders**: the feature's own sliders, released at a new value -> ``mean-vfe``
  rewritten: "Feature width" (multiscale, frequency, time-frequency, sum of deltas) and
  "Feature frequency" (frequency, time-frequency), on the selected feature (number 0);
* **drag**: a real mouse drag of a feature's centre in the "posterior" figure, timed from the
  mouse release -> ``mean-vfe`` rewritten (``dashboard_latency.measure_drag``); every type but
  frequency features, which all sit at the origin and have no markers.

Each repetition starts once no websocket message has arrived for 200 ms; "all updates" is the
time until the last message of the burst the action caused. The table gives median and p90 per
cell and whether the median meets the 150 ms target; the load average is printed before and
after every cell.

Usage (from the repository root)::

    python tests/benchmarks/feature_latency.py                       # every type, M = 15 and 50, 20 reps, ~15 min
    python tests/benchmarks/feature_latency.py --M 50 --feature multiscale --reps 30 --json out.json
    python tests/benchmarks/feature_latency.py --quick --feature multiscale --reps 2   # smoke run, < 1 min

Exit status 0 whether or not the target is met (it is a measurement); 1 if a measurement could
not be made. Run it on a quiet machine.
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import platform
import shutil
import sys
import tempfile
import time
import urllib.parse

import numpy as np

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))

from dashboard_latency import (  # noqa: E402
    _JS_EDITABLE_SLIDER, CHROMIUM_ARGS, LOAD_TIMEOUT_MS, Server, load_average, log,
    measure_drag, measure_slider, new_page, numba_cache_dir, summarise, timed, wait_all_views, wait_first_plot,
    wait_quiet)
from bokeh_page import ConsoleErrors, cds_length, server_log_problems  # noqa: E402

from gpexplorer import inducing  # noqa: E402
from gpexplorer.ui.sparse.features import feature_choices, uses  # noqa: E402

TARGET_MS = 150.0
C_DELTAS = 10  # deltas per sum-of-deltas feature (the largest C)
#: the lab's feature types that exist (other types may be added to the registry later)
FEATURE_CHOICES = feature_choices()
FEATURE_TYPES = [key for key in FEATURE_CHOICES.values() if key in inducing.FEATURES]
LABELS = {value: label for label, value in FEATURE_CHOICES.items()}
#: the sliders of the selected feature: setting -> (label on the page, the two values alternated)
FEATURE_SLIDERS = {"feature_width": ("Feature width", (0.3, 0.45)),
                   "feature_frequency": ("Feature frequency", (1.0, 1.5))}

# the value of the Select titled `title`
_JS_SELECT_VALUE = """(title) => {
  const found = Array.from(Bokeh.documents[0].all_models).filter((m) => 'options' in m.properties
    && typeof m.title === 'string' && m.title.replace(/:$/, '').trim() === title);
  return found.length === 1 ? found[0].value : null;
}"""


# --- the lab with a feature type -----------------------------------------------------------------

def lab_query(kind, M, C=C_DELTAS):
    query = {"M": M, "feature": kind}
    if kind == "sum-of-deltas":
        query["C"] = C
    return "?" + urllib.parse.urlencode(query)


def open_feature_lab(page, url, kind, M, C=C_DELTAS):
    """``dashboard_latency.open_lab`` for any feature type: the lab at ``url?M=..&feature=..``,
    every view rendered, the strip showing M basis functions, M markers (none for frequency
    features), M x C delta ticks for a sum of deltas, and the type chosen in the page."""
    page.goto(url + lab_query(kind, M, C), timeout=LOAD_TIMEOUT_MS)
    wait_first_plot(page)
    wait_all_views(page)
    expected = {"feature-curves": M, "inducing": M if inducing.FEATURES[kind].draggable else 0}
    if kind == "sum-of-deltas":
        expected["feature-deltas"] = M * C
    deadline = time.monotonic() + LOAD_TIMEOUT_MS / 1000
    while True:
        shown = {name: cds_length(page, name) for name in expected}
        chosen = page.evaluate(_JS_SELECT_VALUE, "Inducing features")
        if shown == expected and chosen in (kind, LABELS[kind]):  # Panel's Select holds the key
            break
        if time.monotonic() > deadline:
            raise TimeoutError(f"{kind}, M={M}: the page shows {shown} with {chosen!r} chosen; "
                               f"expected {expected} with {kind!r}")
        page.wait_for_timeout(50)
    wait_quiet(page, quiet_ms=500)


def set_slider(page, label, value):
    """Release the slider labelled ``label`` at ``value`` (as ``dashboard_latency.set_noise``);
    returns its previous value."""
    result = page.evaluate(_JS_EDITABLE_SLIDER, [label, value])
    if "error" in result:
        raise LookupError(result["error"])
    return result["old"]


def measure_feature_slider(page, label, values, reps, warmup):
    """``dashboard_latency.measure_slider`` for the slider labelled ``label``, alternating ``values``."""
    out = {"ms": [], "all_ms": []}
    for k in range(warmup + reps):
        v = values[k % 2]
        if abs(set_slider(page, label, None) - v) < 1e-12:
            v = values[(k + 1) % 2]
        ms, all_ms = timed(page, lambda v=v: set_slider(page, label, v))
        if k >= warmup:
            out["ms"].append(ms), out["all_ms"].append(all_ms)
    return out


def actions(kind):
    """(name, setting or None) of every action measured for feature type ``kind``."""
    out = [("noise slider", None)]
    out += [(f"{FEATURE_SLIDERS[name][0]} slider", name) for name in FEATURE_SLIDERS if name in uses(kind)]
    if inducing.FEATURES[kind].draggable:
        out.append(("drag of a centre", "drag"))
    return out


def measure_cell(browser, server, kind, M, args, report):
    """Every action for feature type ``kind`` with M features, in a fresh browser context."""
    context, page = new_page(browser)
    errors = ConsoleErrors(page, ignore=("favicon",))
    cell = {"feature": kind, "M": M, "C": C_DELTAS if kind == "sum-of-deltas" else None,
            "load_before": load_average(), "actions": {}}
    report["cells"].append(cell)
    try:
        open_feature_lab(page, server.url, kind, M)
        for name, what in actions(kind):
            if what is None:
                r = measure_slider(page, args.reps, args.warmup)
            elif what == "drag":
                r = measure_drag(page, args.reps, args.warmup)
            else:
                label, values = FEATURE_SLIDERS[what]
                r = measure_feature_slider(page, label, values, args.reps, args.warmup)
            cell["actions"][name] = r
            stats = stats_of(r["ms"])
            log(f"{kind} M={M} {name} -> mean-vfe: median {stats['median']:.0f} ms, p90 {stats['p90']:.0f} ms"
                + (f" ({r['missed']} missed drags repeated)" if r.get("missed") else ""))
    finally:
        cell["load_after"] = load_average()
        report["problems"].extend(f"{kind} M={M} browser: {p}" for p in errors.problems)
        context.close()


# --- report --------------------------------------------------------------------------------------

def stats_of(values):
    """``dashboard_latency.summarise`` plus the 90th percentile."""
    stats = summarise(values)
    if stats["n"]:
        stats["p90"] = float(np.percentile(np.asarray(values, dtype=float), 90))
    else:
        stats.update(median=float("nan"), p90=float("nan"))
    return stats


def table_rows(report):
    """One row per (feature, M, action): the numbers of the markdown table."""
    rows = []
    for cell in report["cells"]:
        for name, r in cell["actions"].items():
            s, everything = stats_of(r["ms"]), stats_of(r["all_ms"])
            rows.append({"feature": cell["feature"], "M": cell["M"], "C": cell["C"], "action": name, "n": s["n"],
                         "median_ms": s["median"], "p90_ms": s["p90"], "all_updates_median_ms": everything["median"],
                         "met": bool(s["n"] and s["median"] < TARGET_MS)})
    return rows


def report_markdown(report):
    lines = [f"Command: `{report['command']}`", "",
             f"Machine: {report['cpus']} CPUs, {report['platform']}; Chromium {report.get('chromium')}; "
             f"bokeh {report['bokeh']}, panel {report['panel']}",
             f"Load average (1, 5, 15 min): start {report['load_start']}, end {report['load_end']}", "",
             f"| feature | M | action | n | median (ms) | p90 (ms) | all updates, median (ms) | median < {TARGET_MS:g} ms |",
             "| --- | --- | --- | --- | --- | --- | --- | --- |"]
    for row in table_rows(report):
        feature = row["feature"] + (f" (C = {row['C']})" if row["C"] else "")
        met = "yes" if row["met"] else "**no**"
        lines.append(f"| {feature} | {row['M']} | {row['action']} | {row['n']} | {row['median_ms']:.0f} | "
                     f"{row['p90_ms']:.0f} | {row['all_updates_median_ms']:.0f} | {met} |")
    notes = [f"{c['feature']} M={c['M']}: load average {c['load_before']} before, {c['load_after']} after"
             for c in report["cells"]]
    for c in report["cells"]:
        missed = sum(r.get("missed", 0) for r in c["actions"].values())
        if missed:
            notes.append(f"{c['feature']} M={c['M']}: {missed} drag(s) picked up no marker and were repeated")
    if report.get("problems"):
        notes.append("Problems: " + "; ".join(report["problems"]))
    return "\n".join(lines + [""] + [f"* {n}" for n in notes])


# --- main ----------------------------------------------------------------------------------------

def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--reps", type=int, help="timed repetitions per action (default 20; --quick: 3)")
    parser.add_argument("--warmup", type=int, help="untimed repetitions first (default 3; --quick: 1)")
    parser.add_argument("--M", type=int, action="append", help="number of features; repeat (default: 15 and 50; --quick: 15)")
    parser.add_argument("--feature", action="append", choices=FEATURE_TYPES,
                        help=f"feature type; repeat (default: every one of {FEATURE_TYPES})")
    parser.add_argument("--quick", action="store_true", help="smoke run: M = 15, 3 reps, 1 warm-up")
    parser.add_argument("--json", help="also write every number to this JSON file")
    parser.add_argument("--chromium", default=os.environ.get("CHROMIUM", "/usr/bin/chromium"))
    args = parser.parse_args(argv)
    args.reps = args.reps if args.reps is not None else (3 if args.quick else 20)
    args.warmup = args.warmup if args.warmup is not None else (1 if args.quick else 3)
    args.M = args.M or ([15] if args.quick else [15, 50])
    args.feature = args.feature or FEATURE_TYPES
    return args


def main(argv=None):
    args = parse_args(argv)
    import bokeh
    import panel
    from playwright.sync_api import sync_playwright

    numba_cache_dir()
    report = {"command": " ".join(["python", "tests/benchmarks/feature_latency.py",
                                   *(sys.argv[1:] if argv is None else argv)]),
              "cpus": os.cpu_count(), "platform": platform.platform(), "bokeh": bokeh.__version__,
              "panel": panel.__version__, "numba_cache_dir": os.environ["NUMBA_CACHE_DIR"],
              "features": args.feature, "Ms": args.M, "reps": args.reps, "warmup": args.warmup,
              "target_ms": TARGET_MS, "load_start": load_average(), "cells": [], "problems": []}
    log(f"load average {report['load_start']}; features {args.feature}; M {args.M}; {args.reps} reps")
    status = 0
    log_dir = tempfile.mkdtemp(prefix="gpx-feature-latency-")
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=args.chromium, headless=True, args=CHROMIUM_ARGS)
        report["chromium"] = browser.version
        server = Server(log_dir).start()
        try:
            server.wait_listening(timeout=120)
            for kind in args.feature:
                for M in args.M:
                    try:
                        measure_cell(browser, server, kind, M, args, report)
                    except Exception as err:  # noqa: BLE001 - report what was measured so far
                        status = 1
                        report["problems"].append(f"{kind} M={M}: {type(err).__name__}: {err}")
                        log(f"{kind} M={M} failed: {type(err).__name__}: {err}")
            tracebacks = server_log_problems(server.log_text()).count("Traceback")
            if tracebacks:
                status = 1
                report["problems"].append(f"{tracebacks} Traceback(s) in the server log {server.log_path}")
        except Exception as err:  # noqa: BLE001
            status = 1
            report["problems"].append(f"{type(err).__name__}: {err}")
            log(f"failed: {type(err).__name__}: {err}")
        finally:
            server.stop()
            browser.close()
    report["load_end"] = load_average()
    report["rows"] = table_rows(report)
    markdown = report_markdown(report)
    print()
    print(markdown, flush=True)
    if args.json:
        report["markdown"] = markdown
        pathlib.Path(args.json).write_text(json.dumps(report, indent=1, default=str))
        log(f"wrote {args.json}")
    if status == 0:
        shutil.rmtree(log_dir, ignore_errors=True)
    else:
        log(f"server log kept in {log_dir}")
    return status


if __name__ == "__main__":
    sys.exit(main())
