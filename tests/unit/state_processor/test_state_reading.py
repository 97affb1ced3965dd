"""What one task of a state read does, run in-process on snapshots written by the backends into
real storage (no Spark): every key of its key groups once, reading only those key groups' bytes
of the key-group format; an incremental RocksDB handle opened and scanned; states migrated as
declared, refused where they cannot be; a reader function's rows; window contents; timers;
operator list, union and broadcast state."""

from __future__ import annotations

from pathlib import Path

import pytest

from barrierflow.checkpoint import file_systems
from barrierflow.checkpoint.metadata import OperatorState, OperatorSubtaskState
from barrierflow.checkpoint.state_streams import CheckpointStreams, StorageRestoreStreams
from barrierflow.checkpoint.storage import CheckpointDirectory
from barrierflow.common import Types
from barrierflow.common.types import Row
from barrierflow.datastream.state import (
    ListStateDescriptor,
    MapStateDescriptor,
    ValueStateDescriptor,
)
from barrierflow.protocol.checkpoint_barrier import (
    CheckpointKind,
    CheckpointOptions,
    SnapshotFormat,
)
from barrierflow.protocol.key_group_range import key_group_range_for_subtask
from barrierflow.runtime.timer_service import InternalTimerService
from barrierflow.runtime.window_state import CONTENTS
from barrierflow.state.backends.hashmap import HeapKeyedStateBackend
from barrierflow.state.backends.rocksdb import RocksDBKeyedStateBackend
from barrierflow.state.broadcast_state import BroadcastStateStore
from barrierflow.state.keyed_state_store import KeyedStateStore
from barrierflow.state.operator_state import DistributionMode, OperatorStateStore
from barrierflow.state.schema_evolution import IncompatibleStateError
from barrierflow.state_processor import keyed_rows, state_reading
from barrierflow.state_processor.functions import KeyedStateReaderFunction
from barrierflow.state_processor.read_plan import ReadTask, plan_keyed_read
from barrierflow.windowing.windows import TimeWindow

V1 = Types.ROW_NAMED(["id", "name"], [Types.INT(), Types.STRING()])
COUNT = ValueStateDescriptor("count", Types.LONG())
SEEN = ListStateDescriptor("seen", Types.STRING())
PROFILE = ValueStateDescriptor("profile", V1)
KEYS = 600


def written(tmp_path: Path, kind: str) -> tuple[str, OperatorState]:
    """A savepoint of operator 'count' at parallelism 2: per key a count, a list, a profile,
    a window's accumulator and an event-time timer."""
    root = str(tmp_path / "savepoint")
    storage = CheckpointDirectory(root)
    snapshot_format = SnapshotFormat.NATIVE if kind == "rocksdb" else SnapshotFormat.CANONICAL
    options = CheckpointOptions(CheckpointKind.SAVEPOINT, snapshot_format, target_location=root)
    subtasks = []
    for subtask in range(2):
        key_groups = key_group_range_for_subtask(128, 2, subtask)
        if kind == "hashmap":
            backend = HeapKeyedStateBackend(128, key_groups)
        else:
            backend = RocksDBKeyedStateBackend(128, key_groups, str(tmp_path / f"db{subtask}"),
                                               1 << 20, 1 << 20, incremental=True)  # fmt: skip
        store = KeyedStateStore(backend)
        timers = InternalTimerService(backend, 128)
        for key in range(KEYS):
            if key_groups.start <= _kg(key) <= key_groups.end:
                backend.key_context.key = key
                store.get_state(COUNT).update(key * 10)
                store.get_state(SEEN).update([f"s{key}"] * (key % 3))
                store.get_state(PROFILE).update(Row(key, f"n{key}"))
                backend.get_state(CONTENTS).put(TimeWindow(0, 1000), key + 0.5)
                timers.register(0, 999, TimeWindow(0, 1000))
        streams = CheckpointStreams(storage, 1, "count", subtask, 1, 64, savepoint=True)
        subtasks.append(OperatorSubtaskState(subtask, None, backend.snapshot(1, options)(streams)))
        backend.dispose()
    return root, OperatorState("count", "Count", 2, 128, subtasks, key_type="LONG")


def _kg(key: int) -> int:
    from barrierflow.state.key_groups import assign_to_key_group

    return assign_to_key_group(key, 128)


def read(root: str, op: OperatorState, rows, tasks: int = 4) -> list[list]:
    """The rows of each task."""
    settings = file_systems.current_settings()
    return [
        list(state_reading.read_keyed(t, settings, rows)) for t in plan_keyed_read(root, op, tasks)
    ]


@pytest.mark.parametrize("kind", ["hashmap", "rocksdb"])
def test_every_key_is_read_once_with_each_state_as_declared(tmp_path, kind):
    root, op = written(tmp_path, kind)
    per_task = read(root, op, keyed_rows.StateColumns([COUNT, SEEN, PROFILE], "here"))
    rows = sorted(r for task in per_task for r in task)
    assert [r[:3] for r in rows] == [(k, k * 10, [f"s{k}"] * (k % 3) or None) for k in range(KEYS)]
    assert all(tuple(r[3]) == (r[0], f"n{r[0]}") for r in rows)
    assert sum(1 for t in per_task if t) == (2 if kind == "rocksdb" else 4)


