"""The timer queue alone: firing order, one timer per (time, key, namespace), deletion, timers
added while firing, and snapshot and restore by key group (also into fewer or more subtasks)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from barrierflow.state.timer_queue import Timer, TimerQueue


def test_timers_fire_earliest_first_up_to_the_time_given():
    q = TimerQueue()
    for t, key in ((30, "c"), (10, "a"), (20, "b"), (40, "d")):
        q.add(Timer(t, key), key_group=0)
    assert [timer.key for timer in q.pop_due(30)] == ["a", "b", "c"]
    assert q.next_timestamp() == 40 and len(q) == 1


def test_one_timer_per_time_key_and_namespace():
    q = TimerQueue()
    assert q.add(Timer(10, "k"), 0)
    assert not q.add(Timer(10, "k"), 0)
    assert q.add(Timer(10, "k", namespace="window-1"), 0)
    assert q.add(Timer(10, "other"), 0)
    assert len(list(q.pop_due(10))) == 3


def test_a_deleted_timer_does_not_fire_and_can_be_registered_again():
    q = TimerQueue()
    q.add(Timer(10, "k"), 0)
    q.add(Timer(20, "k"), 0)
    assert q.delete(Timer(10, "k"))
    assert not q.delete(Timer(10, "k"))
    assert q.next_timestamp() == 20
    q.add(Timer(10, "k"), 0)
    assert q.by_key_group() == {0: [Timer(10, "k"), Timer(20, "k")]}
    assert list(q.pop_due(100)) == [Timer(10, "k"), Timer(20, "k")]


def test_a_timer_registered_while_firing_fires_in_the_same_pass_if_it_is_due():
    q = TimerQueue()
    q.add(Timer(10, "k"), 0)
    fired = []
    for timer in q.pop_due(50):
        fired.append(timer)
        if timer.timestamp == 10:
            q.add(Timer(40, "k"), 0)
            q.add(Timer(60, "k"), 0)
    assert fired == [Timer(10, "k"), Timer(40, "k")]
    assert q.next_timestamp() == 60


def test_a_restore_takes_the_key_groups_a_subtask_owns_now():
    q = TimerQueue()
    for key_group in range(4):
        q.add(Timer(100 + key_group, f"k{key_group}"), key_group)
    snapshot = q.by_key_group()
    halves = [TimerQueue(), TimerQueue()]
    for key_group, timers in snapshot.items():
        halves[key_group // 2].restore(key_group, timers)
    assert [t.key for t in halves[0].pop_due(1_000)] == ["k0", "k1"]
    assert [t.key for t in halves[1].pop_due(1_000)] == ["k2", "k3"]


@given(
    st.lists(
        st.tuples(st.sampled_from(["add", "delete"]), st.integers(0, 20), st.integers(0, 3)),
        max_size=80,
    ),
    st.integers(0, 20),
)
def test_the_queue_fires_exactly_the_live_timers_due_in_time_order(operations, now):
    q = TimerQueue()
    live: set[Timer] = set()
    for op, t, key in operations:
        timer = Timer(t, key)
        if op == "add":
            assert q.add(timer, key) == (timer not in live)
            live.add(timer)
        else:
            assert q.delete(timer) == (timer in live)
            live.discard(timer)
    snapshot = {t for timers in q.by_key_group().values() for t in timers}
    assert snapshot == live
    fired = list(q.pop_due(now))
    assert sorted(fired, key=lambda t: t.timestamp) == fired
    assert set(fired) == {t for t in live if t.timestamp <= now} and len(fired) == len(set(fired))
