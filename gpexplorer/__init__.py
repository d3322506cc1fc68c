"""gpexplorer: approximate Gaussian-process inference you can see, touch and trust.

Sub-packages by system (imports point down this list): ``kernels`` and ``inducing`` ->
``covariances`` -> the inference families ``sparse``, ``linearized`` (and ``random_features``)
-> ``optimize`` -> ``models`` (the facade of every model class) -> ``experiments`` -> ``ui``.

``gpexplorer.notebook()`` prepares a Jupyter kernel to show the labs and
``gpexplorer.ui.plots`` offline (:func:`gpexplorer.ui.notebook.notebook`); Panel is imported
only when it is called.
"""

import importlib

__all__ = ["covariances", "datasets", "inducing", "kernels", "likelihoods", "metrics", "models"]
__version__ = "0.1.0"


def __getattr__(name):
    # Submodules load on first use (PEP 562): `gpexplorer serve` then starts the server
    # without first importing numba and scipy, which only the pages need.
    if name in __all__:
        return importlib.import_module(f"gpexplorer.{name}")
    if name == "notebook":  # a function, not a submodule; kept out of __all__ so `import *` skips Panel
        return importlib.import_module("gpexplorer.ui.notebook").notebook
    raise AttributeError(f"module 'gpexplorer' has no attribute {name!r}")
