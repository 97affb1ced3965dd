"""RocksDBKeyedStateBackend: keyed state of one operator subtask in an embedded RocksDB.

One RocksDB instance (a rocksdict ``Rdict`` in raw mode: bytes in, bytes out) per backend, in
``<local_dir>/db`` (``database.py``), rows laid out by ``key_codec.py``, read and written by the
state objects of ``state_objects.py``. Snapshots are full (``full_snapshot.py``, the key-group
format, which any backend restores) or incremental (``incremental_snapshot.py``, RocksDB's own
files); a canonical snapshot is always full. Restores open an incremental checkpoint's files
as the database when they are exactly this backend's (``incremental_restore.py``; from the
local copy with local recovery, ``local_recovery.py``), and copy rows in otherwise; the
key-group format restores by building SST files and ingesting them (``sst_ingestion.py``).

**Threading:** the task thread, except the ``AsyncSnapshot`` that ``snapshot()`` returns: it
runs once on a snapshot thread. ``dispose()`` stops a full one at its next key group and waits
for it; an incremental one reads only its immutable local checkpoint directory, and
``dispose()``, or an abort with local recovery, may delete that directory under it: it then
fails (its checkpoint is over anyway). **I/O:** the local RocksDB directory; checkpoint
streams go through the task's ``SnapshotStreams`` and ``RestoreStreams``.
"""

from __future__ import annotations

import logging
import os
import shutil
from collections.abc import Iterable, Iterator
from typing import Any

from rocksdict import Rdict, ReadOptions, WriteOptions

from barrierflow.checkpoint.key_group_format import read_key_groups
from barrierflow.checkpoint.metadata import (
    IncrementalKeyedHandle,
    KeyedStateHandle,
    KeyGroupsHandle,
    SharedFileHandle,
)
from barrierflow.protocol.checkpoint_barrier import CHECKPOINT, CheckpointOptions, SnapshotFormat
from barrierflow.protocol.key_group_range import UPPER_BOUND_MAX_PARALLELISM, KeyGroupRange
from barrierflow.state.backend import (
    AsyncSnapshot,
    KeyContext,
    RestoreStreams,
    check_state_kind,
)
from barrierflow.state.backends.predefined_options import NO_TUNING, RocksDBTuning
from barrierflow.state.backends.rocksdb.database import (
    CHECKPOINTS,
    DB,
    INGEST,
    SCRATCH,
    BatchWriter,
    MiB,
    claim,
    db_options,
    open_database,
)
from barrierflow.state.backends.rocksdb.full_snapshot import FullSnapshot, SnapshotGuard
from barrierflow.state.backends.rocksdb.incremental_restore import (
    column_families_of,
    fetch_files,
    opened_handle,
)
from barrierflow.state.backends.rocksdb.incremental_snapshot import (
    IncrementalSnapshot,
    NativeCheckpoint,
    create_native_checkpoint,
)
from barrierflow.state.backends.rocksdb.key_codec import (
    CurrentKey,
    column_family,
    sections_of_rows,
)
from barrierflow.state.backends.rocksdb.local_recovery import LocalCheckpoints
from barrierflow.state.backends.rocksdb.sst_ingestion import ingest_sections
from barrierflow.state.backends.rocksdb.state_objects import (
    RocksDBListState,
    RocksDBMapState,
    RocksDBValueState,
    Table,
)
from barrierflow.state.descriptors import StateDescriptor, StateKind
from barrierflow.state.key_groups import KeyGroupCache, stable_hash
from barrierflow.state.schema_evolution import Convert, StateSchemas, migrate_element
from barrierflow.state.value_codec import ValueCodec, codec_for, decode_value

log = logging.getLogger("barrierflow.state")


