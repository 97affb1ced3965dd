"""Every rule of the checkpoint coordinator, one test each (or more), on the coordinator harness:
storage in memory, a clock the test moves, a gateway that records what tasks are sent. The
shared files of incremental checkpoints have their own file (test_coordinator_shared_state)."""

from __future__ import annotations

import logging

import pytest

from barrierflow.checkpoint import storage_layout as layout
from barrierflow.checkpoint.history import CheckpointStatus
from barrierflow.checkpoint.metadata import CheckpointMetadata
from barrierflow.control import messages as msg
from barrierflow.coordination.checkpoint_coordinator import (
    CheckpointFailuresExceeded,
    CoordinatorConfig,
)
from barrierflow.coordination.in_memory_storage import InMemoryCheckpointStorage
from barrierflow.coordination.storage_housekeeping import ClaimedSnapshot
from barrierflow.datastream import StreamExecutionEnvironment
from barrierflow.datastream.connectors.discarding import DiscardingSink
from barrierflow.datastream.connectors.number_seq import NumberSequenceSource
from barrierflow.graph.execution_graph import build_execution_graph
from barrierflow.graph.job_graph import build_job_graph
from barrierflow.graph.stream_graph import build_stream_graph
from barrierflow.protocol.checkpoint_barrier import Alignment, CheckpointKind, SnapshotFormat
from barrierflow.testing.coordinator_harness import WALL_CLOCK_ORIGIN_MS, CoordinatorHarness


def two_vertex_graph():
    """Two source subtasks, rebalanced to one sink subtask: three tasks, two sources."""
    env = StreamExecutionEnvironment()
    env.from_source(NumberSequenceSource(1, 10), "s").sink_to(DiscardingSink()).set_parallelism(1)
    return build_execution_graph(
        build_job_graph(build_stream_graph("job", env._transformations, 2, 128))
    )


def config(**overrides) -> CoordinatorConfig:
    settings = {
        "interval_s": 1.0,
        "timeout_s": 60.0,
        "min_pause_s": 0.0,
        "max_concurrent": 1,
        "tolerable_failures": 0,
        "num_retained": 1,
    }
    settings.update(overrides)
    return CoordinatorConfig(**settings)


@pytest.fixture
def h() -> CoordinatorHarness:
    return CoordinatorHarness(two_vertex_graph(), config(tolerable_failures=10))


def status(h: CoordinatorHarness, cid: int) -> CheckpointStatus:
    return next(r.status for r in h.coordinator.history.records if r.checkpoint_id == cid)


def failure_reason(h: CoordinatorHarness, cid: int) -> str:
    return next(r.failure_reason for r in h.coordinator.history.records if r.checkpoint_id == cid)


# --- triggering ----------------------------------------------------------------------------------


def test_the_first_checkpoint_is_triggered_one_interval_after_every_task_runs(h):
    h.tick_after(0.9)
    assert h.gateway.triggers() == []
    h.tick_after(0.1)
    assert len(h.gateway.triggers()) == len(h.sources)


def test_a_trigger_goes_to_every_source_subtask_and_to_no_other_task(h):
    cid = h.trigger()
    assert sorted(task for task, m in h.gateway.sent) == sorted(h.sources)
    assert all(m.checkpoint_id == cid for _, m in h.gateway.sent)
    assert len(h.sources) == 2 and len(h.tasks) == 3


def test_checkpoint_ids_increase_from_the_first_id_and_carry_the_wall_clock():
    h = CoordinatorHarness(two_vertex_graph(), config(), first_checkpoint_id=7)
    first = h.trigger()
    h.acknowledge_all(first)
    second = h.trigger()
    assert (first, second) == (7, 8)
    trigger = h.gateway.triggers()[-1]
    assert trigger.timestamp_ms == WALL_CLOCK_ORIGIN_MS + int(h.clock.now_s * 1000)


# --- completion ----------------------------------------------------------------------------------


def test_a_checkpoint_completes_once_every_task_acknowledged_and_every_task_is_told(h):
    cid = h.trigger()
    tasks = sorted(h.tasks)
    for task in tasks[:-1]:
        h.acknowledge(cid, task)
        assert h.completed_ids() == [] and h.storage.list_completed() == []
    h.acknowledge(cid, tasks[-1])
    assert h.completed_ids() == [cid]
    assert h.storage.read_metadata(cid).checkpoint_id == cid
    completes = [t for t, m in h.gateway.sent if isinstance(m, msg.NotifyCheckpointComplete)]
    assert sorted(completes) == tasks
    assert status(h, cid) is CheckpointStatus.COMPLETED
    assert h.coordinator.num_completed == 1


