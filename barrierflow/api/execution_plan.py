"""``env.get_execution_plan()``: the job's operators and edges as Flink's plan JSON, which
Flink's plan visualizer and tools that read ``getExecutionPlan`` understand. Performs no I/O.
"""

from __future__ import annotations

import json

from barrierflow.graph.stream_graph import StreamGraph, StreamNode
from barrierflow.graph.transformation import Partitioning, TransformationKind

# Flink's names of its partitioners, as its plan shows them
_SHIP_STRATEGY = {
    Partitioning.FORWARD: "FORWARD",
    Partitioning.REBALANCE: "REBALANCE",
    Partitioning.RESCALE: "RESCALE",
    Partitioning.SHUFFLE: "SHUFFLE",
    Partitioning.BROADCAST: "BROADCAST",
    Partitioning.KEY_GROUPS: "HASH",
    Partitioning.CUSTOM: "CUSTOM",
}


def _describe(node: StreamNode) -> tuple[str, str]:
    """(Flink's operator type, its pact)."""
    if node.kind is TransformationKind.SOURCE:
        return f"Source: {node.name}", "Data Source"
    if node.kind is TransformationKind.SINK:
        return f"Sink: {node.name}", "Data Sink"
    return node.name, "Operator"


def execution_plan(graph: StreamGraph) -> str:
    """The plan of ``graph`` as Flink's JSON: one node per operator with its id, type, pact,
    contents and parallelism, and its predecessors with the partitioner of each edge."""
    nodes = []
    for node in graph.nodes:
        kind, pact = _describe(node)
        entry: dict = {
            "id": node.id,
            "type": kind,
            "pact": pact,
            "contents": kind,
            "parallelism": node.parallelism,
        }
        if node.in_edges:
            entry["predecessors"] = [
                {
                    "id": edge.source.id,
                    "ship_strategy": _SHIP_STRATEGY[edge.partitioner.kind],
                    "side": "second",
                }
                for edge in node.in_edges
            ]
        nodes.append(entry)
    return json.dumps({"nodes": nodes}, indent=2)
