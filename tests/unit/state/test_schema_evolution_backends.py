"""A typed state evolved through a savepoint in both backends: written in one backend as a
canonical or a native savepoint, restored into each backend with a new declaration. Every
allowed change migrates the stored values (and the restored state is recorded with its new
type in the next snapshot); every refused change fails naming the operator, the state and the
field."""

from __future__ import annotations

import pytest

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
from barrierflow.state.keyed_state_store import KeyedStateStore
from barrierflow.state.schema_evolution import IncompatibleStateError
from tests.unit.state.test_state_backend_contract import Streams, factory

__all__ = ["factory"]  # the contract suite's fixture: a backend of each kind, disposed after

row_of = Types.ROW_NAMED
V1 = row_of(["id", "name", "score"], [Types.INT(), Types.STRING(), Types.FLOAT()])
KEYS = ["a", 7, ("t", 1)]
WHERE = "operator 'profiles' (Profiles), subtask 0"
WRITTEN = [
    ("hashmap", SnapshotFormat.CANONICAL),
    ("rocksdb", SnapshotFormat.CANONICAL),
    ("rocksdb-incremental", SnapshotFormat.NATIVE),
]
RESTORED = ["hashmap", "rocksdb", "rocksdb-incremental"]


def savepoint(snapshot_format: SnapshotFormat) -> CheckpointOptions:
    return CheckpointOptions(CheckpointKind.SAVEPOINT, snapshot_format, target_location="sp")


def written(factory, kind, snapshot_format, tmp_path):
    """A savepoint of a value, a list and a map state of V1 rows, per key."""
    source = factory(kind).backend
    store = KeyedStateStore(source)
    for i, key in enumerate(KEYS):
        source.key_context.key = key
        store.get_state(ValueStateDescriptor("profile", V1)).update(Row(i, f"n{i}", 0.5))
        store.get_state(ListStateDescriptor("history", V1)).update([(i, "h", 1.5), (i, "g", 2.5)])
        store.get_state(MapStateDescriptor("by-day", Types.STRING(), V1)).put("mon", (i, "m", 3.5))
    streams = Streams(tmp_path)
    return source.snapshot(1, savepoint(snapshot_format))(streams), streams


def restored(factory, kind, handles, streams):
    target = factory(kind).backend
    target.restore(handles, streams)
    return target, KeyedStateStore(target, where=WHERE)


@pytest.mark.parametrize(("source", "snapshot_format"), WRITTEN)
@pytest.mark.parametrize("target", RESTORED)
def test_every_allowed_change_migrates_every_value(
    factory,
    tmp_path,
    source,
    snapshot_format,
    target,
):
    handles, streams = written(factory, source, snapshot_format, tmp_path)
    backend, store = restored(factory, target, handles, streams)
    v2 = Types.ROW_NAMED(  # added (with and without a default), removed, reordered, widened
        ["score", "id", "country", "zip"],
        [Types.DOUBLE(), Types.LONG(), Types.STRING(), Types.STRING()],
    )
    profile = store.get_state(
        ValueStateDescriptor("profile", v2).set_field_defaults({"country": "fr"})
    )
    history = store.get_state(ListStateDescriptor("history", v2))
    by_day = store.get_state(MapStateDescriptor("by-day", Types.STRING(), v2))
    for i, key in enumerate(KEYS):
        backend.key_context.key = key
        value = profile.value()
        assert tuple(value) == (0.5, i, "fr", None) and value.get_field_names()[0] == "score"
        assert [tuple(r) for r in history.get()] == [(1.5, i, None, None), (2.5, i, None, None)]
        assert tuple(by_day.get("mon")) == (3.5, i, None, None)
    (again,) = backend.snapshot(2, savepoint(SnapshotFormat.CANONICAL))(streams)
    assert again.types["profile"] == "ROW_NAMED<score:DOUBLE,id:LONG,country:STRING,zip:STRING>"


@pytest.mark.parametrize(
    ("descriptor", "reason"),
    [
        (ValueStateDescriptor("profile", row_of(["id", "title", "score"],
                                                [Types.INT(), Types.STRING(), Types.FLOAT()])),
         "field 'name' is gone and field 'title' of the same type took its place"),
        (ValueStateDescriptor("profile", row_of(["id", "name", "score"],
                                                [Types.BYTE(), Types.STRING(), Types.FLOAT()])),
         "field 'id' narrows from INT to BYTE"),
        (ListStateDescriptor("profile", V1),
         "it was value state and is now declared as list state"),
        (MapStateDescriptor("by-day", Types.INT(), V1),
         "the type of the map's keys changes from STRING to INT"),
    ],
    ids=["rename", "narrow", "kind", "map-key"],
)  # fmt: skip
@pytest.mark.parametrize(("source", "snapshot_format"), WRITTEN)
@pytest.mark.parametrize("target", RESTORED)
def test_every_refused_change_names_the_operator_the_state_and_the_field(
    factory,
    tmp_path,
    source,
    snapshot_format,
    target,
    descriptor,
    reason,
):
    handles, streams = written(factory, source, snapshot_format, tmp_path)
    _, store = restored(factory, target, handles, streams)
    with pytest.raises(IncompatibleStateError) as refused:
        store.get_state(descriptor)
    message = str(refused.value)
    assert message.startswith(f"{WHERE}: state {descriptor.name!r} cannot be restored: ")
    assert reason in message


@pytest.mark.parametrize(("source", "snapshot_format"), WRITTEN)
@pytest.mark.parametrize("target", RESTORED)
def test_numbers_stored_as_messagepack_widen_in_place(
    factory,
    tmp_path,
    source,
    snapshot_format,
    target,
):
    backend = factory(source).backend
    store = KeyedStateStore(backend)
    backend.key_context.key = "k"
    store.get_state(ValueStateDescriptor("count", Types.INT())).update(2**31 - 1)
    store.get_state(ListStateDescriptor("ratios", Types.FLOAT())).update([0.5, 0.25])
    streams = Streams(tmp_path)
    handles = backend.snapshot(1, savepoint(snapshot_format))(streams)
    target_backend, target_store = restored(factory, target, handles, streams)
    target_backend.key_context.key = "k"
    count = target_store.get_state(ValueStateDescriptor("count", Types.LONG()))
    assert count.value() == 2**31 - 1
    count.update(2**40)  # a LONG now
    assert count.value() == 2**40
    assert target_store.get_state(ListStateDescriptor("ratios", Types.DOUBLE())).get() == [
        0.5,
        0.25,
    ]
