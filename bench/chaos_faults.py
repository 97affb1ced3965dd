"""The campaign's fault injectors, all outside the runtime: they act on a running job's
processes, its servers and its storage, the way an operator or a broken machine would.

- the job's processes: its driver (``barrierflow run``, in a session of its own: the driver
  and its Spark JVM are its process group; PySpark's worker daemon puts itself and the Python
  workers in a group of their own, in the same session, and ends them when the JVM is gone)
  and the task processes among them, Spark's Python workers that run a slot (those with more
  than one thread: an idle worker has one);
- the servers: restarted through their test fixtures (``tests/servers``);
- checkpoint storage: through the storage fault facility (``barrierflow.testing``), which the
  job program installs.

**I/O:** ``/proc``, signals, files under the run's directory, servers.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
import urllib.request
from pathlib import Path

import pyarrow.fs as pafs

from barrierflow.checkpoint import file_systems
from barrierflow.checkpoint.storage import CheckpointDirectory
from barrierflow.checkpoint.storage_layout import JOBMASTER_ADDRESS_FILE

BENCH = Path(__file__).resolve().parent
REPO = BENCH.parent
PROGRAM = BENCH / "chaos_jobs" / "program.py"


_LEADS = re.compile(r"Leading cluster \S+ as epoch (\d+)")
_STANDBY = "Standby for cluster id "


class Driver:
    """One ``barrierflow run`` process of a run, its standard error in a file. Under driver
    high availability, ``cluster_id`` is the one its command names."""

    def __init__(
        self,
        base: str,
        spec_path: str,
        args: list[str],
        number: int,
        cluster_id: str | None = None,
    ) -> None:
        self.number = number
        self.cluster_id = cluster_id
        self.ended_at: float | None = None  # epoch seconds, when its process ended
        self.log_path = os.path.join(base, f"driver-{number}.log")
        env = {
            **os.environ,
            "PYTHONPATH": f"{REPO}{os.pathsep}{BENCH}",
            "PYSPARK_PYTHON": sys.executable,
            "BARRIERFLOW_LOG_DIR": os.path.join(base, "spark-logs"),
        }
        command = [sys.executable, "-m", "barrierflow.cli", "run", str(PROGRAM), *args]
        with open(self.log_path, "wb") as log:
            self.process = subprocess.Popen(
                [*command, "--", spec_path], env=env, cwd=REPO, start_new_session=True,
                stdout=subprocess.DEVNULL, stderr=log,
            )  # fmt: skip
        self.started_at = time.time()
        threading.Thread(target=self._watch, name=f"driver-{number}", daemon=True).start()

    def _watch(self) -> None:
        self.process.wait()
        self.ended_at = time.time()

    @property
    def pid(self) -> int:
        return self.process.pid

    def alive(self) -> bool:
        return self.process.poll() is None

    def log(self) -> str:
        with open(self.log_path, errors="replace") as f:
            return f.read()

    def epoch(self) -> int | None:
        """The epoch it last said it leads its cluster id as (None: it never led)."""
        found = _LEADS.findall(self.log())
        return int(found[-1]) if found else None

    def said_standby(self) -> bool:
        return _STANDBY in self.log()

    def kill(self) -> None:
        """SIGKILL of the driver's process group (the driver and its JVM; the Python workers
        end when their JVM is gone): a driver machine gone."""
        self.signal(signal.SIGKILL)
        self.process.wait()

    def signal(self, sig: signal.Signals) -> None:
        """``sig`` to the driver's process group."""
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.pid, sig)

    def lingering(self, timeout_s: float) -> list[int]:
        """The processes of its session still alive ``timeout_s`` after it was killed: none,
        or something of the killed driver goes on acting."""
        deadline = time.monotonic() + timeout_s
        while True:
            left = session_processes(self.pid)
            if not left or time.monotonic() > deadline:
                return left
            time.sleep(0.1)

    def stop(self) -> None:
        """At the end of a run, whatever state it is in."""
        if self.alive():
            self.kill()


# --- processes ------------------------------------------------------------------------------


def _processes() -> dict[int, tuple[int, str, int]]:
    """pid -> (parent pid, command line, threads) of every process of the machine."""
    table = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/status") as f:
                status = f.read()
            with open(f"/proc/{entry}/cmdline", "rb") as f:
                cmdline = f.read().replace(b"\0", b" ").decode(errors="replace")
        except OSError:  # ended since the listing
            continue
        ppid = int(re.search(r"^PPid:\s+(\d+)", status, re.M).group(1))
        threads = int(re.search(r"^Threads:\s+(\d+)", status, re.M).group(1))
        table[int(entry)] = (ppid, cmdline, threads)
    return table


