"""The keyed state backend contract, run against every backend (hashmap, rocksdb with full and
with incremental snapshots): per-key semantics of value, list and map state, snapshot
isolation, restore by key-group range, and snapshots that restore into the other backend; then
what only the rocksdb backend has (its local directory, native checkpoints). Snapshots go to
real checkpoint storage in a temporary directory."""

from __future__ import annotations

import os
import pickle
import random
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from rocksdict import Options, Rdict

from barrierflow.checkpoint.key_group_format import read_key_groups
from barrierflow.checkpoint.metadata import (
    IncrementalKeyedHandle,
    KeyedStateHandle,
    StreamHandle,
)
from barrierflow.checkpoint.state_streams import CheckpointStreams, StorageRestoreStreams
from barrierflow.checkpoint.storage import CheckpointDirectory
from barrierflow.datastream.state import (
    ListStateDescriptor,
    MapStateDescriptor,
    ValueStateDescriptor,
)
from barrierflow.protocol.key_group_range import KeyGroupRange
from barrierflow.state.backends.hashmap import HeapKeyedStateBackend
from barrierflow.state.backends.rocksdb import RocksDBKeyedStateBackend
from barrierflow.state.backends.rocksdb.incremental_restore import incremental_sections
from barrierflow.state.descriptors import StateKind
from barrierflow.state.key_groups import assign_to_key_group

MAX_PARALLELISM = 128
FULL = KeyGroupRange(0, MAX_PARALLELISM - 1)
LOW, HIGH = KeyGroupRange(0, 63), KeyGroupRange(64, 127)
BACKENDS = ["hashmap", "rocksdb", "rocksdb-incremental"]
SMALL = 1 << 20  # block cache and write buffer of the rocksdb backends here


class Streams:
    """The task's snapshot and restore streams over real checkpoint storage: small streams
    inline, shared files uploaded. Counts the streams read."""

    shares_storage = True

    def __init__(self, root: Path) -> None:
        self.root = root
        self.storage = CheckpointDirectory(str(root / "checkpoints"))
        self._writer = CheckpointStreams(self.storage, 1, "op", 0, 1, inline_threshold=1 << 40)
        self._reader = StorageRestoreStreams(self.storage, shares_storage=True)
        self.reads: list[StreamHandle] = []

    def write(self, data: bytes, kind: str) -> StreamHandle:
        return self._writer.write(data, kind)

    def upload_shared(self, local_path: str):
        return self._writer.upload_shared(local_path)

    def read(self, handle: StreamHandle) -> bytes:
        self.reads.append(handle)
        return self._reader.read(handle)

    def download(self, handle: StreamHandle, local_path: str) -> None:
        self.reads.append(handle)
        self._reader.download(handle, local_path)


@pytest.fixture
def streams(tmp_path: Path) -> Streams:
    return Streams(tmp_path)


def contents(handles: list[KeyedStateHandle]) -> dict[int, dict[str, tuple[str, dict]]]:
    """What the snapshot holds per key group, whatever the order of its entries."""
    found: dict[int, dict[str, tuple[str, dict]]] = {}
    for handle in handles:
        if isinstance(handle, IncrementalKeyedHandle):
            scratch = STREAMS.root / "contents-scratch"
            sections = list(incremental_sections(handle, STREAMS, FULL, str(scratch)))
        else:
            sections = list(read_key_groups(handle, FULL, STREAMS.read))
        for kg, section in sections:
            found[kg] = {name: (kind, dict(entries)) for name, (kind, entries) in section.items()}
    return found


STREAMS: Streams  # the test's streams, for contents()


@pytest.fixture(autouse=True)
def _streams_for_contents(streams: Streams) -> None:
    global STREAMS
    STREAMS = streams


