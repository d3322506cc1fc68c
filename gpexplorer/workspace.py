"""Work arrays kept between evaluations of one model while their shapes stay the same.

An evaluation that allocates its [M, N] temporaries afresh pays for their pages faulting in on
every call (large arrays come from fresh mappings; on this kind of virtual machine that costs as
much as the arithmetic on them). A model keeps one :class:`Workspace` and passes it to the
objective, which takes its arrays with :func:`borrow` and returns them with :func:`give_back`.
Nothing an objective returns may refer to these arrays. A call that finds the workspace in use
by another thread allocates its own arrays instead of waiting.
"""

from __future__ import annotations

import threading

import numpy as np


class Workspace:
    """Named work arrays (see the module docstring); :meth:`clear` frees them."""

    def __init__(self):
        self._arrays = {}
        self._lock = threading.Lock()

    @property
    def nbytes(self):
        return sum(a.nbytes for a in self._arrays.values() if isinstance(a, np.ndarray))

    def clear(self):
        with self._lock:
            self._arrays.clear()

    def __deepcopy__(self, memo):  # a copied model gets its own, empty workspace
        return Workspace()


def borrow(workspace):
    """The workspace's arrays (a dict), locked until :func:`give_back`, or a fresh dict if the
    workspace is None or busy."""
    if workspace is not None and workspace._lock.acquire(blocking=False):
        return workspace._arrays
    return {}


def give_back(workspace, arrays):
    if workspace is not None and arrays is workspace._arrays:
        workspace._lock.release()


def array(arrays, name, shape):
    """``arrays[name]`` if it has ``shape``, else a new uninitialised array stored under ``name``."""
    a = arrays.get(name)
    if a is None or a.shape != shape:
        a = arrays[name] = np.empty(shape)
    return a


__all__ = ["Workspace", "array", "borrow", "give_back"]
