"""The names a package face offers, loaded when first asked for (module ``__getattr__``), and the
names that moved away from it, still given at their old path for one release with a
``DeprecationWarning`` that names the new one. Performs no I/O.

A face loads nothing until a name is used, so that importing it loads no connector, no client
library, no API: an executor that unpickles a user function or reads a sequence never loads
pyarrow or the JobMaster. A moved name is looked up at its new path each time it is used at its
old one, and never kept in the old face's namespace, so that every use warns and the old path
gives the very object of the new one.
"""

from __future__ import annotations

import importlib
import warnings
from collections.abc import Mapping
from typing import Any


class LazyNames:
    """``names``: public name -> the module that defines it."""

    def __init__(self, package: str, names: Mapping[str, str]) -> None:
        self._package = package
        self._names = dict(names)

    def get(self, name: str, namespace: dict[str, Any]) -> Any:
        """The value of ``name``, kept in the face's ``namespace`` so that the next access does
        not come here."""
        module = self._names.get(name)
        if module is None:
            raise AttributeError(f"module {self._package!r} has no attribute {name!r}")
        value = namespace[name] = getattr(importlib.import_module(module), name)
        return value

    def listing(self, namespace: dict[str, Any]) -> list[str]:
        return sorted([*namespace, *self._names])


class MovedNames:
    """``moved``: old name -> its new path, ``module.name`` (the name may differ: a deprecated
    alias). ``note`` ends every warning of the face, where the new paths need a word."""

    def __init__(self, module: str, moved: Mapping[str, str], note: str = "") -> None:
        self.module = module
        self._moved = dict(moved)
        self._note = note

    def __contains__(self, name: object) -> bool:
        return name in self._moved

    def names(self) -> list[str]:
        return sorted(self._moved)

    def new_path(self, name: str) -> str:
        return self._moved[name]

    def get(self, name: str) -> Any:
        """The object at ``name``'s new path, with a ``DeprecationWarning`` pointing at the
        code that asked (called from the old face's ``__getattr__``)."""
        new = self._moved.get(name)
        if new is None:
            raise AttributeError(f"module {self.module!r} has no attribute {name!r}")
        note = f" ({self._note})" if self._note else ""
        warnings.warn(
            f"{self.module}.{name} is deprecated: use {new}{note}",
            DeprecationWarning,
            stacklevel=3,
        )
        module, _, attribute = new.rpartition(".")
        return getattr(importlib.import_module(module), attribute)
