"""Data for the tests of the job status view, the REST API and the metrics: a two-vertex job
graph, checkpoint settings and records, subtask metrics, a clock the test moves."""

from __future__ import annotations

from barrierflow.checkpoint.history import CheckpointRecord, CheckpointStatus
from barrierflow.checkpoint.metadata import SubtaskCheckpointStats
from barrierflow.cluster.job_status import CheckpointSettings
from barrierflow.control.messages import SubtaskMetrics
from barrierflow.datastream.connectors.discarding import DiscardingSink
from barrierflow.datastream.connectors.number_seq import NumberSequenceSource
from barrierflow.graph.job_graph import JobGraph, build_job_graph
from barrierflow.graph.stream_graph import build_stream_graph

SETTINGS = CheckpointSettings(
    enabled=True,
    exactly_once=True,
    interval_ms=1000,
    timeout_ms=60_000,
    min_pause_ms=0,
    max_concurrent=1,
    tolerable_failures=0,
    num_retained=1,
    unaligned=False,
    aligned_timeout_ms=0,
    retain_on_cancel=False,
    state_backend="hashmap",
    incremental=False,
    storage_uri="file:///tmp/ckpt/job",
    savepoint_dir=None,
    checkpoints_after_tasks_finish=True,
)


def two_vertex_graph() -> JobGraph:
    """numbers (parallelism 1) -> rebalance -> sink (parallelism 2)."""
    from barrierflow.datastream import StreamExecutionEnvironment

    env = StreamExecutionEnvironment()
    env.from_source(NumberSequenceSource(1, 10), "numbers").set_parallelism(1).rebalance().sink_to(
        DiscardingSink()
    ).set_parallelism(2)
    return build_job_graph(build_stream_graph("view", env._transformations, 1, 128))


class Clock:
    def __init__(self) -> None:
        self.now_ms = 1_000_000

    def __call__(self) -> int:
        return self.now_ms


def metrics(vertex, subtask, records_in, records_out, busy, backpressured, idle) -> SubtaskMetrics:
    return SubtaskMetrics(vertex, subtask, records_in, records_out, busy, backpressured, idle)


def record(cid: int, status=CheckpointStatus.COMPLETED, **kw) -> CheckpointRecord:
    stats = [SubtaskCheckpointStats("v0", 0, 1.0, 2.0, 0.0, 10)]
    return CheckpointRecord(cid, status, 100 * cid, 100 * cid + 40, 40.0, 10, 10, 1, 1,
                            subtasks=stats, **kw)  # fmt: skip
