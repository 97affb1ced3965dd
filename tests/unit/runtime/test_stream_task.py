"""StreamTask and its subtask checkpoint coordinator, driven in-process by the harness: alignment
and blocking, the snapshot a barrier takes, cancel markers, sources, end of input and the final
checkpoint. The real task, input gate and output channels run over in-memory sockets."""

from __future__ import annotations

import pytest

from barrierflow.checkpoint.metadata import IncrementalKeyedHandle, KeyGroupsHandle
from barrierflow.control import messages as msg
from barrierflow.datastream.connectors.number_seq import NumberSequenceSource
from barrierflow.datastream.functions.one_input import KeyedProcessFunction
from barrierflow.datastream.state import ValueStateDescriptor
from barrierflow.graph.transformation import TransformationKind
from barrierflow.protocol.checkpoint_barrier import (
    FINAL_CHECKPOINT,
    CheckpointKind,
    CheckpointOptions,
    SnapshotFormat,
)
from barrierflow.protocol.frames import ChannelSequenceError, Kind
from barrierflow.runtime.task import TaskCancelled
from barrierflow.state.backends import StateBackendConfig
from barrierflow.testing.harness import StreamTaskHarness, operator


class Count(KeyedProcessFunction):
    def open(self, runtime_context):
        self.count = runtime_context.get_state(ValueStateDescriptor("count"))

    def process_element(self, value, ctx):
        count = (self.count.value() or 0) + 1
        self.count.update(count)
        yield (value, count)


def keyed_count():
    return operator(TransformationKind.PROCESS, Count(), uid="count", key_selector=lambda v: v)


def kinds(harness: StreamTaskHarness) -> list[Kind]:
    return [e.kind for e in harness.emitted()]


def records_after_barrier(harness: StreamTaskHarness, checkpoint_id: int) -> list:
    emitted = harness.emitted()
    at = next(
        i
        for i, e in enumerate(emitted)
        if e.kind == Kind.BARRIER and e.barrier.checkpoint_id == checkpoint_id
    )
    return [r for e in emitted[at:] if e.kind == Kind.BUFFER for r in e.records]


def counts_restored_from(harness: StreamTaskHarness, ack, keys: list) -> dict:
    """Restores ``ack`` into a new task and counts each key once more: the counts it had."""
    restored = harness.restored(ack).open()
    restored.records(0, keys)
    restored.run_until_idle()
    counts = {key: count - 1 for key, count in restored.output_records()}
    restored.close()
    return counts


def test_an_aligned_task_blocks_a_channel_after_its_barrier_until_every_channel_delivered_it():
    h = StreamTaskHarness([keyed_count()], num_input_channels=2).open()
    h.records(0, ["a", "b"])
    h.barrier(0, 1)
    h.records(0, ["a"])  # behind the barrier: not part of checkpoint 1
    h.records(1, ["a"])
    h.run_until_idle()
    assert sorted(h.output_records()) == [("a", 1), ("a", 2), ("b", 1)]
    assert h.acknowledgements() == [] and Kind.BARRIER not in kinds(h)

    h.barrier(1, 1)
    h.run_until_idle()
    (ack,) = h.acknowledgements()
    assert ack.checkpoint_id == 1
    assert records_after_barrier(h, 1) == [("a", 3)]
    assert counts_restored_from(h, ack, ["a", "b"]) == {"a": 2, "b": 1}
    h.close()


def test_an_at_least_once_task_never_blocks_and_snapshots_on_the_last_barrier():
    h = StreamTaskHarness([keyed_count()], num_input_channels=2, exactly_once=False).open()
    h.records(0, ["a"])
    h.barrier(0, 1)
    h.records(0, ["a"])  # overtakes the barrier: in the snapshot, and replayed after a failure
    h.run_until_idle()
    assert h.output_records() == [("a", 1), ("a", 2)]
    h.barrier(1, 1)
    h.run_until_idle()
    (ack,) = h.acknowledgements()
    assert counts_restored_from(h, ack, ["a"]) == {"a": 2}
    h.close()


