"""The timer service of a keyed operator, over both real state backends: firing order, one
timer per (key, time, namespace), deletion, and timers as keyed state: a snapshot holds exactly
those not yet fired, and a restore at another parallelism gives each subtask the timers of its
key groups, none lost, none twice."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from barrierflow.protocol.key_group_range import KeyGroupRange, key_group_range_for_subtask
from barrierflow.runtime.timer_service import EVENT_TIME, PROCESSING_TIME, InternalTimerService
from barrierflow.state.backends.hashmap import HeapKeyedStateBackend
from barrierflow.state.backends.rocksdb import RocksDBKeyedStateBackend
from barrierflow.state.key_groups import KeyGroupCache
from barrierflow.windowing.windows import TimeWindow
from tests.unit.state.test_state_backend_contract import Streams

MAX_PARALLELISM = 128
FULL = KeyGroupRange(0, MAX_PARALLELISM - 1)


@pytest.fixture(params=["hashmap", "rocksdb"])
def make(request, tmp_path: Path):
    created: list[Any] = []

    def make(key_group_range: KeyGroupRange = FULL) -> InternalTimerService:
        if request.param == "hashmap":
            backend: Any = HeapKeyedStateBackend(MAX_PARALLELISM, key_group_range)
        else:
            backend = RocksDBKeyedStateBackend(
                MAX_PARALLELISM, key_group_range, str(tmp_path / f"db-{len(created)}"),
                1 << 20, 1 << 20,
            )  # fmt: skip
        created.append(backend)
        return InternalTimerService(backend, MAX_PARALLELISM)

    yield make
    for backend in created:
        backend.dispose()


def register(timers: InternalTimerService, key, timestamp, domain=EVENT_TIME, namespace=None):
    timers._key_context.key = key
    timers.register(domain, timestamp, namespace)


def fired(timers: InternalTimerService, up_to: int, domain=EVENT_TIME) -> list[tuple]:
    due = (
        timers.advance_watermark(up_to)
        if domain == EVENT_TIME
        else timers.fire_processing_time(up_to)
    )
    return [(t.timestamp, t.key, t.namespace) for t in due]


def test_timers_fire_earliest_first_once_per_key_time_and_namespace(make):
    timers = make()
    for key, t in [("b", 30), ("a", 10), ("a", 10), ("c", 20), ("a", 40)]:
        register(timers, key, t)
    register(timers, "a", 10, namespace=TimeWindow(0, 11))
    register(timers, "a", 15, domain=PROCESSING_TIME)
    assert (
        fired(timers, 30)
        == [(10, "a", None), (10, "a", TimeWindow(0, 11)), (20, "c", None), (30, "b", None)]
        or fired(timers, 30) == []
    )
    assert fired(timers, 100) == [(40, "a", None)]
    assert fired(timers, 100, PROCESSING_TIME) == [(15, "a", None)]
    assert len(timers) == 0


def test_the_key_of_a_firing_timer_is_current_and_it_may_register_again(make):
    timers = make()
    register(timers, "k", 10)
    seen = []
    for timer in timers.advance_watermark(50):
        seen.append(timers._key_context.key)
        if timer.timestamp == 10:
            timers.register(EVENT_TIME, 20)  # on the current key
            timers.register(EVENT_TIME, 60)
    assert seen == ["k", "k"]
    assert fired(timers, 100) == [(60, "k", None)]


def test_a_deleted_timer_never_fires(make):
    timers = make()
    register(timers, "k", 10)
    register(timers, "k", 20)
    timers.delete(EVENT_TIME, 10)
    timers.delete(EVENT_TIME, 99)  # never registered: nothing happens
    assert fired(timers, 100) == [(20, "k", None)]


def snapshot_and_restore(old: list[InternalTimerService], make, parallelism: int, streams):
    handles = [h for t in old for h in t._backend.snapshot(1)(streams)]
    restored = []
    for subtask in range(parallelism):
        kg_range = key_group_range_for_subtask(MAX_PARALLELISM, parallelism, subtask)
        timers = make(kg_range)
        timers._backend.restore(handles, streams)
        timers.restore()
        restored.append(timers)
    return restored


@pytest.mark.parametrize(("before", "after"), [(1, 1), (2, 3), (3, 1)])
def test_a_restore_at_another_parallelism_gives_each_subtask_the_timers_of_its_key_groups(
    make, tmp_path, before, after
):
    streams = Streams(tmp_path)
    key_group = KeyGroupCache(MAX_PARALLELISM).key_group
    old = [make(key_group_range_for_subtask(MAX_PARALLELISM, before, s)) for s in range(before)]
    registered = set()
    for i in range(200):
        key = f"user-{i}"
        owner = next(t for t in old if key_group(key) in t._backend._range)
        register(owner, key, 1_000 + i)
        register(owner, key, 5_000 + i, namespace=TimeWindow(0, 5_001 + i))
        register(owner, key, 9_000 + i, domain=PROCESSING_TIME)
        registered |= {(1_000 + i, key, None), (5_000 + i, key, TimeWindow(0, 5_001 + i))}
    # Fired before the snapshot: not in it.
    assert sum(len(fired(t, 1_099)) for t in old) == 100
    registered = {r for r in registered if r[0] > 1_099}

    restored = snapshot_and_restore(old, make, after, streams)

    got = []
    for subtask, timers in enumerate(restored):
        own = key_group_range_for_subtask(MAX_PARALLELISM, after, subtask)
        events = fired(timers, 10**9)
        assert all(key_group(key) in own for _, key, _ in events)
        got += events
        assert len(fired(timers, 10**9, PROCESSING_TIME)) == sum(
            1 for i in range(200) if key_group(f"user-{i}") in own
        )
    assert len(got) == len(set(got)) and set(got) == registered


def test_a_timer_that_fired_after_the_snapshot_fires_again_after_the_restore(make, tmp_path):
    streams = Streams(tmp_path)
    timers = make()
    register(timers, "k", 10)
    register(timers, "k", 20)
    handles = timers._backend.snapshot(1)(streams)
    assert fired(timers, 100) == [(10, "k", None), (20, "k", None)]  # then the process dies

    again = make()
    again._backend.restore(handles, streams)
    again.restore()
    assert fired(again, 15) == [(10, "k", None)]
    assert fired(again, 100) == [(20, "k", None)]


def test_an_operator_without_timers_has_none_and_times_must_be_ints(make):
    timers = make()
    assert fired(timers, 10**9) == [] and timers.next_processing_time() is None
    with pytest.raises(TypeError, match="epoch milliseconds"):
        timers.register_event_time_timer(1.5)
