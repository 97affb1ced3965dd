"""Recovery times: per attempt that restored a checkpoint, from the failure before it to its
first record (the earliest its subtasks report) and to its first completed checkpoint."""

from __future__ import annotations

from barrierflow.checkpoint.history import CheckpointRecord, CheckpointStatus
from barrierflow.cluster.recovery_times import RecoveryTimes
from barrierflow.control.messages import SubtaskMetrics


def _metrics(subtask: int, first_record_at: float | None) -> SubtaskMetrics:
    return SubtaskMetrics("v", subtask, 1, 1, 0.0, 0.0, 0.0, first_record_at=first_record_at)


def _completed(checkpoint_id: int, triggered: float, ended: float) -> CheckpointRecord:
    return CheckpointRecord(
        checkpoint_id, CheckpointStatus.COMPLETED, int(triggered * 1000), int(ended * 1000),
        (ended - triggered) * 1000, 0, 0, 2, 2,
    )  # fmt: skip


def test_a_recovery_takes_the_earliest_first_record_and_the_first_checkpoint_after_submission():
    times = RecoveryTimes()
    times.attempt_submitted(1, None, at=100.0)  # a fresh start: no recovery
    times.attempt_failed(at=110.0)
    times.attempt_submitted(2, 7, at=110.5)
    times.subtasks_sampled(2, [_metrics(0, None), _metrics(1, 111.4)])
    times.subtasks_sampled(2, [_metrics(0, 111.2), _metrics(1, 111.4)])
    history = [
        _completed(7, 109.0, 109.1),
        _completed(8, 110.2, 110.3),
        _completed(9, 111.6, 112.0),
    ]

    (recovery,) = times.stats(history)

    assert (recovery.attempt, recovery.checkpoint_id) == (2, 7)
    assert recovery.failed_at == 110.0 and recovery.submitted_at == 110.5
    assert recovery.first_record_at == 111.2
    assert recovery.first_checkpoint_at == 112.0  # checkpoint 8 was triggered before submission


def test_the_first_attempt_of_a_resumed_job_recovers_from_no_known_failure():
    times = RecoveryTimes()
    times.attempt_submitted(1, 4, at=50.0)
    times.subtasks_sampled(1, [_metrics(0, 51.0)])

    (recovery,) = times.stats([])

    assert recovery.failed_at is None and recovery.first_record_at == 51.0
    assert recovery.first_checkpoint_at is None


def test_metrics_of_an_attempt_that_restored_nothing_are_not_a_recovery():
    times = RecoveryTimes()
    times.attempt_submitted(1, None, at=1.0)
    times.subtasks_sampled(1, [_metrics(0, 2.0)])
    assert times.stats([]) == ()
