"""An attempt's bookkeeping, alone: which failure counts, when every task runs or finished,
which slots fell silent, when the slots may learn where every input gate listens."""

from __future__ import annotations

from barrierflow.cluster.attempt import Attempt, AttemptFailure

TASKS = frozenset({("v0", 0), ("v0", 1), ("v1", 0)})


def test_the_first_failure_is_the_one_that_counts():
    attempt = Attempt(1, 7, TASKS)
    attempt.fail("task v0[1] failed", "Traceback ...")
    attempt.fail("slot 0 sent no heartbeat", recoverable=False)
    assert attempt.failure == AttemptFailure("task v0[1] failed", "Traceback ...", True)


def test_the_last_task_to_run_is_reported_with_what_the_restore_read():
    attempt = Attempt(1, 7, TASKS)
    running = [
        attempt.task_running(task, read, ms, now=10.0 + i)
        for i, (task, read, ms) in enumerate(
            [(("v0", 0), 100, 5.0), (("v1", 0), 0, 9.0), (("v0", 1), 50, 2.0)]
        )
    ]
    assert running == [False, False, True]
    assert (attempt.restore_bytes_read, attempt.max_restore_ms) == (150, 9.0)
    assert attempt.all_running_at == 12.0


def test_processing_time_runs_from_all_running_to_all_finished():
    attempt = Attempt(1, 7, TASKS)
    for task in TASKS:
        attempt.task_running(task, 0, 0.0, now=1.0)
    assert attempt.processing_ms() == 0
    for i, task in enumerate(sorted(TASKS)):
        attempt.task_finished(task, now=2.0 + i)
    assert attempt.all_finished and attempt.processing_ms() == 3000


def test_a_slot_is_silent_after_the_timeout_unless_it_said_it_stopped_or_never_beat():
    attempt = Attempt(1, 7, TASKS)
    attempt.slots = {0: ("h", 1), 1: ("h", 2), 2: ("h", 3)}
    attempt.slot_last_seen = {0: 100.0, 1: 104.0}  # slot 2 still waits for the others
    assert attempt.silent_slots(now=105.0, timeout_s=4.0) == [0]
    attempt.stopped_slots.add(0)
    assert attempt.silent_slots(now=105.0, timeout_s=4.0) == []
    assert attempt.silent_slots(now=109.0, timeout_s=4.0) == [1]


def test_every_gate_endpoint_is_handed_out_when_the_last_slot_registers_and_not_before():
    attempt = Attempt(1, 7, TASKS, num_slots=2)
    assert attempt.slot_registered(1, "h", 2, {"v1/0": "tcp://h:2"}) is None
    assert attempt.slot_registered(1, "h", 2, {"v1/0": "tcp://h:2"}) is None  # again: no change
    gates = attempt.slot_registered(0, "h", 1, {"v0/0": "tcp://h:1"})
    assert gates == {"v0/0": "tcp://h:1", "v1/0": "tcp://h:2"}
    assert attempt.slots == {0: ("h", 1), 1: ("h", 2)}


def test_a_slot_registering_again_after_the_handout_changes_nothing():
    attempt = Attempt(1, 7, TASKS, num_slots=1)
    assert attempt.slot_registered(0, "h", 1, {}) == {}
    assert attempt.slot_registered(0, "h", 9, {"v1/0": "tcp://h:9"}) is None
    assert attempt.slots == {0: ("h", 1)} and attempt.gates == {}
