"""A job's Python dependencies checked before Spark starts: every file, archive, requirements
file and package directory named exists (refused naming the option and the path), and the
requirements resolve: pip on the driver, offline from the package directory when one is given,
so that a requirement that cannot be met fails the job now, with pip's message, rather than
with a ``ModuleNotFoundError`` on an executor minutes later.

**I/O:** reads the file system; runs pip in a subprocess when requirements are declared.
"""

from __future__ import annotations

import dataclasses
import logging
import os
import subprocess
import sys

from barrierflow.cluster.python_dependencies import PythonArchive, PythonDependencies
from barrierflow.errors import ConfigurationError

log = logging.getLogger("barrierflow")

_PIP_TIMEOUT_S = 600


def _existing(path: str, option: str, what: str, directory: bool = False) -> str:
    """``path`` made absolute (relative paths are the client's, as in PyFlink), or a
    ConfigurationError naming the option and the path."""
    absolute = os.path.abspath(os.path.expanduser(path))
    exists = os.path.isdir(absolute) if directory else os.path.exists(absolute)
    if not exists:
        kind = "directory" if directory else "file"
        raise ConfigurationError(
            f"{option}: the {what} {path!r} does not exist (no {kind} at {absolute}); "
            "fix the path given to the environment or the configuration"
        )
    return absolute


def checked_dependencies(deps: PythonDependencies) -> PythonDependencies:
    """``deps`` with absolute paths, each of which exists; the first missing one refused."""
    if deps.is_empty():
        return deps
    files = tuple(
        _existing(f, "python.files (add_python_file)", "Python file or directory")
        for f in deps.files
    )
    archives = tuple(
        PythonArchive(
            _existing(a.path, "python.archives (add_python_archive)", "archive"), a.target_dir
        )
        for a in deps.archives
    )
    requirements = cache = None
    if deps.requirements is not None:
        option = "python.requirements (set_python_requirements)"
        requirements = _existing(deps.requirements, option, "requirements file")
        if deps.requirements_cache is not None:
            cache = _existing(
                deps.requirements_cache, option, "requirements cache directory", directory=True
            )
    return dataclasses.replace(
        deps,
        files=files,
        archives=archives,
        requirements=requirements,
        requirements_cache=cache,
    )


def pip_install_command(
    requirements: str, cache: str | None, python: str = sys.executable
) -> list[str]:
    """pip installing ``requirements``: from the packages in ``cache`` alone when given (a
    cluster without network, as PyFlink's requirements cache), else from the package index."""
    command = [python, "-m", "pip", "install", "--no-input", "--disable-pip-version-check"]
    command += ["-r", requirements]
    if cache is not None:
        command += ["--no-index", "--find-links", cache]
    return command


def resolve_requirements(deps: PythonDependencies) -> None:
    """Has pip resolve the requirements on the driver without installing anything; a
    requirement that cannot be met raises a ConfigurationError with pip's message."""
    if deps.requirements is None:
        return
    command = pip_install_command(deps.requirements, deps.requirements_cache)
    command += ["--dry-run", "--ignore-installed", "--quiet"]
    log.info("Resolving the job's Python requirements %s", deps.requirements)
    try:
        done = subprocess.run(
            command, capture_output=True, text=True, timeout=_PIP_TIMEOUT_S, check=False
        )
    except subprocess.TimeoutExpired as e:
        raise ConfigurationError(
            f"python.requirements: pip did not resolve {deps.requirements} within "
            f"{_PIP_TIMEOUT_S} s"
        ) from e
    if done.returncode != 0:
        source = deps.requirements_cache or "the package index"
        said = (done.stderr or done.stdout).strip()[-3000:]
        raise ConfigurationError(
            f"python.requirements: the requirements in {deps.requirements} cannot be "
            f"installed from {source}; the job did not start. pip said:\n{said}"
        )
