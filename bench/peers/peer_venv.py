"""A peer stream processor in a virtual environment of its own, and its run measured from outside.

Each peer (Bytewax, PyFlink) pins libraries ours does not (PyFlink its own pyarrow and numpy), so
it gets a virtual environment under ``$BARRIERFLOW_PEERS_DIR`` (default
``/tmp/barrierflow-peers/<peer>``), created with ``pip install <requirement>`` on first use and
reused while its probe still imports.

**I/O:** creates the environment (pip, from the package index pip is configured with); runs the
peer's processes and reads their figures from a directory of JSON files.
**Lifecycle:** ``run_measured`` waits for the processes it starts and kills them on an error.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # bench/: peak_rss
from peak_rss import PeakRss

PEERS_DIR = Path(os.environ.get("BARRIERFLOW_PEERS_DIR", "/tmp/barrierflow-peers"))
HERE = Path(__file__).resolve().parent


def peer_python(name: str, requirement: str, probe: str) -> str:
    """The Python of peer ``name``'s environment, installed first if ``probe`` (Python code)
    fails there. Installing prints to stderr: stdout carries the figures."""
    python = PEERS_DIR / name / "bin" / "python"
    if python.exists() and _runs(python, probe):
        return str(python)
    print(f"installing {requirement} into {PEERS_DIR / name} (reused afterwards)", file=sys.stderr)
    subprocess.run([sys.executable, "-m", "venv", "--clear", PEERS_DIR / name], check=True)
    install = [python, "-m", "pip", "install", "-q", "--disable-pip-version-check", requirement]
    subprocess.run(install, check=True, stdout=sys.stderr)
    if not _runs(python, probe):
        raise SystemExit(f"{requirement} installed into {PEERS_DIR / name}, but {probe!r} fails")
    return str(python)


def version(python: str, distribution: str) -> str:
    """The installed version of ``distribution`` in the environment of ``python``."""
    probe = f"import importlib.metadata as m; print(m.version({distribution!r}))"
    return subprocess.run([python, "-c", probe], capture_output=True, text=True).stdout.strip()


def _runs(python: Path, probe: str) -> bool:
    return subprocess.run([python, "-c", probe], capture_output=True).returncode == 0


def run_measured(commands: Sequence[Sequence[str]], timeout_s: float) -> tuple[float, float]:
    """Runs the peer's processes to their end, measuring the peak RSS of their trees.

    Returns the monotonic time at which the last one exited and the peak RSS in MiB. A process
    that fails, or outlives ``timeout_s``, ends the benchmark with its output.
    """
    env = {**os.environ, "PYTHONPATH": str(HERE)}  # the peer's module imports this one
    with contextlib.ExitStack() as stack:
        logs = [stack.enter_context(tempfile.TemporaryFile()) for _ in commands]
        processes = [
            subprocess.Popen(
                command,
                env=env,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,  # a group of its own: killed with its JVM and workers
            )
            for command, log in zip(commands, logs, strict=True)
        ]
        stack.callback(_end_groups, processes)
        with PeakRss(roots=[p.pid for p in processes]) as rss:
            deadline = time.monotonic() + timeout_s
            for p, log in zip(processes, logs, strict=True):
                try:
                    code = p.wait(max(deadline - time.monotonic(), 0.1))
                except subprocess.TimeoutExpired:
                    raise SystemExit(f"{_shown(p)} still runs after {timeout_s:.0f} s") from None
                if code:
                    log.seek(0)
                    tail = log.read()[-3000:].decode(errors="replace")
                    raise SystemExit(f"{_shown(p)} exited with {code}:\n{tail}")
            ended = time.monotonic()
    return ended, rss.peak_mib


def _shown(process: subprocess.Popen) -> str:
    return " ".join(str(part) for part in process.args)


def _end_groups(processes: list[subprocess.Popen]) -> None:
    """After a failure: kills the process groups whose leader still runs (its JVM and workers
    with it). A leader that has ended is not signalled: its pid may belong to another process."""
    for p in processes:
        if p.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(p.pid, signal.SIGKILL)
            p.wait()


def read_figures(directory: Path, prefix: str) -> list[dict]:
    """The JSON files ``<prefix>*.json`` the peer's functions wrote into ``directory``."""
    return [json.loads(f.read_text()) for f in sorted(directory.glob(f"{prefix}*.json"))]


def write_figures(directory: str, prefix: str, figures: dict) -> None:
    """Called inside the peer's processes: one file per writer, named uniquely."""
    path = Path(directory) / f"{prefix}-{os.getpid()}-{time.monotonic_ns()}.json"
    path.write_text(json.dumps(figures))
