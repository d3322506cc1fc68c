"""Independent experiment cells run through ``dask.distributed`` (issue 15: the thesis §4.5 grid
is the project's first sweep a user will want to run on more than one machine).

dask is an optional dependency (the ``sweeps`` extra); it is imported only inside
:func:`run_cells`, so ``import gpexplorer`` never needs it.

* By default a ``LocalCluster`` with one single-threaded worker per core (the workers'
  BLAS is single-threaded too: distributed sets ``OMP_NUM_THREADS=1`` and friends for them).
* ``scheduler="tcp://host:8786"`` sends the cells to an existing cluster instead (start one
  with ``dask scheduler`` and ``dask worker tcp://host:8786 --nthreads 1`` on each machine;
  every worker needs gpexplorer installed).

Shared inputs (the data split, fixed hyperparameters) are scattered once to every worker;
each cell is one task, submitted most expensive first so the long cells do not finish last;
results come back as they complete (a progress bar line with each cell's summary) and are
returned in the cells' order.
"""

from __future__ import annotations

import csv
import json
import os
import time
from pathlib import Path

__all__ = ["INSTALL_HINT", "print_progress", "progress_bar", "write_rows", "require_dask", "run_cells"]

INSTALL_HINT = "pip install -e '.[sweeps]'"


def require_dask():
    """The ``dask.distributed`` module, or an ImportError that says how to install it."""
    try:
        import dask.distributed as dd
    except ImportError as err:
        raise ImportError("this sweep runs its cells through dask.distributed, which is not installed; "
                          f"install the optional extra with: {INSTALL_HINT}") from err
    return dd


def progress_bar(done, total, width=24):
    """``[#########...............]  9/24`` (one line per finished cell, so it also reads in a log)."""
    filled = int(round(width * done / max(total, 1)))
    return f"[{'#' * filled}{'.' * (width - filled)}] {done:>{len(str(total))}}/{total}"


def print_progress(done, total, cell, result, seconds):
    eta = seconds / done * (total - done) if done else float("nan")
    print(f"  {progress_bar(done, total)} {seconds:>5.0f} s, ~{eta:.0f} s left  {result.get('summary', cell)}",
          flush=True)


def run_cells(func, cells, shared=None, scheduler=None, n_workers=None, processes=True, cost=None,
              progress=print_progress):
    """``[func(cell, **shared) for cell in cells]``, computed on a dask cluster.

    ``cells``: a list of picklable arguments (dicts); ``func`` must be importable on the
    workers (a module-level function of an installed package). ``shared``: keyword arguments
    scattered once to every worker. ``scheduler``: address of an existing cluster, or None for
    a ``LocalCluster`` of ``n_workers`` (default: the machine's cores) single-threaded
    workers (``processes=False`` keeps them as threads of this process, for tests). ``cost``:
    cell -> a number; higher cost is submitted first. ``progress(done, total, cell, result,
    seconds)`` is called as each cell completes (None: silent). Returns (results, info) with
    info = {"scheduler", "workers", "seconds"}.
    """
    dd = require_dask()
    cells = list(cells)
    t0 = time.perf_counter()
    cluster = None
    if scheduler:
        client = dd.Client(scheduler)
    else:
        cluster = dd.LocalCluster(n_workers=int(n_workers or os.cpu_count() or 1), threads_per_worker=1,
                                  processes=processes, dashboard_address=":0")  # any free port
        client = dd.Client(cluster)
    try:
        info = {"scheduler": client.scheduler.address, "workers": len(client.scheduler_info()["workers"]),
                "dashboard": client.dashboard_link}
        if progress is not None:
            print(f"  dask: {info['workers']} worker(s) at {info['scheduler']}; dashboard {info['dashboard']}", flush=True)
        scattered = client.scatter(dict(shared or {}), broadcast=True) if shared else {}
        order = sorted(range(len(cells)), key=lambda i: -cost(cells[i])) if cost else list(range(len(cells)))
        futures = {}
        for rank, i in enumerate(order):
            fut = client.submit(func, cells[i], **scattered, pure=False, priority=len(order) - rank,
                                key=f"cell-{i}-{time.time_ns()}")
            futures[fut] = i
        results = [None] * len(cells)
        for done, fut in enumerate(dd.as_completed(list(futures)), start=1):
            i = futures[fut]
            results[i] = fut.result()
            if progress is not None:
                progress(done, len(cells), cells[i], results[i], time.perf_counter() - t0)
    finally:
        client.close()
        if cluster is not None:
            cluster.close()
    info["seconds"] = time.perf_counter() - t0
    return results, info


def write_rows(result, out, stem, columns):
    """``<stem>.csv`` (``result["rows"]``, one per cell, the given columns) and ``<stem>.json``
    (everything but ``files``) in folder ``out``; returns their paths."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    csv_path, json_path = out / f"{stem}.csv", out / f"{stem}.json"
    with open(csv_path, "w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=columns, extrasaction="ignore")
        w.writeheader()
        w.writerows(result["rows"])
    json_path.write_text(json.dumps({k: v for k, v in result.items() if k != "files"}, indent=1, default=float))
    return {"csv": str(csv_path), "json": str(json_path)}