class Keyed:
    """A backend with its three states, addressed per key."""

    checkpoint_ids = iter(range(1, 1 << 30))

    def __init__(self, backend: Any) -> None:
        self.backend = backend

    # Declared on first use, as an operator does after its restore.
    @property
    def value(self) -> Any:
        return self.backend.get_state(ValueStateDescriptor("count"))

    @property
    def list(self) -> Any:
        return self.backend.get_state(ListStateDescriptor("seen"))

    @property
    def map(self) -> Any:
        return self.backend.get_state(MapStateDescriptor("by-name"))

    def at(self, key: Any) -> Keyed:
        self.backend.key_context.key = key
        return self

    def view(self, key: Any) -> tuple:
        self.at(key)
        return (self.value.value(), self.list.get(), dict(self.map.items()))

    def take(self) -> Callable[[Streams], list[KeyedStateHandle]]:
        """The synchronous phase of a snapshot with a new checkpoint id."""
        return self.backend.snapshot(next(Keyed.checkpoint_ids))

    def snapshot(self) -> list[KeyedStateHandle]:
        return self.take()(STREAMS)


Factory = Callable[..., Keyed]


@pytest.fixture
def factory(tmp_path: Path) -> Iterator[Factory]:
    """``factory(kind, key_group_range)``: a new backend of that kind, disposed after the test."""
    created: list[Any] = []

    def make(kind: str, key_group_range: KeyGroupRange = FULL) -> Keyed:
        if kind == "hashmap":
            backend: Any = HeapKeyedStateBackend(MAX_PARALLELISM, key_group_range)
        else:
            local_dir = str(tmp_path / f"rocksdb-{len(created)}")
            backend = RocksDBKeyedStateBackend(
                MAX_PARALLELISM,
                key_group_range,
                local_dir,
                SMALL,
                SMALL,
                incremental=kind == "rocksdb-incremental",
            )
        created.append(backend)
        return Keyed(backend)

    yield make
    for backend in created:
        backend.dispose()


@pytest.fixture(params=BACKENDS)
def make(request: pytest.FixtureRequest, factory: Factory) -> Factory:
    """``make(key_group_range)``: a new backend of the kind under test."""
    return lambda key_group_range=FULL: factory(request.param, key_group_range)


KEYS = [
    *(f"user-{i}" for i in range(60)),
    *range(-5, 60),
    *((i, "t") for i in range(20)),
    1.5,
    b"raw",
    None,
    ("nested", (1, 2.5)),
]


def fill(s: Keyed) -> None:
    for i, key in enumerate(KEYS):
        s.at(key).value.update(i)
        if i % 2:
            s.list.update([i, str(i)])
            s.list.add((i,))
        if i % 3:
            s.map.put_all({"i": i, i: [i], (i, "t"): None})


# --- per-key semantics -----------------------------------------------------------------------


def test_value_state_is_per_key_and_none_clears(make):
    s = make()
    s.at("a").value.update(1)
    assert s.at("b").value.value() is None
    s.value.update(2)
    assert s.at("a").value.value() == 1
    s.value.update(None)
    assert s.value.value() is None
    assert s.at("b").value.value() == 2
    s.value.clear()
    assert s.value.value() is None
    s.value.update({"nested": [1, 2]})
    assert s.value.value() == {"nested": [1, 2]}


def test_list_state_is_per_key_and_get_returns_a_copy(make):
    s = make()
    s.at("a").list.add(1)
    s.list.add(2)
    s.list.add(None)
    s.at("b").list.update(iter([7, 8]))
    got = s.at("a").list.get()
    got.append(99)
    assert s.list.get() == [1, 2, None]
    assert s.at("b").list.get() == [7, 8]
    s.list.update([])
    assert s.list.get() == []
    s.at("a").list.clear()
    assert s.list.get() == []


