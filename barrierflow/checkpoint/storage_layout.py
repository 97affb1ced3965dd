"""Every path of the checkpoint storage layout, built in one place (as Flink's)::

    <checkpoint-dir>/<job-id>/chk-<N>/_metadata     completion marker, written last
    <checkpoint-dir>/<job-id>/chk-<N>/...           files exclusive to checkpoint N
    <checkpoint-dir>/<job-id>/shared/...            files shared between checkpoints
    <checkpoint-dir>/<job-id>/taskowned/...         files owned by tasks
    <checkpoint-dir>/<job-id>/_history.json         what the last checkpoints did
    <checkpoint-dir>/<job-id>/_jobmaster.json       a running job's address, secret, web UI
    <checkpoint-dir>/<job-id>/_exceptions.json      the job's failures, with task tracebacks
    <savepoint-dir>/savepoint-<job>-<id>/_metadata  a savepoint, self-contained
    <savepoint-dir>/savepoint-<job>-<id>/...        every file of it

Paths inside a checkpoint's metadata are relative to ``<checkpoint-dir>/<job-id>``, a
savepoint's to its own directory, so either can be moved. Performs no I/O.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass

METADATA_FILE = "_metadata"
_CHECKPOINT_DIR = re.compile(r"^chk-(\d+)$")


def checkpoint_dir(checkpoint_id: int) -> str:
    return f"chk-{checkpoint_id}"


def metadata_path(checkpoint_id: int) -> str:
    return f"{checkpoint_dir(checkpoint_id)}/{METADATA_FILE}"


def parse_checkpoint_dir(name: str) -> int | None:
    m = _CHECKPOINT_DIR.match(name)
    return int(m.group(1)) if m else None


def _operator_subtask(operator_uid: str, subtask: int) -> str:
    # Readable, and unique: two uids that sanitize alike differ in their hash.
    safe_uid = re.sub(r"[^A-Za-z0-9_.-]", "_", operator_uid)
    uid_hash = hashlib.blake2b(operator_uid.encode(), digest_size=4).hexdigest()
    return f"{safe_uid}-{uid_hash}-{subtask}"


def savepoint_dir_name(job_id: str, unique: str) -> str:
    """``unique``: 12 random hex digits."""
    return f"{SAVEPOINT_PREFIX}{job_id[:6]}-{unique}"


@dataclass(frozen=True)
class SnapshotFiles:
    """Where the files of one snapshot go, relative to the root its metadata's paths are
    relative to: a checkpoint's in ``chk-N/`` and ``shared/`` of the job's directory; a
    savepoint's all in its own directory, so that it is self-contained and relocatable."""

    checkpoint_id: int
    savepoint: bool = False

    def exclusive(self, operator_uid: str, subtask: int, attempt: int, kind: str) -> str:
        path = exclusive_state_file(self.checkpoint_id, operator_uid, subtask, attempt, kind)
        return path.split("/", 1)[1] if self.savepoint else path

    def shared(self, operator_uid: str, subtask: int, local_name: str, unique: str) -> str:
        path = shared_state_file(self.checkpoint_id, operator_uid, subtask, local_name, unique)
        return path.split("/", 1)[1] if self.savepoint else path


def exclusive_state_file(
    checkpoint_id: int, operator_uid: str, subtask: int, attempt: int, kind: str
) -> str:
    owner = _operator_subtask(operator_uid, subtask)
    return f"{checkpoint_dir(checkpoint_id)}/{owner}-a{attempt}.{kind}"


def shared_state_file(
    checkpoint_id: int, operator_uid: str, subtask: int, local_name: str, unique: str
) -> str:
    """A file uploaded by ``checkpoint_id`` that later checkpoints may reference. ``unique``
    (a UUID) keeps every upload's path its own, which the SharedStateRegistry relies on."""
    owner = _operator_subtask(operator_uid, subtask)
    return f"{SHARED_DIR}/{owner}/{checkpoint_id}-{unique}-{local_name}"


def parse_shared_state_file(path: str) -> int | None:
    """The id of the checkpoint that uploaded a ``shared_state_file``."""
    number = path.rsplit("/", 1)[-1].split("-", 1)[0]
    return int(number) if number.isdigit() else None


# While the job runs: where to send a cancel or a savepoint request (and the secret they need),
# and the URL of its REST API and web UI.
JOBMASTER_ADDRESS_FILE = "_jobmaster.json"
# The failures of the job's attempts, kept after it ended (``barrierflow exceptions``).
EXCEPTIONS_FILE = "_exceptions.json"
# The savepoint or checkpoint the job was started from (``-s``), as given: a resumed job that
# had not completed a checkpoint of its own restores it again, as Flink's recovered job does.
RESTORED_FROM_FILE = "_restored_from"
SHARED_DIR = "shared"
TASK_OWNED_DIR = "taskowned"
SAVEPOINT_PREFIX = "savepoint-"


# --- the high-availability storage of one cluster id (``high-availability.storageDir``) ----
#
#     <ha-dir>/<cluster-id>/leader/epoch-<N>.json    the lease of epoch N (client/ha/lease.py)
#     <ha-dir>/<cluster-id>/job.json                 the job: id, name, operator uids, state
#     <ha-dir>/<cluster-id>/checkpoint-ids.json      the next checkpoint id, and whose it was

LEADER_DIR = "leader"
JOB_RECORD_FILE = "job.json"
CHECKPOINT_ID_COUNTER_FILE = "checkpoint-ids.json"
_EPOCH_FILE = re.compile(r"^epoch-(\d{20})\.json$")


def cluster_dir(ha_dir: str, cluster_id: str) -> str:
    return f"{ha_dir.rstrip('/')}/{cluster_id}"


def epoch_file(epoch: int) -> str:
    """Zero-padded, so that names sort as epochs do."""
    return f"{LEADER_DIR}/epoch-{epoch:020d}.json"


def parse_epoch_file(name: str) -> int | None:
    m = _EPOCH_FILE.match(name)
    return int(m.group(1)) if m else None
