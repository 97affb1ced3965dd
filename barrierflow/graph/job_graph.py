"""JobGraph: operators chained into vertices where the edge is forward and parallelism equal,
unless the program said otherwise (``start_new_chain``, ``disable_chaining``). An operator with
two inputs starts a vertex, whose input edges say which input each feeds.

A chain runs in one thread with no serialization between its operators. An operator that
reads a stream reinterpreted as keyed (``reinterpret_as_keyed_stream``) must chain to its input,
which is the point of reinterpreting: the graph is refused, saying why, where it cannot (with
chaining off for the whole job, its forward edge goes over the network, still checked). Performs
no I/O.
"""

from __future__ import annotations

from dataclasses import dataclass

from barrierflow.errors import ConfigurationError
from barrierflow.graph.stream_graph import StreamGraph, StreamNode
from barrierflow.graph.transformation import ChainingStrategy, PartitionerSpec, Partitioning


@dataclass(eq=False)
class JobVertex:
    id: str
    chain: list[StreamNode]
    parallelism: int

    @property
    def name(self) -> str:
        return " -> ".join(n.name for n in self.chain)

    @property
    def is_source(self) -> bool:
        return not self.chain[0].in_edges

    @property
    def takes_two_inputs(self) -> bool:
        return self.chain[0].takes_two_inputs

    @property
    def fixed_parallelism(self) -> str | None:
        """Why this vertex cannot run at another parallelism, or None. A source whose output
        is reinterpreted as keyed (``reinterpret_as_keyed_stream``) reads an input partitioned
        by key group outside the job, for this parallelism: at another, its subtasks would
        read key groups they do not own, and the job would fail at the first such record.
        (Reinterpreted downstream of a ``key_by`` in the same vertex, the partitioning is the
        job's own and follows the parallelism.)"""
        if not self.is_source:
            return None
        node = next((n for n in self.chain if n.reinterpreted_input), None)
        if node is None:
            return None
        return (
            f"{node.name!r} reads the output of source {self.chain[0].name!r} reinterpreted "
            f"as keyed (reinterpret_as_keyed_stream), an input partitioned by key group for "
            f"parallelism {self.parallelism}: at another, its subtasks would read key groups "
            "they do not own. Write the input anew for the new parallelism "
            "(KeyGroupPartitioner) and start the job from a savepoint with -p"
        )


@dataclass(frozen=True, eq=False)
class JobEdge:
    index: int
    source: JobVertex
    target: JobVertex
    partitioner: PartitionerSpec
    input: int | None = None  # which input (0 or 1) of a two-input target; None: its only one


@dataclass
class JobGraph:
    job_name: str
    vertices: list[JobVertex]
    edges: list[JobEdge]
    max_parallelism: int

    def inputs_of(self, vertex: JobVertex) -> list[JobEdge]:
        return [e for e in self.edges if e.target is vertex]

    def outputs_of(self, vertex: JobVertex) -> list[JobEdge]:
        return [e for e in self.edges if e.source is vertex]

    @property
    def num_slots(self) -> int:
        return max(v.parallelism for v in self.vertices)


def _chainable(node: StreamNode) -> bool:
    """Whether ``node`` joins the chain of its single upstream operator."""
    return _why_not_chained(node) is None


def _why_not_chained(node: StreamNode) -> str | None:
    """Why ``node`` does not join the chain of its upstream operator (None: it does)."""
    if len(node.in_edges) != 1:
        return "it reads more than one input (a union, or two inputs)"
    if node.chaining is not ChainingStrategy.ALWAYS:
        called = "start_new_chain" if node.chaining is ChainingStrategy.HEAD else "disable_chaining"
        return f"{called}() was called on it"
    edge = node.in_edges[0]
    source = edge.source
    if source.chaining is ChainingStrategy.NEVER:
        return f"{source.uid!r} ({source.name}) has chaining disabled"
    if edge.partitioner.kind is not Partitioning.FORWARD:
        return f"its input edge is {edge.partitioner.kind.value}, not forward"
    if edge.partitioner.side_output is not None:  # the edge selects: over the network
        return f"it reads the side output {edge.partitioner.side_output!r}"
    if len(source.out_edges) != 1:
        return (
            f"{source.uid!r} ({source.name}) has {len(source.out_edges)} consumers, and a chain "
            "goes on to one"
        )
    if source.parallelism != node.parallelism:
        return f"its parallelism {node.parallelism} is not {source.parallelism}"
    return None


def _refuse_unchained_reinterpretation(node: StreamNode) -> None:
    """A stream reinterpreted as keyed is there to chain its keyed operator to its input:
    the records go from the input's operator to it in one thread, with no serialization."""
    reason = _why_not_chained(node)
    if reason is not None:
        raise ConfigurationError(
            f"operator {node.uid!r} ({node.name}) reads a stream reinterpreted as keyed "
            f"(reinterpret_as_keyed_stream) but cannot be chained to its input: {reason}. "
            "Reinterpret the output of an operator that nothing else reads, or use key_by"
        )


def build_job_graph(graph: StreamGraph, chaining: bool = True) -> JobGraph:
    """``graph``'s operators chained into vertices; ``chaining`` False
    (``pipeline.operator-chaining.enabled: false``): a vertex per operator."""
    vertex_of: dict[int, JobVertex] = {}
    vertices: list[JobVertex] = []
    for node in graph.nodes:  # topological order: inputs first
        if chaining and node.reinterpreted_input:
            _refuse_unchained_reinterpretation(node)
        if chaining and _chainable(node):
            vertex = vertex_of[node.in_edges[0].source.id]
            vertex.chain.append(node)
        else:
            vertex = JobVertex(f"v{len(vertices)}", [node], node.parallelism)
            vertices.append(vertex)
        vertex_of[node.id] = vertex
    edges: list[JobEdge] = []
    for node in graph.nodes:
        for e in node.in_edges:
            if vertex_of[e.source.id] is not vertex_of[node.id]:
                source, target = vertex_of[e.source.id], vertex_of[node.id]
                edges.append(JobEdge(len(edges), source, target, e.partitioner, e.input))
    return JobGraph(graph.job_name, vertices, edges, graph.max_parallelism)
