"""The window operator's batch path for aligned windows against its general path: the same
records, watermarks and checkpoints through both give the same output record by record (values,
timestamps, order), the same late records dropped and the same keyed state; a checkpoint of
either restores into either, also at another parallelism."""

from __future__ import annotations

from itertools import groupby
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from barrierflow.checkpoint.restore import OperatorRestore
from barrierflow.checkpoint.state_streams import StorageRestoreStreams
from barrierflow.datastream.functions.one_input import AggregateFunction
from barrierflow.eventtime.timestamps import NO_TIMESTAMP
from barrierflow.eventtime.watermark_valve import MAX_WATERMARK
from barrierflow.graph.transformation import TransformationKind
from barrierflow.protocol.checkpoint_barrier import (
    CheckpointKind,
    CheckpointOptions,
    SnapshotFormat,
)
from barrierflow.protocol.key_group_range import KeyGroupRange
from barrierflow.runtime.operators import UserFunctionError
from barrierflow.runtime.operators.aligned_window_path import AlignedWindowPath
from barrierflow.runtime.timer_service import TIMERS
from barrierflow.runtime.window_state import CONTENTS
from barrierflow.state.backends import StateBackendConfig
from barrierflow.state.backends.hashmap import HeapKeyedStateBackend
from barrierflow.state.key_groups import KeyGroupCache, hashable_keys
from barrierflow.testing.harness import OperatorHarness, operator
from barrierflow.windowing.window_assigners import SlidingEventTimeWindows, TumblingEventTimeWindows
from barrierflow.windowing.window_spec import Contents, WindowSpec
from barrierflow.windowing.window_triggers import EventTimeTrigger

ASSIGNERS = {
    "tumbling": TumblingEventTimeWindows.of(100),
    "tumbling with offset": TumblingEventTimeWindows.of(100, 30),
    "sliding": SlidingEventTimeWindows.of(100, 40),
    "sliding with offset": SlidingEventTimeWindows.of(90, 30, -10),
}


class SameAsEventTimeTrigger(EventTimeTrigger):
    """The default trigger under another type: the operator takes its general path."""


class CountAndSum(AggregateFunction):
    def create_accumulator(self):
        return (0, 0)

    def add(self, value, accumulator):
        return (accumulator[0] + 1, accumulator[1] + value[1])

    def get_result(self, accumulator):
        return accumulator

    def merge(self, a, b):
        return (a[0] + b[0], a[1] + b[1])


def add_values(a, b):
    return (a[0], a[1] + b[1])


def key(record):
    return record[0]


def spec(assigner, contents: Contents, path: str) -> WindowSpec:
    trigger = EventTimeTrigger() if path == "batch" else SameAsEventTimeTrigger()
    function = add_values if contents is Contents.REDUCE else CountAndSum()
    return WindowSpec(assigner, trigger, contents, function)


def harness(window_spec: WindowSpec, **settings) -> OperatorHarness:
    h = OperatorHarness(
        operator(TransformationKind.WINDOW, window_spec, key_selector=key), **settings
    )
    batch = type(window_spec.trigger) is EventTimeTrigger
    assert isinstance(h.operator._path, AlignedWindowPath) == batch, "not the path the test means"
    return h


# Steps: ("records", [(key, value, timestamp)]), ("watermark", w), ("checkpoint",)
records_st = st.lists(
    st.tuples(st.sampled_from("abcde"), st.integers(0, 9), st.integers(-150, 900)),
    min_size=1,
    max_size=12,
)
step_st = st.one_of(
    records_st.map(lambda r: ("records", r)),
    st.integers(-200, 1_000).map(lambda w: ("watermark", w)),
    # a window's last moment (every window of ASSIGNERS ends at a multiple of 10)
    st.integers(-20, 100).map(lambda n: ("watermark", n * 10 - 1)),
    st.just(("checkpoint",)),
)


def run(steps, make, restore_with=None) -> tuple[list, list, int]:
    """Feeds ``steps`` to ``make()``'s harness; at each checkpoint, snapshots it and goes on in
    a harness restored from the snapshot (by ``restore_with``, default ``make``'s kind).
    Returns the outputs, their timestamps, and the late records dropped."""
    h = make(None)
    out: list = []
    out_ts: list = []
    late = 0
    watermark = -(2**63)
    for n, step in enumerate([*steps, ("watermark", MAX_WATERMARK)]):
        if step[0] == "records":
            emitted = h.process_timed([(k, v) for k, v, _ in step[1]], [t for *_, t in step[1]])
        elif step[0] == "watermark":
            watermark = max(watermark, step[1])  # watermarks only advance
            emitted = h.watermark(watermark)
        else:
            state = h.snapshot(n + 1)
            late += h.operator.late_records_dropped
            h.close()
            h = (restore_with or make)(state)
            h.watermark(watermark)  # as the watermark valve restarts, a restore fires nothing
            continue
        out += emitted[0]
        out_ts += emitted[1]
    late += h.operator.late_records_dropped
    h.close()
    return out, out_ts, late


