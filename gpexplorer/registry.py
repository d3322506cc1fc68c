"""Registries of kernels, inducing features and likelihoods: name -> class, filled by ``register``.

Each registered class declares what a page needs to offer it (ARCHITECTURE.md, revision 3):
its ``label`` (the text a lab shows), its parameter specs (``parameter_specs``: bounds, transform
and a slider range, :class:`gpexplorer.parameters.Parameter`) and its capabilities (a
likelihood's ``kind``, a feature's ``editable`` attributes, a kernel's input requirements).
The labs build their choices, sliders and editors from the registries, so a class registered
from anywhere (a test, a notebook) appears in every page that can use it::

    @kernels.register
    class Cosine(Kernel):
        name, label = "cosine", "Cosine"
        ...

    with kernels.KERNELS.registered(Cosine):   # undone on exit (tests)
        ...
"""

from __future__ import annotations

import contextlib

__all__ = ["Registry"]


class Registry(dict):
    """name -> class, in registration order; ``register`` checks what a page relies on."""

    def __init__(self, what, base, entries=()):
        super().__init__()
        self.what, self.base = what, base
        for cls in entries:
            self.register(cls)

    def register(self, cls=None, *, name=None, replace=False):
        """Register ``cls`` under ``name`` (default: its ``name`` attribute); usable as a
        decorator, with or without arguments. Returns the class."""
        if cls is None:
            return lambda c: self.register(c, name=name, replace=replace)
        if not (isinstance(cls, type) and issubclass(cls, self.base)):
            raise ValueError(f"only {self.base.__name__} subclasses can be registered as {self.what}s; got {cls!r}")
        key = name or getattr(cls, "name", None)
        if not isinstance(key, str) or not key:
            raise ValueError(f"{cls.__name__} needs a registry name: set its class attribute name or pass name=")
        if not isinstance(getattr(cls, "label", None), str) or not cls.label:
            raise ValueError(f"{cls.__name__} needs a label (the text a page shows) to be registered as a {self.what}")
        if key in self and self[key] is not cls and not replace:
            raise ValueError(f"a {self.what} named {key!r} is registered already ({self[key].__name__}); "
                             "pass replace=True to replace it")
        self[key] = cls
        return cls

    def unregister(self, entry):
        """Remove a name or a class (every name it is registered under)."""
        keys = [entry] if isinstance(entry, str) else [k for k, c in self.items() if c is entry]
        if not keys or keys[0] not in self:
            raise ValueError(f"no {self.what} {entry!r} is registered")
        for key in keys:
            del self[key]

    @contextlib.contextmanager
    def registered(self, cls, *, name=None):
        """``cls`` registered for the duration of a ``with`` block (tests, notebooks)."""
        key = name or cls.name
        previous = self.get(key)
        self.register(cls, name=key, replace=True)
        try:
            yield cls
        finally:
            if previous is None:
                self.pop(key, None)
            else:
                self[key] = previous

    def name_of(self, obj):
        """The registry name of ``obj``'s class (or of a class); ValueError when not registered."""
        cls = obj if isinstance(obj, type) else type(obj)
        for key, c in self.items():
            if c is cls:
                return key
        raise ValueError(f"{cls.__name__} is not a registered {self.what}")

    def choices(self, keep=None):
        """{label: name} of the registered classes (those ``keep(cls)`` accepts): a selector's objects."""
        return {cls.label: key for key, cls in self.items() if keep is None or keep(cls)}
