"""A job that ends for good has no next attempt to clean up what its sinks left prepared: the
JobMaster has each sink subtask's committer settle it against the last completed checkpoint
(commit what a completed checkpoint named, roll back the rest). Played without Spark, as the
fencing tests play the slots and tasks; the sink's committer only records."""

from __future__ import annotations

import dataclasses

import pytest

from barrierflow.cluster.restart_strategy import FixedDelayRestart
from barrierflow.connectors.interfaces.committables import Recovery
from barrierflow.coordination.checkpoint_coordinator import CoordinatorConfig
from barrierflow.datastream import StreamExecutionEnvironment
from barrierflow.datastream.connectors.base import Committable, Committer, CommitterContext, Sink
from barrierflow.datastream.connectors.number_seq import NumberSequenceSource
from barrierflow.errors import JobCanceledError, JobExecutionError
from barrierflow.graph.execution_graph import build_execution_graph
from barrierflow.graph.job_graph import build_job_graph
from barrierflow.graph.stream_graph import build_stream_graph
from tests.unit.cluster import test_job_master_corrupt_restore as corrupt
from tests.unit.cluster import test_job_master_fencing as rig

settled: list[tuple[str, int, int, int | None]] = []


class _RecordingCommitter(Committer):
    def __init__(self, context: CommitterContext) -> None:
        self.context = context

    def commit(self, committables: list[Committable]) -> None:
        raise AssertionError("the JobMaster settles; it commits nothing itself")

    def settle_at_job_end(self, recovery: Recovery, last_completed: int | None) -> None:
        assert self.context.writer is None and recovery.subtask == self.context.subtask
        settled.append((self.context.job_name, recovery.subtask, recovery.parallelism,
                        last_completed))  # fmt: skip


class _RecordingSink(Sink):
    def create_writer(self, context):
        raise AssertionError("no writer on the JobMaster")

    def create_committer(self, context: CommitterContext) -> Committer:
        return _RecordingCommitter(context)


@pytest.fixture
def cluster(tmp_path, monkeypatch):
    """The rig's job with a recording sink at parallelism 2, one retained checkpoint, and a
    restart strategy that allows two restarts."""
    original = rig.job_plan

    def plan(root: str):
        env = StreamExecutionEnvironment()
        numbers = env.from_source(NumberSequenceSource(1, 10), "s")
        numbers.sink_to(_RecordingSink()).set_parallelism(2)
        graph = build_execution_graph(
            build_job_graph(build_stream_graph("fencing", env._transformations, 2, 128))
        )
        return dataclasses.replace(
            original(root),
            graph=graph,
            coordinator_config=CoordinatorConfig(0.05, 60.0, 0.0, 1, 0, 1),
            restart_strategy=FixedDelayRestart(attempts=2, delay_s=0.0),
        )

    monkeypatch.setattr(rig, "job_plan", plan)
    settled.clear()
    yield rig.Cluster(tmp_path)
    settled.clear()


def test_seed_1039_a_job_that_refuses_to_restart_settles_its_sinks_at_its_last_checkpoint(
    cluster, tmp_path
):
    first = cluster.start(1)
    completed = corrupt._complete_a_checkpoint(cluster, first, 0)
    corrupt._fail(cluster, first, None)
    second = cluster.start(2)
    state = f"{tmp_path}/fencing/chk-{completed}/state"
    with open(state, "r+b") as f:  # the only checkpoint retained reads back damaged
        f.write(b"X")
    corrupt._fail(cluster, second, state)
    cluster.thread.join(10)

    (outcome,) = cluster.outcome
    assert isinstance(outcome, JobExecutionError) and "can be read back" in str(outcome)
    assert settled == [("fencing", 0, 2, completed), ("fencing", 1, 2, completed)]


def test_a_job_whose_restart_strategy_gave_up_before_any_checkpoint_settles_with_none(cluster):
    for number in (1, 2, 3):
        corrupt._fail(cluster, cluster.start(number), None)
    cluster.thread.join(10)

    assert isinstance(cluster.outcome[0], JobExecutionError)
    assert settled == [("fencing", 0, 2, None), ("fencing", 1, 2, None)]


def test_a_canceled_job_settles_nothing_its_checkpoints_or_savepoint_still_name(cluster):
    first = cluster.start(1)
    corrupt._complete_a_checkpoint(cluster, first, 0)
    corrupt._cancel(cluster, first)

    assert isinstance(cluster.outcome[0], JobCanceledError)
    assert settled == []