def test_duplicate_and_unknown_acknowledgements_do_not_complete_a_checkpoint(h):
    cid = h.trigger()
    first, second, _ = sorted(h.tasks)
    h.acknowledge(cid, first)
    h.acknowledge(cid, first)
    h.acknowledge(cid, ("no-such-vertex", 0))
    h.acknowledge(cid, second)
    assert h.completed_ids() == []


def test_retention_keeps_num_retained_checkpoints_and_deletes_the_subsumed_ones():
    h = CoordinatorHarness(two_vertex_graph(), config(num_retained=2))
    ids = []
    for _ in range(4):
        cid = h.trigger()
        h.storage.add_file(f"{layout.checkpoint_dir(cid)}/state", b"s")
        h.acknowledge_all(cid)
        ids.append(cid)
    assert h.completed_ids() == ids[-2:]
    assert h.storage.list_checkpoint_dirs() == ids[-2:]


def test_a_completed_checkpoint_aborts_the_older_pending_ones_without_counting_a_failure():
    h = CoordinatorHarness(two_vertex_graph(), config(max_concurrent=3, tolerable_failures=0))
    older = h.trigger()
    middle = h.trigger()
    newer = h.trigger()
    h.acknowledge_all(newer)
    assert h.completed_ids() == [newer]
    assert status(h, older) is status(h, middle) is CheckpointStatus.FAILED
    assert failure_reason(h, older) == f"subsumed by checkpoint {newer}"
    assert h.notified_aborted() == [older, middle]
    assert h.coordinator.num_failed == 0
    h.acknowledge_all(middle)  # late: nothing happens
    assert h.completed_ids() == [newer]


def test_a_checkpoint_whose_metadata_cannot_be_written_is_aborted_as_a_failure(h):
    cid = h.trigger()
    h.storage.fail_writes_with = OSError("disk full")
    h.acknowledge_all(cid)
    assert h.completed_ids() == [] and h.notified_complete() == []
    assert h.notified_aborted() == [cid]
    assert h.coordinator.num_failed == 1
    h.storage.fail_writes_with = None
    assert "writing its metadata failed: disk full" in failure_reason(h, cid)
    h.acknowledge_all(cid)  # already aborted
    assert h.completed_ids() == []


# --- aborting and failures -----------------------------------------------------------------------


def test_a_decline_aborts_the_checkpoint_deletes_its_files_and_tells_every_task(h):
    cid = h.trigger()
    h.storage.add_file(f"{layout.checkpoint_dir(cid)}/half-written", b"x")
    h.decline(cid, ("v0", 1), detail="disk full")
    assert status(h, cid) is CheckpointStatus.FAILED
    assert failure_reason(h, cid) == "declined by v0[1]: disk full"
    aborts = [t for t, m in h.gateway.sent if isinstance(m, msg.NotifyCheckpointAborted)]
    assert sorted(aborts) == sorted(h.tasks)
    assert h.storage.list_checkpoint_dirs() == []
    h.acknowledge_all(cid)
    assert h.completed_ids() == []


def test_a_checkpoint_slower_than_the_timeout_is_aborted(h):
    cid = h.trigger()
    h.tick_after(59.9)
    assert h.notified_aborted() == []
    h.tick_after(0.2)
    assert h.notified_aborted() == [cid]
    assert failure_reason(h, cid) == "timed out after 60 s"


def test_a_slow_checkpoint_is_reported_every_30_s_naming_the_tasks_it_waits_for(h, caplog):
    cid = h.trigger()
    h.acknowledge(cid, sorted(h.tasks)[0])
    with caplog.at_level(logging.WARNING, logger="barrierflow.checkpoint"):
        h.tick_after(29.0)
        assert caplog.records == []
        h.tick_after(1.0)
        h.tick_after(1.0)
        h.tick_after(29.0)
    reports = [r.getMessage() for r in caplog.records]
    assert len(reports) == 2
    assert f"Checkpoint {cid} has been running for 30 s; waiting for 2 of 3 tasks" in reports[0]
    assert "v0[1], v1[0]" in reports[0]


