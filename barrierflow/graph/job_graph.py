"""JobGraph: operators chained into vertices where the edge is forward and parallelism equal,
unless the program said otherwise (``start_new_chain``, ``disable_chaining``). An operator with
two inputs starts a vertex, whose input edges say which input each feeds.

A chain runs in one thread with no serialization between its operators. Performs no I/O.
"""

from __future__ import annotations

from dataclasses import dataclass

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
    if len(node.in_edges) != 1 or node.chaining is not ChainingStrategy.ALWAYS:
        return False  # a two-input operator has an edge per input at least
    edge = node.in_edges[0]
    return (
        edge.source.chaining is not ChainingStrategy.NEVER
        and edge.partitioner.kind is Partitioning.FORWARD
        and edge.partitioner.side_output is None  # the edge selects: over the network
        and len(edge.source.out_edges) == 1
        and edge.source.parallelism == node.parallelism
    )


def build_job_graph(graph: StreamGraph, chaining: bool = True) -> JobGraph:
    """``graph``'s operators chained into vertices; ``chaining`` False
    (``pipeline.operator-chaining.enabled: false``): a vertex per operator."""
    vertex_of: dict[int, JobVertex] = {}
    vertices: list[JobVertex] = []
    for node in graph.nodes:  # topological order: inputs first
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
