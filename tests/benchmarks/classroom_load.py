"""A classroom on one server: N sessions of a lab all moving a slider at the same moment.

A script, not a test (``tests/test_load_benchmark_smoke.py`` runs it with 2 sessions so it cannot
rot). It starts ``gpexplorer serve`` (``python -m gpexplorer.cli serve --port P [--num-procs K]``)
on a free port and drives **Bokeh client sessions speaking Bokeh's websocket protocol** (not
headless browsers: 30 Chromium tabs would need the same two cores as the server, and would
measure their own rendering). Each session does what a browser tab does on the wire:

1. ``GET /<page>`` (the server builds the session's document and lab, as for a browser), reads the
   session token from the HTML, opens ``/<page>/ws``, pulls the document (``PULL-DOC-REQ``) and
   sends the ``document_ready`` event that BokehJS sends once the page is rendered (the page then
   sends the rest of its views); a session is "open" once the slider and the plot source exist and
   no message came for ``--quiet`` seconds;
2. in each round every session releases the slider (``value`` and ``value_throttled``, in one
   ``PATCH-DOC``, as BokehJS does) in the same event-loop pass; the latency is the time from that
   send until the session receives a ``PATCH-DOC`` changing its plot source (``mean-vfe`` on the
   sparse page);
3. all sessions close; the server's memory (RSS, and PSS where readable, summed over the server's
   process tree) is read before the sessions, during them (peak), just after they close, and
   ``--after-seconds`` later (Bokeh discards a session 15-32 s after its websocket closes).

Errors: sessions that failed to open, moves with no update within ``--timeout`` s, server
``ERROR`` messages, tracebacks in the server's log. Usage (from the repository root)::

    python tests/benchmarks/classroom_load.py                      # 30 sessions, 3 rounds, 120 s after
    python tests/benchmarks/classroom_load.py --num-procs 2 --json out.json
    python tests/benchmarks/classroom_load.py --sessions 2 --rounds 1 --after-seconds 0   # smoke run
    python tests/benchmarks/classroom_load.py --concurrency 4    # sessions opening 4 at a time
    python tests/benchmarks/classroom_load.py --page floor_page  # a bare Panel page (one figure, one
                                                                 # slider): what Panel and Bokeh cost alone

Targets (issue 14), 2 cores: p95 < 3 s, zero errors, memory after closing within 10 % of before.
Exit status 0 whether or not they are met, 1 if the measurement could not be made. The load
average is printed: run it on a quiet machine.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import pathlib
import sys
import time

import numpy as np

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))

from load_clients import ClientSession, MemorySampler, Server  # noqa: E402

#: page -> (slider title, name of the plot source whose change is "the new plot data")
PAGES = {"sparse_regression": ("Lengthscale", "mean-vfe"), "linearized": ("Lengthscale", "*"),
         "floor_page": ("Lengthscale", "floor-line")}
FLOOR_APP = pathlib.Path(__file__).resolve().parent / "floor_page.py"
TARGET_P95_S = 3.0
TARGET_MEMORY_GROWTH = 0.10


def log(message):
    print(f"[{time.strftime('%H:%M:%S')}] {message}", flush=True)


def load_average():
    return tuple(round(v, 2) for v in os.getloadavg())


def percentiles(values):
    a = np.asarray(values, dtype=float)
    if a.size == 0:
        return {"n": 0}
    p50, p95 = np.percentile(a, [50, 95])
    return {"n": int(a.size), "p50": float(p50), "p95": float(p95), "min": float(a.min()), "max": float(a.max())}


# --- the benchmark -------------------------------------------------------------------------------

async def open_sessions(url, n, slider, source, concurrency, quiet):
    """Open ``n`` sessions, ``concurrency`` at a time; (sessions, open times, errors)."""
    gate, sessions, times, errors = asyncio.Semaphore(concurrency or n), [], [], []

    async def one():
        async with gate:
            s = ClientSession(url, slider, source)
            try:
                times.append(await s.open(quiet=quiet))
                sessions.append(s)
            except Exception as err:  # noqa: BLE001 - counted as an error
                errors.append(f"open: {type(err).__name__}: {err}")
                await s.close()

    await asyncio.gather(*(one() for _ in range(n)))
    return sessions, times, errors


async def move_all(sessions, round_index, timeout):
    """Every session releases its slider in the same loop pass; (latencies, errors)."""
    base = sessions[0].slider["attributes"].get("value") or 0.5
    futures = [s.move(round(base * (1.25 if round_index % 2 == 0 else 0.8) * (1 + 0.002 * k), 6))
               for k, s in enumerate(sessions)]
    latencies, errors = [], []
    for s, result in zip(sessions, await asyncio.gather(*(asyncio.wait_for(f, timeout) for f in futures),
                                                        return_exceptions=True)):
        if isinstance(result, BaseException):
            errors.append(f"move: no new plot data within {timeout} s" if isinstance(result, asyncio.TimeoutError)
                          else f"move: {type(result).__name__}: {result}")
        else:
            latencies.append(result)
    for s in sessions:  # the slider's new value, so that the next round moves it again
        s.slider["attributes"]["value"] = base * (1.25 if round_index % 2 == 0 else 0.8)
    return latencies, errors


async def wait_quiet(sessions, quiet, timeout=60.0):
    deadline = time.perf_counter() + timeout
    while any(time.perf_counter() - s.last_message < quiet for s in sessions) and time.perf_counter() < deadline:
        await asyncio.sleep(0.05)


async def one_cycle(server, url, slider, source, args, results):
    """Open the sessions, move every slider at once ``args.rounds`` times, close them."""
    sessions, open_times, errors = await open_sessions(url, args.sessions, slider, source, args.concurrency, args.quiet)
    results["open_s"], results["errors"] = percentiles(open_times), results["errors"] + errors
    results["memory_open"] = server.memory()
    for r in range(args.rounds if sessions else 0):
        await wait_quiet(sessions, args.quiet)
        cpu0, load, patches = server.cpu_seconds(), load_average(), sum(s.patches for s in sessions)
        latencies, errors = await move_all(sessions, r, args.timeout)
        await wait_quiet(sessions, args.quiet)
        row = {"round": len(results["rounds"]) + 1, **percentiles(latencies), "errors": len(errors),
               "load_average": load, "server_cpu_s": server.cpu_seconds() - cpu0,
               "patches_per_move": (sum(s.patches for s in sessions) - patches) / len(sessions)}
        results["rounds"].append(row)
        results["latencies_s"] += latencies
        results["errors"] += errors
        log(f"round {row['round']}: {row}")
    for s in sessions:
        results["errors"] += [f"server ERROR: {e}" for e in s.errors]
        await s.close()


def run(args):
    """The whole measurement; returns the results dict."""
    slider, source = args.slider or PAGES[args.page][0], args.source or PAGES[args.page][1]
    log_dir = pathlib.Path(args.log_dir or "/tmp")
    results = {"client": "Bokeh websocket protocol sessions (tornado; no browser)", "page": args.page,
               "slider": slider, "source": source, "sessions": args.sessions, "num_procs": args.num_procs,
               "rounds": [], "latencies_s": [], "errors": [], "cycles": [], "load_average_start": load_average(),
               "cpu_count": os.cpu_count()}
    prepare = [args.page] if args.prepare else []
    results["prepared"] = args.prepare
    server = Server(log_dir, args.num_procs, app=FLOOR_APP if args.page == "floor_page" else None,
                    prepare=prepare, prepare_sessions=args.prepare)
    log(f"starting {' '.join(server.command[1:])} (load average {results['load_average_start']})")
    server.start()
    url = f"http://127.0.0.1:{server.port}/{args.page}"
    ready_line, fills = f"{args.prepare} sessions of /{args.page} prepared", 0

    def wait_prepared():  # every process's pool full again (they fill while the server is quiet)
        nonlocal fills
        fills += max(args.num_procs, 1) if args.prepare else 0
        if args.prepare and not server.wait_for_log(ready_line, fills):
            raise RuntimeError(f"the server did not report {ready_line!r} {fills} time(s)")

    try:
        wait_prepared()
        results["memory_idle"] = server.memory()

        async def warm_up():  # one-time loads (imports, numba's cache) are not counted against the sessions
            warm, _, errors = await open_sessions(url, 1, slider, source, 1, args.quiet)
            results["errors"] += errors
            if warm:
                await move_all(warm, 0, args.timeout)
                await warm[0].close()
            await asyncio.sleep(2.0)

        asyncio.run(warm_up())
        wait_prepared()
        results["memory_before"] = server.memory()
        for cycle in range(args.cycles):
            if cycle:
                wait_prepared()
            log(f"memory {server.memory()}; cycle {cycle + 1}: opening {args.sessions} sessions")
            with MemorySampler(server) as sampler:
                asyncio.run(one_cycle(server, url, slider, source, args, results))
            results["memory_peak_rss_mb"] = max(results.get("memory_peak_rss_mb", 0), sampler.peak)
            results["memory_closed"] = server.memory()
            log(f"sessions closed; waiting {args.after_seconds} s")
            time.sleep(args.after_seconds)
            results["memory_after"] = server.memory()
            results["cycles"].append({k: results[k] for k in ("memory_open", "memory_closed", "memory_after")})
        results["server_tracebacks"] = server.log_text().count("Traceback")
        if results["server_tracebacks"]:
            results["errors"].append(f"{results['server_tracebacks']} traceback(s) in {server.log_path}")
    finally:
        server.stop()
    results["load_average_end"] = load_average()
    return results


def overall(results):
    """p50/p95 over every slider move of every round (None without any)."""
    return percentiles(results["latencies_s"]) if results["latencies_s"] else None


MEMORY_ROWS = {"memory_idle": "idle (no session yet)", "memory_before": "before (after 1 warm-up session)",
               "memory_open": "during (all sessions open)", "memory_closed": "just after closing",
               "memory_after": "--after-seconds s after closing"}


def format_table(results):
    """The results as the table the script prints."""
    nan, o = float("nan"), overall(results)
    lines = [f"client: {results['client']}",
             f"page {results['page']}, slider {results['slider']!r}, source {results['source']!r}, "
             f"{results['sessions']} sessions, --num-procs {results['num_procs']}, {results['cpu_count']} CPUs, "
             f"prepared sessions per process: {results.get('prepared') or 'none'}",
             f"load average: start {results['load_average_start']}, end {results['load_average_end']}",
             f"session open (GET to page ready): {results.get('open_s')}", "",
             f"{'round':>5} {'n':>4} {'p50 s':>7} {'p95 s':>7} {'max s':>7} {'errors':>6} {'srv CPU s':>9} {'msgs':>5}  load"]
    lines += [f"{r['round']:>5} {r['n']:>4} {r.get('p50', nan):>7.2f} {r.get('p95', nan):>7.2f} {r.get('max', nan):>7.2f} "
              f"{r['errors']:>6} {r['server_cpu_s']:>9.2f} {r['patches_per_move']:>5.1f}  {r['load_average']}"
              for r in results["rounds"]]
    lines += ["", f"{'server memory (process tree)':<34} {'RSS MB':>8} {'PSS MB':>8}"]
    for key, label in MEMORY_ROWS.items():
        if results.get(key):
            pss = results[key]["pss_mb"]
            lines.append(f"{label.replace('--after-seconds', str(results.get('after_seconds'))):<34} "
                         f"{results[key]['rss_mb']:>8.0f} {'n/a' if pss is None else f'{pss:.0f}':>8}")
    lines.append(f"{'peak during (RSS, sampled)':<34} {results.get('memory_peak_rss_mb', 0):>8.0f}")
    if len(results["cycles"]) > 1:
        lines.append("per cycle (RSS MB open / closed / after): " + ", ".join(
            "/".join(f"{c[k]['rss_mb']:.0f}" for k in ("memory_open", "memory_closed", "memory_after"))
            for c in results["cycles"]))
    lines += ["", f"errors: {len(results['errors'])}" + "".join(f"\n  {e}" for e in results["errors"][:10])]
    if o:
        lines.append(f"latency, all rounds ({o['n']} moves): p50 {o['p50']:.2f} s, p95 {o['p95']:.2f} s "
                     f"(target p95 < {TARGET_P95_S} s: {'met' if o['p95'] < TARGET_P95_S else 'NOT met'})")
    if results.get("memory_before") and results.get("memory_after"):
        growth = results["memory_after"]["rss_mb"] / results["memory_before"]["rss_mb"] - 1
        lines.append(f"memory after vs before (RSS): {100 * growth:+.1f} % (target within "
                     f"{100 * TARGET_MEMORY_GROWTH:.0f} %: {'met' if abs(growth) <= TARGET_MEMORY_GROWTH else 'NOT met'})")
    return "\n".join(lines)


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--sessions", type=int, default=30)
    p.add_argument("--num-procs", type=int, default=1, help="gpexplorer serve --num-procs")
    p.add_argument("--rounds", type=int, default=3, help="simultaneous slider moves per set of sessions")
    p.add_argument("--cycles", type=int, default=1,
                   help="open-move-close cycles (memory after each: a leak grows, allocator reuse does not)")
    p.add_argument("--page", default="sparse_regression", choices=sorted(PAGES))
    p.add_argument("--after-seconds", type=float, default=120.0, help="wait before the last memory reading")
    p.add_argument("--slider", default=None, help="title of the slider to move (default: per page)")
    p.add_argument("--source", default=None, help="name of the plot source to wait for ('*': any)")
    p.add_argument("--concurrency", type=int, default=0,
                   help="sessions opening at once (0, the default: all of them, a class opening the link together)")
    p.add_argument("--quiet", type=float, default=1.0, help="seconds without messages = page settled")
    p.add_argument("--timeout", type=float, default=60.0, help="seconds to wait for each update")
    p.add_argument("--prepare", type=int, default=0, metavar="N",
                   help="serve with --prepare PAGE --prepare-sessions N (sessions built ahead) and open "
                        "the sessions once every pool is full")
    p.add_argument("--log-dir", default=None)
    p.add_argument("--json", default=None, help="also write the results here")
    return p.parse_args(argv)


def main(argv=None):
    args = parse_args(argv)
    try:
        results = run(args)
    except Exception as err:  # noqa: BLE001 - the measurement could not be made
        log(f"failed: {type(err).__name__}: {err}")
        return 1
    results["after_seconds"] = args.after_seconds
    print(format_table(results), flush=True)
    if args.json:
        pathlib.Path(args.json).write_text(json.dumps(results, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
