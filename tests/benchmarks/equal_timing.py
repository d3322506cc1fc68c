"""Equal work for every side of a comparison: the one timing helper of the benchmarks.

Every benchmark that compares sides (gpexplorer against GPy, GPflow, GPyTorch, the pre-move
checkout, the original linearizedGP; feature types against inducing points; two fit methods;
the machine's GEMM rate as a reference) times them with :func:`alternate`:

* **the same number of timed calls per side** (``calls``), never "as many as fit in a block of
  time": a time-sized block gives the faster side far more samples, and the minimum of many
  samples approaches idle speed on a loaded machine while the minimum of a few does not, which
  inflates the faster side's ratio (issue 25, item 8);
* **single calls, alternating**: round k calls every side once, in a fixed cyclic order (ours,
  peer, ours, peer, ...), so a change of machine load falls on every side alike;
* **min and median per side** (:func:`summary`), and ratios of both (:func:`ratios`).

A *side* is a callable ``side(i) -> milliseconds`` that makes one call with index ``i`` (the
index nudges the parameters so that no side answers from a cache) and returns the wall time of
that call alone, measured where the call runs: :func:`local` wraps a function of this process;
a worker process (``sparse_peers.py``) times its own call and the parent passes the time on, so
the pipe round trip is not counted. Warm-up calls (numba compilation, tf.function tracing) are
made first and never timed. The garbage collector is paused during the rounds and run between
rounds every ``collect_every`` rounds (untimed).

Only the standard library is imported: the peers' workers, in other venvs, import it too.
"""

from __future__ import annotations

import gc
import os
import statistics
import time

__all__ = ["alternate", "calls_for", "compare", "local", "loadavg", "probe", "ratios", "summary"]


def local(fn):
    """A side for ``fn(i)`` run in this process: ``side(i)`` times one call, in ms."""
    def side(i):
        t0 = time.perf_counter()
        fn(i)
        return 1e3 * (time.perf_counter() - t0)

    side.call = fn
    return side


def alternate(sides, calls, warmup=2, first=0, collect_every=25, log=None):
    """``calls`` timed single calls per side, alternating: round k (k = 0 .. calls - 1) calls every
    side once with index k, in the fixed cyclic order of ``sides`` starting at ``first``.

    ``sides``: {name: side(i) -> ms}. ``warmup`` untimed calls per side first (negative indices).
    Returns {name: [ms of call 0, ..., ms of call calls - 1]}: every list has ``calls`` entries.
    """
    names = list(sides)
    if not names or calls < 1:
        raise ValueError("alternate() needs at least one side and one call")
    order = names[first % len(names):] + names[:first % len(names)]
    for w in range(warmup):
        for name in order:
            sides[name](-1 - w)
    times = {name: [] for name in names}
    enabled = gc.isenabled()
    gc.collect()
    gc.disable()
    try:
        for k in range(calls):
            if k and collect_every and k % collect_every == 0:
                gc.collect()
            for name in order:
                times[name].append(float(sides[name](k)))
            if log is not None and calls >= 10 and (k + 1) % max(1, calls // 4) == 0:
                log(f"#   {k + 1}/{calls} rounds")
    finally:
        if enabled:
            gc.enable()
    return times


def calls_for(probe_ms, budget_seconds, lo=5, hi=500):
    """How many calls per side fit ``budget_seconds`` of rounds, from one untimed probe call per
    side (``probe_ms``: {name: ms}): budget / (sum of the probes), clamped to [lo, hi]. The count is
    the same for every side; it only decides how long the comparison runs."""
    round_ms = max(sum(probe_ms.values()), 1e-6)
    return int(min(hi, max(lo, budget_seconds * 1e3 // round_ms)))


def probe(sides, warmup=2):
    """Warm every side up (untimed) and time one more call of each: {name: ms} for :func:`calls_for`."""
    for w in range(warmup):
        for side in sides.values():
            side(-1 - w)
    return {name: side(-1 - warmup) for name, side in sides.items()}


def compare(sides, calls=None, budget_seconds=5.0, min_calls=5, max_calls=500, log=None):
    """Warm up, choose the number of calls (``calls``, or :func:`calls_for` from one probe call per
    side) and :func:`alternate`. Returns {"calls", "times": {name: [ms]}, "sides": {name: summary}}."""
    probe_ms = probe(sides)
    calls = calls or calls_for(probe_ms, budget_seconds, min_calls, max_calls)
    times = alternate(sides, calls, warmup=0, log=log)
    return {"calls": calls, "times": times, "sides": {name: summary(t) for name, t in times.items()}}


def summary(times):
    """min and median of one side's timings (same unit), and how many."""
    return {"min": min(times), "median": statistics.median(times), "n": len(times)}


def ratios(times, slow, fast):
    """How many times faster ``fast`` is than ``slow``: by minima, by medians, and the median of the
    per-round ratios (round k's call of ``slow`` over round k's call of ``fast``)."""
    a, b = times[slow], times[fast]
    return {"min": min(a) / min(b), "median": statistics.median(a) / statistics.median(b),
            "paired_median": statistics.median(x / y for x, y in zip(a, b))}


def loadavg():
    """The 1/5/15-minute load averages, or None where the system has none."""
    try:
        return list(os.getloadavg())
    except (AttributeError, OSError):
        return None
