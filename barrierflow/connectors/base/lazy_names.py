"""The names a package face offers, each loaded from its module when first asked for (module
``__getattr__``), so that importing the face loads no connector and no client library: an
executor that reads a sequence never loads pyarrow. Performs no I/O."""

from __future__ import annotations

import importlib
from typing import Any


class LazyNames:
    """``names``: public name -> the module that defines it."""

    def __init__(self, package: str, names: dict[str, str]) -> None:
        self._package = package
        self._names = names

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
