"""The ``rocksdb`` keyed state backend: state in an embedded RocksDB; full or incremental snapshots.

One RocksDB instance (a rocksdict ``Rdict`` in raw mode: bytes in, bytes out) per backend, that
is per operator subtask, in ``<local_dir>/db``; one column family per declared state, named
``<kind>/<state name>`` so that the database itself says what each family holds. A row's key
is, with K the pickled user key::

    key group (u16, big endian) | len(K) (u32, big endian) | K [| pickled map key]

The key group comes first so that a key-group range is one contiguous range of rows in every
column family; the user key is length-prefixed so that the entries of one key's map are exactly
the rows that start with that key's prefix (a range scan). Values are pickled, as in the heap
backend (docs/adr/0002-record-and-state-serialization.md).

Keys must compare in bytes as they compare in Python: the heap backend's dicts treat ``1``,
``1.0`` and ``True`` as one key (and ``stable_hash`` puts them in one key group), but their
pickles differ, and pickle memoizes by object identity, so ``("a", s)`` pickles differently when
``s`` is or is not the very same object as ``"a"``. Keys are therefore canonicalized
(``_canonical``) and tuples pickled without the memo (``_key_bytes``); the snapshot returns the
canonical form (``1`` for ``True``), which is equal to the original.

**Full snapshots** write the heap backend's format (one pickled section per key group,
``{state name: (kind, [(key, value), ...])}``, located by ``KeyGroupsHandle`` offsets), so a
checkpoint taken with either backend restores into the other.

**Incremental snapshots** (docs/adr/0004-incremental-rocksdb-checkpoints.md): the synchronous
phase flushes the memtables and hard-links the live files into a local checkpoint directory;
the asynchronous phase uploads the SST files that the last checkpoint this backend was
*notified complete* did not upload, references the others, and writes MANIFEST, CURRENT and
OPTIONS for this checkpoint alone (``IncrementalKeyedHandle``). Never reusing the files of a
pending or aborted checkpoint is what makes the coordinator's reference counts safe
(FLINK-24611). A restore with the same key-group range opens the files as the database; another
range copies its rows out of each handle's database. With local recovery the local checkpoint
directory of the last completed checkpoint is kept, and a restart on the same machine opens it
instead of downloading.

**Threading:** task thread, except the ``AsyncSnapshot`` that ``snapshot()`` returns: it runs
once on a background thread. A full one reads through RocksDB iterators created in the
synchronous phase (concurrent writes of the task thread are invisible to them); ``dispose()``
stops a running one at its next key group and waits for it. An incremental one reads only its
immutable local checkpoint directory, while RocksDB's own compaction goes on; ``dispose()``, or
an abort with local recovery, may delete that directory under it, and it then fails (its
checkpoint is over anyway). **I/O:** the local
RocksDB directory; checkpoint streams go through the task's ``SnapshotStreams`` and
``RestoreStreams``.
"""

from __future__ import annotations

import contextlib
import io
import itertools
import logging
import numbers
import os
import pickle
import shutil
import struct
import threading
import weakref
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from rocksdict import (
    AccessType,
    BlockBasedOptions,
    Cache,
    Checkpoint,
    Options,
    Rdict,
    ReadOptions,
    WriteBatch,
    WriteOptions,
)

from barrierflow.checkpoint.metadata import (
    IncrementalKeyedHandle,
    KeyedStateHandle,
    KeyGroupsHandle,
    SharedFileHandle,
    StreamHandle,
    stream_size,
)
from barrierflow.checkpoint.storage_layout import checkpoint_dir, parse_checkpoint_dir
from barrierflow.protocol.checkpoint_barrier import (
    CHECKPOINT,
    CheckpointOptions,
    SnapshotFormat,
)
from barrierflow.state.backend import (
    AsyncSnapshot,
    KeyContext,
    RestoreStreams,
    SnapshotStreams,
    check_state_kind,
)
from barrierflow.state.descriptors import StateDescriptor, StateKind
from barrierflow.state.key_groups import (
    UPPER_BOUND_MAX_PARALLELISM,
    KeyGroupCache,
    KeyGroupRange,
    stable_hash,
)

log = logging.getLogger("barrierflow.state")

MiB = 1 << 20
_PROTOCOL = 5
_HEADER = 6  # key group (2 bytes) + length of the pickled user key (4 bytes)
_RESTORE_BATCH_BYTES = 4 * MiB  # a restore's write batches stay about this small
_DB = "db"
_CHECKPOINTS = "checkpoints"  # native checkpoints without local recovery (removed with the backend)
_SCRATCH = "restore-scratch"  # handles opened to copy rows out of them
_OWN_ENTRIES = frozenset({_DB, _CHECKPOINTS, _SCRATCH})
_UNSET = object()

