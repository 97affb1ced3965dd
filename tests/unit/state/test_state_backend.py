"""What only the hashmap backend has (copy-on-write snapshots; checkpoints as whole tables,
savepoints as sections, both restored at any parallelism, and checkpoints of the older format;
the per-key semantics and restores every backend shares are in test_state_backend_contract.py)
and operator list state (split and union redistribution)."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from barrierflow.checkpoint.key_group_format import KEY_GROUP_FORMAT_VERSION, read_key_groups
from barrierflow.checkpoint.key_group_tables import TABLES_FORMAT_VERSION
from barrierflow.checkpoint.metadata import InlineHandle, KeyGroupsHandle
from barrierflow.datastream.state import (
    ListStateDescriptor,
    MapStateDescriptor,
    ValueStateDescriptor,
)
from barrierflow.protocol.checkpoint_barrier import CHECKPOINT, CheckpointKind, CheckpointOptions
from barrierflow.protocol.key_group_range import KeyGroupRange, key_group_range_for_subtask
from barrierflow.state.backends.hashmap import HeapKeyedStateBackend
from barrierflow.state.key_groups import assign_to_key_group
from barrierflow.state.operator_state import OperatorStateStore

MAX_PARALLELISM = 128
GOLDEN = Path(__file__).parents[1] / "checkpoint" / "golden"
FULL = KeyGroupRange(0, MAX_PARALLELISM - 1)


class Writer:
    """The task's snapshot streams, in memory, recording what the asynchronous phase wrote."""

    def __init__(self) -> None:
        self.written: list[tuple[bytes, str]] = []

    def write(self, data: bytes, kind: str) -> InlineHandle:
        self.written.append((bytes(data), kind))
        return InlineHandle(bytes(data))

    def upload_shared(self, local_path: str):
        raise AssertionError("the hashmap backend has no shared files")


class Reader:
    shares_storage = False

    def read(self, handle: InlineHandle) -> bytes:
        return handle.data

    def download(self, handle, local_path: str) -> None:
        raise AssertionError("full snapshots are read, not downloaded")


class Keyed:
    """A backend with its three states, addressed per key."""

    def __init__(self, key_group_range: KeyGroupRange = FULL) -> None:
        self.backend = HeapKeyedStateBackend(MAX_PARALLELISM, key_group_range)
        self.value = self.backend.get_state(ValueStateDescriptor("count"))
        self.list = self.backend.get_state(ListStateDescriptor("seen"))
        self.map = self.backend.get_state(MapStateDescriptor("by-name"))

    def at(self, key) -> Keyed:
        self.backend.key_context.key = key
        return self

    def view(self, key) -> tuple:
        self.at(key)
        return (self.value.value(), self.list.get(), dict(self.map.items()))


# --- copy-on-write snapshots -----------------------------------------------------------------


def test_snapshot_is_not_changed_by_updates_after_the_synchronous_phase():
    s = Keyed()
    s.at("a").value.update(1)
    s.list.update([1, 2])
    s.map.put_all({"x": 1, "y": 2})
    s.at("b").list.add("only")
    snap = s.backend.snapshot()
    s.at("a").value.update(100)
    s.list.add(3)
    s.map.put("z", 3)
    s.map.remove("x")
    s.at("b").list.update(["replaced"])
    s.at("c").value.update("new key")
    writer = Writer()
    handles = snap(writer)
    assert [kind for _, kind in writer.written] == ["keyed"]
    (restored,) = (Keyed(FULL),)
    restored.backend.restore(handles, Reader())
    assert restored.view("a") == (1, [1, 2], {"x": 1, "y": 2})
    assert restored.view("b") == (None, ["only"], {})
    assert restored.view("c") == (None, [], {})
    # and the live state has every update
    assert s.view("a") == (100, [1, 2, 3], {"y": 2, "z": 3})


def test_snapshot_writes_the_same_bytes_whether_it_runs_before_or_after_later_updates():
    def build() -> Keyed:
        s = Keyed()
        for i in range(20):
            s.at(i).value.update(i)
            s.list.add(i)
            s.map.put(i, str(i))
        return s

    early, late = build(), build()
    early_bytes, late_bytes = Writer(), Writer()
    early.backend.snapshot()(early_bytes)
    snap = late.backend.snapshot()
    for i in range(20):
        late.at(i).list.add("after")
        late.map.put("after", i)
        late.map.remove(i)
        late.value.clear()
    snap(late_bytes)
    assert late_bytes.written == early_bytes.written