def test_map_state_is_per_key(make):
    s = make()
    s.at("a").map.put("x", 1)
    s.map.put("y", 2)
    s.map.put("none", None)
    assert s.map.contains("none") and s.map.get("none") is None
    s.map.remove("none")
    assert s.at("b").map.is_empty() and s.map.get("x") is None and not s.map.contains("x")
    s.map.put_all({"z": 3})
    assert s.at("a").map.contains("x") and s.map.get("y") == 2
    assert sorted(s.map.keys()) == ["x", "y"] and sorted(s.map.values()) == [1, 2]
    keys = s.map.keys()  # an iterator over a copy: removing while iterating is fine
    for key in keys:
        s.map.remove(key)
    s.map.remove("missing")
    assert s.map.is_empty() and dict(s.map.items()) == {}
    assert dict(s.at("b").map.items()) == {"z": 3}
    s.map.put_all({"p": 1, "q": 2})
    s.map.clear()
    assert s.map.is_empty()


def test_keys_equal_in_python_address_the_same_state(make):
    s = make()
    ab, built = "ab", "".join(["a", "b"])  # equal strings, distinct objects
    s.at(1).value.update("one")
    s.at(("x", 2)).value.update("tuple")
    s.at((ab, ab)).value.update("same object twice")
    assert s.at(1.0).value.value() == "one" and s.at(True).value.value() == "one"
    assert s.at(("x", 2.0)).value.value() == "tuple"
    assert s.at((ab, built)).value.value() == "same object twice"
    s.at(7).map.put(1, "int")
    s.map.put((ab, ab), "pair")
    assert s.map.get(1.0) == "int" and s.map.contains(True)
    assert s.map.get((ab, built)) == "pair"
    s.map.remove(True)
    assert dict(s.map.items()) == {(ab, ab): "pair"}


def test_get_state_returns_the_same_object_and_rejects_another_kind_under_a_name(make):
    s = make()
    assert s.backend.get_state(ValueStateDescriptor("count")) is s.value
    with pytest.raises(ValueError, match="'count' was declared as value state"):
        s.backend.get_state(ListStateDescriptor("count"))


# --- snapshots -------------------------------------------------------------------------------


def test_snapshot_is_not_changed_by_updates_after_the_synchronous_phase(make, streams):
    s = make()
    s.at("a").value.update(1)
    s.list.update([1, 2])
    s.map.put_all({"x": 1, "y": 2})
    s.at("b").list.add("only")
    s.at("d").map.put("gone", 0)
    snap = s.take()
    s.at("a").value.update(100)
    s.list.add(3)
    s.map.put("z", 3)
    s.map.remove("x")
    s.at("b").list.update(["replaced"])
    s.at("c").value.update("new key")
    s.at("d").map.clear()
    late = s.backend.get_state(ValueStateDescriptor("declared after the snapshot"))
    late.update("late")
    handles = snap(streams)
    restored = make()
    restored.backend.restore(handles, streams)
    assert restored.view("a") == (1, [1, 2], {"x": 1, "y": 2})
    assert restored.view("b") == (None, ["only"], {})
    assert restored.view("c") == (None, [], {})
    assert restored.view("d") == (None, [], {"gone": 0})
    assert "declared after the snapshot" not in str(contents(handles))
    assert s.view("a") == (100, [1, 2, 3], {"y": 2, "z": 3})


def test_snapshot_written_while_the_task_keeps_writing_holds_the_synchronous_state(make, streams):
    s = make()
    for i in range(500):
        s.at(i).value.update(i)
        s.map.put(i, i)
    snap = s.take()
    written: list[list[KeyedStateHandle]] = []
    writer = threading.Thread(target=lambda: written.append(snap(streams)))
    writer.start()
    for i in range(500):
        s.at(i).value.update(-i)
        s.map.remove(i)
        s.list.add(i)
    writer.join()
    restored = make()
    restored.backend.restore(written[0], streams)
    assert all(restored.view(i) == (i, [], {i: i}) for i in range(500))