def test_a_task_reads_only_the_bytes_of_its_key_groups(tmp_path, monkeypatch):
    root, op = written(tmp_path, "hashmap")
    ranges: list[int] = []
    real = StorageRestoreStreams.read_range

    def counted(self, handle, offset, length):
        ranges.append(length)
        return real(self, handle, offset, length)

    monkeypatch.setattr(StorageRestoreStreams, "read_range", counted)
    monkeypatch.setattr(StorageRestoreStreams, "read", lambda *a: pytest.fail("read whole"))
    read(root, op, keyed_rows.StateColumns([COUNT], "here"), tasks=8)
    stream_sizes = [h.stream.size for s in op.subtasks for h in s.keyed_state]
    assert len(ranges) == 8 and sum(ranges) == sum(stream_sizes)  # each byte read once
    assert max(ranges) < max(stream_sizes) / 3


@pytest.mark.parametrize("kind", ["hashmap", "rocksdb"])
def test_a_state_declared_with_an_evolved_type_is_migrated_as_it_is_read(tmp_path, kind):
    root, op = written(tmp_path, kind)
    v2 = ValueStateDescriptor(
        "profile",
        Types.ROW_NAMED(["name", "id", "vip"], [Types.STRING(), Types.LONG(), Types.BOOLEAN()]),
    ).set_field_defaults({"vip": False})
    rows = [r for task in read(root, op, keyed_rows.StateColumns([v2], "here")) for r in task]
    assert sorted(tuple(r[1]) for r in rows)[:2] == [("n0", 0, False), ("n1", 1, False)]
    renamed = ValueStateDescriptor(
        "profile", Types.ROW_NAMED(["id", "title"], [Types.INT(), Types.STRING()])
    )
    with pytest.raises(IncompatibleStateError, match=r"here: state 'profile' .*'title'"):
        keyed_rows.StateColumns([renamed], "here").open(*kinds_and_types(op))


def kinds_and_types(op: OperatorState):
    handle = op.subtasks[0].keyed_state[0]
    return handle.states, handle.types


class Doubled(KeyedStateReaderFunction):
    def open(self, runtime_context):
        self.count = runtime_context.get_state(COUNT)
        self.seen = runtime_context.get_list_state(SEEN)

    def read_key(self, key, ctx):
        if key % 100 == 0:
            yield {"key": key, "double": self.count.value() * 2, "seen": len(self.seen.get()),
                   "timers": sorted(ctx.registered_event_time_timers())}  # fmt: skip


def test_a_reader_functions_rows_and_its_read_only_states(tmp_path):
    root, op = written(tmp_path, "hashmap")
    rows = keyed_rows.ReaderFunctionRows(Doubled(), "count", 128)
    found = sorted((r for task in read(root, op, rows) for r in task), key=lambda r: r["key"])
    assert found[:2] == [
        {"key": 0, "double": 0, "seen": 0, "timers": [999]},
        {"key": 100, "double": 2000, "seen": 1, "timers": [999]},
    ]
    rows.open(*kinds_and_types(op))
    with pytest.raises(RuntimeError, match="'count' is read-only"):
        rows._store.get_state(COUNT).update(1)


@pytest.mark.parametrize("kind", ["hashmap", "rocksdb"])
def test_window_contents_and_timers_come_a_row_each(tmp_path, kind):
    root, op = written(tmp_path, kind)
    windows = sorted(r for task in read(root, op, keyed_rows.WindowRows()) for r in task)
    assert windows[:2] == [(0, "[0, 1000)", 0, 1000, 0.5), (1, "[0, 1000)", 0, 1000, 1.5)]
    timers = sorted(r for task in read(root, op, keyed_rows.TimerRows()) for r in task)
    assert len(timers) == KEYS and timers[0] == (0, "event-time", 999, 0, 1000)


def test_map_state_reads_as_a_dict():
    rows = keyed_rows.StateColumns([MapStateDescriptor("m", Types.STRING(), Types.LONG())], "here")
    rows.open({"m": "map"}, {"m": "MAP<STRING,LONG>"})
    assert list(rows.rows("k", {"m": {"a": 1}})) == [("k", {"a": 1})]


def test_operator_list_union_and_broadcast_state_come_entry_by_entry(tmp_path):
    storage = CheckpointDirectory(str(tmp_path / "sp"))
    handles = []
    for subtask in range(2):
        store = OperatorStateStore()
        store.get_list_state("splits").update([{"next": subtask, "end": 9}])
        store.get_union_list_state("pending").update([f"txn-{subtask}"])
        broadcast = BroadcastStateStore(["rules"])
        broadcast.state("rules").put("max", 10)
        streams = CheckpointStreams(storage, 1, "op", subtask, 1, 0, savepoint=True)
        handles.append(streams.write(store.snapshot(), "operator"))
        handles.append(streams.write(broadcast.snapshot(), "broadcast"))
    settings = file_systems.current_settings()
    task = ReadTask(str(tmp_path / "sp"), 128, operator_states=handles)
    entries = list(state_reading.operator_entries(task, settings, "splits"))
    assert entries == [(DistributionMode.SPLIT, {"next": 0, "end": 9}),
                       (DistributionMode.SPLIT, {"next": 1, "end": 9})]  # fmt: skip
    assert [e for _, e in state_reading.operator_entries(task, settings, "pending")] == [
        "txn-0", "txn-1",
    ]  # fmt: skip
    (mode, copy), *_ = state_reading.operator_entries(task, settings, "rules")
    assert mode is DistributionMode.BROADCAST
    assert state_reading.broadcast_entries(copy) == {"max": 10}
