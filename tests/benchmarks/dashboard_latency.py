"""Browser-measured latency of the sparse-regression dashboard (apps/sparse_regression.py).

A script, not a test (pytest does not collect it). It serves the dashboards exactly as the
``gpexplorer serve`` console script does (``python -m gpexplorer.cli serve --port P``), drives
Debian's Chromium through Playwright with the helpers of ``tests/bokeh_page.py`` and measures,
on the page's own clock, the time from a user action to the updated plot data in the page:

* **cold start**: server process started at t0 -> first rendered plot (the "posterior" figure's
  canvas is displayed and finished rendering, and the VFE mean source ``mean-vfe`` has data), with
  numba's on-disk cache warm (a throwaway start fills it first; the script checks that no cache
  file is written during the timed starts); also reported: until every chart shown at start
  (sandwich, terms, trace) is rendered, since the page sends those after the main plot;
* **slider re-evaluation**: "Noise variance" slider released at a new value (``value`` and
  ``value_throttled`` set on the slider model, synced to the server like a user edit) ->
  ``mean-vfe`` rewritten by the server;
* **drag re-evaluation**: a real mouse drag of an inducing input in the "posterior" figure,
  timed from the mouse release (``pointerup``) -> ``mean-vfe`` rewritten;
* **warm-started re-optimisation**: after an initial fit, nudge the noise by a few percent
  (the page has written the fitted optimum back into the sliders, so the fit starts warm),
  then click "Optimise": click (``pointerup``) -> ``mean-vfe`` rewritten with the fit's result.
  The server-side fit time from ``#job-status`` ("fit finished in X s") is recorded too.

Every repetition starts only when no websocket message has arrived for 200 ms (the previous
action's updates are all in), and each one also reports "last update message": the time until
the last message of the burst the action caused (all views updated, not just the mean).
The cold start uses NUMBA_CACHE_DIR as tests/conftest.py sets it (default ``.numba_cache``).

Usage (from the repository root)::

    python tests/benchmarks/dashboard_latency.py                      # M = 15 and 50, 30 reps, ~5 min
    python tests/benchmarks/dashboard_latency.py --reps 30 --M 15 --M 50 --json out.json
    python tests/benchmarks/dashboard_latency.py --cold-reps 0 --M 15  # skip the cold starts
    python tests/benchmarks/dashboard_latency.py --reps 5 --fit-reps 2 --cold-reps 1  # smoke run

Targets (the issue): median < 150 ms for re-evaluation, < 400 ms for a warm-started
re-optimisation, cold start < 5 s. Exit status 0 whether or not targets are met (it is a
measurement); 1 if a measurement could not be made. Run on a quiet machine: the load average
is printed before and after each phase.
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import platform
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time

import numpy as np

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parent.parent
sys.path.insert(0, str(ROOT / "tests"))

from server_process import free_port, stop_process_group  # noqa: E402
from bokeh_page import ConsoleErrors, cds_data, cds_length, drag_point, measure_latency  # noqa: E402

# the browser tests' Chromium flags (tests/ui/conftest.py; importing it needs pytest, which the venv has)
try:
    sys.path.insert(0, str(ROOT / "tests" / "ui"))
    from conftest import CHROMIUM_ARGS  # noqa: E402
finally:
    sys.path.pop(0)

APP = "sparse_regression"
NOISE_LABEL = "Noise variance"
TARGETS_MS = {"slider": 150.0, "drag": 150.0, "refit": 400.0, "cold": 5000.0}
VIEWPORT = {"width": 1400, "height": 1000}
LOAD_TIMEOUT_MS = 120_000
ACTION_TIMEOUT_MS = 60_000
FIT_TIMEOUT_MS = 300_000
QUIET_MS = 200  # a repetition starts once no websocket message has arrived for this long

# --- JavaScript --------------------------------------------------------------------------------

# First rendered plot: the figure's PlotView is displayed (canvas with a width), has finished
# rendering, and the VFE mean source has rows.
_JS_FIRST_PLOT = """([figure, source]) => {
  if (!(window.Bokeh && Bokeh.documents && Bokeh.documents.length > 0 && Bokeh.index)) return false;
  const doc = Bokeh.documents[0];
  if (source !== null) {
    const src = doc.get_model_by_name(source);
    if (src == null || typeof src.get_length !== 'function' || !((src.get_length() ?? 0) > 0)) return false;
  }
  const fig = doc.get_model_by_name(figure);
  if (fig == null) return false;
  const views = [];
  const walk = (v) => { if (v.model === fig) views.push(v); for (const c of (v.child_views ?? [])) walk(c); };
  for (const root of Bokeh.index.roots) walk(root);
  const view = views.find((v) => v.canvas_view && v.canvas_view.el.getBoundingClientRect().width > 0);
  if (view == null) return false;
  return typeof view.has_finished === 'function' ? view.has_finished() : true;
}"""

# A plain slider carries its label as `title`. Panel's EditableFloatSlider is
# Column([Row([Div "<label>:", Spinner]), Slider]) whose Slider has no title: then find the Slider
# next to the label Div. Either way set value + value_throttled (= a slider release).
_JS_EDITABLE_SLIDER = """([label, value]) => {
  const clean = (t) => t.replace(/<[^>]*>/g, '').trim().replace(/:$/, '').trim();
  const found = Array.from(Bokeh.documents[0].all_models).filter((m) => 'value_throttled' in m.properties
    && typeof m.title === 'string' && clean(m.title) === label);  // a plain slider titled `label`
  for (const m of (found.length ? [] : Bokeh.documents[0].all_models)) {
    if (!('children' in m.properties)) continue;
    const kids = Array.from(m.children ?? []);
    if (kids.length !== 2) continue;
    const [row, slider] = kids;
    if (row == null || slider == null || !('children' in row.properties)) continue;
    if (!('value_throttled' in slider.properties)) continue;
    const div = Array.from(row.children ?? [])[0];
    if (div != null && typeof div.text === 'string' && clean(div.text) === label) found.push(slider);
  }
  if (found.length !== 1) return {error: `${found.length} editable sliders labelled ${JSON.stringify(label)}`};
  const s = found[0];
  const old = s.value;
  if (value !== null) s.setv({value, value_throttled: value});
  return {old, start: s.start, end: s.end};
}"""

# Installed before the page loads: remember when the last websocket message arrived, so that a
# repetition starts only once the previous action's burst of updates is over (and its length
# can be reported as "all updates received").
_INIT_WS_HOOK = """(() => {
  const Native = window.WebSocket;
  window.__gpx_ws = {last: 0, count: 0};
  function Hooked(...args) {
    const socket = new Native(...args);
    socket.addEventListener('message', () => { window.__gpx_ws.last = performance.now(); window.__gpx_ws.count++; });
    return socket;
  }
  Hooked.prototype = Native.prototype;
  Object.assign(Hooked, Native);
  window.WebSocket = Hooked;
})();"""

_JS_QUIET = "(quiet) => performance.now() - window.__gpx_ws.last > quiet"
_JS_LAST_MESSAGE = "() => window.__gpx_ws.last"
_JS_LAST_START = """(fromInput) => {
  const s = window.__bokeh_page_latency;
  return fromInput && s.last_input !== null ? s.last_input : s.t0;
}"""

_JS_JOB_STATE = """() => {
  const find = (root) => {
    const el = root.querySelector('#job-status');
    if (el) return el;
    for (const host of root.querySelectorAll('*')) {
      if (host.shadowRoot) { const r = find(host.shadowRoot); if (r) return r; }
    }
    return null;
  };
  const el = find(document);
  return el ? [el.getAttribute('data-state'), el.textContent] : [null, null];
}"""


# --- statistics and environment ----------------------------------------------------------------

def summarise(values):
    """median, quartiles (linear interpolation within the data), min, max, mean of ``values``."""
    a = np.asarray(values, dtype=float)
    if a.size == 0:
        return {"n": 0}
    q1, med, q3 = np.percentile(a, [25, 50, 75])
    return {"n": int(a.size), "median": float(med), "q1": float(q1), "q3": float(q3),
            "min": float(a.min()), "max": float(a.max()), "mean": float(a.mean())}


def load_average():
    try:
        return tuple(round(v, 2) for v in os.getloadavg())
    except OSError:
        return (float("nan"),) * 3


def log(message):
    print(f"[{time.strftime('%H:%M:%S')}] {message}", flush=True)


def numba_cache_dir():
    """Same default as tests/conftest.py; gpexplorer keys a subfolder by its jitted sources."""
    return os.environ.setdefault("NUMBA_CACHE_DIR", str(ROOT / ".numba_cache"))


def cache_files():
    base = pathlib.Path(numba_cache_dir())
    return {str(p): p.stat().st_mtime for p in base.rglob("*") if p.is_file()} if base.exists() else {}


# --- the server --------------------------------------------------------------------------------

class Server:
    """``python -m gpexplorer.cli serve --port P`` in its own process group, logging to a file."""

    def __init__(self, log_dir):
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}/{APP}"
        self.log_path = pathlib.Path(log_dir) / f"serve-{self.port}.log"
        self.command = [sys.executable, "-m", "gpexplorer.cli", "serve", "--port", str(self.port)]
        self.process = None

    def start(self):
        env = dict(os.environ)
        env["NUMBA_CACHE_DIR"] = numba_cache_dir()
        with open(self.log_path, "wb") as out:
            self.process = subprocess.Popen(self.command, cwd=ROOT, env=env, stdout=out,
                                            stderr=subprocess.STDOUT, start_new_session=True)
        return self

    def wait_listening(self, timeout=60.0):
        deadline = time.monotonic() + timeout
        while True:
            if self.process.poll() is not None:
                raise RuntimeError(f"server exited with {self.process.returncode}:\n{self.log_tail()}")
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=1).close()
                return
            except OSError:
                if time.monotonic() > deadline:
                    raise TimeoutError(f"server not listening on {self.port} after {timeout} s:\n{self.log_tail()}")
                time.sleep(0.02)

    def log_text(self):
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""

    def log_tail(self, chars=3000):
        return self.log_text()[-chars:]

    def stop(self):
        """SIGTERM the whole process group (gpexplorer.cli and its panel serve child), then SIGKILL."""
        stop_process_group(self.process)


# --- page helpers ------------------------------------------------------------------------------

def new_page(browser):
    """A fresh browser context (no cached bundles) with the websocket hook installed."""
    context = browser.new_context(viewport=VIEWPORT)
    context.add_init_script(_INIT_WS_HOOK)
    return context, context.new_page()


def goto_until_answers(page, url, timeout_s=60.0):
    """page.goto until the server answers (connection refused while it starts up)."""
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            page.goto(url, wait_until="commit", timeout=LOAD_TIMEOUT_MS)
            return
        except Exception:  # noqa: BLE001 - net::ERR_CONNECTION_REFUSED etc. while starting
            if time.monotonic() > deadline:
                raise
            time.sleep(0.02)


def wait_first_plot(page, timeout=LOAD_TIMEOUT_MS):
    page.wait_for_function(_JS_FIRST_PLOT, arg=["posterior", "mean-vfe"], timeout=timeout, polling="raf")
    page.locator("canvas").first.wait_for(state="visible", timeout=timeout)


# the charts the page shows beside the main plot at start (the trace tab is empty until a fit)
OTHER_VIEWS = (("sandwich", "sandwich-bar"), ("terms", "terms-bars"), ("trace", None))


def wait_all_views(page, timeout=LOAD_TIMEOUT_MS):
    """Every chart shown at start is rendered (the page sends them after the main plot)."""
    for figure, source in OTHER_VIEWS:
        page.wait_for_function(_JS_FIRST_PLOT, arg=[figure, source], timeout=timeout, polling="raf")


def wait_quiet(page, quiet_ms=QUIET_MS, timeout=ACTION_TIMEOUT_MS):
    """Wait until no websocket message has arrived for ``quiet_ms``; returns the last arrival time."""
    page.wait_for_function(_JS_QUIET, arg=quiet_ms, timeout=timeout, polling=50)
    return page.evaluate(_JS_LAST_MESSAGE)


def timed(page, trigger, timeout=ACTION_TIMEOUT_MS, from_last_input=False):
    """(ms to the ``mean-vfe`` change, ms to the last message of the burst) for one action."""
    ms = measure_latency(page, "mean-vfe", trigger, timeout=timeout, from_last_input=from_last_input)
    start = page.evaluate(_JS_LAST_START, from_last_input)
    last = wait_quiet(page)
    return ms, max(last - start, ms)


def set_noise(page, value):
    """Release the "Noise variance" slider at ``value``; returns the slider's previous value."""
    result = page.evaluate(_JS_EDITABLE_SLIDER, [NOISE_LABEL, value])
    if "error" in result:
        raise LookupError(result["error"])
    return result["old"]


