"""A Spark table sink's global committer: on the JobMaster, moves a checkpoint's staged files
into the table's location, records the checkpoint in the commit marker, then has the catalog
refresh the table (metadata only: no Spark job runs while the job's barrier stage holds the
slots).

Exactly once: a committed file's name carries the job, sink uid, checkpoint and subtask
(``table_commit.committed_name``), so a commit replayed after a crash halfway finds the files
it moved already there and moves the rest; a replay after the marker was written is skipped
(``table_commit.decide``). Between the first move and the last, a reader may see part of the
checkpoint: a Parquet table has no log to commit many files at once.

**Threading:** the JobMaster's thread only. **I/O:** moves files and writes the marker through
the job's file systems; the catalog's refresh.
"""

from __future__ import annotations

import logging
from itertools import groupby

import pyarrow.fs as pafs

from barrierflow.checkpoint.file_systems import is_object_store, resolve
from barrierflow.connectors.interfaces.committables import Committable
from barrierflow.connectors.interfaces.sink import GlobalCommitter
from barrierflow.connectors.spark_table.catalog_table import TableCatalog
from barrierflow.connectors.spark_table.table_commit import (
    CommitDecision,
    committed_name,
    decide,
    decode_marker,
    encode_marker,
    marker_path,
    staging_dir,
)

log = logging.getLogger("barrierflow.connectors.spark_table")


class SparkTableCommitter(GlobalCommitter):
    def __init__(self, table_name: str, location: str, catalog: TableCatalog | None) -> None:
        """``catalog``: None where there is none to refresh (a committer made on an executor
        only to learn that there is one, or a catalog that caches nothing)."""
        self._table_name = table_name
        self._location = location
        self._catalog = catalog

    def commit(self, checkpoint_id: int, committables: list[Committable]) -> None:
        """One marker per app (normally one: the restored committables of a job restored with
        ``-s`` carry the earlier job's)."""
        ordered = sorted(committables, key=lambda c: (c.data.app, c.subtask, c.data.staged))
        for app, group in groupby(ordered, key=lambda c: c.data.app):
            self._commit(app, checkpoint_id, list(group))
        if self._catalog is not None:
            self._catalog.refresh(self._table_name)

    def _commit(self, app: str, checkpoint_id: int, committables: list[Committable]) -> None:
        fs, marker = resolve(marker_path(self._location, app))
        committed = self._committed(fs, marker)
        if decide(committed, checkpoint_id) is CommitDecision.SKIP:
            log.info(
                "Spark table %s: its marker for %s holds checkpoint %d: checkpoint %d was "
                "committed before", self._table_name, app, committed, checkpoint_id,
            )  # fmt: skip
            return
        _, staging = resolve(staging_dir(self._location, app))
        _, table = resolve(self._location)
        for index, c in enumerate(committables):
            target = f"{table}/{committed_name(app, checkpoint_id, c.subtask, index)}"
            self._move(fs, f"{staging}/{c.data.staged}", target)
        if not is_object_store(fs):  # an object store's directories are prefixes
            fs.create_dir(marker.rsplit("/", 1)[0], recursive=True)
        with fs.open_output_stream(f"{marker}.tmp") as out:
            out.write(encode_marker(app, checkpoint_id))
        fs.move(f"{marker}.tmp", marker)  # the marker changes at once, on a local disk
        log.info(
            "Spark table %s: checkpoint %d committed, %d files", self._table_name,
            checkpoint_id, len(committables),
        )  # fmt: skip

    def _committed(self, fs: pafs.FileSystem, marker: str) -> int | None:
        if fs.get_file_info(marker).type is pafs.FileType.NotFound:
            return None
        with fs.open_input_stream(marker) as f:
            return decode_marker(f.read(), marker)

    def _move(self, fs: pafs.FileSystem, staged: str, target: str) -> None:
        """A staged file missing with its target there was moved by an earlier try."""
        if fs.get_file_info(staged).type is not pafs.FileType.NotFound:
            fs.move(staged, target)
        elif fs.get_file_info(target).type is pafs.FileType.NotFound:
            raise FileNotFoundError(
                f"Spark table {self._table_name}: the staged file {staged} of a checkpoint "
                f"being committed is gone, and {target} is not there either; something removed "
                f"files under {self._location}/_barrierflow while the job ran"
            )
