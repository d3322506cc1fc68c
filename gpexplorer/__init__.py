"""gpexplorer: approximate Gaussian-process inference you can see, touch and trust."""

import importlib

__all__ = ["datasets", "kernels", "metrics", "models"]
__version__ = "0.1.0"


def __getattr__(name):
    # Submodules load on first use (PEP 562): `gpexplorer serve` then starts the server
    # without first importing numba and scipy, which only the pages need.
    if name in __all__:
        return importlib.import_module(f"gpexplorer.{name}")
    raise AttributeError(f"module 'gpexplorer' has no attribute {name!r}")