def session_processes(session: int) -> list[int]:
    """The live processes (not zombies) of ``session``, in pid order."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:  # ended since the listing
            continue
        state, sid = fields[0], int(fields[3])
        if sid == session and state not in ("Z", "X"):
            found.append(int(entry))
    return sorted(found)


def task_processes(driver_pid: int) -> list[int]:
    """The Python workers under ``driver_pid`` that run a slot now, in pid order."""
    table = _processes()
    children: dict[int, list[int]] = {}
    for pid, (ppid, _, _) in table.items():
        children.setdefault(ppid, []).append(pid)
    found, pending = [], [driver_pid]
    while pending:
        pid = pending.pop()
        for child in children.get(pid, ()):
            pending.append(child)
            parent_cmd = table[pid][1]
            _, cmd, threads = table[child]
            # A worker is forked by pyspark's daemon; it runs a slot when it has threads.
            if "pyspark.daemon" in parent_cmd and "pyspark.daemon" in cmd and threads > 1:
                found.append(child)
    return sorted(found)


def wait_for_tasks(driver: Driver, timeout_s: float = 20) -> list[int]:
    deadline = time.monotonic() + timeout_s
    while driver.alive() and time.monotonic() < deadline:
        pids = task_processes(driver.pid)
        if pids:
            return pids
        time.sleep(0.05)
    return []


def kill_task(driver: Driver, choice: int) -> int | None:
    """SIGKILLs one task process (``choice`` modulo their number); its pid, or None."""
    pids = wait_for_tasks(driver)
    if not pids:
        return None
    pid = pids[choice % len(pids)]
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGKILL)
    return pid


_RESTORES = re.compile(r"Attempt (\d+) restores checkpoint (\d+)")
_RESTORED = re.compile(r"Attempt (\d+) restored checkpoint (\d+)")


def kill_during_restore(driver: Driver, choice: int, timeout_s: float = 60) -> str:
    """Kills a task, then a task process of the next attempt as soon as it starts, while it
    restores. Returns what happened, for the run's line."""
    if kill_task(driver, choice) is None:
        return "no task to kill"
    attempts_before = len(_RESTORES.findall(driver.log()))
    deadline = time.monotonic() + timeout_s
    while driver.alive() and time.monotonic() < deadline:
        restores = _RESTORES.findall(driver.log())
        if len(restores) > attempts_before:
            attempt = restores[-1][0]
            pids = task_processes(driver.pid)
            if pids:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pids[choice % len(pids)], signal.SIGKILL)
                done = any(a == attempt for a, _ in _RESTORED.findall(driver.log()))
                return f"attempt {attempt} killed " + ("after" if done else "during") + " restore"
        time.sleep(0.005)
    return "no restore seen"


_RESCALED = re.compile(r"rescaled from checkpoint (\d+); (.*)")


def rescale(
    driver: Driver, job_id: str, checkpoint_dir: str, conf: list[str], kill: int | None = None
) -> str:
    """``barrierflow rescale JOB -p N``: to 1 if the job runs at 2, else to 2 (the embedded
    ``local[2]`` of the campaign offers two slots). ``kill``: a task process of the rescaled
    attempt is SIGKILLed as soon as it starts, while it restores (``kill`` chooses which):
    the rescale falls back. Returns what happened, for the run's line."""
    url = _rest_url(checkpoint_dir, job_id)
    parallelism = 2
    if url is not None:
        with contextlib.suppress(OSError, ValueError, KeyError):
            with urllib.request.urlopen(
                f"{url}/jobs/{job_id}/resource-requirements", timeout=5
            ) as r:
                bounds = [v["parallelism"]["upperBound"] for v in json.load(r).values()]
            parallelism = 1 if max(bounds) >= 2 else 2
    command = [sys.executable, "-m", "barrierflow.cli", "rescale", job_id, "-p", str(parallelism),
               "--checkpoint-dir", checkpoint_dir, *conf]  # fmt: skip
    restores_before = len(_RESTORES.findall(driver.log()))
    asked = subprocess.Popen(command, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             text=True)  # fmt: skip
    killed = ""
    if kill is not None:
        deadline = time.monotonic() + 60
        while asked.poll() is None and time.monotonic() < deadline:
            if len(_RESTORES.findall(driver.log())) > restores_before:
                pids = task_processes(driver.pid)
                if pids:
                    with contextlib.suppress(ProcessLookupError):
                        os.kill(pids[kill % len(pids)], signal.SIGKILL)
                    killed = ", a task of the rescaled attempt killed"
                    break
            time.sleep(0.005)
    out, err = asked.communicate(timeout=180)
    found = _RESCALED.search(out)
    if found:
        return f"-> {parallelism}: from checkpoint {found.group(1)}{killed}"
    last = (err.strip().splitlines() or ["?"])[-1]
    return f"-> {parallelism}: not done ({last[:160]}){killed}"


def _rest_url(checkpoint_dir: str, job_id: str) -> str | None:
    return JobDirectory(checkpoint_dir).rest_url(job_id)