def test_a_cancel_marker_declines_the_alignment_forwards_the_marker_and_unblocks():
    h = StreamTaskHarness([keyed_count()], num_input_channels=2).open()
    h.barrier(0, 1)
    h.records(0, ["x"])
    h.run_until_idle()
    assert h.output_records() == []  # channel 0 is blocked
    h.cancel_marker(1, 1)
    h.run_until_idle()
    (decline,) = h.declines()
    assert decline.checkpoint_id == 1 and decline.reason is msg.DeclineReason.CANCELED
    assert [e.checkpoint_id for e in h.emitted() if e.kind == Kind.CANCEL_MARKER] == [1]
    assert h.output_records() == [("x", 1)]
    assert h.acknowledgements() == []
    h.close()


def test_the_barrier_is_forwarded_with_its_options_behind_the_records_before_it():
    h = StreamTaskHarness([keyed_count()], num_input_channels=1).open()
    savepoint = CheckpointOptions(
        CheckpointKind.SAVEPOINT, SnapshotFormat.CANONICAL, target_location="/sp/1"
    )
    h.records(0, ["a"])
    h.barrier(0, 7, savepoint)
    h.records(0, ["b"])
    h.run_until_idle()
    emitted = h.emitted()
    assert [e.kind for e in emitted] == [Kind.BUFFER, Kind.BARRIER, Kind.BUFFER]
    assert emitted[1].barrier.checkpoint_id == 7 and emitted[1].barrier.options == savepoint
    h.close()


def test_the_options_of_a_barrier_reach_the_keyed_state_backend(tmp_path):
    """A RocksDB backend with incremental checkpoints writes its SST files for a native
    checkpoint and the key-group format for a canonical savepoint."""
    rocksdb = StateBackendConfig(kind="rocksdb", incremental=True, local_root=str(tmp_path))
    h = StreamTaskHarness(
        [keyed_count()], state_backend=rocksdb, storage_uri=str(tmp_path / "job")
    ).open()
    h.records(0, ["a", "b", "a"])
    h.barrier(0, 1)
    h.barrier(0, 2, CheckpointOptions(snapshot_format=SnapshotFormat.CANONICAL))
    h.run_until_idle()
    native, canonical = (ack.operator_states["count"].keyed_state for ack in h.acknowledgements())
    assert [type(handle) for handle in native] == [IncrementalKeyedHandle]
    assert [type(handle) for handle in canonical] == [KeyGroupsHandle]
    h.close()


def test_a_source_task_snapshots_its_position_when_triggered_and_resumes_there():
    source = operator(TransformationKind.SOURCE, NumberSequenceSource(1, 10), uid="numbers")
    double = operator(TransformationKind.MAP, lambda x: 2 * x, uid="double")
    h = StreamTaskHarness([source, double], num_input_channels=0, buffer_size=3).open()
    h.turns(2)
    h.trigger_checkpoint(1)
    h.run_until_idle()
    (ack,) = h.acknowledgements()
    assert records_after_barrier(h, 1) == [14, 16, 18, 20]
    assert h.output_records()[:6] == [2, 4, 6, 8, 10, 12]
    restored = h.restored(ack).open()
    restored.run_until_idle()
    assert restored.output_records() == [14, 16, 18, 20]
    restored.close()
    h.close()


