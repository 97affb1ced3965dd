"""A real Spark standalone cluster on this machine, from the pyspark package: a master and
workers of one core each, as separate JVMs (``spark-class ...Master`` / ``...Worker``). A test
may add a worker while the cluster runs, and SIGKILL one (its executors then exit: they watch
their worker)."""

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
from collections.abc import Callable, Iterator
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
    start: Callable[..., subprocess.Popen]  # (log name, *spark-class arguments)
    workers: list[subprocess.Popen] = field(default_factory=list)

    def add_worker(self, wait: bool = True) -> None:
        """Starts one more one-core worker; ``wait``: until the master counts it alive."""
        alive = self.alive_workers()
        number = len(self.workers)
        work = os.path.join(self.work_dir, f"worker-{number}")
        self.workers.append(
            self.start(f"worker-{number}", "org.apache.spark.deploy.worker.Worker",
                       "--host", "127.0.0.1", "--cores", "1", "--memory", "1g",
                       "--work-dir", work, "--webui-port", str(_free_port()), self.master_url)
        )  # fmt: skip
        if wait:
            _wait(lambda: self.alive_workers() > alive, self.work_dir, f"worker {number}")

    def kill_worker(self, number: int) -> None:
        """SIGKILLs worker ``number``'s JVM (not its executors: they find their worker gone)."""
        self.workers[number].send_signal(signal.SIGKILL)
        self.workers[number].wait(10)

    def alive_workers(self) -> int:
        return sum(w["state"] == "ALIVE" for w in self.state()["workers"])

    def state(self) -> dict:
        with urllib.request.urlopen(self.web_url + "/json/", timeout=5) as response:
            return json.load(response)

    def executor_pids(self) -> list[int]:
        """The executor JVMs (the only ones on this machine while a test uses the cluster)."""
        out = subprocess.run(
            ["pgrep", "-f", _EXECUTOR], capture_output=True, text=True, check=False
        )
        return [int(p) for p in out.stdout.split()]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextlib.contextmanager
def standalone_cluster(workers: int = 2) -> Iterator[StandaloneCluster]:
    spark_home = os.path.dirname(pyspark.__file__)
    spark_class = os.path.join(spark_home, "bin", "spark-class")
    root = tempfile.mkdtemp(prefix="barrierflow-spark-")
    env = {**os.environ, "SPARK_HOME": spark_home, "SPARK_LOCAL_IP": "127.0.0.1"}
    port, web_port = _free_port(), _free_port()
    processes: list[subprocess.Popen] = []

    def start(name: str, *args: str) -> subprocess.Popen:
        log = open(os.path.join(root, f"{name}.log"), "wb")  # noqa: SIM115 - for the JVM's life
        process = subprocess.Popen(
            [spark_class, *args],
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        processes.append(process)
        return process

    start("master", "org.apache.spark.deploy.master.Master", "--host", "127.0.0.1",
          "--port", str(port), "--webui-port", str(web_port))  # fmt: skip
    cluster = StandaloneCluster(
        f"spark://127.0.0.1:{port}", f"http://127.0.0.1:{web_port}", spark_home, root, start
    )
    try:
        _wait(lambda: cluster.state(), root, "the master")
        for _ in range(workers):
            cluster.add_worker(wait=False)
        _wait(lambda: cluster.alive_workers() >= workers, root, f"{workers} workers")
        yield cluster
    finally:
        for p in processes:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(p.pid, signal.SIGKILL)
            p.wait(10)
        subprocess.run(["pkill", "-9", "-f", _EXECUTOR], check=False)
        shutil.rmtree(root, ignore_errors=True)


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
