"""What a slot does, on its executor, before it runs: installs the job's Python requirements,
once per executor, into a directory of the job's under Spark's files root, and puts it on the
Python worker's ``sys.path``. The first slot of an executor installs while holding a file
lock; the others wait for it and find the installation marked done.

**Threading:** any Spark task thread; the lock is a file lock, across the executor's Python
workers (processes).
**I/O:** runs pip in a subprocess; unpacks the shipped package directory.
"""

from __future__ import annotations

import fcntl
import importlib
import os
import socket
import subprocess
import sys
import zipfile
from dataclasses import dataclass

_PIP_TIMEOUT_S = 900
_DONE = "INSTALLED"


@dataclass(frozen=True)
class WorkerSetup:
    """Names under Spark's files root (``SparkFiles``) of what the driver shipped."""

    requirements_name: str | None = None  # the requirements file
    cache_name: str | None = None  # the zipped package directory to install from, offline
    install_dir: str | None = None  # the job's directory the requirements go into

    def installs_requirements(self) -> bool:
        return self.requirements_name is not None


NOTHING_TO_SET_UP = WorkerSetup()


def prepare_worker(setup: WorkerSetup) -> None:
    """The job's requirements importable in this Python worker (installed first, if no slot of
    this executor did yet); a RuntimeError with pip's message if they cannot be installed."""
    if not setup.installs_requirements():
        return
    from pyspark import SparkFiles

    root = SparkFiles.getRootDirectory()
    target = os.path.join(root, setup.install_dir or "barrierflow-python-requirements")
    site = os.path.join(target, "site-packages")
    if not os.path.exists(os.path.join(target, _DONE)):
        os.makedirs(target, exist_ok=True)
        with open(os.path.join(target, ".lock"), "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            try:
                if not os.path.exists(os.path.join(target, _DONE)):
                    _install(setup, root, target, site)
            finally:
                fcntl.flock(lock, fcntl.LOCK_UN)
    if site not in sys.path:
        sys.path.insert(0, site)
        importlib.invalidate_caches()


def _install(setup: WorkerSetup, root: str, target: str, site: str) -> None:
    requirements = os.path.join(root, setup.requirements_name or "")
    command = [sys.executable, "-m", "pip", "install", "--no-input", "--disable-pip-version-check"]
    command += ["--target", site, "-r", requirements]
    if setup.cache_name is not None:
        cache = os.path.join(target, "packages")
        with zipfile.ZipFile(os.path.join(root, setup.cache_name)) as packages:
            packages.extractall(cache)
        command += ["--no-index", "--find-links", cache]
    done = subprocess.run(
        command, capture_output=True, text=True, timeout=_PIP_TIMEOUT_S, check=False
    )
    if done.returncode != 0:
        said = (done.stderr or done.stdout).strip()[-3000:]
        raise RuntimeError(
            f"installing the job's Python requirements on executor host "
            f"{socket.gethostname()} failed; pip said:\n{said}"
        )
    with open(os.path.join(target, _DONE), "w") as f:
        f.write(done.stdout[-2000:])
