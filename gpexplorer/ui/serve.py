"""Run ``panel serve`` in this process (the launcher behind ``gpexplorer serve``).

In-process rather than a child interpreter: the child's start-up added to the dashboards' cold
start (server listening after 2.0-2.2 s instead of 1.5-2.0 s in interleaved runs of
``tests/benchmarks/dashboard_latency.py``).

Tornado parses at most 1,000 query arguments and answers a longer query with a bare "400 Bad
Request" before any page code runs (issue 24 defect 12: a URL of 1,000-2,000 keys). The request
line is already bounded by Tornado's header limit (64 KiB, which Bokeh keeps), so at most about
65,000 arguments can arrive at all: :func:`allow_every_query_that_fits` lifts the count limit
above that, parsing the largest such query takes about 50 ms, and the labs then refuse every
key that is not one of their settings with a badge (``gpexplorer/ui/url_state.py``)."""

from __future__ import annotations

import os
import sys

#: above the most '&'-separated fields a request line within Tornado's 64 KiB header limit holds
MAX_QUERY_ARGUMENTS = 70_000


def allow_every_query_that_fits() -> bool:
    """Raise Tornado's limit on query arguments to :data:`MAX_QUERY_ARGUMENTS` (a global setting,
    also for url-encoded bodies, which no gpexplorer page takes); False on a Tornado without it."""
    from tornado import httputil

    if not hasattr(httputil, "ParseUrlEncodedConfig"):
        return False  # Tornado < 6.5.8 parses any number of query arguments
    httputil.set_parse_body_config(httputil.ParseBodyConfig(
        urlencoded=httputil.ParseUrlEncodedConfig(max_arguments=MAX_QUERY_ARGUMENTS)))
    return True


def skip_document_validation() -> None:
    """Bokeh checks every model of every new session's document (``Document.validate``) unless
    ``BOKEH_VALIDATE_DOC`` is false: 0.33-0.44 s of the 1.3 s a sparse-lab session costs the
    server, measured in-process. The pages' documents are validated once in the test suite
    instead (``tests/ui/test_document_validation.py``); a user's own setting is kept."""
    os.environ.setdefault("BOKEH_VALIDATE_DOC", "false")


def run_panel_serve(arguments: list[str], prepare=(), prepare_sessions: int = 30) -> None:
    """``panel serve *arguments``; returns when the server stops (Ctrl-C included).

    On a fresh install (numba's cache empty) a warm-up starts first in a background process;
    the pages show its progress until it is done (``gpexplorer.ui.preparing``). Each link of
    ``prepare`` (``"page"`` or ``"page?query"``) has ``prepare_sessions`` sessions built ahead
    (``gpexplorer.ui.session_pool``)."""
    from panel.command import main as panel_main

    from gpexplorer.ui import warmup

    if warmup.start_in_background() is not None:
        print("gpexplorer: first run on this install: compiling the numerical kernels in the background "
              "(about 15-30 s, once); the pages show 'preparing (first run only)' until it is done", flush=True)

    allow_every_query_that_fits()
    skip_document_validation()
    if prepare:
        from gpexplorer.ui import session_pool

        session_pool.install(prepare, prepare_sessions)
    sys.argv = ["panel", "serve", *arguments]
    try:
        panel_main()
    except KeyboardInterrupt:
        pass