class RocksDBKeyedStateBackend:
    """Keyed state of one operator subtask, for the key groups in ``key_group_range``.

    ``local_dir`` belongs to the backend: it is created if missing and deleted by ``dispose()``.
    What an earlier instance left there (a crashed attempt that was never disposed) is deleted
    first, since a new instance's state comes from ``restore()`` only; a directory holding
    anything else is refused rather than wiped. ``block_cache_bytes`` is the read cache shared by
    all states; ``write_buffer_bytes`` the size of one state's memtable, and half the budget of
    all memtables of the instance together; ``target_file_size_bytes`` and ``level_base_bytes``
    shape compactions (RocksDB's ``target_file_size_base`` and ``max_bytes_for_level_base``).
    ``incremental`` chooses incremental snapshots;
    ``local_recovery_dir`` (incremental only) keeps the local checkpoint of the last completed
    checkpoint there, outside ``local_dir``, for a restart of this subtask on this machine.
    ``tuning``: the other RocksDB settings a predefined option set makes (``PredefinedOptions``).
    """

    def __init__(
        self,
        max_parallelism: int,
        key_group_range: KeyGroupRange,
        local_dir: str,
        block_cache_bytes: int = 64 * MiB,
        write_buffer_bytes: int = 64 * MiB,
        incremental: bool = False,
        target_file_size_bytes: int = 64 * MiB,
        level_base_bytes: int = 256 * MiB,
        local_recovery_dir: str | None = None,
        tuning: RocksDBTuning = NO_TUNING,
    ) -> None:
        if not 0 < max_parallelism <= UPPER_BOUND_MAX_PARALLELISM:
            raise ValueError(
                f"max parallelism must be between 1 and {UPPER_BOUND_MAX_PARALLELISM} (two bytes "
                f"of every row key hold the key group), got {max_parallelism}"
            )
        self.key_context = KeyContext()
        self._max_parallelism = max_parallelism
        self._range = key_group_range
        self._key_groups = KeyGroupCache(max_parallelism)
        self._current = CurrentKey(self._key_groups.key_group)
        self.local_dir = os.path.abspath(local_dir)
        claim(self.local_dir)
        self._incremental = incremental
        keep = incremental and local_recovery_dir is not None
        self._local = LocalCheckpoints(
            os.path.abspath(local_recovery_dir)
            if keep and local_recovery_dir is not None
            else os.path.join(self.local_dir, CHECKPOINTS),
            keep=keep,
        )
        self._options = db_options(
            block_cache_bytes, write_buffer_bytes, target_file_size_bytes, level_base_bytes, tuning
        )
        self._target_file_size_bytes = target_file_size_bytes
        # No write-ahead log: checkpoints make state durable, and a crashed instance's
        # directory is discarded (as in Flink); the WAL would only halve the write rate.
        self._write_options = WriteOptions()
        # a property at run time, a method in rocksdict's stub
        self._write_options.disable_wal = True  # type: ignore[method-assign, assignment]
        self._db = self._open(os.path.join(self.local_dir, DB), ())
        self._tables: dict[str, Table] = {}
        self._states: dict[str, Any] = {}
        self._schemas = StateSchemas()
        self._guard = SnapshotGuard(self.local_dir)
        # Incremental, under the guard's lock: the shared files each pending checkpoint
        # references, by local name, and those of the last checkpoint notified complete (the
        # only ones a new one may reuse).
        self._uploads: dict[int, dict[str, SharedFileHandle]] = {}
        self._confirmed: dict[str, SharedFileHandle] = {}

    def _open(self, path: str, column_families: Iterable[str]) -> Rdict:
        return open_database(path, self._options, self._write_options, column_families)

    def get_state(self, descriptor: StateDescriptor) -> Any:
        """The first request of a restored state rewrites its rows in the declared type
        (``state/schema_evolution.py``), or refuses a change they cannot take."""
        state = self._states.get(descriptor.name)
        table = self._tables.get(descriptor.name)
        change = self._schemas.declare(descriptor) if state is None else None
        if table is not None:
            check_state_kind(descriptor, table.kind)
        if state is not None:
            return state
        if table is None:
            table = self._table(descriptor.name, descriptor.kind)
        kind = {StateKind.VALUE: RocksDBValueState, StateKind.LIST: RocksDBListState}.get(
            descriptor.kind, RocksDBMapState
        )
        codec = codec_for(descriptor)
        if change is not None and change.convert is not None:
            self._migrate(table, change.convert, codec)
        state = kind(table, self.key_context, self._current, codec)
        self._states[descriptor.name] = state
        return state

    def _migrate(self, table: Table, convert: Convert, codec: ValueCodec) -> None:
        """Decodes every row of ``table``, migrates it and writes it back in ``codec``."""
        if table.kind is StateKind.LIST:

            def migrate(raw: bytes) -> bytes:
                return codec.encode([migrate_element(e, convert) for e in decode_value(raw)])
        else:

            def migrate(raw: bytes) -> bytes:
                return codec.encode(migrate_element(decode_value(raw), convert))

        scan = ReadOptions()
        scan.fill_cache(False)  # type: ignore[call-arg]  # rocksdict's stub lacks the argument
        rows = table.db.items(read_opt=scan)
        writer = BatchWriter(self._db)
        for key, raw in rows:  # (rocksdict's stub types keys as any kind: these are bytes)
            writer.put(key, migrate(raw), table)  # type: ignore[arg-type]
        del rows
        writer.flush()

    def _table(self, name: str, kind: StateKind, exists: bool = False) -> Table:
        """``exists``: the column family came with a restored database."""
        table = self._tables.get(name)
        if table is not None:
            if table.kind is not kind:
                raise ValueError(
                    f"state {name!r} is {table.kind.value} state here and {kind.value} state in "
                    "the snapshot being restored"
                )
            return table
        self._guard.check_open()
        if exists:
            db = self._db.get_column_family(column_family(name, kind))
        else:
            db = self._db.create_column_family(column_family(name, kind), self._options)
        db.set_write_options(self._write_options)
        table = self._tables[name] = Table(name, kind, db, self._db)
        return table

    def state_names(self) -> list[str]:
        return list(self._tables)

    def entries(self, name: str) -> Iterator[tuple[Any, Any]]:
        table = self._tables.get(name)
        if table is None:
            return
        rows = table.db.items()
        # rocksdict's stub types rows' keys as any kind: these are bytes
        for _kg, section in sections_of_rows([(name, table.kind, rows)]):  # type: ignore[list-item]
            yield from section[name][1]
        del rows

    # --- snapshots ------------------------------------------------------------------------------

    def snapshot(
        self, checkpoint_id: int = 0, options: CheckpointOptions = CHECKPOINT
    ) -> AsyncSnapshot:
        """Native (RocksDB's files): incremental checkpoints when so configured, and native
        savepoints, which copy every file into the savepoint; full (the key-group format)
        otherwise."""
        self._guard.check_open()
        if options.snapshot_format is SnapshotFormat.NATIVE:
            if options.is_savepoint:
                return self._native_snapshot(checkpoint_id, savepoint=True)
            if self._incremental:
                return self._native_snapshot(checkpoint_id, savepoint=False)
        scan = ReadOptions()
        # a full scan would evict the working set of the task (the argument: not in the stub)
        scan.fill_cache(False)  # type: ignore[call-arg]
        cursors = [(t.name, t.kind, t.db.items(read_opt=scan)) for t in self._tables.values()]
        types = self._schemas.types()
        # rocksdict's stub types rows' keys as any kind: these are bytes
        return FullSnapshot(self._guard, cursors, scan, self._range, types)  # type: ignore[arg-type]

    def _native_snapshot(self, checkpoint_id: int, savepoint: bool) -> AsyncSnapshot:
        """A savepoint reuses nothing and leaves nothing to reuse: the user owns its files."""
        if not self._tables:
            return lambda streams: []
        directory = self._local.path(checkpoint_id)
        shutil.rmtree(directory, ignore_errors=True)  # left by an attempt that crashed
        native = self.native_checkpoint(directory)
        if savepoint:
            return IncrementalSnapshot(
                checkpoint_id,
                native,
                {},
                self._range,
                lambda cid, shared: None,
                lambda path: shutil.rmtree(path, ignore_errors=True),
                self._schemas.types(),
            )
        return IncrementalSnapshot(
            checkpoint_id,
            native,
            self._confirmed,
            self._range,
            self._uploaded,
            self._local.uploaded,
            self._schemas.types(),
        )

    def native_checkpoint(self, directory: str) -> NativeCheckpoint:
        """Flushes every memtable and hard-links the live files into ``directory`` (which must
        not exist, on the file system of ``local_dir``).

        Call from the task thread, as a synchronous phase: the flush blocks processing.
        """
        self._guard.check_open()
        return create_native_checkpoint(self._db, self._tables.values(), directory)

    def notify_checkpoint_complete(self, checkpoint_id: int) -> None:
        """From now on the next checkpoint references this one's files (none, if this backend
        wrote nothing for it: then it cannot know which earlier files are still retained)."""
        with self._guard.lock:
            uploads = self._uploads.pop(checkpoint_id, None)
            self._confirmed = uploads or {}
            for older in [c for c in self._uploads if c < checkpoint_id]:
                del self._uploads[older]
        if self._local.keep and uploads is not None:
            self._local.delete(lambda cid: cid < checkpoint_id)

    def notify_checkpoint_aborted(
        self, checkpoint_id: int, references_released: bool = False
    ) -> None:
        """``references_released``: this backend missed a notification and reused files
        already released; it forgets its confirmed files, so that the next checkpoint uploads
        everything rather than failing the same way."""
        with self._guard.lock:
            self._uploads.pop(checkpoint_id, None)
            if references_released:
                self._confirmed = {}
        if self._local.keep:
            self._local.delete(lambda cid: cid == checkpoint_id)

    def _uploaded(self, checkpoint_id: int, shared: list[SharedFileHandle]) -> None:
        """From a snapshot thread: ``checkpoint_id``'s shared files, for when it completes."""
        with self._guard.lock:
            if not self._guard.disposed:
                self._uploads[checkpoint_id] = {s.local_name: s for s in shared}

    # --- restore --------------------------------------------------------------------------------

    def restore(self, handles: list[KeyedStateHandle], streams: RestoreStreams) -> None:
        """Incremental handles (Flink's rescale of RocksDB state): if no state was declared yet,
        the one that shares the most key groups with this range opens as the database (from
        the local copy when there is one) and is *clipped* to the range, its rows outside it
        deleted by range (a rescale up: each new subtask opens its old subtask's files and
        clips them, no row copied); the rows of this range in the others are copied in (a
        rescale down). The key-group format's rows are built into SST files and ingested."""
        for handle in handles:
            self._schemas.restored(handle.states, handle.types)
        incremental = [h for h in handles if isinstance(h, IncrementalKeyedHandle)]
        full = [h for h in handles if isinstance(h, KeyGroupsHandle)]
        if not self._tables and incremental:
            base = max(incremental, key=self._shared_key_groups)
            self._open_restored(base, streams)
            self._clip(base)
            incremental.remove(base)
        for handle in incremental:
            self._copy_rows(handle, streams)
        for handle in full:
            self._restore_full(handle, streams)

    def _shared_key_groups(self, handle: IncrementalKeyedHandle) -> int:
        low = max(handle.key_group_start, self._range.start)
        high = min(handle.key_group_end, self._range.end)
        return max(0, high - low + 1)

    def _clip(self, handle: IncrementalKeyedHandle) -> None:
        """Deletes the restored rows of key groups outside this backend's range: a key starts
        with its key group (2 bytes, big endian), so each side is one range deletion."""
        outside = []
        if handle.key_group_start < self._range.start:
            outside.append(
                (handle.key_group_start.to_bytes(2, "big"), self._range.start.to_bytes(2, "big"))
            )
        if handle.key_group_end > self._range.end:
            outside.append(
                (
                    (self._range.end + 1).to_bytes(2, "big"),
                    (handle.key_group_end + 1).to_bytes(2, "big"),
                )
            )
        for table in self._tables.values():
            for begin, end in outside:
                table.db.delete_range(begin, end)

    def _open_restored(self, handle: IncrementalKeyedHandle, streams: RestoreStreams) -> None:
        """A local copy that fails to open is deleted and the files downloaded instead (else
        every restart would fail on it the same way)."""
        db_path = os.path.join(self.local_dir, DB)
        self._db.close()
        local = self._local.intact_copy(handle)
        try:
            try:
                self._db = self._fetch_and_open(handle, streams, db_path, local)
            except Exception as e:
                if local is None:
                    raise
                log.warning(
                    "Local copy %s of checkpoint %d is unusable (%s); downloading it",
                    local,
                    handle.checkpoint_id,
                    e,
                )
                shutil.rmtree(local, ignore_errors=True)
                self._db = self._fetch_and_open(handle, streams, db_path, None)
        except BaseException:
            shutil.rmtree(db_path, ignore_errors=True)
            self._db = self._open(db_path, ())  # empty, so that dispose() works as ever
            raise
        for name, kind in handle.states.items():
            self._table(name, StateKind(kind), exists=True)
        if streams.shares_storage:
            # This job's own files: the next checkpoint references them instead of uploading.
            self._confirmed = {s.local_name: s for s in handle.shared}

    def _fetch_and_open(
        self,
        handle: IncrementalKeyedHandle,
        streams: RestoreStreams,
        db_path: str,
        local_copy: str | None,
    ) -> Rdict:
        shutil.rmtree(db_path, ignore_errors=True)
        fetch_files(handle, streams, db_path, local_copy)
        return self._open(db_path, column_families_of(db_path, handle))

    def _copy_rows(self, handle: IncrementalKeyedHandle, streams: RestoreStreams) -> None:
        """Copies the rows of this backend's key groups out of ``handle``'s database."""
        scratch = os.path.join(self.local_dir, SCRATCH)
        with opened_handle(handle, streams, scratch, self._range) as cursors:
            writer = BatchWriter(self._db)
            for name, kind, rows in cursors:
                table = self._table(name, kind)
                for key, value in rows:
                    writer.put(key, value, table)
            writer.flush()

    def _restore_full(self, handle: KeyGroupsHandle, streams: RestoreStreams) -> None:
        """The rows of this backend's key groups, built into SST files and ingested
        (``sst_ingestion.py``)."""
        ingest_sections(
            read_key_groups(handle, self._range, streams.read),
            self._table,
            self._check_key_group,
            os.path.join(self.local_dir, INGEST),
            self._options,
            self._target_file_size_bytes,
        )

    def _check_key_group(self, key: Any, kg: int) -> None:
        if stable_hash(key) % self._max_parallelism != kg:
            # Lookups look for a key under the key group of its hash: a row under another key
            # group would be silently lost.
            raise ValueError(
                f"key {key!r:.200} is in key group {kg} of the snapshot but hashes to another "
                f"one at max parallelism {self._max_parallelism}; was the snapshot taken with "
                "another max parallelism?"
            )

    def dispose(self) -> None:
        """Closes the database and deletes ``local_dir``; an asynchronous snapshot still running
        stops at its next key group (and fails), one not yet started fails when it starts."""
        if not self._guard.dispose():
            return
        # No iterator is left, and dropping the tables drops the column family handles: closing
        # the handles now closes the database (an iterator or a column family handle would keep
        # it open, writing into the directory deleted below).
        databases = [table.db for table in self._tables.values()]
        self._tables.clear()
        self._states.clear()
        for db in databases:
            db.close()
        self._db.close()
        shutil.rmtree(self.local_dir, ignore_errors=True)
