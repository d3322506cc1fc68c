"""Shared test configuration.

``tests/`` is on sys.path (pyproject: pythonpath) so ``reference`` (the dense numpy reference
implementation) imports directly. Browser fixtures for the dashboards live in tests/ui/.
"""

import os

# numba compiles each jitted leaf once per process; keep the on-disk cache in the repo's
# __pycache__ unless the environment says otherwise
os.environ.setdefault("NUMBA_CACHE_DIR", os.path.join(os.path.dirname(os.path.dirname(__file__)), ".numba_cache"))
