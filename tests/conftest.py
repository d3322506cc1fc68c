"""Shared test configuration.

``tests/`` is on sys.path (pyproject: pythonpath) so ``reference`` (the dense numpy reference
implementation) imports directly. Browser fixtures for the dashboards live in tests/ui/.
"""

import os

# numba compiles each jitted leaf once per process; keep the on-disk cache in the repo's
# __pycache__ unless the environment says otherwise
os.environ.setdefault("NUMBA_CACHE_DIR", os.path.join(os.path.dirname(os.path.dirname(__file__)), ".numba_cache"))


def pytest_sessionstart(session):
    """Fill numba's cache once, in parallel processes, before any test: the browser tests' servers
    would otherwise each compile on their own (and ``gpexplorer serve`` would start a background
    warm-up of its own on an empty cache). Skipped when already warm (the marker is there)."""
    if os.environ.get("GPX_SKIP_WARMUP"):
        return
    from gpexplorer.ui import warmup

    if not warmup.is_warm():
        warmup.main(quiet=True)
