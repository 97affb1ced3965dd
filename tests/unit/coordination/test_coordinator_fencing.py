"""The coordinator under high availability, with a leadership the test ends (no clock, no
storage but memory): a checkpoint completing after the leadership ended writes no ``_metadata``
and tells no task (no sink commits for a paused leader), storage work queued before is not
done, checkpoint ids come from reserved blocks, each checkpoint records its epoch, and a
take-over refuses a checkpoint of a later epoch."""

from __future__ import annotations

import pytest

from barrierflow.checkpoint.history import CheckpointStatus
from barrierflow.control import messages as msg
from barrierflow.coordination.leadership import CheckpointIds, FencedStorageIo
from barrierflow.coordination.storage_io import InlineStorageIo
from barrierflow.errors import LeadershipLostError
from barrierflow.testing.coordinator_harness import CoordinatorHarness, DeferredStorageIo
from tests.unit.coordination.test_checkpoint_coordinator import config, two_vertex_graph


class Leadership:
    """A leadership the test ends; it records the checkpoint id reservations."""

    def __init__(self, epoch: int = 3) -> None:
        self.epoch = epoch
        self.cluster_id = "job"
        self.leading_since_ms = 0
        self.leads = True
        self.reservations: list[int] = []

    def check(self, action: str) -> None:
        if not self.leads:
            raise LeadershipLostError(self.epoch, self.epoch + 1, action)

    def reserve_checkpoint_ids(self, up_to: int) -> None:
        self.check("reserve")
        self.reservations.append(up_to)

    def start(self, on_lost) -> None:
        pass

    def job_ended(self, end, failure) -> None:
        pass


def harness(leadership: Leadership, io=None) -> CoordinatorHarness:
    inner = io or InlineStorageIo()
    return CoordinatorHarness(
        two_vertex_graph(),
        config(tolerable_failures=10),
        storage_io=FencedStorageIo(inner, leadership),
        leadership=leadership,
    )


def test_a_checkpoint_records_the_epoch_that_wrote_it():
    leadership = Leadership(epoch=3)
    h = harness(leadership)
    cid = h.trigger()
    h.acknowledge_all(cid)
    assert h.storage.read_metadata(cid).leader_epoch == 3
    assert h.coordinator.history.records[-1].leader_epoch == 3


def test_after_the_leadership_ended_no_metadata_is_written_and_no_task_told_to_commit():
    leadership = Leadership()
    h = harness(leadership)
    first = h.trigger()
    h.acknowledge_all(first)
    assert h.notified_complete() == [first]
    second = h.trigger()
    leadership.leads = False  # paused past its lease; a standby took over
    h.acknowledge_all(second)
    assert h.storage.list_completed() == [first]  # no _metadata of the second
    assert h.notified_complete() == [first]  # no sink commits for it
    assert h.completed_ids() == [first]
    failed = [r for r in h.coordinator.history.records if r.checkpoint_id == second]
    assert failed[0].status is CheckpointStatus.FAILED


class WorkNowDoneLater:
    """Runs the storage work at once, and what follows it (``done``) when the test says."""

    def __init__(self) -> None:
        self.done = []

    def run(self, work, done=None) -> None:
        error = None
        try:
            work()
        except Exception as e:  # noqa: BLE001 - handed to done, as the real ones do
            error = e
        if done is not None:
            self.done.append((done, error))


def test_the_notification_is_refused_when_the_leadership_ends_after_the_write():
    leadership = Leadership()
    io = WorkNowDoneLater()
    h = harness(leadership, io)
    cid = h.trigger()
    h.acknowledge_all(cid)
    assert h.storage.list_completed() == [cid]  # written while leading
    leadership.leads = False  # then the lease is lost, before the tasks are told
    done, error = io.done.pop()
    with pytest.raises(LeadershipLostError, match=f"checkpoint {cid} completed"):
        done(error)  # the completion's next steps, on the coordinator's thread
    assert not h.gateway.of_type(msg.NotifyCheckpointComplete)


def test_storage_work_queued_while_leading_is_not_done_once_the_leadership_ended():
    leadership = Leadership()
    io = DeferredStorageIo()
    h = harness(leadership, io)
    cid = h.trigger()
    h.acknowledge_all(cid)  # its _metadata write is queued
    leadership.leads = False
    io.run_all()
    assert h.storage.list_completed() == []


def test_checkpoint_ids_are_reserved_in_blocks_before_they_are_used():
    leadership = Leadership()
    ids = CheckpointIds(first=7, leadership=leadership)
    taken = [ids.take() for _ in range(CheckpointIds.BLOCK + 1)]
    assert taken == list(range(7, 7 + CheckpointIds.BLOCK + 1))
    assert leadership.reservations == [7 + CheckpointIds.BLOCK, 7 + 2 * CheckpointIds.BLOCK]
    leadership.leads = False
    ids.continue_after(500)
    with pytest.raises(LeadershipLostError):
        ids.take()  # a new block is needed, and only a leader may reserve it


def test_a_take_over_refuses_a_checkpoint_of_a_later_epoch():
    later = Leadership(epoch=5)
    h = harness(later)
    cid = h.trigger()
    h.acknowledge_all(cid)
    earlier = CoordinatorHarness(
        two_vertex_graph(), config(), storage=h.storage, leadership=Leadership(epoch=4)
    )
    with pytest.raises(LeadershipLostError, match=f"checkpoint {cid} was written by epoch 5"):
        earlier.coordinator.take_over()