def test_a_finished_task_waits_for_a_final_checkpoint_to_complete_before_it_ends():
    h = StreamTaskHarness([keyed_count()], num_input_channels=1).open()
    h.records(0, ["a"])
    h.end_of_data(0)
    assert h.run_until_idle()
    assert kinds(h) == [Kind.BUFFER, Kind.END_OF_DATA]
    h.barrier(0, 4)  # an ordinary checkpoint completing does not end the task
    h.run_until_idle()
    h.notify_complete(4)
    assert h.run_until_idle()
    h.barrier(0, 5, FINAL_CHECKPOINT)
    h.run_until_idle()
    assert [a.checkpoint_id for a in h.acknowledgements()] == [4, 5]
    h.end_of_partition(0)  # upstream ended too, after its final checkpoint completed
    assert h.run_until_idle()  # still running: its own final checkpoint is not complete yet
    assert Kind.END_OF_PARTITION not in kinds(h)
    h.notify_complete(5)
    assert not h.run_until_idle()
    assert kinds(h)[-1] == Kind.END_OF_PARTITION
    assert isinstance(h.sent_to_job_master()[-1], msg.TaskFinished)
    h.close()


def test_without_checkpointing_a_finished_task_ends_once_its_input_ended():
    h = StreamTaskHarness([keyed_count()], num_input_channels=1, checkpointing=False).open()
    h.records(0, ["a"])
    h.end_of_data(0)
    h.end_of_partition(0)
    assert not h.run_until_idle()
    assert kinds(h) == [Kind.BUFFER, Kind.END_OF_DATA, Kind.END_OF_PARTITION]
    h.close()


def test_messages_of_another_attempt_are_ignored():
    h = StreamTaskHarness([keyed_count()], num_input_channels=1, attempt=2).open()
    h.control(msg.CancelAttempt(1, "an older attempt's"))
    h.records(0, ["a"])
    assert h.run_until_idle()
    assert h.output_records() == [("a", 1)]
    h.control(msg.CancelAttempt(2, "this attempt's"))
    with pytest.raises(TaskCancelled):
        h.run_until_idle()
    h.close()


def test_a_canceled_task_drops_what_its_outputs_still_queue_at_once():
    h = StreamTaskHarness([keyed_count()], num_input_channels=1).open()
    h.records(0, ["a"])
    h.control(msg.CancelAttempt(1, "the attempt failed"))
    with pytest.raises(TaskCancelled):
        h.run_until_idle()
    h.close()
    assert [s.linger_at_close for s in h.network.outputs.values()] == [0]


def test_a_task_that_ended_its_output_lets_what_is_still_queued_go_out():
    h = StreamTaskHarness([keyed_count()], num_input_channels=1, checkpointing=False).open()
    h.end_of_data(0)
    h.end_of_partition(0)
    assert not h.run_until_idle()
    h.close()
    assert [s.linger_at_close for s in h.network.outputs.values()] == [None]


def test_a_frame_lost_on_an_input_channel_fails_the_task_naming_the_channel():
    h = StreamTaskHarness([keyed_count()], num_input_channels=2).open()
    h.records(1, ["a"])
    assert h.run_until_idle()
    h.lose_frame(1)
    h.records(1, ["b"])
    with pytest.raises(
        ChannelSequenceError, match="input channel 1: expected frame 2, got frame 3"
    ):
        h.run_until_idle()
    assert h.output_records() == [("a", 1)]
    h.close()


# --- stop with a savepoint -------------------------------------------------------------------


def suspend(target: str = "/savepoints/sp-1") -> CheckpointOptions:
    return CheckpointOptions(CheckpointKind.SUSPEND, target_location=target)


def source_task(n: int = 100, **kwargs) -> StreamTaskHarness:
    source = operator(TransformationKind.SOURCE, NumberSequenceSource(1, n), uid="numbers")
    return StreamTaskHarness([source], num_input_channels=0, buffer_size=3, **kwargs).open()


def test_after_a_stop_savepoint_a_source_reads_nothing_more_and_ends_once_it_completed(tmp_path):
    h = source_task(storage_uri=str(tmp_path / "job"))
    h.turns(2)
    h.trigger_checkpoint(7, suspend(str(tmp_path / "sp")))
    h.turns(5)
    assert h.output_records() == [1, 2, 3, 4, 5, 6]  # nothing after the barrier
    assert [e.kind for e in h.emitted()][-1] == Kind.BARRIER
    assert [a.checkpoint_id for a in h.acknowledgements()] == [7]
    h.notify_complete(7)
    assert not h.turns(3)  # ended
    assert [e.kind for e in h.emitted()][-1] == Kind.END_OF_PARTITION
    assert Kind.END_OF_DATA not in [e.kind for e in h.emitted()]  # its input was not finished
    assert h.output_records() == [1, 2, 3, 4, 5, 6]
    h.close()


