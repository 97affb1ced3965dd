"""A real Spark standalone cluster on this machine, from the pyspark package, for the tests and
the benchmarks: a master and one-core workers, each a JVM of its own (``spark-class
...Master`` / ``...Worker``). A test or bench may add a worker while the cluster runs and
SIGKILL one (its executor, a child of the worker's JVM, then exits: it watches its worker).

Only what this module started is ever stopped: each JVM runs in a process group of its own,
which its executor and the executor's Python workers join, and the end kills those groups, by
their ids. Another job's executors on the same machine are left alone.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pyspark

_EXECUTOR = "org.apache.spark.executor.CoarseGrainedExecutorBackend"


@dataclass
class StandaloneCluster:
    master_url: str  # spark://127.0.0.1:PORT
    web_url: str  # the master's web UI, whose /json/ says what runs
    spark_home: str
    work_dir: str
    processes: list[subprocess.Popen] = field(default_factory=list)
    workers: list[subprocess.Popen] = field(default_factory=list)

    def start(self, name: str, *args: str) -> subprocess.Popen:
        """A ``spark-class`` JVM in a process group of its own, its log in the work dir."""
        env = {**os.environ, "SPARK_HOME": self.spark_home, "SPARK_LOCAL_IP": "127.0.0.1"}
        with open(os.path.join(self.work_dir, f"{name}.log"), "wb") as log:
            process = subprocess.Popen(
                [os.path.join(self.spark_home, "bin", "spark-class"), *args],
                env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
            )  # fmt: skip
        self.processes.append(process)
        return process

    def add_worker(self, wait: bool = True) -> int:
        """Starts one more one-core worker; its number. ``wait``: until the master counts it."""
        alive = self.alive_workers()
        number = len(self.workers)
        self.workers.append(
            self.start(f"worker-{number}", "org.apache.spark.deploy.worker.Worker",
                       "--host", "127.0.0.1", "--cores", "1", "--memory", "1g",
                       "--work-dir", os.path.join(self.work_dir, f"worker-{number}"),
                       "--webui-port", str(free_port()), self.master_url)
        )  # fmt: skip
        if wait:
            _wait(lambda: self.alive_workers() > alive, self.work_dir, f"worker {number}")
        return number

    def kill_worker(self, number: int) -> None:
        """SIGKILLs worker ``number``'s JVM alone (its executor finds it gone, and exits)."""
        self.workers[number].send_signal(signal.SIGKILL)
        self.workers[number].wait(10)

    def alive_workers(self) -> int:
        return sum(w["state"] == "ALIVE" for w in self.state()["workers"])

    def state(self) -> dict:
        with urllib.request.urlopen(self.web_url + "/json/", timeout=5) as response:
            return json.load(response)

    def executor_pids(self) -> list[int]:
        """The executor JVMs of this cluster's workers (they run in their workers' process
        groups)."""
        groups = ",".join(str(p.pid) for p in self.processes)
        out = subprocess.run(
            ["pgrep", "-g", groups, "-f", _EXECUTOR], capture_output=True, text=True, check=False
        )
        return [int(p) for p in out.stdout.split()]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextlib.contextmanager
def standalone_cluster(workers: int = 2) -> Iterator[StandaloneCluster]:
    """A master and ``workers`` one-core workers, alive; all of them (and their executors)
    killed at the end."""
    port, web_port = free_port(), free_port()
    cluster = StandaloneCluster(
        f"spark://127.0.0.1:{port}",
        f"http://127.0.0.1:{web_port}",
        os.path.dirname(pyspark.__file__),
        tempfile.mkdtemp(prefix="barrierflow-spark-"),
    )
    cluster.start("master", "org.apache.spark.deploy.master.Master", "--host", "127.0.0.1",
                  "--port", str(port), "--webui-port", str(web_port))  # fmt: skip
    try:
        _wait(cluster.state, cluster.work_dir, "the master")
        for _ in range(workers):
            cluster.add_worker(wait=False)
        _wait(lambda: cluster.alive_workers() >= workers, cluster.work_dir, f"{workers} workers")
        yield cluster
    finally:
        for p in cluster.processes:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(p.pid, signal.SIGKILL)  # the JVM, its executor, their Python workers
            p.wait(10)
        shutil.rmtree(cluster.work_dir, ignore_errors=True)


def _wait(ready, root: str, what: str, timeout_s: float = 90) -> None:
    deadline = time.monotonic() + timeout_s
    while True:
        with contextlib.suppress(OSError, ValueError, KeyError):
            if ready():
                return
        if time.monotonic() > deadline:
            logs = "".join(
                Path(root, n).read_text(errors="replace")[-1500:]
                for n in sorted(os.listdir(root))
                if n.endswith(".log")
            )
            raise RuntimeError(f"the Spark standalone cluster: {what} did not start\n{logs}")
        time.sleep(0.5)
