"""An Iceberg sink's global committer: on the JobMaster, appends all of a checkpoint's files as
one snapshot whose summary holds ``barrierflow.checkpoint-id``, ``barrierflow.job-id`` and
``barrierflow.sink-uid``. Before appending, it looks in the table's snapshots for the highest
checkpoint id this job's sink committed (Flink's ``flink.max-committed-checkpoint-id`` rule):
a checkpoint at or below it was committed before (a commit replayed after a failover, or after
a kill between the checkpoint's completion and its commit) and is skipped.

A commit that loses to a concurrent writer (``CommitFailedException``) is retried by the
framework (``Sink.with_commit_retry``), from a freshly loaded table, the check included.

**Threading:** the JobMaster's thread only. **I/O:** the catalog and the table's metadata.
"""

from __future__ import annotations

import logging
from typing import Any

from barrierflow.connectors.iceberg.catalog_ref import CatalogRef
from barrierflow.connectors.interfaces.committables import Committable
from barrierflow.connectors.interfaces.sink import GlobalCommitter

log = logging.getLogger("barrierflow.connectors.iceberg")

CHECKPOINT_ID = "barrierflow.checkpoint-id"
JOB_ID = "barrierflow.job-id"
SINK_UID = "barrierflow.sink-uid"


def max_committed_checkpoint(table: Any, job_id: str, sink_uid: str) -> int | None:
    """The highest checkpoint id among the table's snapshots committed by this job's sink."""
    found = [
        int(s.summary[CHECKPOINT_ID])
        for s in table.metadata.snapshots
        if s.summary is not None
        and s.summary.get(JOB_ID) == job_id
        and s.summary.get(SINK_UID) == sink_uid
        and s.summary.get(CHECKPOINT_ID) is not None
    ]
    return max(found, default=None)


class IcebergCommitter(GlobalCommitter):
    def __init__(self, catalog: CatalogRef, identifier: str) -> None:
        self._catalog = catalog
        self._identifier = identifier
        self._where = f"IcebergSink({identifier!r})"
        self._loaded: Any = None  # the catalog, connected at the first commit, then kept

    def commit(self, checkpoint_id: int, committables: list[Committable]) -> None:
        """One snapshot per job (normally one: the restored committables of a job restored
        with ``-s`` carry the earlier job's id)."""
        by_writer: dict[tuple[str, str], list[str]] = {}
        for c in committables:
            key = (c.data.job_id, c.data.sink_uid)
            by_writer.setdefault(key, []).extend(c.data.files)
        for (job_id, sink_uid), files in sorted(by_writer.items()):
            self._commit(job_id, sink_uid, checkpoint_id, files)

    def _commit(self, job_id: str, sink_uid: str, checkpoint_id: int, files: list[str]) -> None:
        if self._loaded is None:
            self._loaded = self._catalog.load(self._where)
        table = self._catalog.load_table(self._identifier, self._where, self._loaded)
        committed = max_committed_checkpoint(table, job_id, sink_uid)
        if committed is not None and committed >= checkpoint_id:
            log.info(
                "Iceberg table %s holds checkpoint %d of job %s's sink %s: checkpoint %d was "
                "committed before", self._identifier, committed, job_id, sink_uid, checkpoint_id,
            )  # fmt: skip
            return
        summary = {CHECKPOINT_ID: str(checkpoint_id), JOB_ID: job_id, SINK_UID: sink_uid}
        # the files are new (unique names): no need to scan the table's manifests for them
        table.add_files(files, snapshot_properties=summary, check_duplicate_files=False)
        log.info(
            "Iceberg table %s: checkpoint %d committed, %d files", self._identifier,
            checkpoint_id, len(files),
        )  # fmt: skip