def test_a_source_reads_on_when_its_stop_savepoint_failed(tmp_path):
    h = source_task(storage_uri=str(tmp_path / "job"))
    h.turns(1)
    h.trigger_checkpoint(7, suspend(str(tmp_path / "sp")))
    h.turns(3)
    assert h.output_records() == [1, 2, 3]
    h.notify_aborted(7)
    h.turns(2)
    assert h.output_records()[:6] == [1, 2, 3, 4, 5, 6]
    h.close()


def test_a_downstream_task_ends_after_the_stop_savepoint_completed_and_its_input_ended(tmp_path):
    h = StreamTaskHarness([keyed_count()], storage_uri=str(tmp_path / "job")).open()
    h.records(0, ["a"])
    h.barrier(0, 7, suspend(str(tmp_path / "sp")))
    h.run_until_idle()
    h.notify_complete(7)
    assert h.run_until_idle()  # its upstream has not ended yet
    h.end_of_partition(0)
    assert not h.run_until_idle()
    assert [e.kind for e in h.emitted()] == [Kind.BUFFER, Kind.BARRIER, Kind.END_OF_PARTITION]
    h.close()


def test_a_drained_source_ends_its_input_and_waits_for_the_final_snapshot_without_checkpoints(
    tmp_path,
):
    h = source_task(checkpointing=False)
    h.turns(1)
    h.end_input()
    assert h.run_until_idle()
    assert isinstance(h.sent_to_job_master()[-1], msg.EndOfInput)
    end_of_data = [e for e in h.emitted() if e.kind == Kind.END_OF_DATA]
    assert len(end_of_data) == 1 and h.output_records() == [1, 2, 3]
    terminate = CheckpointOptions(CheckpointKind.TERMINATE, target_location=str(tmp_path / "sp"))
    h.trigger_checkpoint(8, terminate)
    h.run_until_idle()
    assert [a.checkpoint_id for a in h.acknowledgements()] == [8]
    h.notify_complete(8)
    assert not h.run_until_idle()
    h.close()


@pytest.mark.parametrize("final_follows", [True, False])
def test_without_checkpointing_a_task_waits_for_a_final_snapshot_only_when_told_one_follows(
    tmp_path, final_follows
):
    h = StreamTaskHarness([keyed_count()], checkpointing=False).open()
    h.records(0, ["a"])
    h.end_of_data(0, final_snapshot_follows=final_follows)
    if final_follows:
        terminate = CheckpointOptions(CheckpointKind.TERMINATE, target_location=str(tmp_path))
        h.barrier(0, 8, terminate)
    h.end_of_partition(0)
    assert h.run_until_idle() is final_follows
    if final_follows:
        h.notify_complete(8)
        assert not h.run_until_idle()
    assert [e.kind for e in h.emitted()][-1] == Kind.END_OF_PARTITION
    h.close()


def test_seed_105_a_failure_caused_by_a_corrupt_checkpoint_file_names_the_file():
    from barrierflow.errors import CorruptCheckpointError
    from barrierflow.runtime.task import corrupt_checkpoint_file

    try:
        try:
            raise CorruptCheckpointError("/ckpt/job/chk-4/op-0", "checksum mismatch")
        except CorruptCheckpointError as e:
            raise RuntimeError("operator 'sums' could not restore its state") from e
    except RuntimeError as wrapped:
        assert corrupt_checkpoint_file(wrapped) == "/ckpt/job/chk-4/op-0"
    assert corrupt_checkpoint_file(ValueError("a user function failed")) is None
