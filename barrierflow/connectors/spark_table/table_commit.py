"""Where a Spark table sink's files go, and whether a checkpoint's commit is due: the staging
directory and the commit marker under the table's location (names that start with ``_``, which
Spark's file listing skips), the committed files' names, and the marker's content.

A committed file's name carries the job, the sink uid, the checkpoint and the subtask, so a
commit replayed after a crash halfway renames to the same names and finds the ones already
done. Performs no I/O.
"""

from __future__ import annotations

import enum
import hashlib
import json
import re

HIDDEN_DIR = "_barrierflow"  # Spark ignores files and directories whose name starts with "_"


class CommitDecision(enum.Enum):
    COMMIT = "commit"
    SKIP = "skip"  # the marker holds this checkpoint or a later one: a replay


def app_id(job_id: str, sink_uid: str) -> str:
    """The job and the sink, as one name fit for a file name: a job submitted afresh is a new
    application whose checkpoint ids start again at 1."""
    safe_uid = re.sub(r"[^A-Za-z0-9_-]", "_", sink_uid)[:40]
    digest = hashlib.sha256(sink_uid.encode()).hexdigest()[:8]  # two uids made alike differ
    return f"{job_id}-{safe_uid}-{digest}"


def staging_dir(location: str, app: str) -> str:
    return f"{location}/{HIDDEN_DIR}/staging/{app}"


def marker_path(location: str, app: str) -> str:
    return f"{location}/{HIDDEN_DIR}/committed/{app}.json"


def committed_name(app: str, checkpoint_id: int, subtask: int, index: int) -> str:
    return f"part-{app}-{checkpoint_id:010d}-{subtask:05d}-{index:03d}.parquet"


def decide(committed: int | None, checkpoint_id: int) -> CommitDecision:
    """``committed``: the checkpoint the marker records (None: no marker yet). Commits are in
    checkpoint order, so a marker at or above ``checkpoint_id`` means it is in the table."""
    if committed is not None and committed >= checkpoint_id:
        return CommitDecision.SKIP
    return CommitDecision.COMMIT


def encode_marker(app: str, checkpoint_id: int) -> bytes:
    return json.dumps({"app": app, "checkpoint_id": checkpoint_id}).encode()


def decode_marker(data: bytes, where: str) -> int:
    try:
        return int(json.loads(data)["checkpoint_id"])
    except (ValueError, KeyError, TypeError) as e:
        raise ValueError(
            f"the commit marker {where} is not one barrierflow wrote ({e}); if the table's "
            "files are as they should be, delete the marker and commit again"
        ) from e
