"""Connectors whose client library is an optional extra import it here, when first used, so
that a missing library is reported with the extra that installs it. Performs no I/O."""

from __future__ import annotations

import importlib
from types import ModuleType


def require(module: str, extra: str, connector: str) -> ModuleType:
    try:
        return importlib.import_module(module)
    except ImportError as e:
        raise ImportError(
            f"{connector} needs the Python package {module!r}, which is not installed: "
            f"pip install 'barrierflow[{extra}]'"
        ) from e