def noise_value(page):
    return set_noise(page, None)


def job_state(page):
    return page.evaluate(_JS_JOB_STATE)


def open_lab(page, url, M):
    page.goto(url, timeout=LOAD_TIMEOUT_MS)
    wait_first_plot(page)
    wait_all_views(page)
    deadline = time.monotonic() + LOAD_TIMEOUT_MS / 1000
    while cds_length(page, "inducing") != M:  # the page applies ?M= from the URL
        if time.monotonic() > deadline:
            raise TimeoutError(f"inducing source has {cds_length(page, 'inducing')} points, expected {M}")
        page.wait_for_timeout(50)
    wait_quiet(page, quiet_ms=500)


# --- measurements ------------------------------------------------------------------------------

def measure_cold(browser, reps, log_dir):
    """Throwaway start (fills numba's cache), then ``reps`` timed starts, each a fresh server."""
    results = {"throwaway_s": None, "total_s": [], "listening_s": [], "first_byte_s": [], "all_views_s": [],
               "cache_files_before": len(cache_files()), "cache_files_after_throwaway": None,
               "cache_written_when_timed": []}
    for rep in range(reps + 1):
        server = Server(log_dir)
        context, page = new_page(browser)
        page.goto("about:blank")
        before = cache_files()
        try:
            t0 = time.perf_counter()
            server.start()
            server.wait_listening(timeout=120)
            t_listen = time.perf_counter()
            goto_until_answers(page, server.url)
            t_first_byte = time.perf_counter()
            wait_first_plot(page)
            t_plot = time.perf_counter()
            wait_all_views(page)
            t_all = time.perf_counter()
        finally:
            context.close()
            server.stop()
        total = t_plot - t0
        if rep == 0:
            results["throwaway_s"] = total
            results["cache_files_after_throwaway"] = len(cache_files())
            log(f"cold start: throwaway (cache fill) {total:.2f} s")
            continue
        after = cache_files()
        written = [k for k in after if before.get(k) != after[k]]
        results["cache_written_when_timed"].append(len(written))
        results["total_s"].append(total)
        results["listening_s"].append(t_listen - t0)
        results["first_byte_s"].append(t_first_byte - t0)
        results["all_views_s"].append(t_all - t0)
        log(f"cold start {rep}/{reps}: {total:.2f} s (listening {t_listen - t0:.2f} s, first byte "
            f"{t_first_byte - t0:.2f} s, all views {t_all - t0:.2f} s){'  NUMBA CACHE WRITTEN: not warm' if written else ''}")
    return results