_dumps = pickle.dumps
_loads = pickle.loads


# --- keys ------------------------------------------------------------------------------------


def _canonical(key: Any) -> Any:
    """One representative of the keys equal to ``key``, so that equal keys give equal bytes.

    Mirrors ``stable_hash``: numbers that equal an int become that int, other numbers that equal
    a float become that float, str/bytes/tuple subclasses become the plain type. Other types
    (possible as map keys only) are returned unchanged and compared by their pickled bytes.
    """
    kind = type(key)
    if kind is int or kind is str or kind is bytes or key is None:
        return key
    if kind is float:
        return int(key) if key.is_integer() else key
    if kind is bool:
        return int(key)
    if isinstance(key, tuple):
        return tuple(_canonical(item) for item in key)
    if isinstance(key, str):
        return str(key)
    if isinstance(key, bytes):
        return bytes(key)
    if isinstance(key, numbers.Number) and not isinstance(key, complex):
        try:
            if key == int(key):
                return int(key)
            if key == float(key):
                return _canonical(float(key))
        except (TypeError, ValueError, OverflowError):
            pass
    return key


_MEMO_FREE = frozenset({int, str, bytes, float, type(None)})  # a pickle of one such has no memo


def _key_bytes(key: Any) -> bytes:
    """The deterministic pickle of a user or map key (see the module docstring for why)."""
    key = _canonical(key)
    if type(key) in _MEMO_FREE:
        return _dumps(key, _PROTOCOL)
    buffer = io.BytesIO()
    pickler = pickle.Pickler(buffer, _PROTOCOL)
    pickler.fast = True  # no memo: equal objects pickle alike whether or not they are identical
    pickler.dump(key)
    return buffer.getvalue()


_pack_header = struct.Struct(">HI").pack  # key group, length of the pickled user key


def _prefix(key_group: int, key_bytes: bytes) -> bytes:
    return _pack_header(key_group, len(key_bytes)) + key_bytes


def _successor(prefix: bytes) -> bytes:
    """The smallest byte string greater than every string that starts with ``prefix``.

    Never empty: a prefix starts with a key group below 32768, so its first byte is below 0xff.
    """
    stripped = prefix.rstrip(b"\xff")
    return stripped[:-1] + bytes((stripped[-1] + 1,))


class _CurrentKey:
    """The row-key prefix of ``key_context.key``, computed once per key change.

    The operator sets the key once per record and then calls its state objects, often more than
    once; hashing and pickling the key would otherwise be most of the cost of a state access.
    The cache compares keys with ``==``, which is sound because equal keys have equal prefixes.
    """

    __slots__ = ("_key_group_of", "key", "prefix")

    def __init__(self, key_group_of: Callable[[Any], int]) -> None:
        self._key_group_of = key_group_of
        self.key: Any = _UNSET
        self.prefix = b""

    def refresh(self, key: Any) -> bytes:
        kind = type(key)
        key_bytes = _dumps(key, _PROTOCOL) if kind is int or kind is str else _key_bytes(key)
        prefix = _pack_header(self._key_group_of(key), len(key_bytes)) + key_bytes
        self.key, self.prefix = key, prefix
        return prefix


# --- state objects ---------------------------------------------------------------------------


class _Table:
    """One declared state: its column family, and the handle write batches address it by.

    Only the backend holds tables: a column family handle keeps the database open.
    """

    __slots__ = ("db", "handle", "kind", "name")

    def __init__(self, name: str, kind: StateKind, db: Rdict, owner: Rdict) -> None:
        self.name = name
        self.kind = kind
        self.db = db
        self.handle = owner.get_column_family_handle(_column_family(name, kind))


def _column_family(name: str, kind: StateKind) -> str:
    return f"{kind.value}/{name}"


class _RowState:
    """What every RocksDB state object holds: the column family's calls and the current key."""

    __slots__ = ("_current", "_db", "_delete", "_get", "_kc", "_put")

    def __init__(self, table: _Table, kc: KeyContext, current: _CurrentKey) -> None:
        self._kc = kc
        self._current = current
        self._db = table.db
        self._get = table.db.get
        self._put = table.db.put
        self._delete = table.db.delete

    def _prefix(self) -> bytes:
        """The current key's row prefix, serialized again only when the key changed."""
        key, current = self._kc.key, self._current
        return current.prefix if key == current.key else current.refresh(key)


class RocksDBValueState(_RowState):
    """The per-record path: the prefix expression is inlined rather than a ``_prefix()`` call."""

    __slots__ = ()

    def value(self) -> Any:
        key, current = self._kc.key, self._current
        raw = self._get(current.prefix if key == current.key else current.refresh(key))
        return None if raw is None else _loads(raw)

    def update(self, value: Any) -> None:
        key, current = self._kc.key, self._current
        prefix = current.prefix if key == current.key else current.refresh(key)
        if value is None:
            self._delete(prefix)
        else:
            self._put(prefix, _dumps(value, _PROTOCOL))

    def clear(self) -> None:
        key, current = self._kc.key, self._current
        self._delete(current.prefix if key == current.key else current.refresh(key))