def test_every_snapshot_restores_exactly_the_state_at_its_synchronous_phase(make, streams):
    rng = random.Random(7)
    keys = ["a", "b", "c", 1, 2, ("t", 1)]
    s, model = make(), {}

    def step() -> None:
        key = rng.choice(keys)
        s.at(key)
        value, items, mapping = model.get(key, (None, [], {}))
        op, x, y = rng.randrange(6), rng.randrange(4), rng.randrange(4)
        if op == 0:
            s.value.update(x or None)
            value = x or None
        elif op == 1:
            s.list.add(x)
            items = [*items, x]
        elif op == 2:
            s.list.update([x] * y)
            items = [x] * y
        elif op == 3:
            s.map.put(x, y)
            mapping = {**mapping, x: y}
        elif op == 4:
            s.map.remove(x)
            mapping = {k: v for k, v in mapping.items() if k != x}
        else:
            s.value.clear(), s.list.clear(), s.map.clear()
            value, items, mapping = None, [], {}
        model[key] = (value, items, mapping)

    snapshots = []
    for _ in range(3):
        for _ in range(80):
            step()
        snapshots.append((s.take(), {k: s.view(k) for k in keys}))
    for snap, expected in reversed(snapshots):
        restored = make()
        restored.backend.restore(snap(streams), streams)
        assert {k: restored.view(k) for k in keys} == expected
    assert {k: s.view(k) for k in keys} == {k: model.get(k, (None, [], {})) for k in keys}


def test_empty_backend_writes_nothing(make, streams):
    assert make().take()(streams) == []
    assert not (streams.root / "checkpoints").exists()


# --- restore by key-group range --------------------------------------------------------------


def test_restore_into_two_halves_gets_exactly_the_keys_of_each_range(make, streams):
    s = make()
    fill(s)
    handles = s.snapshot()
    low, high = make(LOW), make(HIGH)
    low.backend.restore(handles, streams)
    high.backend.restore(handles, streams)
    for key in KEYS:
        owner, other = (
            (low, high) if assign_to_key_group(key, MAX_PARALLELISM) in LOW else (high, low)
        )
        assert owner.view(key) == s.view(key)
        assert other.view(key) == (None, [], {})
    assert set(contents(low.snapshot())) == {kg for kg in contents(handles) if kg in LOW}
    assert set(contents(high.snapshot())) == {kg for kg in contents(handles) if kg in HIGH}


def test_restore_from_two_halves_into_one_backend_gets_all_keys(make, streams):
    low, high = make(LOW), make(HIGH)
    for key in range(200):
        half = low if assign_to_key_group(key, MAX_PARALLELISM) in LOW else high
        half.at(key).value.update(-key)
    merged = make()
    merged.backend.restore(low.snapshot() + high.snapshot(), streams)
    assert [merged.at(k).value.value() for k in range(200)] == [-k for k in range(200)]


def test_restore_does_not_read_a_stream_without_key_groups_of_its_range(make, streams, request):
    if request.node.callspec.params["make"] == "rocksdb-incremental":
        pytest.skip("an incremental handle is one database of its whole key-group range")
    s = make()
    key = next(k for k in range(1000) if assign_to_key_group(k, MAX_PARALLELISM) in LOW)
    s.at(key).value.update("low")
    handles = s.snapshot()
    streams.reads.clear()
    make(HIGH).backend.restore(handles, streams)
    assert streams.reads == []


# --- across backends -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("source", "target"),
    [
        ("hashmap", "rocksdb"),
        ("rocksdb", "hashmap"),
        ("rocksdb-incremental", "hashmap"),
        ("rocksdb-incremental", "rocksdb"),
        ("hashmap", "rocksdb-incremental"),
    ],
)
def test_a_snapshot_restores_into_the_other_backend_with_the_same_state(
    factory, source, target, streams
):
    s = factory(source)
    fill(s)
    handles = s.snapshot()
    restored = factory(target)
    restored.backend.restore(handles, streams)
    for key in KEYS:
        assert restored.view(key) == s.view(key)
    assert contents(restored.snapshot()) == contents(handles)


def test_every_backend_writes_the_same_state_for_every_key_group(factory):
    heap, rocks, incremental = (
        factory("hashmap"),
        factory("rocksdb"),
        factory("rocksdb-incremental"),
    )
    for s in (heap, rocks, incremental):
        fill(s)
    assert (
        contents(heap.snapshot()) == contents(rocks.snapshot()) == contents(incremental.snapshot())
    )


