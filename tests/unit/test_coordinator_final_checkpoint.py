"""The coordinator's handling of the final checkpoint of a bounded job (clock injected,
storage on a temporary directory, messages recorded)."""

from __future__ import annotations

from barrierflow import StreamExecutionEnvironment
from barrierflow.checkpoint.metadata import SubtaskCheckpointStats
from barrierflow.checkpoint.storage import CheckpointStorage
from barrierflow.connectors import DiscardingSink, SequenceSource
from barrierflow.coordination.coordinator import CheckpointCoordinator, CoordinatorConfig
from barrierflow.graph.execution_graph import build_execution_graph
from barrierflow.graph.job_graph import build_job_graph
from barrierflow.graph.stream_graph import build_stream_graph
from barrierflow.protocol import messages as msg


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def _coordinator(tmp_path, tolerable_failures: int = 0):
    env = StreamExecutionEnvironment()
    env.from_source(SequenceSource(1, 10), "s").sink_to(DiscardingSink())
    graph = build_execution_graph(
        build_job_graph(build_stream_graph("job", env._transformations, 1, 128))
    )
    sent: list[tuple[tuple[str, int], msg.Message]] = []
    clock = Clock()
    config = CoordinatorConfig(1.0, 60.0, 0.0, 1, tolerable_failures, 1)
    coordinator = CheckpointCoordinator(
        "job-id",
        graph.job_graph,
        CheckpointStorage(str(tmp_path)),
        config,
        lambda task, m: sent.append((task, m)),
        clock=clock,
    )
    tasks = frozenset(s.id for s in graph.subtasks)
    coordinator.start_attempt(1, tasks, graph.source_subtasks)
    coordinator.all_tasks_running()
    return coordinator, clock, sent, tasks


def _ack_all(coordinator, tasks, cid):
    for vertex, subtask in tasks:
        stats = SubtaskCheckpointStats(vertex, subtask, 0.0, 0.0, 0.0, 0)
        coordinator.on_acknowledge(msg.AcknowledgeCheckpoint(1, vertex, subtask, cid, {}, stats))


def _triggers(sent):
    return [m for _, m in sent if isinstance(m, msg.TriggerCheckpoint)]


def test_a_checkpoint_triggered_before_the_sources_ended_is_not_the_final_one(tmp_path):
    coordinator, clock, sent, tasks = _coordinator(tmp_path)
    clock.now += 1.0
    coordinator.tick()
    (first,) = _triggers(sent)
    assert not first.options.is_final

    coordinator.sources_finished()  # while checkpoint 1 is pending
    _ack_all(coordinator, tasks, first.checkpoint_id)  # completes after the sources ended
    coordinator.tick()

    final = _triggers(sent)[-1]
    assert final.checkpoint_id == first.checkpoint_id + 1 and final.options.is_final


def test_an_aborted_final_checkpoint_is_retried_at_once_and_none_follows_a_completed_one(
    tmp_path,
):
    coordinator, clock, sent, tasks = _coordinator(tmp_path, tolerable_failures=5)
    coordinator.sources_finished()
    coordinator.tick()
    (final,) = _triggers(sent)
    assert final.options.is_final

    coordinator.on_decline(msg.DeclineCheckpoint(1, *sorted(tasks)[0], final.checkpoint_id, "x"))
    coordinator.tick()  # no interval wait: the job cannot end without it
    retry = _triggers(sent)[-1]
    assert retry.checkpoint_id == final.checkpoint_id + 1 and retry.options.is_final

    _ack_all(coordinator, tasks, retry.checkpoint_id)
    clock.now += 10.0
    coordinator.tick()
    assert _triggers(sent)[-1] is retry  # the tasks are ending: nothing more is triggered