class RocksDBListState(_RowState):
    """The list of a key is one row (its pickled list).

    Trade-off: ``get()`` is one read, but ``add()`` is read-modify-write of the whole list,
    O(length) per element; Flink appends with a merge operator instead, which rocksdict does
    not expose for Python. Keep per-key lists short, or use MapState for long ones.
    """

    __slots__ = ()

    def get(self) -> list[Any]:
        raw = self._get(self._prefix())
        return [] if raw is None else _loads(raw)

    def add(self, value: Any) -> None:
        prefix = self._prefix()
        raw = self._get(prefix)
        values = [] if raw is None else _loads(raw)
        values.append(value)
        self._put(prefix, _dumps(values, _PROTOCOL))

    def update(self, values: Iterable[Any]) -> None:
        values = list(values)
        if values:
            self._put(self._prefix(), _dumps(values, _PROTOCOL))
        else:
            self.clear()

    def clear(self) -> None:
        self._delete(self._prefix())


class RocksDBMapState(_RowState):
    """One row per map entry (the key's prefix and the pickled map key), so that get, put and
    remove of one entry touch only that entry; iteration is a range scan over the prefix.

    Entries iterate in the order of their pickled map keys, not in insertion order as in the
    heap backend (MapState promises no order). Iterators are over a copy, as in the heap backend:
    the map may be changed while iterating.
    """

    __slots__ = ()

    def _rows(self, prefix: bytes, limit: int | None = None) -> list[tuple[bytes, bytes]]:
        """The rows of the current key's map (at most ``limit``), read at once.

        rocksdict 0.3.29 keeps a pointer into the upper bound's bytes, not a copy: the bound
        (and its options) must outlive the iterator, so the rows are read in this frame.
        """
        bound = _successor(prefix)
        options = ReadOptions()
        options.set_iterate_upper_bound(bound)
        rows = self._db.items(from_key=prefix, read_opt=options)
        found = list(rows) if limit is None else list(itertools.islice(rows, limit))
        del rows  # the iterator goes before the bound it points into
        return found

    def _entries(self) -> list[tuple[bytes, bytes]]:
        prefix = self._prefix()
        start = len(prefix)
        return [(k[start:], v) for k, v in self._rows(prefix)]

    def get(self, key: Any) -> Any:
        raw = self._db.get(self._prefix() + _key_bytes(key))
        return None if raw is None else _loads(raw)

    def put(self, key: Any, value: Any) -> None:
        self._db.put(self._prefix() + _key_bytes(key), _dumps(value, _PROTOCOL))

    def put_all(self, mapping: dict) -> None:
        prefix, put = self._prefix(), self._db.put
        for key, value in mapping.items():
            put(prefix + _key_bytes(key), _dumps(value, _PROTOCOL))

    def remove(self, key: Any) -> None:
        self._db.delete(self._prefix() + _key_bytes(key))

    def contains(self, key: Any) -> bool:
        return self._db.get(self._prefix() + _key_bytes(key)) is not None

    def items(self) -> Iterator[tuple[Any, Any]]:
        return iter([(_loads(k), _loads(v)) for k, v in self._entries()])

    def keys(self) -> Iterator[Any]:
        return iter([_loads(k) for k, _ in self._entries()])

    def values(self) -> Iterator[Any]:
        return iter([_loads(v) for _, v in self._entries()])

    def is_empty(self) -> bool:
        return not self._rows(self._prefix(), limit=1)

    def clear(self) -> None:
        # Point deletes, not DeleteRange: many small range tombstones slow every later read.
        # (No WriteBatch: it needs a column family handle, and a handle keeps the database
        # open after dispose() as long as the state object lives.)
        delete = self._db.delete
        for row, _ in self._rows(self._prefix()):
            delete(row)


