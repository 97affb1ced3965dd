"""What one Spark task of a state read does: reads the state its ``ReadTask`` names and makes
rows of it. Keyed state comes key group by key group (the key-group format's sections of its
range, fetched by byte range; an incremental RocksDB handle's database, downloaded into a
scratch directory and scanned over its range), so a task holds one key group's state at a time.

**Threading:** the Spark task's thread. **I/O:** checkpoint storage (with the file system
settings the driver had: ``s3.*``), and a local scratch directory for RocksDB files.
"""

from __future__ import annotations

import pickle
import shutil
import tempfile
from collections.abc import Iterator
from typing import Any

from barrierflow.checkpoint import file_systems
from barrierflow.checkpoint.key_group_format import Section, read_key_group_ranges
from barrierflow.checkpoint.metadata import IncrementalKeyedHandle
from barrierflow.checkpoint.state_streams import StorageRestoreStreams
from barrierflow.checkpoint.storage import CheckpointDirectory
from barrierflow.state.backends.rocksdb.incremental_restore import incremental_sections
from barrierflow.state.operator_state import DistributionMode, read_snapshot
from barrierflow.state_processor.keyed_rows import KeyedRows
from barrierflow.state_processor.read_plan import ReadTask


def read_keyed(
    task: ReadTask, settings: file_systems.FileSystemSettings, rows: KeyedRows
) -> Iterator[Any]:
    """The rows ``rows`` makes of each key of ``task``'s key groups."""
    file_systems.initialize(settings)
    kinds: dict[str, str] = {}
    types: dict[str, str] = {}
    for handle in task.keyed:
        kinds.update(handle.states)
        types.update(handle.types)
    rows.open(kinds, types)
    wanted = rows.states
    for _kg, section in _sections(task):
        by_key: dict[Any, dict[str, Any]] = {}
        for name, (_kind, entries) in section.items():
            if wanted is not None and name not in wanted:
                continue
            for key, stored in entries:
                values = by_key.get(key)
                if values is None:
                    values = by_key[key] = {}
                values[name] = stored
        for key, values in by_key.items():
            yield from rows.rows(key, values)


def _sections(task: ReadTask) -> Iterator[tuple[int, Section]]:
    streams = StorageRestoreStreams(CheckpointDirectory(task.root_uri), shares_storage=False)
    key_groups = task.key_group_range
    for handle in task.keyed:
        if isinstance(handle, IncrementalKeyedHandle):
            scratch = tempfile.mkdtemp(prefix="barrierflow-state-read-")
            try:
                yield from incremental_sections(handle, streams, key_groups, f"{scratch}/db")
            finally:
                shutil.rmtree(scratch, ignore_errors=True)
        else:
            yield from read_key_group_ranges(handle, key_groups, streams.read, streams.read_range)


def operator_entries(
    task: ReadTask, settings: file_systems.FileSystemSettings, name: str
) -> Iterator[tuple[DistributionMode, Any]]:
    """(distribution mode, entry) of each entry of operator state ``name`` in ``task``'s
    streams."""
    file_systems.initialize(settings)
    streams = StorageRestoreStreams(CheckpointDirectory(task.root_uri), shares_storage=False)
    for handle in task.operator_states:
        found = read_snapshot(streams.read(handle)).get(name)
        if found is not None:
            mode, entries = found
            for entry in entries:
                yield mode, entry


def broadcast_entries(copy: bytes) -> dict[Any, Any]:
    """A broadcast state's map, from the one entry each subtask stores of it: its pickle
    (``state/broadcast_state.py``), in a stream whose checksum matched when it was read."""
    return pickle.loads(copy)