# --- the rocksdb backend's own ---------------------------------------------------------------


def rocksdb(local_dir: Path) -> RocksDBKeyedStateBackend:
    return RocksDBKeyedStateBackend(MAX_PARALLELISM, FULL, str(local_dir), SMALL, SMALL)


def test_dispose_closes_the_database_and_removes_the_local_directory(tmp_path):
    local_dir = tmp_path / "subtask-0"
    s = Keyed(rocksdb(local_dir))
    s.at("k").value.update(1)
    assert (local_dir / "db").is_dir()
    pending = s.take()
    s.backend.dispose()
    s.backend.dispose()
    assert not local_dir.exists()
    with pytest.raises(RuntimeError, match="was disposed"):
        pending(STREAMS)
    # RocksDB refuses a second open of a path its process still has open: it was closed.
    again = Keyed(rocksdb(local_dir))
    assert again.at("k").value.value() is None
    again.backend.dispose()


def test_what_an_undisposed_instance_left_is_deleted_an_open_or_foreign_one_refused(tmp_path):
    local_dir = tmp_path / "subtask-0"
    (local_dir / "db").mkdir(parents=True)
    (local_dir / "db" / "000042.sst").write_bytes(b"stale")
    backend = rocksdb(local_dir)
    assert not (local_dir / "db" / "000042.sst").exists()
    with pytest.raises(ValueError, match="is in use"):
        rocksdb(local_dir)
    Keyed(backend).at("k").value.update("still usable")
    backend.dispose()
    (tmp_path / "home").mkdir()
    (tmp_path / "home" / "notes.txt").write_text("keep")
    with pytest.raises(ValueError, match=r"holds files of something else \(notes.txt\)"):
        rocksdb(tmp_path / "home")
    assert (tmp_path / "home" / "notes.txt").exists()


def test_native_checkpoint_hard_links_a_directory_that_opens_with_the_same_data(tmp_path):
    local_dir = tmp_path / "subtask-0"
    s = Keyed(rocksdb(local_dir))
    fill(s)
    expected = contents(s.snapshot())
    checkpoint = s.backend.native_checkpoint(str(local_dir / "checkpoints" / "1"))
    s.at("user-1").value.update("after the checkpoint")
    try:
        assert checkpoint.states == {
            "count": StateKind.VALUE,
            "seen": StateKind.LIST,
            "by-name": StateKind.MAP,
        }
        assert checkpoint.sst_files and "CURRENT" in checkpoint.private_files
        for name, size in checkpoint.sst_files.items():
            linked = Path(checkpoint.directory, name)
            assert linked.stat().st_size == size
            assert os.path.samefile(linked, local_dir / "db" / name)  # a link, not a copy
        assert read_database(checkpoint.directory) == expected
    finally:
        s.backend.dispose()
    assert not local_dir.exists()


def read_database(directory: str) -> dict[int, dict[str, tuple[str, dict]]]:
    """A RocksDB state directory decoded by the row layout of barrierflow.state.backends.rocksdb."""
    families = [f for f in Rdict.list_cf(directory) if f != "default"]
    db = Rdict(directory, Options(raw_mode=True), {f: Options(raw_mode=True) for f in families})
    found: dict[int, dict[str, tuple[str, dict]]] = {}
    try:
        for family in families:
            kind, name = family.split("/", 1)
            table = db.get_column_family(family)
            for row, value in table.items():
                kg, end = int.from_bytes(row[:2], "big"), 6 + int.from_bytes(row[2:6], "big")
                entries = found.setdefault(kg, {}).setdefault(name, (kind, {}))[1]
                key = pickle.loads(row[6:end])
                if kind == "map":
                    entries.setdefault(key, {})[pickle.loads(row[end:])] = pickle.loads(value)
                else:
                    entries[key] = pickle.loads(value)
            table.close()
    finally:
        db.close()
    return found
