"""Run ``panel serve`` in this process (the launcher behind ``gpexplorer serve``).

In-process rather than a child interpreter: the child's start-up added to the dashboards' cold
start (server listening after 2.0-2.2 s instead of 1.5-2.0 s in interleaved runs of
``tests/benchmarks/dashboard_latency.py``)."""

from __future__ import annotations

import sys


def run_panel_serve(arguments: list[str]) -> None:
    """``panel serve *arguments``; returns when the server stops (Ctrl-C included)."""
    from panel.command import main as panel_main

    sys.argv = ["panel", "serve", *arguments]
    try:
        panel_main()
    except KeyboardInterrupt:
        pass
