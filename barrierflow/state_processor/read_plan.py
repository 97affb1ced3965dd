"""Which Spark task reads what of a snapshot: a read of keyed state is one task per range of key
groups, given only the handles of its key groups (of the key-group format, it then reads only
their bytes); an incremental (native RocksDB) handle is one task of its own, which opens that
old subtask's files. A read of operator state is one task per old subtask.

Tasks travel to the executors as MessagePack (``encode_task`` / ``decode_task``), never pickle.
Performs no I/O.
"""

from __future__ import annotations

import msgspec

from barrierflow.checkpoint.metadata import (
    IncrementalKeyedHandle,
    KeyedStateHandle,
    KeyGroupsHandle,
    OperatorState,
    StreamHandle,
)
from barrierflow.protocol.key_group_range import KeyGroupRange, key_group_range_for_subtask


class ReadTask(msgspec.Struct, frozen=True):
    """What one Spark task reads: keyed state of ``[key_group_start, key_group_end]`` from
    ``keyed`` (the handles that hold some of it), or operator state streams; every path is
    relative to ``root_uri``."""

    root_uri: str
    max_parallelism: int
    key_group_start: int = 0
    key_group_end: int = -1
    keyed: list[KeyedStateHandle] = []
    operator_states: list[StreamHandle] = []

    @property
    def key_group_range(self) -> KeyGroupRange:
        return KeyGroupRange(self.key_group_start, self.key_group_end)


_encoder = msgspec.msgpack.Encoder()
_decoder = msgspec.msgpack.Decoder(ReadTask)


def encode_task(task: ReadTask) -> bytes:
    return _encoder.encode(task)


def decode_task(data: bytes) -> ReadTask:
    return _decoder.decode(data)


def plan_keyed_read(root_uri: str, operator: OperatorState, tasks: int) -> list[ReadTask]:
    """At most ``tasks`` tasks over the key-group format's handles, each a contiguous range of
    key groups with the handles that intersect it, plus one task per incremental handle;
    ranges without any handle are left out."""
    handles = [h for s in operator.subtasks for h in s.keyed_state]
    max_parallelism = operator.max_parallelism
    planned = [
        ReadTask(root_uri, max_parallelism, h.key_group_start, h.key_group_end, [h])
        for h in handles
        if isinstance(h, IncrementalKeyedHandle)
    ]
    full = [h for h in handles if isinstance(h, KeyGroupsHandle)]
    count = max(1, min(tasks, max_parallelism))
    for index in range(count):
        own = key_group_range_for_subtask(max_parallelism, count, index)
        mine: list[KeyedStateHandle] = [h for h in full if _holds_some(h, own)]
        if mine:
            planned.append(ReadTask(root_uri, max_parallelism, own.start, own.end, mine))
    return planned


def _holds_some(handle: KeyGroupsHandle, key_groups: KeyGroupRange) -> bool:
    return any(kg in key_groups for kg, _, _ in handle.offsets)


def plan_operator_read(root_uri: str, operator: OperatorState) -> list[ReadTask]:
    """One task per old subtask that has operator state."""
    return [
        ReadTask(root_uri, operator.max_parallelism, operator_states=[s.operator_state])
        for s in sorted(operator.subtasks, key=lambda s: s.subtask)
        if s.operator_state is not None
    ]