# --- the backend -----------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class NativeCheckpoint:
    """A RocksDB checkpoint of a backend: a directory that opens as a database of its state.

    What incremental snapshots upload: SST files are immutable and their names are never
    reused within an instance (nor by one opened from its files), so a checkpoint uploads only
    the ``sst_files`` the last confirmed one did not, and references the others; the
    ``private_files`` (MANIFEST, CURRENT, OPTIONS, ...) are written every time. Column family
    ``<kind>/<name>`` holds state ``name``; rows are laid out as in the module docstring.
    """

    directory: str
    sst_files: dict[str, int]  # file name -> size in bytes; hard links to the live files
    private_files: dict[str, int]  # file name -> size in bytes
    states: dict[str, StateKind]  # state name -> kind


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
        self._current = _CurrentKey(self._key_groups.key_group)
        self.local_dir = os.path.abspath(local_dir)
        _claim(self.local_dir)
        self._incremental = incremental
        self._local_recovery_dir = (
            os.path.abspath(local_recovery_dir) if incremental and local_recovery_dir else None
        )
        self._options = _db_options(
            block_cache_bytes, write_buffer_bytes, target_file_size_bytes, level_base_bytes
        )
        # No write-ahead log: checkpoints make state durable, and a crashed instance's
        # directory is discarded (as in Flink); the WAL would only halve the write rate.
        self._write_options = WriteOptions()
        self._write_options.disable_wal = True
        self._db = self._open(os.path.join(self.local_dir, _DB), ())
        self._tables: dict[str, _Table] = {}
        self._states: dict[str, Any] = {}
        # Guards _pending, _running, _disposed and _uploads against the snapshot threads.
        self._guard = threading.Condition()
        self._pending: weakref.WeakSet[_RocksDBSnapshot] = weakref.WeakSet()
        self._running = 0
        self._disposed = False
        # Incremental: the shared files each pending checkpoint references, by local name, and
        # those of the last checkpoint notified complete (the only ones a new one may reuse).
        self._uploads: dict[int, dict[str, SharedFileHandle]] = {}
        self._confirmed: dict[str, SharedFileHandle] = {}

    def _open(self, path: str, column_families: Iterable[str]) -> Rdict:
        db = Rdict(
            path, self._options, column_families={cf: self._options for cf in column_families}
        )
        db.set_write_options(self._write_options)
        return db

    def get_state(self, descriptor: StateDescriptor) -> Any:
        state = self._states.get(descriptor.name)
        table = self._tables.get(descriptor.name)
        if table is not None:
            check_state_kind(descriptor, table.kind)
        if state is not None:
            return state
        if table is None:
            table = self._table(descriptor.name, descriptor.kind)
        if descriptor.kind is StateKind.VALUE:
            state = RocksDBValueState(table, self.key_context, self._current)
        elif descriptor.kind is StateKind.LIST:
            state = RocksDBListState(table, self.key_context, self._current)
        else:
            state = RocksDBMapState(table, self.key_context, self._current)
        self._states[descriptor.name] = state
        return state

    def _table(self, name: str, kind: StateKind, exists: bool = False) -> _Table:
        """``exists``: the column family came with a restored database."""
        table = self._tables.get(name)
        if table is not None:
            if table.kind is not kind:
                raise ValueError(
                    f"state {name!r} is {table.kind.value} state here and {kind.value} state in "
                    "the snapshot being restored"
                )
            return table
        self._check_open()
        if exists:
            db = self._db.get_column_family(_column_family(name, kind))
        else:
            db = self._db.create_column_family(_column_family(name, kind), self._options)
        db.set_write_options(self._write_options)
        table = self._tables[name] = _Table(name, kind, db, self._db)
        return table

    # --- snapshots ------------------------------------------------------------------------------

    def snapshot(
        self, checkpoint_id: int = 0, options: CheckpointOptions = CHECKPOINT
    ) -> AsyncSnapshot:
        """Full: creates one iterator per state; each reads the state as it is now, whatever is
        written later. (Not ``Rdict.snapshot()``: rocksdict 0.3.29's ``Snapshot.items()`` and
        ``Snapshot.iter()`` drop the snapshot and read the live data.) Incremental: a native
        checkpoint, see the module docstring."""
        self._check_open()
        if self._incremental and options.snapshot_format is SnapshotFormat.NATIVE:
            return self._incremental_snapshot(checkpoint_id)
        scan = ReadOptions()
        scan.fill_cache(False)  # a full scan would evict the working set of the task
        cursors = [(t.name, t.kind, t.db.items(read_opt=scan)) for t in self._tables.values()]
        snapshot = _RocksDBSnapshot(self, cursors, scan)
        with self._guard:
            self._pending.add(snapshot)
        return snapshot

    def _incremental_snapshot(self, checkpoint_id: int) -> AsyncSnapshot:
        if not self._tables:
            return lambda streams: []
        directory = os.path.join(self._checkpoints_dir(), checkpoint_dir(checkpoint_id))
        shutil.rmtree(directory, ignore_errors=True)  # left by an attempt that crashed
        native = self.native_checkpoint(directory)
        return _IncrementalSnapshot(self, checkpoint_id, native, self._confirmed)

    def _checkpoints_dir(self) -> str:
        return self._local_recovery_dir or os.path.join(self.local_dir, _CHECKPOINTS)

    def native_checkpoint(self, directory: str) -> NativeCheckpoint:
        """Flushes every memtable and hard-links the live files into ``directory`` (which must
        not exist, on the file system of ``local_dir``).

        Call from the task thread, as a synchronous phase: the flush blocks processing.
        """
        self._check_open()
        for table in self._tables.values():
            table.db.flush(wait=True)
        os.makedirs(os.path.dirname(os.path.abspath(directory)), exist_ok=True)
        Checkpoint(self._db).create_checkpoint(directory)
        sst_files, private_files = {}, {}
        for entry in os.scandir(directory):
            files = sst_files if entry.name.endswith(".sst") else private_files
            files[entry.name] = entry.stat().st_size
        states = {name: table.kind for name, table in self._tables.items()}
        return NativeCheckpoint(directory, sst_files, private_files, states)

    def notify_checkpoint_complete(self, checkpoint_id: int) -> None:
        """From now on the next checkpoint references this one's files (none, if this backend
        wrote nothing for it: then it cannot know which earlier files are still retained)."""
        with self._guard:
            uploads = self._uploads.pop(checkpoint_id, None)
            self._confirmed = uploads or {}
            for older in [c for c in self._uploads if c < checkpoint_id]:
                del self._uploads[older]
        if self._local_recovery_dir is not None and uploads is not None:
            self._delete_local_checkpoints(lambda cid: cid < checkpoint_id)

    def notify_checkpoint_aborted(
        self, checkpoint_id: int, references_released: bool = False
    ) -> None:
        """``references_released``: this backend missed a notification and reused files
        already released; it forgets its confirmed files, so that the next checkpoint uploads
        everything rather than failing the same way."""
        with self._guard:
            self._uploads.pop(checkpoint_id, None)
            if references_released:
                self._confirmed = {}
        if self._local_recovery_dir is not None:
            self._delete_local_checkpoints(lambda cid: cid == checkpoint_id)

    def _uploaded(self, checkpoint_id: int, shared: list[SharedFileHandle]) -> None:
        with self._guard:
            if not self._disposed:
                self._uploads[checkpoint_id] = {s.local_name: s for s in shared}

    def _delete_local_checkpoints(self, which: Callable[[int], bool]) -> None:
        with contextlib.suppress(FileNotFoundError):
            for entry in os.listdir(self._checkpoints_dir()):
                cid = parse_checkpoint_dir(entry)
                if cid is not None and which(cid):
                    shutil.rmtree(os.path.join(self._checkpoints_dir(), entry), ignore_errors=True)

    # --- restore --------------------------------------------------------------------------------

    def restore(self, handles: list[KeyedStateHandle], streams: RestoreStreams) -> None:
        """One incremental handle of exactly this key-group range opens as the database (from
        the local copy when there is one) if no state was declared yet; otherwise rows are
        copied in from each handle."""
        incremental = [h for h in handles if isinstance(h, IncrementalKeyedHandle)]
        full = [h for h in handles if isinstance(h, KeyGroupsHandle)]
        if (
            not self._tables
            and len(incremental) == 1
            and not full
            and (incremental[0].key_group_start, incremental[0].key_group_end)
            == (self._range.start, self._range.end)
        ):
            self._open_restored(incremental[0], streams)
            return
        for handle in incremental:
            self._copy_rows(handle, streams)
        self._restore_full(full, streams)

    def _open_restored(self, handle: IncrementalKeyedHandle, streams: RestoreStreams) -> None:
        """A local copy that fails to open is deleted and the files downloaded instead (else
        every restart would fail on it the same way)."""
        db_path = os.path.join(self.local_dir, _DB)
        self._db.close()
        local = self._local_copy(handle)
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
        _fetch_files(handle, streams, db_path, local_copy)
        return self._open(db_path, _column_families(db_path, handle))

    def _local_copy(self, handle: IncrementalKeyedHandle) -> str | None:
        """The local checkpoint directory of ``handle``, if kept here and intact."""
        if self._local_recovery_dir is None:
            return None
        directory = os.path.join(self._local_recovery_dir, checkpoint_dir(handle.checkpoint_id))
        expected = {s.local_name: s.file.size for s in handle.shared}
        expected.update((name, stream_size(h)) for name, h in handle.private.items())
        try:
            for name, size in expected.items():
                if os.stat(os.path.join(directory, name)).st_size != size:
                    raise FileNotFoundError(name)
        except OSError:
            if os.path.isdir(directory):
                log.warning(
                    "Local copy %s does not match checkpoint %d; downloading it",
                    directory,
                    handle.checkpoint_id,
                )
            return None
        return directory

    def _copy_rows(self, handle: IncrementalKeyedHandle, streams: RestoreStreams) -> None:
        """Copies the rows of this backend's key groups out of ``handle``'s database."""
        scratch = os.path.join(self.local_dir, _SCRATCH)
        with _opened_handle(handle, streams, scratch, self._range) as cursors:
            writer = _BatchWriter(self._db)
            for name, kind, rows in cursors:
                table = self._table(name, kind)
                for key, value in rows:
                    writer.put(key, value, table)
            writer.flush()

    def _restore_full(self, handles: list[KeyGroupsHandle], streams: RestoreStreams) -> None:
        for handle in handles:
            wanted = [o for o in handle.offsets if o[0] in self._range]
            if not wanted:
                continue
            data = streams.read(handle.stream)
            writer = _BatchWriter(self._db)
            for kg, offset, length in wanted:
                section = pickle.loads(data[offset : offset + length])
                for name, (kind_value, entries) in section.items():
                    table = self._table(name, StateKind(kind_value))
                    for key, value in entries:
                        self._restore_entry(writer, table, kg, key, value)
            writer.flush()

    def _restore_entry(
        self, writer: _BatchWriter, table: _Table, kg: int, key: Any, value: Any
    ) -> None:
        if stable_hash(key) % self._max_parallelism != kg:
            # Lookups look for a key under the key group of its hash: a row under another key
            # group would be silently lost.
            raise ValueError(
                f"key {key!r:.200} is in key group {kg} of the snapshot but hashes to another "
                f"one at max parallelism {self._max_parallelism}; was the snapshot taken with "
                "another max parallelism?"
            )
        prefix = _prefix(kg, _key_bytes(key))
        if table.kind is StateKind.MAP:
            for map_key, map_value in value.items():
                writer.put(prefix + _key_bytes(map_key), _dumps(map_value, _PROTOCOL), table)
        elif value is not None if table.kind is StateKind.VALUE else len(value) > 0:
            # A row always holds a value: None and [] are no value (the heap never holds them).
            writer.put(prefix, _dumps(value, _PROTOCOL), table)

    def dispose(self) -> None:
        """Closes the database and deletes ``local_dir``; an asynchronous snapshot still running
        stops at its next key group (and fails), one not yet started fails when it starts."""
        with self._guard:
            if self._disposed:
                return
            self._disposed = True
            for snapshot in list(self._pending):
                snapshot.release()
            self._pending.clear()
            while self._running:
                self._guard.wait()
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

    def _check_open(self) -> None:
        if self._disposed:
            raise RuntimeError(f"the RocksDB state backend in {self.local_dir} was disposed")


