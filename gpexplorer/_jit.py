"""numba presets shared by every jitted leaf.

``njit_cached`` compiles once and keeps the machine code on disk (``__pycache__`` or
``NUMBA_CACHE_DIR``) so a dashboard cold-starts without recompiling. ``fastmath`` is left off
everywhere: reassociation near Cholesky factors and log-determinants costs accuracy that the
gradient checks would catch.
"""

import numba

njit_cached = numba.njit(cache=True, nogil=True, error_model="numpy")
