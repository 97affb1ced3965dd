"""How the job commands find a job: by its id alone, through the user's job registry
(``cluster/job_registry.py``); under a checkpoint directory given (``--checkpoint-dir``, or
``execution.checkpointing.dir``); or in a high-availability storage directory (``--ha-dir``),
whose job records name each cluster id's job. What is found is the job's directory, where its
JobMaster keeps its address file (endpoint, REST URL, secret) and its exceptions.

A registry entry whose driver is gone is stale: it is never used to reach the job; the error
says so, and how to go on.

**I/O:** the registry directory, checkpoint storage, the HA storage.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

import msgspec

from barrierflow.api.configuration import Configuration
from barrierflow.checkpoint.storage import CheckpointDirectory, job_root_uri
from barrierflow.checkpoint.storage_layout import JOB_RECORD_FILE
from barrierflow.cli.app import fail
from barrierflow.cluster.job_registry import JobRegistry, Liveness, RegistryEntry, liveness


@dataclass(frozen=True)
class JobPlace:
    job_root: CheckpointDirectory
    where: str  # how it was found, for messages
    entry: RegistryEntry | None = None


def job_place(
    job_id: str,
    checkpoint_dir: str | None,
    configuration: Configuration,
    registry_dir: str | None = None,
    ha_dir: str | None = None,
    running: bool = True,
) -> JobPlace:
    """The directory of job ``job_id``; ends the command (status 2) when it cannot be found.
    ``running``: the command acts on a running job (a stale or ended entry is refused)."""
    directory = checkpoint_dir or configuration.get("execution.checkpointing.dir")
    if directory:
        return JobPlace(CheckpointDirectory(job_root_uri(directory, job_id)), f"under {directory}")
    if ha_dir:
        return _in_ha_storage(job_id, ha_dir)
    registry = JobRegistry(registry_dir or configuration.get("job-registry.dir"))
    entry = registry.entry(job_id)
    if entry is None:
        raise fail(
            f"No job {job_id} in the job registry {registry.directory}. `barrierflow list -a` "
            "shows the jobs it knows; a job of another user or machine is found by its "
            "checkpoint directory (--checkpoint-dir), its HA storage (--ha-dir) or its REST "
            "address (-m HOST:PORT)",
            2,
        )
    state = liveness(entry)
    if running and state is Liveness.GONE:
        raise fail(
            f"Job {job_id} ({entry.job_name}) is not running: its driver (pid {entry.pid} on "
            f"{entry.host}) is gone, and its registry entry is stale. Run its program again "
            f"with `--resume {job_id}` (or under high availability, as it was), or use the "
            "checkpoints it left",
            1,
        )
    if running and state is Liveness.ENDED:
        raise fail(f"Job {job_id} ({entry.job_name}) is not running: it is {entry.state}", 1)
    if entry.job_root_uri is None:
        raise fail(
            f"Job {job_id} ({entry.job_name}) has no checkpoint directory, where commands "
            f"reach it; its web UI is at {entry.rest_url or '(none)'}",
            1,
        )
    return JobPlace(CheckpointDirectory(entry.job_root_uri), "in the job registry", entry)


class _HaJob(msgspec.Struct):
    job_id: str
    checkpoint_storage: str | None = None


def _in_ha_storage(job_id: str, ha_dir: str) -> JobPlace:
    """The job among the cluster ids' job records of a local HA storage directory."""
    root = ha_dir.removeprefix("file://")
    try:
        clusters = sorted(os.listdir(root))
    except OSError as e:
        raise fail(f"Cannot read the HA storage directory {ha_dir}: {e}", 2) from e
    for cluster in clusters:
        try:
            with open(os.path.join(root, cluster, JOB_RECORD_FILE), "rb") as f:
                record = msgspec.json.decode(f.read(), type=_HaJob)
        except (OSError, msgspec.DecodeError, msgspec.ValidationError):
            continue
        if record.job_id == job_id and record.checkpoint_storage:
            where = f"in HA storage {ha_dir} (cluster id {cluster})"
            return JobPlace(
                CheckpointDirectory(job_root_uri(record.checkpoint_storage, job_id)), where
            )
    raise fail(f"No job {job_id} with a checkpoint directory in the HA storage {ha_dir}", 2)
