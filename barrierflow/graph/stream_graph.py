"""StreamGraph: one node per operator, edges carrying a partitioner.

Virtual transformations (key_by, rebalance, union) become edge properties here. The edges into
a two-input operator say which of its inputs they feed. Performs no I/O.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from barrierflow.errors import ConfigurationError
from barrierflow.graph.timestamp_use import TimestampColumn, plan_timestamps
from barrierflow.graph.transformation import (
    ChainingStrategy,
    PartitionerSpec,
    Partitioning,
    Transformation,
    TransformationKind,
    new_id,
)


@dataclass(eq=False)
class StreamNode:
    id: int
    kind: TransformationKind
    name: str
    uid: str
    parallelism: int
    function: Any = None
    key_selector: Any = None  # of its (first) input
    key_type: Any = None  # declared by key_by(): recorded with the operator's keyed state
    in_edges: list[StreamEdge] = field(default_factory=list)
    # the side outputs someone consumes: the operator emits only these
    side_outputs: set[str] = field(default_factory=set)
    output_type: Any = None  # declared by the program: the operator converts its results
    chaining: ChainingStrategy = ChainingStrategy.ALWAYS
    out_edges: list[StreamEdge] = field(default_factory=list)
    key_selector2: Any = None  # a two-input operator's, of its second input
    # whether its input needs the timestamp column (``timestamp_use.py``), set once built
    input_timestamps: TimestampColumn = TimestampColumn.NEEDED
    dead_letters: str | None = None  # the side output records its function fails on go to
    non_parallel: bool = False  # runs as one subtask, whatever the parallelism asked

    @property
    def takes_two_inputs(self) -> bool:
        return self.kind.takes_two_inputs

    @property
    def reinterpreted_input(self) -> bool:
        """Its input was reinterpreted as keyed (``reinterpret_as_keyed_stream``): it checks
        that each record's key group is its subtask's."""
        return any(e.partitioner.reinterpreted for e in self.in_edges)


@dataclass(eq=False)
class StreamEdge:
    source: StreamNode
    target: StreamNode
    partitioner: PartitionerSpec
    input: int | None = None  # which input (0 or 1) of a two-input target; None: its only one


@dataclass
class StreamGraph:
    job_name: str
    nodes: list[StreamNode]
    max_parallelism: int


def build_stream_graph(
    job_name: str,
    transformations: list[Transformation],
    default_parallelism: int,
    max_parallelism: int,
    batch: bool = False,
    parallelism_of: Mapping[str, int] | None = None,
) -> StreamGraph:
    """Translates the transformations reachable from the sinks into a StreamGraph. In BATCH
    mode an operator whose function has a batch form (``for_batch()``: a running reduction
    that emits only final results) runs that form. ``parallelism_of``: operator uid -> its
    parallelism, over the program's (a rescale of the running job)."""
    overrides = parallelism_of or {}
    sinks = [t for t in transformations if t.kind is TransformationKind.SINK]
    if not sinks:
        raise ConfigurationError("the job has no sink: add one with sink_to(...) before execute()")
    nodes: dict[int, StreamNode] = {}
    order: list[StreamNode] = []

    def node_for(transformation: Transformation) -> StreamNode:
        if transformation.id in nodes:
            return nodes[transformation.id]
        # Without uid(), an operator is named by its position in the program, which is stable
        # across runs of the same program (needed to restore its state).
        position = transformations.index(transformation)
        uid = transformation.uid or f"{transformation.kind.uid_prefix}-{position}"
        parallelism = overrides.get(uid) or transformation.parallelism or default_parallelism
        if transformation.non_parallel and parallelism != 1:
            raise ConfigurationError(
                f"operator {uid!r} ({transformation.name}) is non-parallel: it runs as one "
                f"subtask, not {parallelism}"
            )
        if parallelism > max_parallelism:
            raise ConfigurationError(
                f"operator {transformation.uid or transformation.name!r} has parallelism "
                f"{parallelism}, above the max parallelism {max_parallelism}; lower it or raise "
                "set_max_parallelism()"
            )
        function = transformation.function
        node = StreamNode(
            transformation.id,
            transformation.kind,
            transformation.name,
            uid,
            parallelism,
            function.for_batch() if batch and hasattr(function, "for_batch") else function,
            transformation.key_selector,
            key_type=transformation.key_type,
            output_type=transformation.output_type,
            chaining=transformation.chaining,
            key_selector2=transformation.key_selector2,
            dead_letters=transformation.dead_letters,
            non_parallel=transformation.non_parallel,
        )
        nodes[transformation.id] = node
        for upstream, partitioner, input_index in _inputs(transformation):
            source = _after_source_timestamps(node_for(upstream), upstream, order)
            partitioner = _default_partitioner(partitioner, source, node)
            edge = StreamEdge(source, node, partitioner, input_index)
            if edge.partitioner.side_output is not None:
                source.side_outputs.add(edge.partitioner.side_output)
            source.out_edges.append(edge)
            node.in_edges.append(edge)
        order.append(node)
        return node

    for sink in sinks:
        node_for(sink)
    uids: dict[str, StreamNode] = {}
    for n in order:
        if n.dead_letters is not None and n.dead_letters not in n.side_outputs:
            raise ConfigurationError(
                f"operator {n.uid!r} ({n.name}) sends the records it fails on to the dead "
                f"letters {n.dead_letters!r}, but nothing reads them: they would be lost. Take "
                f"them with .get_side_output(OutputTag({n.dead_letters!r})) and sink them"
            )
        if n.uid in uids:
            raise ConfigurationError(
                f"uid {n.uid!r} is used by two operators ({uids[n.uid].name} and {n.name}); "
                "uids must be unique within a job"
            )
        uids[n.uid] = n
    graph = StreamGraph(job_name, order, max_parallelism)
    plan_timestamps(graph)
    return graph


