"""Prints, as JSON, the public names of every module of PyFlink's DataStream side.

Run by the Python of a PyFlink installation (``PYFLINK_PYTHON``); it imports only
``pyflink.common`` and ``pyflink.datastream`` and their submodules, found with ``pkgutil``
(the Table API, ``pyflink.table``, is out of scope). A module that fails to import (one that
would need a running JVM) is reported with its error instead of its names. A module's public
names are its ``__all__``; without one, the public classes and functions it defines and its
upper-case constants.
"""

from __future__ import annotations

import importlib
import inspect
import json
import pkgutil
import sys
from types import ModuleType

ROOTS = ("pyflink.common", "pyflink.datastream")


def public_names(module: ModuleType) -> list[str]:
    if hasattr(module, "__all__"):
        return sorted(set(module.__all__))
    names = []
    for name, value in vars(module).items():
        if name.startswith("_"):
            continue
        defined_here = getattr(value, "__module__", None) == module.__name__
        a_definition = (inspect.isclass(value) or inspect.isfunction(value)) and defined_here
        a_constant = name.isupper() and isinstance(value, int | float | str | bytes)
        if a_definition or a_constant:
            names.append(name)
    return sorted(names)


def main() -> None:
    import pyflink.version

    modules: dict[str, list[str]] = {}
    not_importable: dict[str, str] = {}
    for root in ROOTS:
        package = importlib.import_module(root)
        found = [root] + [m.name for m in pkgutil.walk_packages(package.__path__, root + ".")]
        for name in found:
            if ".tests" in name:  # PyFlink's own tests, where a source checkout has them
                continue
            try:
                modules[name] = public_names(importlib.import_module(name))
            except Exception as e:  # noqa: BLE001 - reported, with its error
                not_importable[name] = f"{type(e).__name__}: {e}"
    json.dump(
        {
            "pyflink": pyflink.version.__version__,
            "modules": dict(sorted(modules.items())),
            "not_importable": dict(sorted(not_importable.items())),
        },
        sys.stdout,
        indent=1,
        sort_keys=False,
    )
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
