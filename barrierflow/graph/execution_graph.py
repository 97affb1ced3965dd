"""ExecutionGraph: the parallel subtasks of each vertex, their channels and their slots.

Slot *k* runs subtask *k* of every vertex that has more than *k* subtasks, so the job needs as
many slots as its highest parallelism. One ordered channel per (producer subtask, consumer
subtask) pair; forward edges connect equal indexes only. A subtask of a two-input vertex knows
the input each of its channels feeds, and a producer the input its edge feeds. Performs no
I/O.
"""

from __future__ import annotations

from dataclasses import dataclass

from barrierflow.graph.job_graph import JobGraph, JobVertex
from barrierflow.graph.timestamp_use import TimestampColumn
from barrierflow.graph.transformation import PartitionerSpec, Partitioning

SubtaskId = tuple[str, int]  # (vertex id, subtask index)


@dataclass(frozen=True)
class OutputTarget:
    consumer: SubtaskId
    channel: int  # the channel index in the consumer's input gate


@dataclass(frozen=True)
class OutputPlan:
    edge: int
    partitioner: PartitionerSpec
    targets: tuple[OutputTarget, ...]  # ordered by consumer subtask index
    input: int | None = None  # which input of a two-input consumer it feeds; None: its only one
    timestamps: TimestampColumn = TimestampColumn.NEEDED  # DROPPED: its consumer reads none


@dataclass(frozen=True)
class SubtaskPlan:
    vertex: JobVertex
    subtask: int
    input_channels: tuple[tuple[int, int], ...]  # channel index -> (edge index, producer subtask)
    outputs: tuple[OutputPlan, ...]
    # channel index -> the input (0 or 1) it feeds, for a two-input vertex; empty for one input
    input_of_channel: tuple[int, ...] = ()

    @property
    def id(self) -> SubtaskId:
        return (self.vertex.id, self.subtask)

    @property
    def slot(self) -> int:
        return self.subtask


@dataclass(frozen=True)
class ExecutionGraph:
    job_graph: JobGraph
    subtasks: tuple[SubtaskPlan, ...]

    @property
    def num_slots(self) -> int:
        return self.job_graph.num_slots

    def in_slot(self, slot: int) -> list[SubtaskPlan]:
        return [s for s in self.subtasks if s.slot == slot]

    @property
    def source_subtasks(self) -> list[SubtaskId]:
        return [s.id for s in self.subtasks if s.vertex.is_source]


def _producers(
    partitioner: PartitionerSpec, source_parallelism: int, consumer: int, parallelism: int
) -> list[int]:
    if partitioner.kind is Partitioning.FORWARD:
        return [consumer]
    if partitioner.kind is Partitioning.RESCALE:
        return rescale_producers(source_parallelism, parallelism, consumer)
    return list(range(source_parallelism))


def rescale_producers(producers: int, consumers: int, consumer: int) -> list[int]:
    """The producers that feed ``consumer`` under rescale(): each producer a contiguous share
    of the consumers when there are more consumers, each consumer a contiguous share of the
    producers when there are fewer, so every channel stays local to a few subtasks."""
    if consumers >= producers:
        return [consumer * producers // consumers]
    return [p for p in range(producers) if p * consumers // producers == consumer]


def build_execution_graph(job_graph: JobGraph) -> ExecutionGraph:
    channels: dict[SubtaskId, list[tuple[int, int]]] = {}
    for vertex in job_graph.vertices:
        for i in range(vertex.parallelism):
            chans = channels[(vertex.id, i)] = []
            for edge in job_graph.inputs_of(vertex):
                for producer in _producers(
                    edge.partitioner, edge.source.parallelism, i, vertex.parallelism
                ):
                    chans.append((edge.index, producer))
    plans = []
    for vertex in job_graph.vertices:
        for i in range(vertex.parallelism):
            outputs = []
            for edge in job_graph.outputs_of(vertex):
                targets = []
                for j in range(edge.target.parallelism):
                    consumer = (edge.target.id, j)
                    key = (edge.index, i)
                    if key in channels[consumer]:
                        targets.append(OutputTarget(consumer, channels[consumer].index(key)))
                timestamps = edge.target.chain[0].input_timestamps
                outputs.append(
                    OutputPlan(edge.index, edge.partitioner, tuple(targets), edge.input, timestamps)
                )
            own = tuple(channels[(vertex.id, i)])
            inputs = _inputs_of(job_graph, own)
            plans.append(SubtaskPlan(vertex, i, own, tuple(outputs), inputs))
    return ExecutionGraph(job_graph, tuple(plans))


def _inputs_of(job_graph: JobGraph, channels: tuple[tuple[int, int], ...]) -> tuple[int, ...]:
    """The input each channel feeds, where the channels' edges feed a two-input vertex."""
    inputs = {e.index: e.input for e in job_graph.edges}
    fed = [inputs[edge] for edge, _ in channels]
    if all(i is None for i in fed):
        return ()
    return tuple(i for i in fed if i is not None)  # every edge into a two-input vertex names one