class _BatchWriter:
    """Writes rows in batches of about ``_RESTORE_BATCH_BYTES`` (restores)."""

    def __init__(self, db: Rdict) -> None:
        self._db = db
        self._batch = WriteBatch(raw_mode=True)

    def put(self, key: bytes, value: bytes, table: _Table) -> None:
        self._batch.put(key, value, table.handle)
        if self._batch.size_in_bytes() >= _RESTORE_BATCH_BYTES:
            self.flush()

    def flush(self) -> None:
        if len(self._batch):
            self._db.write(self._batch)
            self._batch = WriteBatch(raw_mode=True)


class _RocksDBSnapshot:
    """The asynchronous phase of ``RocksDBKeyedStateBackend.snapshot()``; runs once.

    The iterators live only in ``_cursors`` (and are reached by index while scanning), so that
    ``release()``, or the end of the scan, drops them even if an exception's traceback outlives
    the scan: an iterator keeps the database open.
    """

    def __init__(
        self,
        backend: RocksDBKeyedStateBackend,
        cursors: list[tuple[str, StateKind, Any]],
        read_options: ReadOptions,
    ) -> None:
        self._backend = backend
        self._cursors: list[tuple[str, StateKind, Any]] | None = cursors
        self._read_options = read_options  # lives as long as the iterators (see _rows)

    def release(self) -> None:
        """Drops the iterators without writing (called under the backend's guard)."""
        if self._cursors is not None:
            self._cursors.clear()
            self._cursors = None

    def __call__(self, streams: SnapshotStreams) -> list[KeyGroupsHandle]:
        backend = self._backend
        with backend._guard:
            cursors, self._cursors = self._cursors, None
            if cursors is None:
                reason = "was disposed" if backend._disposed else "already wrote this snapshot"
                raise RuntimeError(f"the RocksDB state backend in {backend.local_dir} {reason}")
            backend._pending.discard(self)
            backend._running += 1
        chunks: list[bytes] = []
        offsets: list[tuple[int, int, int]] = []
        try:
            position = 0
            for kg, section in _sections(cursors, backend._check_open):
                chunk = pickle.dumps(section, protocol=_PROTOCOL)
                offsets.append((kg, position, len(chunk)))
                chunks.append(chunk)
                position += len(chunk)
        finally:
            cursors.clear()
            with backend._guard:
                backend._running -= 1
                backend._guard.notify_all()
        if not offsets:
            return []
        handle = streams.write(b"".join(chunks), "keyed")
        kg_range = backend._range
        return [KeyGroupsHandle(kg_range.start, kg_range.end, offsets, handle)]


