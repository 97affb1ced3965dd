"""The registry of a user's jobs on a machine: each JobMaster records its job there when it
starts running and how it ended, so that ``barrierflow list`` shows the jobs, and ``savepoint``,
``stop``, ``cancel``, ``exceptions`` and ``rescale`` find a job by its id alone.

A directory (``job-registry.dir``; default ``$BARRIERFLOW_HOME/jobs``, ``~/.barrierflow/jobs``
without it) holding one small JSON file per job, written whole (a temporary file renamed). An
entry says where the job is reached (its REST URL, its control endpoint) and where its
checkpoints and address file are; never its secret, which stays in the address file beside its
checkpoints, readable by who may act on the job.

An entry whose process is gone while it says RUNNING (a driver killed outright) is *stale*:
``liveness`` tells, and the command line shows it as such and sends it nothing.

**Threading:** any; one writer per job. **I/O:** the registry directory on local disk.
"""

from __future__ import annotations

import contextlib
import enum
import logging
import os
import time
import uuid

import msgspec

from barrierflow.cluster.process_identity import process_alive

log = logging.getLogger("barrierflow.jobmaster")

FORMAT_VERSION = 1
ENDED_KEPT_S = 30 * 24 * 3600  # how long an ended job stays listed (list -a)
ENTRY_SUFFIX = ".json"


class RegistryEntry(msgspec.Struct, frozen=True, kw_only=True):
    format_version: int = FORMAT_VERSION
    job_id: str
    job_name: str
    state: str  # Flink's job status: RUNNING, RESTARTING, FINISHED, FAILED, CANCELED, SUSPENDED
    host: str
    pid: int
    process_start: int  # with the pid, one process (Linux: clock ticks since boot; 0: unknown)
    started_ms: int
    updated_ms: int
    endpoint: str  # the JobMaster's control endpoint
    rest_url: str | None = None
    job_root_uri: str | None = None  # <checkpoint-dir>/<job-id>: checkpoints, address file
    cluster_id: str | None = None  # high-availability.cluster-id
    leader_epoch: int = 0
    error: str | None = None  # how it ended, when it failed

    @property
    def ended(self) -> bool:
        return self.state in ("FINISHED", "FAILED", "CANCELED", "SUSPENDED")


class Liveness(enum.Enum):
    RUNNING = "running"
    GONE = "gone"  # says RUNNING, but its process is not there: stale
    UNKNOWN = "unknown"  # on another host: only its endpoint can tell
    ENDED = "ended"


def default_registry_dir() -> str:
    home = os.environ.get("BARRIERFLOW_HOME") or os.path.join(
        os.path.expanduser("~"), ".barrierflow"
    )
    return os.path.join(home, "jobs")


class JobRegistry:
    def __init__(self, directory: str | None = None) -> None:
        self.directory = directory or default_registry_dir()

    def _path(self, job_id: str) -> str:
        return os.path.join(self.directory, job_id + ENTRY_SUFFIX)

    def record(self, entry: RegistryEntry) -> None:
        """Writes ``entry`` whole; a registry that cannot be written is logged, never fatal:
        the job runs all the same, and its checkpoint directory still finds it."""
        try:
            os.makedirs(self.directory, mode=0o700, exist_ok=True)
            tmp = f"{self._path(entry.job_id)}.{uuid.uuid4().hex}.tmp"
            with open(tmp, "wb") as f:
                f.write(msgspec.json.encode(entry))
            os.replace(tmp, self._path(entry.job_id))
        except OSError as e:
            log.warning(
                "Could not record job %s in the job registry %s: %s",
                entry.job_id,
                self.directory,
                e,
            )

    def entry(self, job_id: str) -> RegistryEntry | None:
        try:
            with open(self._path(job_id), "rb") as f:
                return _decode(f.read(), self._path(job_id))
        except FileNotFoundError:
            return None

    def entries(self) -> list[RegistryEntry]:
        """Every readable entry, oldest first; ended ones past ``ENDED_KEPT_S`` are removed."""
        try:
            names = [n for n in os.listdir(self.directory) if n.endswith(ENTRY_SUFFIX)]
        except FileNotFoundError:
            return []
        found = []
        now_ms = int(time.time() * 1000)
        for name in names:
            path = os.path.join(self.directory, name)
            try:
                with open(path, "rb") as f:
                    entry = _decode(f.read(), path)
            except OSError:
                continue
            if entry is None:
                continue
            if entry.ended and now_ms - entry.updated_ms > ENDED_KEPT_S * 1000:
                with contextlib.suppress(OSError):
                    os.unlink(path)
                continue
            found.append(entry)
        return sorted(found, key=lambda e: e.started_ms)


def _decode(data: bytes, path: str) -> RegistryEntry | None:
    try:
        entry = msgspec.json.decode(data, type=RegistryEntry)
    except (msgspec.DecodeError, msgspec.ValidationError) as e:
        log.warning("Skipped the unreadable job registry entry %s: %s", path, e)
        return None
    if entry.format_version != FORMAT_VERSION:
        log.warning(
            "Skipped the job registry entry %s: format version %d (a newer barrierflow?)",
            path,
            entry.format_version,
        )
        return None
    return entry


def liveness(entry: RegistryEntry) -> Liveness:
    """Whether ``entry``'s job runs, as far as this machine can tell."""
    if entry.ended:
        return Liveness.ENDED
    alive = process_alive(entry.host, entry.pid, entry.process_start)
    if alive is None:
        return Liveness.UNKNOWN
    return Liveness.RUNNING if alive else Liveness.GONE
