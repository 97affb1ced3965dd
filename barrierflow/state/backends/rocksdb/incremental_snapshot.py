"""Incremental snapshots of the RocksDB backend (docs/adr/0004-incremental-rocksdb-checkpoints.md).

The synchronous phase flushes the memtables and hard-links the live files into a local
checkpoint directory (a ``NativeCheckpoint``). The asynchronous phase uploads the SST files that
the last checkpoint this backend was *notified complete* did not upload, references the others,
and writes MANIFEST, CURRENT and OPTIONS for this checkpoint alone (``IncrementalKeyedHandle``).
Never reusing the files of a pending or aborted checkpoint is what makes the coordinator's
reference counts safe (FLINK-24611).

**Threading:** ``create_native_checkpoint`` on the task thread (the flush blocks processing);
an ``IncrementalSnapshot`` runs once, on a snapshot thread, and reads only its immutable local
checkpoint directory, while RocksDB's own compaction goes on. **I/O:** the local directory;
uploads through the ``SnapshotStreams``.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from rocksdict import Checkpoint, Rdict

from barrierflow.checkpoint.metadata import IncrementalKeyedHandle, SharedFileHandle, StreamHandle
from barrierflow.protocol.key_group_range import KeyGroupRange
from barrierflow.state.backend import SnapshotStreams
from barrierflow.state.backends.rocksdb.state_objects import Table
from barrierflow.state.descriptors import StateKind


@dataclass(frozen=True, slots=True)
class NativeCheckpoint:
    """A RocksDB checkpoint of a backend: a directory that opens as a database of its state.

    What incremental snapshots upload: SST files are immutable and their names are never
    reused within an instance (nor by one opened from its files), so a checkpoint uploads only
    the ``sst_files`` the last confirmed one did not, and references the others; the
    ``private_files`` (MANIFEST, CURRENT, OPTIONS, ...) are written every time. Column family
    ``<kind>/<name>`` holds state ``name`` (``key_codec.py``).
    """

    directory: str
    sst_files: dict[str, int]  # file name -> size in bytes; hard links to the live files
    private_files: dict[str, int]  # file name -> size in bytes
    states: dict[str, StateKind]  # state name -> kind


def create_native_checkpoint(
    db: Rdict, tables: Iterable[Table], directory: str
) -> NativeCheckpoint:
    """Flushes every memtable and hard-links the live files into ``directory`` (which must not
    exist, on the file system of the database)."""
    tables = list(tables)
    for table in tables:
        table.db.flush(wait=True)
    os.makedirs(os.path.dirname(os.path.abspath(directory)), exist_ok=True)
    Checkpoint(db).create_checkpoint(directory)
    sst_files: dict[str, int] = {}  # file name -> size
    private_files: dict[str, int] = {}
    for entry in os.scandir(directory):
        files = sst_files if entry.name.endswith(".sst") else private_files
        files[entry.name] = entry.stat().st_size
    return NativeCheckpoint(directory, sst_files, private_files, {t.name: t.kind for t in tables})


class IncrementalSnapshot:
    """The asynchronous phase: uploads what ``confirmed`` (the last completed checkpoint's
    files, as of the synchronous phase) lacks; then ``uploaded(checkpoint_id, shared)`` tells
    the backend, and ``done(directory)`` lets it delete or keep the native checkpoint."""

    def __init__(
        self,
        checkpoint_id: int,
        native: NativeCheckpoint,
        confirmed: dict[str, SharedFileHandle],
        key_group_range: KeyGroupRange,
        uploaded: Callable[[int, list[SharedFileHandle]], None],
        done: Callable[[str], None],
        types: dict[str, str] | None = None,
    ) -> None:
        """``types``: the declared type of each state, as the snapshot records them."""
        self._types = types or {}
        self._checkpoint_id = checkpoint_id
        self._native = native
        self._confirmed = confirmed
        self._range = key_group_range
        self._uploaded = uploaded
        self._done = done

    def __call__(self, streams: SnapshotStreams) -> list[IncrementalKeyedHandle]:
        native, cid = self._native, self._checkpoint_id
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
            self._done(native.directory)
        self._uploaded(cid, shared)
        states = {name: kind.value for name, kind in native.states.items()}
        kg = self._range
        types = {n: t for n, t in self._types.items() if n in states}
        return [IncrementalKeyedHandle(kg.start, kg.end, cid, shared, private, states, types)]
