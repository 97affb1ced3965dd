"""What a savepoint or checkpoint holds, one row per operator and state (Flink 2.1's
``savepoint_metadata``, with each state's name, kind and declared type): what
``barrierflow savepoint info`` prints.

Keyed states come from the metadata; the names of operator states (list, union, broadcast)
from each subtask's operator state stream, which is small (positions, transactions, broadcast
maps) and MessagePack, read on the caller's side.

**I/O:** those streams, through checkpoint storage.
"""

from __future__ import annotations

from dataclasses import dataclass

from barrierflow.checkpoint.metadata import (
    CheckpointMetadata,
    IncrementalKeyedHandle,
    OperatorState,
)
from barrierflow.checkpoint.state_streams import StorageRestoreStreams
from barrierflow.checkpoint.storage import CheckpointDirectory
from barrierflow.state.operator_state import read_snapshot


@dataclass(frozen=True)
class StateRow:
    uid: str
    name: str  # the operator's
    parallelism: int
    max_parallelism: int
    state: str  # "" for an operator without state of its own (only data in flight)
    kind: str  # value, list, map; operator list, union, broadcast
    type: str  # declared type, "" if none
    backend: str  # that wrote it ("hashmap", "rocksdb"), "" if unknown
    format: str  # "key groups" (canonical), "rocksdb files", "operator state"
    size_bytes: int  # of the operator's state, all of it


def savepoint_metadata(root_uri: str, metadata: CheckpointMetadata) -> list[StateRow]:
    streams = StorageRestoreStreams(CheckpointDirectory(root_uri), shares_storage=False)
    rows = []
    for op in metadata.operators:
        if op.subtasks:
            rows += _operator_rows(op, streams)
    return rows


def _operator_rows(op: OperatorState, streams: StorageRestoreStreams) -> list[StateRow]:
    size = sum(s.state_size() for s in op.subtasks)

    def row(state: str, kind: str, type_: str, backend: str, format_: str) -> StateRow:
        return StateRow(
            op.uid, op.name, op.parallelism, op.max_parallelism, state, kind, type_, backend,
            format_, size,
        )  # fmt: skip

    rows: dict[str, StateRow] = {}
    for handle in (h for s in op.subtasks for h in s.keyed_state):
        incremental = isinstance(handle, IncrementalKeyedHandle)
        format_ = "rocksdb files" if incremental else f"key groups v{handle.format_version}"
        for name, kind in handle.states.items():
            rows.setdefault(
                name, row(name, kind, handle.types.get(name, ""), handle.backend, format_)
            )
    for s in op.subtasks:
        if s.operator_state is not None:
            for name, (mode, _) in read_snapshot(streams.read(s.operator_state)).items():
                kind = f"operator {mode.value}"
                rows.setdefault(name, row(name, kind, "", "", "operator state"))
    if not rows:
        rows[""] = row("", "", "", "", "data in flight only")
    return list(rows.values())
