"""Deprecated aliases for the module paths of the flat layout (before the sub-packages), kept
for one release: ``import gpexplorer.linearized_experiments`` still works, with a
``DeprecationWarning`` naming the new path. Only the names below are answered; nothing else
in the import system is touched.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.util
import sys
import warnings

#: old module path -> where it lives now
MOVED = {
    "gpexplorer.comparison": "gpexplorer.sparse.comparison",
    "gpexplorer.joint_fit": "gpexplorer.sparse.joint_fit",
    "gpexplorer.studies": "gpexplorer.sparse.studies",
    "gpexplorer.diagnostics": "gpexplorer.sparse.diagnostics",
    "gpexplorer.forward_models": "gpexplorer.likelihoods.forward_models",
    "gpexplorer.expressions": "gpexplorer.likelihoods.expressions",
    "gpexplorer.linearization": "gpexplorer.linearized.linearization",
    "gpexplorer.gauss_newton": "gpexplorer.linearized.gauss_newton",
    "gpexplorer.posterior_linearization": "gpexplorer.linearized.fixed_point",
    "gpexplorer.linearized_learning": "gpexplorer.linearized.learning",
    "gpexplorer.free_energy_profile": "gpexplorer.linearized.free_energy_profile",
    "gpexplorer.kitchen_sinks": "gpexplorer.linearized.kitchen_sinks",
    "gpexplorer.kitchen_sinks_algebra": "gpexplorer.linearized.kitchen_sinks_algebra",
    "gpexplorer.kitchen_sinks_checks": "gpexplorer.linearized.kitchen_sinks_checks",
    "gpexplorer.kitchen_sinks_learning": "gpexplorer.linearized.kitchen_sinks_learning",
    "gpexplorer.seismic": "gpexplorer.datasets.seismic",
    "gpexplorer.linearized_experiments": "gpexplorer.experiments.linearized_papers",
    "gpexplorer.reproduce": "gpexplorer.experiments.reproduce",
}


class MovedModuleFinder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Answers only the old paths in :data:`MOVED`, with the module at its new path."""

    def find_spec(self, fullname, path=None, target=None):
        if fullname in MOVED:
            return importlib.util.spec_from_loader(fullname, self)
        return None

    def create_module(self, spec):
        warnings.warn(f"{spec.name} moved to {MOVED[spec.name]}; the old path goes in the next release",
                      DeprecationWarning, stacklevel=2)
        return importlib.import_module(MOVED[spec.name])

    def exec_module(self, module):
        pass


def install():
    """Add the finder once (idempotent)."""
    if not any(isinstance(f, MovedModuleFinder) for f in sys.meta_path):
        sys.meta_path.append(MovedModuleFinder())
