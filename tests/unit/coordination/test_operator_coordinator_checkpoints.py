"""The checkpoint coordinator and the operator coordinators of a job (on the coordinator
harness): their state is taken in the step that triggers a checkpoint, before any trigger is
sent, and lands in the checkpoint's metadata and a savepoint's; they hear of completions and
aborts when the tasks do; a coordinator that fails to snapshot leaves nothing triggered."""

from __future__ import annotations

import pytest

from barrierflow.control import messages as msg
from barrierflow.coordination.operator_coordinator_checkpoints import OperatorCoordinatorFailed
from barrierflow.datastream import StreamExecutionEnvironment
from barrierflow.datastream.connectors.discarding import DiscardingSink
from barrierflow.datastream.connectors.number_seq import NumberSequenceSource
from barrierflow.graph.execution_graph import build_execution_graph
from barrierflow.graph.job_graph import build_job_graph
from barrierflow.graph.stream_graph import build_stream_graph
from barrierflow.protocol.checkpoint_barrier import CheckpointKind
from barrierflow.testing.coordinator_harness import CoordinatorHarness
from tests.unit.coordination.test_checkpoint_coordinator import config


class RecordingCoordinators:
    """The coordinators of a job; records each call with the number of checkpoints whose
    triggers were sent before it."""

    def __init__(self) -> None:
        self.harness: CoordinatorHarness | None = None
        self.calls: list[tuple[str, int, int]] = []
        self.fail_next_snapshot = False

    def _record(self, what: str, checkpoint_id: int) -> None:
        triggered = {t.checkpoint_id for t in self.harness.gateway.triggers()}
        self.calls.append((what, checkpoint_id, len(triggered)))

    def snapshot(self, checkpoint_id: int) -> dict[str, bytes]:
        self._record("snapshot", checkpoint_id)
        if self.fail_next_snapshot:
            self.fail_next_snapshot = False
            raise OperatorCoordinatorFailed("the coordinator of operator 's' failed")
        return {"s-uid": b"splits of %d" % checkpoint_id}

    def checkpoint_complete(self, checkpoint_id: int) -> None:
        self._record("complete", checkpoint_id)

    def checkpoint_aborted(self, checkpoint_id: int) -> None:
        self._record("aborted", checkpoint_id)


@pytest.fixture
def coordinators() -> RecordingCoordinators:
    return RecordingCoordinators()


def harness(coordinators: RecordingCoordinators) -> CoordinatorHarness:
    """Two source subtasks (uid ``s-uid``), rebalanced to one sink subtask."""
    env = StreamExecutionEnvironment()
    source = env.from_source(NumberSequenceSource(1, 10), "s").uid("s-uid")
    source.sink_to(DiscardingSink()).set_parallelism(1)
    graph = build_execution_graph(
        build_job_graph(build_stream_graph("job", env._transformations, 2, 128))
    )
    h = CoordinatorHarness(graph, config(tolerable_failures=10), operator_coordinators=coordinators)
    coordinators.harness = h
    return h


def test_state_is_taken_before_the_triggers_and_lands_in_the_metadata(coordinators):
    h = harness(coordinators)
    cid = h.trigger()
    assert coordinators.calls == [("snapshot", cid, 0)]  # no trigger sent yet
    assert len(h.gateway.triggers()) == len(h.sources)
    h.acknowledge_all(cid)
    metadata = h.storage.read_metadata(cid)
    assert metadata.operator("s-uid").coordinator.data == b"splits of %d" % cid
    assert all(op.coordinator is None for op in metadata.operators if op.uid != "s-uid")


def test_they_hear_of_a_completion_after_the_tasks_and_of_an_abort(coordinators):
    h = harness(coordinators)
    first = h.trigger()
    h.acknowledge_all(first)
    assert coordinators.calls[-1] == ("complete", first, 1)
    assert h.notified_complete() == [first]
    second = h.trigger()
    h.decline(second)
    assert coordinators.calls[-1] == ("aborted", second, 2)
    assert h.notified_aborted() == [second]


def test_a_failed_snapshot_triggers_nothing_and_the_next_checkpoint_has_a_new_id(coordinators):
    h = harness(coordinators)
    coordinators.fail_next_snapshot = True
    with pytest.raises(OperatorCoordinatorFailed, match="operator 's'"):
        h.trigger()
    assert h.gateway.triggers() == [] and h.coordinator.history.records == []
    cid = h.trigger()
    assert [c[1] for c in coordinators.calls] == [1, 2] and cid == 2


def test_a_savepoint_carries_the_state_and_commits_only_when_it_stops_the_job(coordinators):
    h = harness(coordinators)
    h.request_savepoint()
    savepoint = h.trigger()
    h.acknowledge_all(savepoint)
    (result,) = h.savepoint_results
    written = h.savepoints.read_metadata(result.path)
    assert written.operator("s-uid").coordinator.data == b"splits of %d" % savepoint
    assert "complete" not in [c[0] for c in coordinators.calls]

    h.request_savepoint(kind=CheckpointKind.SUSPEND)
    stop = h.trigger()
    h.acknowledge_all(stop)
    assert coordinators.calls[-1] == ("complete", stop, 2)
    assert h.gateway.of_type(msg.NotifyCheckpointComplete)