def measure_slider(page, reps, warmup):
    values, out = (0.08, 0.1), {"ms": [], "all_ms": []}
    for k in range(warmup + reps):
        v = values[k % 2]
        if abs(noise_value(page) - v) < 1e-12:
            v = values[(k + 1) % 2]
        ms, all_ms = timed(page, lambda v=v: set_noise(page, v))
        if k >= warmup:
            out["ms"].append(ms), out["all_ms"].append(all_ms)
    return out


class MissedDrag(Exception):
    """The mouse press did not pick up an inducing input (nothing moved)."""


def _drag_target(page):
    """(x, y, dx) of the inducing input with the most room on both sides, away from the edges."""
    z = cds_data(page, "inducing")
    x, y = np.asarray(z["x"], float), np.asarray(z["y"], float)
    data_x = np.asarray(cds_data(page, "data")["x"], float)
    lo, hi = data_x.min(), data_x.max()
    order = np.argsort(x)
    xs = x[order]
    gaps = np.diff(np.concatenate([[lo - 1.0], xs, [hi + 1.0]]))
    room = np.minimum(gaps[:-1], gaps[1:])
    inside = (xs > lo + 0.1 * (hi - lo)) & (xs < hi - 0.1 * (hi - lo))
    room = np.where(inside, room, -np.inf)
    j = int(np.argmax(room))
    dx = float(np.clip(0.4 * room[j], 0.03 * (hi - lo), 0.05 * (hi - lo)))
    return float(xs[j]), float(y[order][j]), dx