keys = st.sampled_from(["a", "b", "c", 1, 2, ("t", 1)])
small = st.integers(0, 5)
operations = st.lists(
    st.one_of(
        st.tuples(st.just("value"), keys, st.none() | small),
        st.tuples(st.just("add"), keys, small),
        st.tuples(st.just("update_list"), keys, st.lists(small, max_size=3)),
        st.tuples(st.just("put"), keys, small, small),
        st.tuples(st.just("remove"), keys, small),
        st.tuples(st.just("clear"), keys),
    ),
    max_size=25,
)


def apply(s: Keyed, model: dict, op: tuple) -> None:
    kind, key = op[0], op[1]
    s.at(key)
    value, items, mapping = model.get(key, (None, [], {}))
    if kind == "value":
        s.value.update(op[2])
        value = op[2]
    elif kind == "add":
        s.list.add(op[2])
        items = [*items, op[2]]
    elif kind == "update_list":
        s.list.update(op[2])
        items = list(op[2])
    elif kind == "put":
        s.map.put(op[2], op[3])
        mapping = {**mapping, op[2]: op[3]}
    elif kind == "remove":
        s.map.remove(op[2])
        mapping = {k: v for k, v in mapping.items() if k != op[2]}
    else:
        s.value.clear()
        s.list.clear()
        s.map.clear()
        value, items, mapping = None, [], {}
    model[key] = (value, items, mapping)


@given(first=operations, second=operations, third=operations)
def test_every_snapshot_restores_exactly_the_state_at_its_synchronous_phase(first, second, third):
    s, model = Keyed(), {}
    for op in first:
        apply(s, model, op)
    snap1, model1 = s.backend.snapshot(), copy.deepcopy(model)
    for op in second:
        apply(s, model, op)
    snap2, model2 = s.backend.snapshot(), copy.deepcopy(model)
    for op in third:
        apply(s, model, op)
    for snap, expected in ((snap2, model2), (snap1, model1)):
        restored = Keyed()
        restored.backend.restore(snap(Writer()), Reader())
        for key in ["a", "b", "c", 1, 2, ("t", 1)]:
            assert restored.view(key) == expected.get(key, (None, [], {})), key
    for key, expected in model.items():
        assert s.view(key) == expected


# --- what a snapshot is written as ------------------------------------------------------------

SAVEPOINT = CheckpointOptions(CheckpointKind.SAVEPOINT, target_location="file:///savepoints/x")


def filled(key_group_range: KeyGroupRange = FULL, keys: range = range(200)) -> Keyed:
    s = Keyed(key_group_range)
    for k in keys:
        if assign_to_key_group(k, MAX_PARALLELISM) in key_group_range:
            s.at(k).value.update(k * 10)
            s.list.update([k, "x"])
            s.map.put("k", k)
    return s


def test_a_checkpoint_writes_whole_tables_and_a_savepoint_the_canonical_sections():
    s = filled()
    (checkpoint,) = s.backend.snapshot(1, CHECKPOINT)(Writer())
    (savepoint,) = s.backend.snapshot(2, SAVEPOINT)(Writer())
    assert checkpoint.format_version == TABLES_FORMAT_VERSION
    assert savepoint.format_version == KEY_GROUP_FORMAT_VERSION
    # the user's values, not the backend's copy-on-write containers
    assert b"_Versioned" not in checkpoint.stream.data
    assert list(read_key_groups(checkpoint, FULL, Reader().read)) == list(
        read_key_groups(savepoint, FULL, Reader().read)
    )
    for handle in (checkpoint, savepoint):
        restored = Keyed()
        restored.backend.restore([handle], Reader())
        for k in range(200):
            assert restored.view(k) == s.view(k) == (k * 10, [k, "x"], {"k": k})


def test_a_checkpoint_of_two_subtasks_restores_at_three_each_exactly_its_keys():
    low, high = KeyGroupRange(0, 63), KeyGroupRange(64, 127)
    handles = [filled(r).backend.snapshot(1, CHECKPOINT)(Writer())[0] for r in (low, high)]
    assert {h.format_version for h in handles} == {TABLES_FORMAT_VERSION}
    seen: list[int] = []
    for subtask in range(3):
        new_range = key_group_range_for_subtask(MAX_PARALLELISM, 3, subtask)
        restored = Keyed(new_range)
        restored.backend.restore(handles, Reader())
        mine = [k for k in range(200) if assign_to_key_group(k, MAX_PARALLELISM) in new_range]
        assert sorted(k for k, _ in restored.backend.entries("count")) == mine
        assert all(restored.view(k) == (k * 10, [k, "x"], {"k": k}) for k in mine)
        seen += mine
    assert sorted(seen) == list(range(200))


