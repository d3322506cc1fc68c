"""numba presets shared by every jitted leaf.

``njit_cached`` compiles once and keeps the machine code on disk (``__pycache__`` or
``NUMBA_CACHE_DIR``) so a dashboard cold-starts without recompiling. ``fastmath`` is off
near Cholesky factors and log-determinants (reassociation there costs accuracy that the
gradient checks would catch); the kernel loops allow only the harmless flags.
"""

import numba

njit_cached = numba.njit(cache=True, nogil=True, error_model="numpy")

#: kernel value/gradient loops only: allow FMA contraction, reciprocal division and the
#: fast exp/log paths, but never reassociation (the reductions keep their order).
njit_kernel_loop = numba.njit(cache=True, nogil=True, error_model="numpy",
                              fastmath={"contract", "arcp", "afn"})