def keys_of_one_time_in_order(result: tuple[list, list, int]) -> tuple[list, list, int]:
    """``run``'s result with the outputs of one firing time (windows of one end, of several keys)
    in a fixed order. Each path restores its own checkpoint, and a heap checkpoint keeps a
    table's order of insertion, which the two paths' histories make differ: the batch path
    writes its windows end by end, the general path's timers key by key as records came. Flink
    fixes no order among keys whose timers fire at one time either; across times, and per key,
    the order is compared as it is."""
    out, out_ts, late = result
    pairs: list = []
    for _, group in groupby(zip(out_ts, out, strict=True), key=lambda p: p[0]):
        pairs += sorted(group, key=repr)
    return [o for _, o in pairs], [t for t, _ in pairs], late


def maker(assigner, contents, path):
    window_spec = spec(assigner, contents, path)

    def make(state):
        if state is None:
            return harness(window_spec)
        restore = OperatorRestore([state.operator_state], list(state.keyed_state))
        return harness(window_spec, restore=restore, attempt=2)

    return make


@settings(max_examples=150, deadline=None)
@given(
    st.lists(step_st, max_size=14),
    st.sampled_from(sorted(ASSIGNERS)),
    st.sampled_from([Contents.REDUCE, Contents.AGGREGATE]),
)
def test_the_batch_path_emits_what_the_general_path_emits_record_by_record(
    steps, assigner, contents
):
    assigner = ASSIGNERS[assigner]
    batch = run(steps, maker(assigner, contents, "batch"))
    general = run(steps, maker(assigner, contents, "general"))
    assert keys_of_one_time_in_order(batch) == keys_of_one_time_in_order(general)


@settings(max_examples=60, deadline=None)
@given(st.lists(step_st, max_size=14), st.sampled_from(sorted(ASSIGNERS)))
def test_a_checkpoint_of_either_path_restores_into_the_other(steps, assigner):
    assigner = ASSIGNERS[assigner]
    batch = maker(assigner, Contents.REDUCE, "batch")
    general = maker(assigner, Contents.REDUCE, "general")
    # The same checkpoint restored into each path: what comes after is the same.
    same = keys_of_one_time_in_order
    assert same(run(steps, general, restore_with=batch)) == same(run(steps, general))
    assert same(run(steps, batch, restore_with=general)) == same(run(steps, batch))


CANONICAL_CHECKPOINT = CheckpointOptions(CheckpointKind.CHECKPOINT, SnapshotFormat.CANONICAL)


def keyed_state(state) -> dict:
    """Every state of a snapshot, as plain dicts."""
    backend = HeapKeyedStateBackend(128, KeyGroupRange(0, 127))
    backend.restore(list(state.keyed_state), StorageRestoreStreams(None, shares_storage=False))
    return {name: dict(backend.entries(name)) for name in backend.state_names()}


@settings(max_examples=60, deadline=None)
@given(st.lists(records_st, min_size=1, max_size=4), st.integers(-200, 1_000))
def test_both_paths_leave_the_same_keyed_state_in_a_canonical_snapshot(chunks, watermark):
    states = []
    for path in ("batch", "general"):
        h = harness(spec(ASSIGNERS["sliding"], Contents.REDUCE, path))
        for i, chunk in enumerate(chunks):
            h.process_timed([(k, v) for k, v, _ in chunk], [t for *_, t in chunk])
            if i == 1:
                h.watermark(watermark)  # some windows fire before the snapshot
        states.append(keyed_state(h.snapshot(1, CANONICAL_CHECKPOINT)))
        h.close()
    assert states[0] == states[1]


def test_a_checkpoint_of_the_batch_path_holds_each_open_window_as_one_table():
    h = harness(spec(ASSIGNERS["tumbling"], Contents.REDUCE, "batch"))
    h.process_timed([("a", 1), ("b", 2), ("a", 3), ("c", 4)], [10, 20, 120, 130])
    assert keyed_state(h.snapshot(1)) == {
        "__window__/0/100": {"a": ("a", 1), "b": ("b", 2)},
        "__window__/100/200": {"a": ("a", 3), "c": ("c", 4)},
    }
    # A canonical snapshot between two checkpoints leaves nothing behind in the keyed state.
    assert keyed_state(h.snapshot(2, CANONICAL_CHECKPOINT))[CONTENTS.name]
    h.watermark(99)
    assert keyed_state(h.snapshot(3)) == {"__window__/100/200": {"a": ("a", 3), "c": ("c", 4)}}
    h.close()


