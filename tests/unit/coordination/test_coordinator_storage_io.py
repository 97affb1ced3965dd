"""The coordinator with its storage work held back (as the JobMaster's storage I/O thread
holds it while object storage is slow): a checkpoint completes, and the tasks hear of it, only
once its ``_metadata`` is on storage; the timeout does not abort a checkpoint whose every task
acknowledged; an attempt that ends meanwhile leaves no completed checkpoint behind; deletes and
history writes run after the metadata they follow."""

from __future__ import annotations

from barrierflow.checkpoint.history import CheckpointStatus
from barrierflow.testing.coordinator_harness import CoordinatorHarness, DeferredStorageIo
from tests.unit.coordination.test_checkpoint_coordinator import config, two_vertex_graph


def harness(**overrides) -> tuple[CoordinatorHarness, DeferredStorageIo]:
    io = DeferredStorageIo()
    h = CoordinatorHarness(two_vertex_graph(), config(**overrides), storage_io=io)
    return h, io


def test_a_checkpoint_completes_and_is_notified_only_once_its_metadata_is_written():
    h, io = harness()
    cid = h.trigger()
    h.acknowledge_all(cid)
    assert h.storage.list_completed() == [] and h.notified_complete() == []
    assert h.completed_ids() == [] and h.coordinator.num_completed == 0
    io.run_all()
    assert h.storage.list_completed() == [cid] and h.notified_complete() == [cid]
    assert [r.status for r in h.storage.read_history().records] == [CheckpointStatus.COMPLETED]


def test_a_checkpoint_whose_metadata_is_being_written_does_not_time_out():
    h, io = harness(timeout_s=5.0)
    cid = h.trigger()
    h.acknowledge_all(cid)
    h.tick_after(60.0)  # far past the timeout; the write is still on its way
    assert h.notified_aborted() == []
    io.run_all()
    assert h.completed_ids() == [cid] and h.notified_complete() == [cid]


def test_an_attempt_that_ends_while_the_metadata_is_written_leaves_no_completed_checkpoint():
    h, io = harness()
    cid = h.trigger()
    h.acknowledge_all(cid)
    h.coordinator.attempt_ended("a task failed")
    io.run_all()  # the write lands after the abort: it is deleted again
    assert h.storage.list_completed() == [] and h.storage.list_checkpoint_dirs() == []
    assert h.notified_complete() == [] and h.notified_aborted() == [cid]
    assert h.completed_ids() == []
    assert [r.status for r in h.storage.read_history().records] == [CheckpointStatus.FAILED]


def test_a_failed_metadata_write_aborts_the_checkpoint_when_the_write_returns():
    h, io = harness(tolerable_failures=5)
    cid = h.trigger()
    h.storage.fail_writes_with = OSError("slow down")
    h.acknowledge_all(cid)
    assert h.notified_aborted() == []
    io.run_all()
    assert h.notified_aborted() == [cid] and h.coordinator.num_failed == 1


def test_a_subsumed_checkpoint_stays_until_the_new_metadata_is_written():
    h, io = harness(num_retained=1)
    first = h.trigger()
    h.acknowledge_all(first)
    io.run_all()
    second = h.trigger()
    h.acknowledge_all(second)
    assert h.storage.list_completed() == [first]  # a restore still finds a checkpoint
    assert h.completed_ids() == [first]
    io.run_all()
    assert h.storage.list_completed() == [second] and h.completed_ids() == [second]