def test_more_consecutive_failures_than_tolerable_fail_the_job():
    h = CoordinatorHarness(two_vertex_graph(), config(tolerable_failures=2))
    for _ in range(2):
        h.decline(h.trigger())
    with pytest.raises(CheckpointFailuresExceeded, match="3 consecutive failures exceed"):
        h.decline(h.trigger())


def test_a_completed_checkpoint_resets_the_count_of_consecutive_failures():
    h = CoordinatorHarness(two_vertex_graph(), config(tolerable_failures=1))
    h.decline(h.trigger())
    h.acknowledge_all(h.trigger())
    h.decline(h.trigger())
    assert h.coordinator.num_failed == 2
    with pytest.raises(CheckpointFailuresExceeded):
        h.decline(h.trigger())


def test_a_timeout_counts_as_a_failure():
    h = CoordinatorHarness(two_vertex_graph(), config(tolerable_failures=0))
    h.trigger()
    with pytest.raises(CheckpointFailuresExceeded, match="timed out"):
        h.tick_after(61)


def test_a_new_attempt_aborts_what_is_pending_without_counting_a_failure():
    h = CoordinatorHarness(two_vertex_graph(), config(tolerable_failures=0))
    cid = h.trigger()
    h.start_attempt()
    assert h.notified_aborted() == [cid]
    assert failure_reason(h, cid) == "the job restarted"
    assert h.coordinator.num_failed == 0


def test_an_ended_attempt_deletes_the_directories_of_checkpoints_that_never_completed(h):
    kept = h.trigger()
    h.storage.add_file(f"{layout.checkpoint_dir(kept)}/state", b"s")
    h.acknowledge_all(kept)
    lost = h.trigger()
    h.storage.add_file(f"{layout.checkpoint_dir(lost)}/state", b"s")
    h.storage.add_file(f"{layout.checkpoint_dir(lost + 1)}/state", b"s")  # a ghost's write
    h.coordinator.attempt_ended("the attempt failed")
    assert h.storage.list_checkpoint_dirs() == [kept]


# --- the final checkpoint of a bounded job --------------------------------------------------------


def test_a_checkpoint_triggered_before_the_sources_ended_is_not_the_final_one(h):
    first = h.trigger()
    assert not h.gateway.triggers()[-1].options.is_final
    h.coordinator.sources_finished()  # while checkpoint 1 is pending
    h.acknowledge_all(first)  # completes after the sources ended
    h.coordinator.tick()
    final = h.gateway.triggers()[-1]
    assert final.checkpoint_id == first + 1 and final.options.kind is CheckpointKind.FINAL


def test_an_aborted_final_checkpoint_is_retried_at_once_and_none_follows_a_completed_one(h):
    h.coordinator.sources_finished()
    h.coordinator.tick()
    final = h.gateway.triggers()[-1]
    assert final.options.is_final
    h.decline(final.checkpoint_id)
    h.coordinator.tick()  # no interval wait: the job cannot end without it
    retry = h.gateway.triggers()[-1]
    assert retry.checkpoint_id == final.checkpoint_id + 1 and retry.options.is_final
    h.acknowledge_all(retry.checkpoint_id)
    h.tick_after(10.0)
    assert h.gateway.triggers()[-1] is retry  # the tasks are ending: nothing more


# --- restore and take-over -----------------------------------------------------------------------


def test_the_latest_restorable_checkpoint_falls_back_past_a_corrupt_one():
    h = CoordinatorHarness(two_vertex_graph(), config(num_retained=2))
    older, newer = h.trigger(), None
    h.acknowledge_all(older)
    newer = h.trigger()
    h.acknowledge_all(newer)
    assert h.coordinator.restorable.latest().checkpoint_id == newer
    path = layout.metadata_path(newer)
    h.storage.files[path] = h.storage.files[path][:-3]
    assert h.coordinator.restorable.latest().checkpoint_id == older
    h.storage.files[layout.metadata_path(older)] = b"garbage"
    assert h.coordinator.restorable.latest() is None