def _after_source_timestamps(
    node: StreamNode, transformation: Transformation, order: list[StreamNode]
) -> StreamNode:
    """A source given a watermark strategy (``from_source(source, strategy, name)``) is
    followed by the operator that assigns timestamps and generates watermarks, chained to it;
    its consumers read from that operator."""
    if transformation.watermark_strategy is None:
        return node
    if node.out_edges and node.out_edges[0].target.kind is TransformationKind.TIMESTAMPS:
        return node.out_edges[0].target
    timestamps = StreamNode(
        new_id(),
        TransformationKind.TIMESTAMPS,
        "Timestamps/Watermarks",
        f"{node.uid}-timestamps",
        node.parallelism,
        transformation.watermark_strategy,
    )
    edge = StreamEdge(node, timestamps, PartitionerSpec(Partitioning.FORWARD))
    node.out_edges.append(edge)
    timestamps.in_edges.append(edge)
    order.append(timestamps)
    return timestamps


def _inputs(
    transformation: Transformation,
) -> list[tuple[Transformation, PartitionerSpec | None, int | None]]:
    """The real upstream transformations of ``transformation``, each with the partitioner set on
    the way and the input of ``transformation`` it feeds (None where it has one input)."""
    if not transformation.kind.takes_two_inputs:
        return [(upstream, p, None) for upstream, p in _resolve_inputs(transformation.inputs)]
    return [
        (upstream, p, i)
        for i, side in enumerate(transformation.inputs)
        for upstream, p in _resolve_inputs([side])
    ]


def _resolve_inputs(
    inputs: list[Transformation], partitioner: PartitionerSpec | None = None
) -> list[tuple[Transformation, PartitionerSpec | None]]:
    """The real upstream transformations of ``inputs``, each with the partitioner set on the
    way."""
    resolved = []
    for upstream in inputs:
        p = partitioner
        side_output = None
        while upstream.kind in (TransformationKind.PARTITION, TransformationKind.SIDE_OUTPUT):
            if upstream.kind is TransformationKind.SIDE_OUTPUT:
                side_output = side_output or upstream.function
            else:
                p = p or upstream.partitioner
            upstream = upstream.inputs[0]
        if side_output is not None:
            p = replace(p or PartitionerSpec(Partitioning.FORWARD), side_output=side_output)
        if upstream.kind is TransformationKind.UNION:
            resolved += _resolve_inputs(upstream.inputs, p)
        else:
            resolved.append((upstream, p))
    return resolved


def _default_partitioner(
    spec: PartitionerSpec | None, source: StreamNode, target: StreamNode
) -> PartitionerSpec:
    if spec is not None and spec.kind is not Partitioning.FORWARD:
        return spec
    if spec is not None and spec.reinterpreted:
        if source.parallelism != target.parallelism:
            raise ConfigurationError(
                f"operator {target.uid!r} ({target.name}) reads a stream reinterpreted as keyed "
                f"from {source.uid!r} ({source.name}), at parallelism {target.parallelism} "
                f"against {source.parallelism}: reinterpret_as_keyed_stream keeps subtask i's "
                "records in subtask i, so both must have the same parallelism (set it on both, "
                "or use key_by)"
            )
        return spec
    if spec is not None and spec.explicit and source.parallelism != target.parallelism:
        raise ConfigurationError(
            f"forward() between {source.name!r} (parallelism {source.parallelism}) and "
            f"{target.name!r} (parallelism {target.parallelism}): forward partitioning keeps "
            "subtask i to subtask i and cannot change the parallelism; use rebalance() or "
            "rescale()"
        )
    side_output = spec.side_output if spec is not None else None
    if source.parallelism == target.parallelism:
        return PartitionerSpec(Partitioning.FORWARD, side_output=side_output)
    return PartitionerSpec(Partitioning.REBALANCE, side_output=side_output)