def _drag(page, start, end):
    before = cds_data(page, "inducing")["x"]
    drag_point(page, "posterior", start, end, steps=8)
    if cds_data(page, "inducing")["x"] == before:  # locally moved (or already rewritten by the server)
        raise MissedDrag(f"drag from {start} picked up no inducing input")


def measure_drag(page, reps, warmup):
    out, k, misses = {"ms": [], "all_ms": [], "missed": 0}, 0, 0
    while k < warmup + reps:
        x, y, dx = _drag_target(page)
        end = x + (dx if k % 2 == 0 else -dx)
        try:
            ms, all_ms = timed(page, lambda: _drag(page, (x, y), (end, y)), from_last_input=True)
        except MissedDrag:
            out["missed"] += 1
            misses += 1
            if misses > 10:
                raise
            wait_quiet(page)
            continue
        if k >= warmup:
            out["ms"].append(ms), out["all_ms"].append(all_ms)
        k += 1
    return out


def _fit_seconds(text):
    match = re.search(r"finished in ([0-9.]+) s", text or "")
    return float(match.group(1)) if match else None


def _click_optimise(page):
    page.get_by_role("button", name="Optimise", exact=True).click(timeout=ACTION_TIMEOUT_MS)


def _wait_done(page, timeout_ms=FIT_TIMEOUT_MS):
    deadline = time.monotonic() + timeout_ms / 1000
    while True:
        state, text = job_state(page)
        if state in ("done", "failed", "cancelled"):
            if state != "done":
                raise RuntimeError(f"fit {state}: {text}")
            return text
        if time.monotonic() > deadline:
            raise TimeoutError(f"job-status still {state!r} ({text!r})")
        page.wait_for_timeout(25)