def test_seed_105_a_checkpoint_a_restore_found_corrupt_is_skipped_by_the_next_restore():
    h = CoordinatorHarness(two_vertex_graph(), config(num_retained=2))
    older = h.trigger()
    h.acknowledge_all(older)
    newer = h.trigger()
    h.acknowledge_all(newer)

    h.coordinator.restorable.mark_unusable(newer, "its file chk-2/x is corrupt")

    assert h.coordinator.restorable.latest().checkpoint_id == older
    h.coordinator.restorable.mark_unusable(older, "its file chk-1/x is corrupt")
    assert h.coordinator.restorable.latest() is None


def test_take_over_adopts_the_newest_readable_checkpoints_and_continues_after_every_used_id():
    graph = two_vertex_graph()
    storage = InMemoryCheckpointStorage()
    first = CoordinatorHarness(graph, config(num_retained=3), storage)
    ids = []
    for _ in range(3):
        ids.append(first.trigger())
        first.acknowledge_all(ids[-1])
    storage.files[layout.metadata_path(ids[-1])] = b"torn"  # the newest is unreadable
    storage.add_file(f"{layout.checkpoint_dir(9)}/state", b"a dead attempt's")

    second = CoordinatorHarness(graph, config(num_retained=2), storage)
    assert second.coordinator.take_over()
    assert second.completed_ids() == ids[:2]
    # what no adopted checkpoint references goes: the torn one, and a ghost's chk-9
    assert storage.list_checkpoint_dirs() == ids[:2]
    assert second.trigger() == 10
    assert [r.checkpoint_id for r in second.coordinator.history.records][:3] == ids


def test_take_over_of_a_job_without_a_readable_checkpoint_reports_it():
    h = CoordinatorHarness(two_vertex_graph(), config())
    assert not h.coordinator.take_over()


# --- savepoints ----------------------------------------------------------------------------------


def test_a_savepoint_is_written_into_its_own_directory_and_never_retained_or_committed(h):
    h.request_savepoint("/savepoints", SnapshotFormat.CANONICAL)
    cid = h.trigger()  # at once, whatever the interval
    trigger = h.gateway.triggers()[-1]
    assert trigger.options.is_savepoint and trigger.options.alignment is Alignment.ALIGNED
    location = trigger.options.target_location
    assert location.startswith("/savepoints/savepoint-job-id-")
    h.acknowledge_all(cid)
    (result,) = h.savepoint_results
    assert (result.checkpoint_id, result.path, result.error) == (cid, location, None)
    metadata = h.savepoints.read_metadata(location)
    assert metadata.kind is CheckpointKind.SAVEPOINT
    assert metadata.snapshot_format is SnapshotFormat.CANONICAL
    assert h.completed_ids() == [] and h.storage.list_completed() == []
    assert h.notified_complete() == []  # it goes on: sinks commit with the next checkpoint
    record = h.coordinator.history.records[-1]
    assert record.external_path == location and record.kind is CheckpointKind.SAVEPOINT


def test_a_savepoint_shares_the_checkpoint_id_sequence(h):
    first = h.trigger()
    h.acknowledge_all(first)
    h.request_savepoint()
    savepoint = h.trigger()
    h.acknowledge_all(savepoint)
    assert savepoint == first + 1
    assert h.trigger() == savepoint + 1


def test_a_stop_savepoint_tells_the_tasks_it_completed_and_nothing_is_triggered_after_it(h):
    h.request_savepoint(kind=CheckpointKind.SUSPEND)
    cid = h.trigger()
    h.acknowledge_all(cid)
    assert h.notified_complete() == [cid]
    h.tick_after(100)
    assert len(h.gateway.triggers()) == len(h.sources)  # only the savepoint's


def test_retention_never_subsumes_or_deletes_a_savepoint():
    h = CoordinatorHarness(two_vertex_graph(), config(num_retained=1))
    h.request_savepoint()
    savepoint = h.trigger()
    h.acknowledge_all(savepoint)
    for _ in range(3):
        h.acknowledge_all(h.trigger())
    location = h.savepoint_results[0].path
    assert location in h.savepoints.locations
    assert h.savepoints.read_metadata(location).checkpoint_id == savepoint