class _IncrementalSnapshot:
    """The asynchronous phase of an incremental snapshot: uploads what ``confirmed`` (the last
    completed checkpoint's files, as of the synchronous phase) lacks. Reads only ``native``."""

    def __init__(
        self,
        backend: RocksDBKeyedStateBackend,
        checkpoint_id: int,
        native: NativeCheckpoint,
        confirmed: dict[str, SharedFileHandle],
    ) -> None:
        self._backend = backend
        self._checkpoint_id = checkpoint_id
        self._native = native
        self._confirmed = confirmed

    def __call__(self, streams: SnapshotStreams) -> list[IncrementalKeyedHandle]:
        native, cid, backend = self._native, self._checkpoint_id, self._backend
        try:
            shared = []
            for name, size in sorted(native.sst_files.items()):
                known = self._confirmed.get(name)
                if known is not None and known.file.size == size:
                    shared.append(known)
                else:
                    path = os.path.join(native.directory, name)
                    shared.append(SharedFileHandle(name, streams.upload_shared(path), cid))
            private: dict[str, StreamHandle] = {}
            for name in sorted(native.private_files):
                with open(os.path.join(native.directory, name), "rb") as f:
                    private[name] = streams.write(f.read(), name)
        finally:
            if backend._local_recovery_dir is None:
                shutil.rmtree(native.directory, ignore_errors=True)
        backend._uploaded(cid, shared)
        states = {name: kind.value for name, kind in native.states.items()}
        kg_range = backend._range
        return [IncrementalKeyedHandle(kg_range.start, kg_range.end, cid, shared, private, states)]