def test_a_table_put_for_one_snapshot_is_written_as_it_was_then_and_dropped_after():
    backend = HeapKeyedStateBackend(MAX_PARALLELISM, FULL)
    own = {"b": 2, "a": 1}  # an operator's own dict, in its order
    backend.put_table("__table__", own)
    assert backend.state_names() == ["__table__"]
    write = backend.snapshot(1, CHECKPOINT)
    backend.drop_table("__table__")
    own["c"] = 3  # the operator goes on with its dict
    assert backend.state_names() == []
    (handle,) = write(Writer())
    restored = HeapKeyedStateBackend(MAX_PARALLELISM, FULL)
    restored.restore([handle], Reader())
    assert list(restored.entries("__table__")) == [("b", 2), ("a", 1)]


def test_a_table_cannot_replace_or_drop_a_state_in_use():
    backend = HeapKeyedStateBackend(MAX_PARALLELISM, FULL)
    backend.get_state(ValueStateDescriptor("count"))
    with pytest.raises(ValueError, match="'count' is in use"):
        backend.put_table("count", {"a": 1})
    with pytest.raises(ValueError, match="'count' is in use"):
        backend.drop_table("count")


def test_a_checkpoint_of_the_older_key_group_format_restores():
    """Checkpoints written before version 3: the golden stream of version 2."""
    data = (GOLDEN / "key_groups_v2.bin").read_bytes()
    handle = KeyGroupsHandle(0, 127, [(3, 0, 71), (70, 71, 117)], InlineHandle(data), 2)
    restored = HeapKeyedStateBackend(MAX_PARALLELISM, FULL)
    restored.restore([handle], Reader())
    assert dict(restored.entries("count")) == {"apple": 2, 7: 40}
    assert dict(restored.entries("visits")) == {("u", 1): [1, 2, 3]}
    assert dict(restored.entries("seen")) == {"k": {"a": 1.5, 2: None}}


# --- operator state --------------------------------------------------------------------------


def operator_snapshots(entries_per_subtask: list[list], union: bool = False) -> list[bytes]:
    snapshots = []
    for entries in entries_per_subtask:
        store = OperatorStateStore()
        state = store.get_union_list_state("s") if union else store.get_list_state("s")
        for entry in entries:
            state.add(entry)
        snapshots.append(store.snapshot())
    return snapshots


def restored_entries(snapshots, subtask: int, parallelism: int, union: bool = False) -> list:
    store = OperatorStateStore()
    store.restore(snapshots, subtask, parallelism)
    return (store.get_union_list_state("s") if union else store.get_list_state("s")).get()


OLD = [[{"split": 0, "offset": 5}, "a0"], ["b0", "b1", "b2"], [], [7]]


def test_split_state_with_the_same_parallelism_restores_each_subtask_its_own_entries():
    snapshots = operator_snapshots(OLD)
    for subtask, entries in enumerate(OLD):
        assert restored_entries(snapshots, subtask, len(OLD)) == entries


def test_union_state_restores_every_entry_to_every_subtask():
    snapshots = operator_snapshots(OLD, union=True)
    everything = [e for entries in OLD for e in entries]
    for parallelism in (1, 4, 6):
        for subtask in range(parallelism):
            assert restored_entries(snapshots, subtask, parallelism, union=True) == everything


@given(
    old=st.lists(st.lists(st.integers(-(2**63), 2**63 - 1), max_size=5), min_size=1, max_size=5),
    parallelism=st.integers(1, 7),
)
def test_split_state_is_partitioned_among_the_new_subtasks_at_any_parallelism(old, parallelism):
    snapshots = [
        None if not entries else s for entries, s in zip(old, operator_snapshots(old), strict=True)
    ]
    shares = [restored_entries(snapshots, i, parallelism) for i in range(parallelism)]
    assert sorted(e for share in shares for e in share) == sorted(e for es in old for e in es)
    if parallelism == len(old):
        assert shares == old


def test_operator_state_rejects_another_mode_under_the_same_name_and_tracks_emptiness():
    store = OperatorStateStore()
    state = store.get_list_state("offsets")
    assert store.is_empty()
    state.add(1)
    assert not store.is_empty()
    with pytest.raises(ValueError, match="'offsets' is split list state"):
        store.get_union_list_state("offsets")
    state.update([])
    assert store.is_empty()
