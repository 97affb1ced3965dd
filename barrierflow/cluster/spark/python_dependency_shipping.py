"""A job's Python dependencies shipped with Spark's own mechanisms: files through
``SparkContext.addPyFile`` (a directory zipped first), archives through ``addArchive`` (unpacked
in each executor's working directory, its files root), the requirements file and the package
directory to install from through ``addFile``, installed on the executors by
``python_worker_setup``; the workers' interpreter set on the job's own RDD.

Spark fetches what was added before a task of the job starts, on every executor, also one that
joins later. An embedded ``local[N]`` master runs its Python workers on this machine, in the
driver's working directory: there the archives are unpacked into Spark's files root on the
driver, and an interpreter relative to the working directory is resolved against it.

**I/O:** writes zips under a temporary directory of its own; Spark copies the files.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import os
import shutil
import tempfile
import zipfile
from collections.abc import Iterator

from barrierflow.cluster.python_dependencies import PythonDependencies
from barrierflow.cluster.spark.masters import is_local_master
from barrierflow.cluster.spark.python_worker_setup import NOTHING_TO_SET_UP, WorkerSetup

log = logging.getLogger("barrierflow.spark")

_PY_FILE_SUFFIXES = (".py", ".zip", ".egg", ".whl", ".jar")


def _digest(*parts: str) -> str:
    return hashlib.sha256("\0".join(parts).encode()).hexdigest()[:12]


def _tree_digest(directory: str) -> str:
    """A digest of the names, sizes and times of the files under ``directory``."""
    entries = []
    for base, _, names in sorted(os.walk(directory)):
        for name in sorted(names):
            stat = os.stat(os.path.join(base, name))
            rel = os.path.relpath(os.path.join(base, name), directory)
            entries.append(f"{rel}:{stat.st_size}:{stat.st_mtime_ns}")
    return _digest(*entries)


def _zip_directory(directory: str, zip_path: str, with_top: bool) -> str:
    """``directory`` zipped: as its own top-level entry (a package) or its contents at the
    zip's root (a directory of modules)."""
    top = os.path.basename(os.path.normpath(directory))
    with zipfile.ZipFile(zip_path, "w", zipfile.ZIP_DEFLATED) as z:
        for base, dirs, names in os.walk(directory):
            dirs[:] = [d for d in dirs if d != "__pycache__"]
            for name in names:
                path = os.path.join(base, name)
                rel = os.path.relpath(path, directory)
                z.write(path, os.path.join(top, rel) if with_top else rel)
    return zip_path


def _py_file(path: str, staging: str) -> str:
    """What ``addPyFile`` takes for ``path``: the file, or a zip of a directory (a package
    directory, with an ``__init__.py``, is importable by its name; the modules of another
    directory are importable themselves, as PyFlink adds such a directory to the path)."""
    if not os.path.isdir(path):
        if not path.endswith(_PY_FILE_SUFFIXES):
            log.warning("python.files: %s is not a .py, .zip, .egg or .whl file", path)
        return path
    package = os.path.exists(os.path.join(path, "__init__.py"))
    name = f"{os.path.basename(os.path.normpath(path))}-{_tree_digest(path)}.zip"
    return _zip_directory(path, os.path.join(staging, name), with_top=package)


def ship(sc, deps: PythonDependencies) -> WorkerSetup:
    """Adds ``deps`` (checked, with absolute paths) to ``sc``; what each slot must do before it
    runs. Files of the same name and content added again (a second job) are left as they are."""
    if deps.is_empty():
        return NOTHING_TO_SET_UP
    staging = tempfile.mkdtemp(prefix="barrierflow-python-deps-")
    for path in deps.files:
        sc.addPyFile(_py_file(path, staging))
        log.info("Python file %s shipped to the executors", path)
    local = is_local_master(sc.master)
    for archive in deps.archives:
        if local:
            _unpack_locally(archive.path, archive.target_dir)
        else:
            sc.addArchive(f"{archive.path}#{archive.target_dir}")
        log.info(
            "Python archive %s shipped to the executors as %s", archive.path, archive.target_dir
        )
    if deps.requirements is None:
        return NOTHING_TO_SET_UP
    with open(deps.requirements, "rb") as f:
        requirements_text = f.read().decode("utf-8", "replace")
    cache_digest = _tree_digest(deps.requirements_cache) if deps.requirements_cache else ""
    digest = _digest(requirements_text, cache_digest)
    requirements = os.path.join(staging, f"requirements-{digest}.txt")
    shutil.copyfile(deps.requirements, requirements)
    sc.addFile(requirements)
    cache_name = None
    if deps.requirements_cache is not None:
        cache_name = f"requirements-cache-{digest}.zip"
        _zip_directory(deps.requirements_cache, os.path.join(staging, cache_name), False)
        sc.addFile(os.path.join(staging, cache_name))
    log.info("Python requirements %s shipped; each executor installs them once", deps.requirements)
    return WorkerSetup(
        requirements_name=os.path.basename(requirements),
        cache_name=cache_name,
        install_dir=f"barrierflow-python-requirements-{digest}",
    )


def _unpack_locally(archive: str, target_dir: str) -> None:
    """An archive where a local master's workers find it: Spark's files root on this driver."""
    from pyspark import SparkFiles

    destination = os.path.join(SparkFiles.getRootDirectory(), target_dir)
    if os.path.isdir(destination):
        return
    shutil.unpack_archive(archive, destination)


def workers_python(sc, deps: PythonDependencies) -> str | None:
    """The interpreter the job's workers run, or None for the context's own. A relative one
    names a file in the workers' working directory, where archives are unpacked: on a local
    master that is Spark's files root on this driver."""
    exe = deps.executable
    if exe is None or os.path.isabs(exe) or not is_local_master(sc.master):
        return exe
    from pyspark import SparkFiles

    return os.path.join(SparkFiles.getRootDirectory(), exe)


@contextlib.contextmanager
def workers_running(sc, python: str | None) -> Iterator[None]:
    """While it lasts, RDDs made on ``sc`` run their Python workers with ``python`` (PySpark
    records the interpreter in each RDD's function when the RDD is first planned)."""
    if python is None:
        yield
        return
    before = sc.pythonExec
    sc.pythonExec = python
    try:
        yield
    finally:
        sc.pythonExec = before