def incremental_sections(
    handle: IncrementalKeyedHandle,
    streams: RestoreStreams,
    key_group_range: KeyGroupRange,
    scratch_dir: str,
) -> Iterator[tuple[int, dict[str, tuple[str, list]]]]:
    """The heap backend's sections of ``handle``'s key groups in ``key_group_range``, read from
    its database opened in ``scratch_dir``: how an incremental checkpoint restores into the
    ``hashmap`` backend."""
    with _opened_handle(handle, streams, scratch_dir, key_group_range) as cursors:
        yield from _sections(cursors)


@contextlib.contextmanager
def _opened_handle(
    handle: IncrementalKeyedHandle,
    streams: RestoreStreams,
    scratch_dir: str,
    key_group_range: KeyGroupRange,
) -> Iterator[list[tuple[str, StateKind, Any]]]:
    """Downloads ``handle`` into ``scratch_dir`` and opens it read-only; yields one cursor of
    the rows in ``key_group_range`` per state. Closes and deletes it all afterwards."""
    shutil.rmtree(scratch_dir, ignore_errors=True)
    options = Options(raw_mode=True)
    db = None
    families: list[tuple[str, StateKind, Rdict]] = []
    bounds: list[ReadOptions] = []  # outlive their iterators (see RocksDBMapState._rows)
    try:
        _fetch_files(handle, streams, scratch_dir, None)
        db = Rdict(
            scratch_dir,
            options,
            column_families={cf: options for cf in _column_families(scratch_dir, handle)},
            access_type=AccessType.read_only(),
        )
        low = key_group_range.start.to_bytes(2, "big")
        high = (key_group_range.end + 1).to_bytes(2, "big")
        cursors = []
        for name, kind in handle.states.items():
            kind = StateKind(kind)
            family = db.get_column_family(_column_family(name, kind))
            families.append((name, kind, family))
            bound = ReadOptions()
            bound.fill_cache(False)
            bound.set_iterate_upper_bound(high)
            bounds.append(bound)
            cursors.append((name, kind, family.items(from_key=low, read_opt=bound)))
        yield cursors
        cursors.clear()
    finally:
        for _, _, family in families:
            family.close()
        if db is not None:
            db.close()
        shutil.rmtree(scratch_dir, ignore_errors=True)


def _fetch_files(
    handle: IncrementalKeyedHandle, streams: RestoreStreams, directory: str, local_copy: str | None
) -> None:
    """Puts ``handle``'s files into ``directory``: hard links to the SST files of the local copy
    (immutable) and copies of its other files (RocksDB appends to the MANIFEST), or downloads."""
    os.makedirs(directory)
    files: list[tuple[str, StreamHandle]] = [(s.local_name, s.file) for s in handle.shared]
    files += list(handle.private.items())
    for name, stream in files:
        if os.path.basename(name) != name or name.startswith("."):
            raise ValueError(
                f"checkpoint {handle.checkpoint_id} names a state file {name!r}, which is not a "
                "plain file name; the metadata was not written by barrierflow"
            )
        target = os.path.join(directory, name)
        if local_copy is None:
            streams.download(stream, target)
        elif name.endswith(".sst"):
            os.link(os.path.join(local_copy, name), target)
        else:
            shutil.copyfile(os.path.join(local_copy, name), target)


