"""``barrierflow run -d``: the job's driver started in the background, in a session of its own
(a closed terminal does not end it), its output in a log file; the command returns once the
job runs, printing its id, or with the driver's error if it ended first.

The driver is the same ``barrierflow run`` command without ``-d``; the job's id is found in the
job registry (``cluster/job_registry.py``), where the driver records its job by its process id.

**I/O:** starts a process; reads the job registry and the driver's log.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from pathlib import Path

from barrierflow.cli.app import console, errors, fail
from barrierflow.cluster.job_registry import JobRegistry, default_registry_dir

WAIT_S = 300.0  # for the job to run (a cluster may take its time to give executors)


def run_detached(job: Path, run_args: list[str]) -> None:
    """Starts ``barrierflow`` with ``run_args`` (the command line given, less ``-d``) in the
    background and returns once its job runs."""
    logs = Path(default_registry_dir()).parent / "logs"
    logs.mkdir(parents=True, exist_ok=True)
    log = logs / f"{job.stem}-{time.strftime('%Y%m%d-%H%M%S')}-{os.getpid()}.log"
    with open(log, "wb") as out:
        driver = subprocess.Popen(
            [sys.executable, "-m", "barrierflow.cli", *run_args],
            stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
            start_new_session=True,
        )  # fmt: skip
    errors.print(f"Started the job's driver (pid {driver.pid}); its log: {log}", highlight=False)
    registry, host = JobRegistry(_registry_dir(run_args)), socket.gethostname()
    deadline = time.monotonic() + WAIT_S
    while time.monotonic() < deadline:
        mine = [e for e in registry.entries() if e.pid == driver.pid and e.host == host]
        if mine:
            entry = mine[-1]
            console.print(f"Job {entry.job_name} ({entry.job_id}) runs", highlight=False)
            console.print(entry.job_id, highlight=False)
            return
        if driver.poll() is not None:
            tail = log.read_text(errors="replace").strip().splitlines()[-20:]
            raise fail(
                "The job's driver ended before its job ran:\n" + "\n".join(tail),
                driver.returncode or 1,
            )
        time.sleep(0.2)
    raise fail(
        f"The job has not started after {WAIT_S:g} s; its driver (pid {driver.pid}) "
        f"goes on, see {log}"
    )


def _registry_dir(run_args: list[str]) -> str | None:
    """``job-registry.dir`` as the command line gives it with ``-D`` (else the default)."""
    for i, arg in enumerate(run_args):
        value = None
        if arg == "-D" and i + 1 < len(run_args):
            value = run_args[i + 1]
        elif arg.startswith("-Djob-registry.dir="):
            value = arg[2:]
        if value and value.startswith("job-registry.dir="):
            return value.split("=", 1)[1]
    return None
