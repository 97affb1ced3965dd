"""A job's Python dependencies as Flink's ``python.*`` options declare them: files (modules,
packages, directories, zips) importable by its functions, a requirements file with an optional
directory of packages to install from offline, archives unpacked beside the workers, and the
workers' interpreter. The environment records them (``env.add_python_file``...); submission
checks them (``client/python_dependency_checks.py``) and Spark ships them
(``cluster/spark/python_dependency_shipping.py``).

Performs no I/O.
"""

from __future__ import annotations

import posixpath
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

# Flink's PythonDependencyUtils delimiters: between entries, and between an entry's parameters
FILE_DELIMITER = ","
PARAM_DELIMITER = "#"


@dataclass(frozen=True)
class PythonArchive:
    path: str
    target_dir: str  # the directory it is unpacked into, in the workers' working directory


@dataclass(frozen=True)
class PythonDependencies:
    files: tuple[str, ...] = ()
    requirements: str | None = None
    requirements_cache: str | None = None  # installed from these packages alone (no index)
    archives: tuple[PythonArchive, ...] = ()
    executable: str | None = None

    def is_empty(self) -> bool:
        return self == PythonDependencies()


NO_DEPENDENCIES = PythonDependencies()


def _entries(value: str | None) -> list[str]:
    return [e.strip() for e in (value or "").split(FILE_DELIMITER) if e.strip()]


def python_dependencies(get: Callable[[str], Any]) -> PythonDependencies:
    """The dependencies the ``python.*`` options name; ``get`` reads an option (None: unset).
    An archive's directory defaults to its file name, as in Flink."""
    requirements = cache = None
    if get("python.requirements"):
        requirements, _, cache = str(get("python.requirements")).partition(PARAM_DELIMITER)
        requirements, cache = requirements.strip(), cache.strip() or None
    archives = []
    for entry in _entries(get("python.archives")):
        path, _, target = entry.partition(PARAM_DELIMITER)
        path = path.strip()
        archives.append(PythonArchive(path, target.strip() or posixpath.basename(path)))
    return PythonDependencies(
        files=tuple(_entries(get("python.files"))),
        requirements=requirements or None,
        requirements_cache=cache,
        archives=tuple(archives),
        executable=get("python.executable") or None,
    )