def _column_families(db_path: str, handle: IncrementalKeyedHandle) -> list[str]:
    """The column families of the database at ``db_path``, which must be those of ``handle``."""
    found = sorted(cf for cf in Rdict.list_cf(db_path, Options(raw_mode=True)) if cf != "default")
    expected = sorted(_column_family(n, StateKind(k)) for n, k in handle.states.items())
    if found != expected:
        raise ValueError(
            f"the files of checkpoint {handle.checkpoint_id} hold column families {found}, its "
            f"metadata lists {expected}"
        )
    return found


def _sections(
    cursors: list[tuple[str, StateKind, Any]], check: Callable[[], None] = lambda: None
) -> Iterator[tuple[int, dict[str, tuple[str, list]]]]:
    """The heap backend's sections, in key-group order: every column family is sorted by key
    group, so one pass over each, in step, yields one key group at a time."""
    heads: list[tuple[bytes, bytes] | None] = [next(c[2], None) for c in cursors]
    while True:
        pending = [head[0][:2] for head in heads if head is not None]
        if not pending:
            return
        check()
        kg_bytes = min(pending)
        section: dict[str, tuple[str, list]] = {}
        for i in range(len(cursors)):
            rows = []
            head = heads[i]
            while head is not None and head[0][:2] == kg_bytes:
                rows.append(head)
                head = next(cursors[i][2], None)
            heads[i] = head
            if rows:
                name, kind = cursors[i][0], cursors[i][1]
                section[name] = (kind.value, _decode(kind, rows))
        yield int.from_bytes(kg_bytes, "big"), section


def _decode(kind: StateKind, rows: list[tuple[bytes, bytes]]) -> list[tuple[Any, Any]]:
    """Rows of one key group of one state -> the heap backend's ``[(key, value), ...]``."""
    if kind is not StateKind.MAP:
        return [(_loads(k[_HEADER:]), _loads(v)) for k, v in rows]
    entries: list[tuple[Any, Any]] = []
    mapping: dict[Any, Any] = {}
    last = b""
    for k, v in rows:
        end = _HEADER + int.from_bytes(k[2:_HEADER], "big")
        if k[:end] != last:
            last = k[:end]
            mapping = {}
            entries.append((_loads(k[_HEADER:end]), mapping))
        mapping[_loads(k[end:])] = _loads(v)
    return entries


def _claim(local_dir: str) -> None:
    """Makes ``local_dir`` an empty directory of this backend (see ``RocksDBKeyedStateBackend``)."""
    if os.path.isdir(local_dir):
        foreign = set(os.listdir(local_dir)) - _OWN_ENTRIES
        if foreign:
            raise ValueError(
                f"RocksDB local directory {local_dir} holds files of something else "
                f"({', '.join(sorted(foreign)[:5])}); give each backend a directory of its own"
            )
        db_path = os.path.join(local_dir, _DB)
        if os.path.isdir(db_path):
            try:
                # Takes RocksDB's lock first: refuses a database that is open, in this process
                # or another, instead of deleting its files under it.
                Rdict.destroy(db_path, Options(raw_mode=True))
            except Exception as e:  # rocksdict raises only plain Exception
                raise ValueError(
                    f"RocksDB local directory {local_dir} is in use ({e}); give each backend a "
                    "directory of its own"
                ) from e
        for entry in _OWN_ENTRIES:
            shutil.rmtree(os.path.join(local_dir, entry), ignore_errors=True)
    os.makedirs(local_dir, exist_ok=True)


def _db_options(
    block_cache_bytes: int,
    write_buffer_bytes: int,
    target_file_size_bytes: int = 64 * MiB,
    level_base_bytes: int = 256 * MiB,
) -> Options:
    """Options of the database and of every column family (they share the block cache)."""
    table = BlockBasedOptions()
    table.set_block_cache(Cache(block_cache_bytes))
    # Bloom filters: the first access of a new key is a miss that then skips every SST file.
    table.set_bloom_filter(10, False)
    # Index and filter blocks stay outside the block cache (about 1.3 bytes per key): the
    # cache is sharded into 1 MiB parts, and the filter of an SST file holding a million keys
    # is larger than that, so it was read again from the file on every get, 25x slower.
    options = Options(raw_mode=True)
    options.create_if_missing(True)
    options.set_block_based_table_factory(table)
    options.set_write_buffer_size(write_buffer_bytes)
    options.set_db_write_buffer_size(2 * write_buffer_bytes)
    options.set_keep_log_file_num(2)
    options.set_target_file_size_base(target_file_size_bytes)
    options.set_max_bytes_for_level_base(level_base_bytes)
    return options
