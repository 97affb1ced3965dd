"""Restoring the key-group format into RocksDB by ingestion: the rows of each state written in
key order into SST files of its own, which RocksDB then links into the state's column family,
as Flink's ingestDB restore does.

Rows put one by one go through the memtable, are flushed and then compacted: written three
times, and sorted by RocksDB on the task thread's time. Here a key group's rows are sorted in
Python once (a key group is a contiguous range of row keys, and sections come in key-group
order, so sorting each section's rows sorts the file), written once, and ingested without a
copy into the lowest level they fit.

**Threading:** the task thread. **I/O:** SST files in the given directory, moved into the
database by the ingestion; the directory is deleted afterwards, whatever happened.
"""

from __future__ import annotations

import contextlib
import gc
import itertools
import os
import shutil
from collections import deque
from collections.abc import Callable, Iterable, Iterator

from rocksdict import IngestExternalFileOptions, Options, SstFileWriter

from barrierflow.checkpoint.key_group_format import Section
from barrierflow.state.backends.rocksdb.key_codec import rows_of_entries
from barrierflow.state.backends.rocksdb.state_objects import Table
from barrierflow.state.descriptors import StateKind

TableOf = Callable[[str, StateKind], Table]  # the table of a state, created if missing
CheckKey = Callable[[object, int], None]  # raises if a key does not belong to a key group


class _StateFiles:
    """The SST files of one state, each at most about ``file_bytes`` (RocksDB's target file
    size, so that the ingested files are the size compaction would have made)."""

    def __init__(
        self, table: Table, new_path: Callable[[], str], options: Options, file_bytes: int
    ) -> None:
        self.table = table
        self._new_path = new_path
        self._options = options
        self._file_bytes = file_bytes
        self.paths: list[str] = []
        self._writer: SstFileWriter | None = None

    def write(self, rows: dict[bytes, bytes]) -> None:
        """``rows``: above every row written before (a later key group)."""
        writer = self._writer
        if writer is None:
            path = self._new_path()
            writer = self._writer = SstFileWriter(self._options)
            writer.open(path)
            self.paths.append(path)
        keys = sorted(rows)
        # A C loop (deque consumes the map): the rows' one pass in Python would cost more.
        deque(map(writer.__setitem__, keys, map(rows.__getitem__, keys)), maxlen=0)
        if writer.file_size() >= self._file_bytes:
            self.finish()

    def finish(self) -> None:
        if self._writer is not None:
            self._writer.finish()
            self._writer = None


def ingest_sections(
    sections: Iterable[tuple[int, Section]],
    table_of: TableOf,
    check_key: CheckKey,
    directory: str,
    options: Options,
    file_bytes: int,
) -> None:
    """Writes ``sections`` (in increasing key-group order, as ``read_key_groups`` yields them)
    into SST files in ``directory`` and ingests them, each state's into its column family.

    ``check_key(key, key_group)`` sees the first key of each state in each section: a snapshot
    of another max parallelism puts nearly every key in another key group than its hash's (a
    row there would be silently lost), and the coordinator refuses such a restore before it
    starts; hashing every key would cost more than the rest of the restore together.
    """
    shutil.rmtree(directory, ignore_errors=True)
    os.makedirs(directory)
    numbers = itertools.count()

    def new_path() -> str:
        return os.path.join(directory, f"{next(numbers)}.sst")

    files: dict[str, _StateFiles] = {}
    try:
        with _cyclic_gc_paused():
            for key_group, section in sections:
                for name, (kind_value, entries) in section.items():
                    if not entries:
                        continue
                    check_key(entries[0][0], key_group)
                    table = table_of(name, StateKind(kind_value))
                    rows = rows_of_entries(table.kind, key_group, entries)
                    state = files.get(name)
                    if state is None:
                        state = files[name] = _StateFiles(table, new_path, options, file_bytes)
                    if rows:
                        state.write(rows)
        ingestion = IngestExternalFileOptions()
        ingestion.set_move_files(True)  # hard links: the files are written once
        for state in files.values():
            state.finish()
            if state.paths:
                state.table.db.ingest_external_file(state.paths, ingestion)
    finally:
        # After a failure the writers are dropped unfinished: their files go with the directory.
        shutil.rmtree(directory, ignore_errors=True)


@contextlib.contextmanager
def _cyclic_gc_paused() -> Iterator[None]:
    """Python's cyclic garbage collector off while a restore unpickles and builds millions of
    objects, none of them in a cycle: its passes over them took about a tenth of the restore.
    Turned back on only if it was on (another thread may have paused it too: it then runs
    again a little early, which is harmless)."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()