def measure_refit(page, reps, warmup):
    """Initial fit, then per repetition: nudge the noise (re-evaluation), time a warm-started fit."""
    t = time.perf_counter()
    measure_latency(page, "mean-vfe", lambda: _click_optimise(page), timeout=FIT_TIMEOUT_MS)
    initial_text = _wait_done(page)
    out = {"initial_fit_s": time.perf_counter() - t, "initial_fit_server_s": _fit_seconds(initial_text),
           "ms": [], "all_ms": [], "server_fit_ms": [], "nudge_ms": []}
    wait_quiet(page)
    for k in range(warmup + reps):
        current = noise_value(page)
        target = round(current * (1.04 if k % 2 == 0 else 0.96), 6)
        nudge, _ = timed(page, lambda: set_noise(page, target))
        if job_state(page)[0] == "running":
            raise RuntimeError("a job is still running before the timed fit")
        # from the click (its pointerup) to the fitted mean; mean-vfe does not change while the job runs
        ms = measure_latency(page, "mean-vfe", lambda: _click_optimise(page), timeout=FIT_TIMEOUT_MS,
                             from_last_input=True)
        start = page.evaluate(_JS_LAST_START, True)
        text = _wait_done(page)
        if cds_length(page, "inducing-fitted") == 0:
            raise RuntimeError("mean-vfe changed but no fitted inducing inputs are shown")
        last = wait_quiet(page)
        if k >= warmup:
            out["ms"].append(ms), out["all_ms"].append(max(last - start, ms)), out["nudge_ms"].append(nudge)
            fit_s = _fit_seconds(text)
            if fit_s is not None:
                out["server_fit_ms"].append(1000 * fit_s)
    return out


# --- report ------------------------------------------------------------------------------------

def _fmt(v, unit):
    return f"{v:.0f}" if unit == "ms" else f"{v:.2f}"


