"""A Delta sink's global committer: on the JobMaster, commits all of a checkpoint's files as
one Delta transaction carrying a ``SetTransaction`` (app id: the job and sink uid; version: the
checkpoint id), as Spark's streaming Delta sink does. A checkpoint whose version the table
already holds for its app id is skipped: that is what makes a commit replayed after a
failover, or after a kill between the checkpoint's completion and its commit, exactly once.

Concurrent writers: appends do not conflict; delta-rs retries a commit that lost the race for
the next version (``max_commit_retries``) and the framework retries a commit that still fails
(``Sink.with_commit_retry``), checking the table's version for the app id again each time.

**Threading:** the JobMaster's thread only. **I/O:** reads and writes the table's log through
delta-rs (``deltalake``).
"""

from __future__ import annotations

import json
import logging
from typing import Any

import pyarrow as pa

from barrierflow.checkpoint.file_systems import current_settings
from barrierflow.connectors.base.optional_dependency import require
from barrierflow.connectors.delta.delta_committable import DeltaAddFile
from barrierflow.connectors.delta.delta_paths import storage_options
from barrierflow.connectors.interfaces.committables import Committable
from barrierflow.connectors.interfaces.sink import GlobalCommitter

log = logging.getLogger("barrierflow.connectors.delta")

_COMMIT_RETRIES = 20  # of a commit that lost the race for a version to another writer


class DeltaCommitter(GlobalCommitter):
    def __init__(
        self,
        uri: str,
        schema: pa.Schema | None,
        partition_by: list[str],
        given_options: dict[str, str] | None,
    ) -> None:
        self._uri = uri
        self._schema = schema
        self._partition_by = partition_by
        self._given_options = given_options

    def commit(self, checkpoint_id: int, committables: list[Committable]) -> None:
        """One transaction per app id (normally one: the restored committables of a job
        restored with ``-s`` carry the earlier job's)."""
        by_app: dict[str, list[DeltaAddFile]] = {}
        for c in committables:
            by_app.setdefault(c.data.app_id, []).extend(c.data.files)
        for app, files in sorted(by_app.items()):
            self._commit(app, checkpoint_id, files)

    def _commit(self, app: str, checkpoint_id: int, files: list[DeltaAddFile]) -> None:
        deltalake = require("deltalake", "delta", "DeltaSink")
        from deltalake.transaction import (
            AddAction,
            CommitProperties,
            Transaction,
            create_table_with_add_actions,
        )

        options = storage_options(self._uri, current_settings().s3, self._given_options)
        table = open_table(deltalake, self._uri, options)
        committed = table.transaction_version(app) if table is not None else None
        if committed is not None and committed >= checkpoint_id:
            log.info(
                "Delta table %s holds version %d of %s: checkpoint %d was committed before",
                self._uri, committed, app, checkpoint_id,
            )  # fmt: skip
            return
        actions = [
            AddAction(
                path=f.path,
                size=f.size,
                partition_values=f.partition_values,
                modification_time=f.modification_time,
                data_change=True,
                stats=json.dumps(f.stats),
            )
            for f in files
        ]
        properties = CommitProperties(
            custom_metadata={"barrierflow.checkpoint-id": checkpoint_id},
            max_commit_retries=_COMMIT_RETRIES,
            app_transactions=[Transaction(app, checkpoint_id)],
        )
        if table is None:
            assert self._schema is not None  # DeltaSink.check: no table, then a schema
            create_table_with_add_actions(
                self._uri, deltalake.Schema.from_arrow(self._schema), actions, mode="append",
                partition_by=self._partition_by or None, storage_options=options,
                commit_properties=properties,
            )  # fmt: skip
        else:
            table.create_write_transaction(
                actions, "append", table.schema(), partition_by=self._partition_by or None,
                commit_properties=properties,
            )  # fmt: skip
        log.info(
            "Delta table %s: checkpoint %d committed, %d files", self._uri, checkpoint_id,
            len(actions),
        )  # fmt: skip


def open_table(deltalake: Any, uri: str, options: dict[str, str]) -> Any:
    """The table, or None if there is none yet at ``uri`` (the first commit creates it)."""
    try:
        return deltalake.DeltaTable(uri, storage_options=options)
    except deltalake.exceptions.TableNotFoundError:
        return None