# --- the job, through its checkpoint directory (local or S3) -------------------------------


class JobDirectory:
    """A run's checkpoint directory, read as the command line reads it (``file_systems``
    initialized with the run's S3 settings, if any)."""

    def __init__(self, checkpoint_dir: str) -> None:
        self.uri = checkpoint_dir.rstrip("/")
        self._fs, self._root = file_systems.resolve(self.uri)

    def job_ids(self) -> list[str]:
        """The jobs under the directory, oldest first."""
        with contextlib.suppress(FileNotFoundError, OSError):
            infos = self._fs.get_file_info(pafs.FileSelector(self._root))
            jobs = [i for i in infos if i.type == pafs.FileType.Directory]
            return [i.base_name for i in sorted(jobs, key=lambda i: i.mtime or 0)]
        return []

    def storage(self, job_id: str) -> CheckpointDirectory:
        return CheckpointDirectory(f"{self.uri}/{job_id}")

    def completed(self, job_id: str) -> list[int]:
        """Ids of the job's completed checkpoints, as its history records them."""
        with contextlib.suppress(OSError):
            history = self.storage(job_id).read_history()
            if history is not None:
                return [r.checkpoint_id for r in history.records if r.status.value == "COMPLETED"]
        return []

    def rest_url(self, job_id: str) -> str | None:
        with contextlib.suppress(OSError, ValueError, KeyError):
            data = self.storage(job_id).read_small_file(JOBMASTER_ADDRESS_FILE)
            return json.loads(data)["rest_url"] if data else None
        return None

    def corrupt_latest_state_file(self, job_id: str) -> str | None:
        """Flips a byte in the middle of a state file of the newest completed checkpoint; the
        file's path, or None when that checkpoint has none (its state all inline)."""
        completed = self.completed(job_id)
        if not completed:
            return None
        directory = f"{self._root}/{job_id}/chk-{max(completed)}"
        with contextlib.suppress(FileNotFoundError):
            infos = self._fs.get_file_info(pafs.FileSelector(directory, recursive=True))
            files = sorted(
                i.path
                for i in infos
                if i.type == pafs.FileType.File
                and i.base_name != "_metadata"
                and not i.base_name.endswith(".inprogress")
                and i.size
            )
            if files:
                with self._fs.open_input_stream(files[0]) as f:
                    data = bytearray(f.read())
                data[len(data) // 2] ^= 0xFF
                with self._fs.open_output_stream(files[0]) as out:
                    out.write(bytes(data))
                return files[0]
        return None


def wait_for_checkpoint_in_progress(url: str, job_id: str, timeout_s: float = 10) -> bool:
    """Until the REST API shows a checkpoint in progress (True), or the time is up."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        checkpoints = f"{url}/jobs/{job_id}/checkpoints"
        with (
            contextlib.suppress(OSError, ValueError, KeyError),
            urllib.request.urlopen(checkpoints, timeout=2) as reply,
        ):
            if json.load(reply)["counts"]["in_progress"] > 0:
                return True
        time.sleep(0.005)
    return False


def cancel_with_savepoint(job_id: str, checkpoint_dir: str, target: str, conf: list[str]) -> str:
    """``barrierflow cancel JOB -s TARGET``; the savepoint's path (raises if it failed)."""
    done = subprocess.run(
        [sys.executable, "-m", "barrierflow.cli", "cancel", job_id, "-s", target,
         "--checkpoint-dir", checkpoint_dir, *conf],
        capture_output=True, text=True, timeout=120, cwd=REPO,
    )  # fmt: skip
    found = re.search(r"Path: (\S+)", done.stdout)
    if done.returncode != 0 or found is None:
        raise RuntimeError(f"cancel with a savepoint failed: {done.stdout}{done.stderr}"[-2000:])
    return found.group(1)


# --- PostgreSQL ------------------------------------------------------------------------------


def wait_for_prepared(conninfo: str, timeout_s: float = 10) -> bool:
    """Until the run's database holds a prepared transaction: the sink is between PREPARE
    and COMMIT PREPARED (True), or the time is up."""
    import psycopg

    deadline = time.monotonic() + timeout_s
    with psycopg.connect(conninfo, autocommit=True) as conn:
        while time.monotonic() < deadline:
            row = conn.execute(
                "SELECT count(*) FROM pg_prepared_xacts WHERE database = current_database()"
            ).fetchone()
            if row[0] > 0:
                return True
            time.sleep(0.001)
    return False


def prepared_transactions(conninfo: str) -> list[str]:
    """The global ids of the transactions left prepared in the run's database."""
    import psycopg

    with psycopg.connect(conninfo, autocommit=True) as conn:
        rows = conn.execute(
            "SELECT gid FROM pg_prepared_xacts WHERE database = current_database()"
        ).fetchall()
    return sorted(gid for (gid,) in rows)