def _row(name, M, values, target=None, unit="ms"):
    stats = summarise(values)
    target_text = f"< {target:g} {unit}" if target is not None else ""
    if stats["n"] == 0:
        return f"| {name} | {M} | 0 | - | - | - | {target_text} | - |"
    met = "" if target is None else ("yes" if stats["median"] < target else "**no**")
    f = lambda v: _fmt(v, unit)  # noqa: E731
    return (f"| {name} | {M} | {stats['n']} | {f(stats['median'])} | {f(stats['q1'])} - {f(stats['q3'])} | "
            f"{f(stats['min'])} - {f(stats['max'])} | {target_text} | {met} |")


def report_markdown(report):
    lines = [f"Command: `{report['command']}`", "",
             f"Machine: {report['cpus']} CPUs, {report['platform']}; Chromium {report.get('chromium')}; "
             f"bokeh {report['bokeh']}, panel {report['panel']}; NUMBA_CACHE_DIR={report['numba_cache_dir']}",
             f"Load average (1, 5, 15 min): start {report['load_start']}, end {report['load_end']}"
             + (f"; per phase: {report['load_phases']}" if report.get("load_phases") else ""), "",
             "| measurement | M | n | median | quartiles | min - max | target | median met |",
             "| --- | --- | --- | --- | --- | --- | --- | --- |"]
    cold = report.get("cold")
    if cold and cold["total_s"]:
        lines.append(_row("cold start -> first rendered plot (s)", 15, cold["total_s"], TARGETS_MS["cold"] / 1000, "s"))
        lines.append(_row("  of which: server listening (s)", 15, cold["listening_s"], unit="s"))
        lines.append(_row("  of which: page first byte (s)", 15, cold["first_byte_s"], unit="s"))
        lines.append(_row("  then: every chart of the page rendered (s)", 15, cold["all_views_s"], unit="s"))
    for M, r in report["by_M"].items():
        if "slider" in r:
            lines.append(_row("slider release -> mean-vfe (ms)", M, r["slider"]["ms"], TARGETS_MS["slider"]))
            lines.append(_row("  ... -> last update message (ms)", M, r["slider"]["all_ms"]))
        if "drag" in r:
            lines.append(_row("drag release -> mean-vfe (ms)", M, r["drag"]["ms"], TARGETS_MS["drag"]))
            lines.append(_row("  ... -> last update message (ms)", M, r["drag"]["all_ms"]))
        if "refit" in r:
            lines.append(_row("Optimise click -> fitted mean-vfe (ms)", M, r["refit"]["ms"], TARGETS_MS["refit"]))
            lines.append(_row("  server fit time, #job-status (ms)", M, r["refit"]["server_fit_ms"]))
    notes = []
    if cold:
        notes.append(f"Cold start: the throwaway start (fills numba's cache) took {cold['throwaway_s']:.2f} s; "
                     f"numba cache files: {cold['cache_files_before']} before it, "
                     f"{cold['cache_files_after_throwaway']} after it; files written during the timed starts: "
                     f"{cold['cache_written_when_timed']} (all 0 = the cache was warm).")
    for M, r in report["by_M"].items():
        if "drag" in r and r["drag"]["missed"]:
            notes.append(f"M={M}: {r['drag']['missed']} drag(s) picked up no inducing input and were repeated.")
        if "refit" in r:
            nudge = summarise(r["refit"]["nudge_ms"]).get("median", float("nan"))
            notes.append(f"M={M}: initial fit from the defaults {r['refit']['initial_fit_s']:.2f} s in the page "
                         f"(server {r['refit']['initial_fit_server_s']} s); the noise nudges before each timed "
                         f"fit re-evaluated in a median {nudge:.0f} ms.")
    if report.get("problems"):
        notes.append("Problems: " + "; ".join(report["problems"]))
    return "\n".join(lines + [""] + [f"* {n}" for n in notes])


# --- main --------------------------------------------------------------------------------------

