"""Run ``panel serve`` in this process (the launcher behind ``gpexplorer serve``).

In-process rather than a child interpreter: the child's start-up added to the dashboards' cold
start (server listening after 2.0-2.2 s instead of 1.5-2.0 s in interleaved runs of
``tests/benchmarks/dashboard_latency.py``)."""

from __future__ import annotations

import sys


def run_panel_serve(arguments: list[str]) -> None:
    """``panel serve *arguments``; returns when the server stops (Ctrl-C included).

    On a fresh install (numba's cache empty) a warm-up starts first in a background process;
    the pages show its progress until it is done (``gpexplorer.ui.preparing``)."""
    from panel.command import main as panel_main

    from gpexplorer import warmup

    if warmup.start_in_background() is not None:
        print("gpexplorer: first run on this install: compiling the numerical kernels in the background "
              "(about 15-30 s, once); the pages show 'preparing (first run only)' until it is done", flush=True)

    sys.argv = ["panel", "serve", *arguments]
    try:
        panel_main()
    except KeyboardInterrupt:
        pass