def test_a_checkpoint_of_the_batch_path_resumes_on_rocksdb_and_is_written_in_its_layout(
    tmp_path: Path,
):
    records = [(f"k{i % 7}", i, (i * 13) % 400) for i in range(120)]
    outputs = []
    for backend in ("hashmap", "rocksdb"):
        h = harness(spec(ASSIGNERS["sliding"], Contents.REDUCE, "batch"))
        h.process_timed([(k, v) for k, v, _ in records], [t for *_, t in records])
        h.watermark(150)
        state = h.snapshot(1)
        h.close()
        r = OperatorHarness(
            operator(TransformationKind.WINDOW, spec(ASSIGNERS["sliding"], Contents.REDUCE,
                                                     "batch"), key_selector=key),
            state_backend=StateBackendConfig(kind=backend), local_dir=str(tmp_path / backend),
            restore=OperatorRestore([state.operator_state], list(state.keyed_state)), attempt=2,
        )  # fmt: skip
        if backend == "rocksdb":  # the general path's layout, and no window table left
            assert not isinstance(r.operator._path, AlignedWindowPath)
            names = {n for n, t in keyed_state(r.snapshot(2)).items() if t}
            assert names == {CONTENTS.name, TIMERS.name}
        r.process_timed([("k1", 5)], [390])
        # RocksDB keeps its timers by key group: the order among keys of one time differs
        outputs.append(keys_of_one_time_in_order((*r.watermark(MAX_WATERMARK), 0)))
        r.close()
    assert outputs[0] == outputs[1]
    assert outputs[0][0]  # the open windows fired


@pytest.mark.parametrize("taken_by", ["batch", "general"])
def test_windows_restore_at_another_parallelism_as_on_the_general_path(taken_by):
    assigner = ASSIGNERS["sliding"]
    records = [(f"k{i % 17}", i, (i * 37) % 700) for i in range(400)]
    key_group = KeyGroupCache(128).key_group

    def subtasks(path, parallelism, restore=None):
        window_spec = spec(assigner, Contents.REDUCE, path)
        return [
            OperatorHarness(
                operator(TransformationKind.WINDOW, window_spec, key_selector=key),
                restore=restore, subtask=s, parallelism=parallelism, attempt=2 if restore else 1,
            )
            for s in range(parallelism)
        ]  # fmt: skip

    before = subtasks(taken_by, 2)
    for h in before:
        own = h.operator.backend._range
        mine = [r for r in records[:200] if key_group(r[0]) in own]
        h.process_timed([(k, v) for k, v, _ in mine], [t for *_, t in mine])
        h.watermark(300)
    states = [h.snapshot(1) for h in before]
    restore = OperatorRestore([None, None], [k for s in states for k in s.keyed_state])
    outputs = {}
    for path in ("batch", "general"):
        outputs[path] = []
        for h in subtasks(path, 3, restore):
            own = h.operator.backend._range
            mine = [r for r in records[200:] if key_group(r[0]) in own]
            outputs[path].append(
                (h.process_timed([(k, v) for k, v, _ in mine], [t for *_, t in mine]),
                 h.watermark(500), h.watermark(MAX_WATERMARK), h.operator.late_records_dropped)
            )  # fmt: skip
            h.close()
    assert outputs["batch"] == outputs["general"]
    assert any(o[1][0] or o[2][0] for o in outputs["batch"])  # windows did fire


@pytest.mark.parametrize("path", ["batch", "general"])
def test_a_record_of_a_window_whose_last_moment_the_watermark_reached_is_late(path):
    h = harness(spec(ASSIGNERS["tumbling"], Contents.REDUCE, path))
    h.process_timed([("a", 1)], [10])
    assert h.watermark(99) == ([("a", 1)], [99])
    assert h.process_timed([("a", 2), ("a", 3)], [99, 100]) == ([], [])
    assert h.operator.late_records_dropped == 1
    assert h.watermark(MAX_WATERMARK) == ([("a", 3)], [199])


def test_restored_state_the_batch_path_cannot_take_over_runs_on_the_general_path():
    # A checkpoint of tumbling windows of 100 ms restored into windows of 50 ms (a changed
    # program): the old windows still fire, at their own ends, as the general path fires them.
    old = harness(spec(TumblingEventTimeWindows.of(100), Contents.REDUCE, "batch"))
    old.process_timed([("a", 1), ("b", 2)], [10, 20])
    state = old.snapshot(1)
    restore = OperatorRestore([state.operator_state], list(state.keyed_state))
    window_spec = spec(TumblingEventTimeWindows.of(50), Contents.REDUCE, "batch")
    h = OperatorHarness(
        operator(TransformationKind.WINDOW, window_spec, key_selector=key),
        restore=restore,
        attempt=2,
    )
    assert not isinstance(h.operator._path, AlignedWindowPath)
    assert h.watermark(MAX_WATERMARK) == ([("a", 1), ("b", 2)], [99, 99])