def measure_page(browser, server, M, args, report):
    context, page = new_page(browser)
    errors = ConsoleErrors(page, ignore=("favicon",))
    r = report["by_M"][M] = {}
    try:
        open_lab(page, f"{server.url}?M={M}", M)
        report["load_phases"].append((f"M={M} start", load_average()))
        r["slider"] = measure_slider(page, args.reps, args.warmup)
        log(f"M={M} slider release -> mean-vfe: {summarise(r['slider']['ms'])}")
        r["drag"] = measure_drag(page, args.reps, args.warmup)
        log(f"M={M} drag release -> mean-vfe: {summarise(r['drag']['ms'])}")
        if args.fit_reps > 0:
            r["refit"] = measure_refit(page, args.fit_reps, min(args.warmup, 1))
            log(f"M={M} Optimise -> fitted mean-vfe: {summarise(r['refit']['ms'])}; "
                f"server fit: {summarise(r['refit']['server_fit_ms'])}")
    finally:
        report["load_phases"].append((f"M={M} end", load_average()))
        report["problems"].extend(f"M={M} browser: {p}" for p in errors.problems)
        context.close()


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--reps", type=int, default=30, help="timed slider changes and drags per M (default 30)")
    parser.add_argument("--warmup", type=int, default=3, help="untimed repetitions first (default 3; fits: 1)")
    parser.add_argument("--M", type=int, action="append", help="inducing inputs; repeat (default: 15 and 50)")
    parser.add_argument("--cold-reps", type=int, default=3, help="timed cold starts (default 3; 0 skips)")
    parser.add_argument("--fit-reps", type=int, default=8,
                        help="timed warm re-optimisations per M (default 8; 0 skips)")
    parser.add_argument("--json", help="also write every number to this JSON file")
    parser.add_argument("--chromium", default=os.environ.get("CHROMIUM", "/usr/bin/chromium"))
    args = parser.parse_args(argv)
    Ms = args.M or [15, 50]

    import bokeh
    import panel
    from playwright.sync_api import sync_playwright

    numba_cache_dir()
    report = {"command": " ".join(["python", "tests/benchmarks/dashboard_latency.py", *sys.argv[1:]]),
              "cpus": os.cpu_count(), "platform": platform.platform(), "bokeh": bokeh.__version__,
              "panel": panel.__version__, "numba_cache_dir": os.environ["NUMBA_CACHE_DIR"],
              "load_start": load_average(), "load_phases": [], "by_M": {}, "problems": []}
    log(f"load average {report['load_start']}; NUMBA_CACHE_DIR={report['numba_cache_dir']}")
    status = 0
    log_dir = tempfile.mkdtemp(prefix="gpx-latency-")
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=args.chromium, headless=True, args=CHROMIUM_ARGS)
        report["chromium"] = browser.version
        try:
            if args.cold_reps > 0:
                report["cold"] = measure_cold(browser, args.cold_reps, log_dir)
                report["load_phases"].append(("after cold starts", load_average()))
            server = Server(log_dir).start()
            try:
                server.wait_listening(timeout=120)
                for M in Ms:
                    try:
                        measure_page(browser, server, M, args, report)
                    except Exception as err:  # noqa: BLE001 - report what was measured so far
                        status = 1
                        report["problems"].append(f"M={M}: {type(err).__name__}: {err}")
                        log(f"M={M} failed: {type(err).__name__}: {err}")
                tracebacks = server.log_text().count("Traceback")
                if tracebacks:
                    status = 1
                    report["problems"].append(f"{tracebacks} Traceback(s) in the server log {server.log_path}")
            finally:
                server.stop()
        except Exception as err:  # noqa: BLE001
            status = 1
            report["problems"].append(f"{type(err).__name__}: {err}")
            log(f"failed: {type(err).__name__}: {err}")
        finally:
            browser.close()
    report["load_end"] = load_average()
    markdown = report_markdown(report)
    print()
    print(markdown)
    if args.json:
        report["markdown"] = markdown
        pathlib.Path(args.json).write_text(json.dumps(report, indent=1, default=str))
        log(f"wrote {args.json}")
    if status == 0:
        shutil.rmtree(log_dir, ignore_errors=True)
    else:
        log(f"server logs kept in {log_dir}")
    return status


if __name__ == "__main__":
    sys.exit(main())