def test_a_completed_checkpoint_does_not_abort_an_older_pending_savepoint():
    h = CoordinatorHarness(two_vertex_graph(), config(max_concurrent=3))
    older = h.trigger()
    h.request_savepoint()
    savepoint = h.trigger()
    h.acknowledge_all(older)  # older than the savepoint: nothing to subsume
    h.acknowledge_all(savepoint)
    assert h.savepoint_results[0].checkpoint_id == savepoint
    assert h.savepoint_results[0].error is None


def test_a_failed_savepoint_tells_its_requester_deletes_its_directory_and_fails_no_job():
    h = CoordinatorHarness(two_vertex_graph(), config(tolerable_failures=0))
    h.request_savepoint()
    cid = h.trigger()
    location = h.gateway.triggers()[-1].options.target_location
    h.decline(cid, detail="disk full")
    (result,) = h.savepoint_results
    assert result.path is None and "disk full" in result.error
    assert location not in h.savepoints.locations
    assert h.coordinator.num_failed == 0
    assert h.notified_aborted() == [cid]  # the tasks clean up, a stopping source reads on


def test_a_savepoint_times_out_as_checkpoints_do(h):
    h.request_savepoint()
    cid = h.trigger()
    h.tick_after(61)
    assert h.savepoint_results[0].error == f"savepoint {cid} failed: timed out after 60 s"


def test_savepoint_requests_are_queued_and_taken_one_after_the_other(h):
    h.request_savepoint("/a")
    h.request_savepoint("/b")
    first = h.trigger()
    h.tick_after(1.0)
    assert len(h.gateway.triggers()) == len(h.sources)  # the second waits
    h.acknowledge_all(first)
    second = h.trigger()
    h.acknowledge_all(second)
    paths = [r.path for r in h.savepoint_results]
    assert paths[0].startswith("/a/") and paths[1].startswith("/b/")


def test_a_savepoint_without_a_directory_or_into_an_unwritable_one_fails_at_once(h):
    h.request_savepoint(None)
    h.savepoints.unwritable.add("/read-only")
    h.request_savepoint("/read-only")
    first, second = h.savepoint_results
    assert "no savepoint directory" in first.error
    assert "/read-only is not writable" in second.error
    assert h.gateway.triggers() == []


def test_a_restart_fails_a_queued_stop_but_keeps_a_queued_savepoint(h):
    h.trigger()  # pending: the requests queue behind nothing but must wait for the tasks
    h.request_savepoint("/keep")
    h.request_savepoint("/stop", kind=CheckpointKind.SUSPEND)
    h.start_attempt()
    stop_result = next(r for r in h.savepoint_results if r.error and "stop it again" in r.error)
    assert stop_result.path is None
    cid = h.trigger()
    h.acknowledge_all(cid)
    assert [r.path.startswith("/keep/") for r in h.savepoint_results if r.path] == [True]


def test_shutdown_fails_every_queued_or_pending_request(h):
    h.request_savepoint("/a")
    h.trigger()
    h.request_savepoint("/b")
    h.coordinator.shutdown("the job ended")
    assert [r.error for r in h.savepoint_results] == [
        "savepoint 1 failed: the job ended",
        "the job ended",
    ]
    assert h.savepoints.locations == set()


def test_a_claimed_snapshot_is_deleted_once_the_jobs_own_checkpoints_subsume_it():
    claimed = CheckpointMetadata("old-job", "name", 41, 1, 2, [])
    h = CoordinatorHarness(
        two_vertex_graph(),
        config(num_retained=2),
        claimed=ClaimedSnapshot("/old/chk-41-root", claimed),
        first_checkpoint_id=42,
    )
    h.acknowledge_all(h.trigger())
    assert h.savepoints.disposed == []  # two retained: the claimed one and the new one
    h.acknowledge_all(h.trigger())
    assert h.savepoints.disposed == [("/old/chk-41-root", 41)]


def test_a_decline_because_a_newer_barrier_arrived_aborts_without_counting_a_failure():
    """A savepoint's barrier, newer, subsumes the alignment of a pending checkpoint at a task."""
    h = CoordinatorHarness(two_vertex_graph(), config(tolerable_failures=0))
    cid = h.trigger()
    h.decline(cid, reason=msg.DeclineReason.SUBSUMED, detail="")
    assert h.notified_aborted() == [cid] and h.coordinator.num_failed == 0
    assert "newer checkpoint barrier arrived" in failure_reason(h, cid)