@pytest.mark.parametrize("path", ["batch", "general"])
def test_a_record_without_a_timestamp_fails_alike_on_both_paths(path):
    h = harness(spec(ASSIGNERS["tumbling"], Contents.REDUCE, path))
    with pytest.raises(UserFunctionError, match=r"record \('a', 1\).*needs an event timestamp"):
        h.process_timed([("a", 1)], [NO_TIMESTAMP])


@pytest.mark.parametrize("path", ["batch", "general"])
def test_a_failing_function_names_the_record_and_the_key_on_both_paths(path):
    def fails_on_three(a, b):
        if b[1] == 3:
            raise ZeroDivisionError("three")
        return add_values(a, b)

    window_spec = WindowSpec(
        ASSIGNERS["tumbling"],
        EventTimeTrigger() if path == "batch" else SameAsEventTimeTrigger(),
        Contents.REDUCE,
        fails_on_three,
    )
    h = harness(window_spec)
    with pytest.raises(UserFunctionError, match=r"record \('b', 3\) \(key 'b'\).*three"):
        h.process_timed([("b", 1), ("b", 3)], [5, 6])


def test_a_canonical_savepoint_of_the_batch_path_resumes_alike_on_either_path_and_rocksdb(tmp_path):
    records = [(f"k{i % 7}", i, (i * 13) % 400) for i in range(120)]
    h = harness(spec(ASSIGNERS["sliding"], Contents.AGGREGATE, "batch"))
    h.process_timed([(k, v) for k, v, _ in records], [t for *_, t in records])
    h.watermark(150)
    options = CheckpointOptions(
        CheckpointKind.SAVEPOINT, SnapshotFormat.CANONICAL, target_location=str(tmp_path)
    )
    savepoint = h.snapshot(1, options)
    h.close()
    restore = OperatorRestore([savepoint.operator_state], list(savepoint.keyed_state))
    resumed = []
    for backend, path in (("hashmap", "batch"), ("hashmap", "general"), ("rocksdb", "batch")):
        r = OperatorHarness(
            operator(TransformationKind.WINDOW, spec(ASSIGNERS["sliding"], Contents.AGGREGATE,
                                                     path), key_selector=key),
            state_backend=StateBackendConfig(kind=backend), local_dir=str(tmp_path / backend),
            restore=restore, attempt=2,
        )  # fmt: skip
        batch_path = isinstance(r.operator._path, AlignedWindowPath)
        assert batch_path == ((backend, path) == ("hashmap", "batch"))
        resumed.append((r.watermark(150), r.process_timed([("k1", 5)], [390]),
                        r.watermark(MAX_WATERMARK)))  # fmt: skip
        r.close()
    assert resumed[0] == resumed[1] == resumed[2]
    assert resumed[0][2][0]  # the open windows fired


def test_state_on_disk_keeps_the_general_path(tmp_path: Path):
    window_spec = spec(ASSIGNERS["tumbling"], Contents.REDUCE, "batch")
    h = OperatorHarness(
        operator(TransformationKind.WINDOW, window_spec, key_selector=key),
        state_backend=StateBackendConfig(kind="rocksdb"),
        local_dir=str(tmp_path),
    )
    assert not isinstance(h.operator._path, AlignedWindowPath)
    h.process_timed([("a", 1), ("a", 2)], [1, 2])
    assert h.watermark(MAX_WATERMARK) == ([("a", 3)], [99])
    h.close()


@pytest.mark.parametrize("path", ["batch", "general"])
@pytest.mark.parametrize("assigner", ["tumbling", "sliding"])
def test_a_list_key_windows_as_the_key_it_lists_on_both_paths(path, assigner):
    """A key selector returning a list (PyFlink keys by the list): the paths make it a key in
    their loops, whether the selector comes as the user wrote it or wrapped by ``key_by``."""
    records = [("a", 1), ("b", 2), ("a", 3), ("b", 4), ("a", 5)]
    stamps = [5, 6, 7, 48, 120]

    def outputs(selector):
        window_spec = spec(ASSIGNERS[assigner], Contents.REDUCE, path)
        h = OperatorHarness(operator(TransformationKind.WINDOW, window_spec, key_selector=selector))
        h.process_timed(records, stamps)
        return h.watermark(MAX_WATERMARK)

    expected = outputs(key)
    assert expected[0], "the windows fired"
    assert outputs(lambda r: [r[0]]) == expected
    assert outputs(hashable_keys(lambda r: [r[0]])) == expected
