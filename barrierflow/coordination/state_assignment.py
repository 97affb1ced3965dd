"""Assigns the state of a completed checkpoint to the subtasks of a (re)starting job.

Operator state: each subtask receives every old subtask's handle and picks its share (split)
or all (union). Keyed state: each subtask receives the handles whose key-group range overlaps
its own, so parallelism may change between the checkpoint and the restore.
Performs no I/O.
"""

from __future__ import annotations

from barrierflow.checkpoint.metadata import CheckpointMetadata
from barrierflow.checkpoint.restore import OperatorRestore
from barrierflow.errors import ConfigurationError
from barrierflow.graph.execution_graph import ExecutionGraph, SubtaskId
from barrierflow.state.key_groups import KeyGroupRange, key_group_range_for_subtask


def assign_state(
    metadata: CheckpointMetadata, graph: ExecutionGraph
) -> dict[SubtaskId, dict[str, OperatorRestore]]:
    max_parallelism = graph.job_graph.max_parallelism
    known_uids = {node.uid for v in graph.job_graph.vertices for node in v.chain}
    unknown = [op.uid for op in metadata.operators if op.uid not in known_uids and op.subtasks]
    if unknown:
        raise ConfigurationError(
            f"checkpoint {metadata.checkpoint_id} has state for operators {unknown} that this "
            "job does not have; give the operators the same uid() as in the job that took it"
        )
    for op in metadata.operators:
        if op.max_parallelism != max_parallelism and any(s.keyed_state for s in op.subtasks):
            raise ConfigurationError(
                f"operator {op.uid!r} was checkpointed with max parallelism {op.max_parallelism}"
                f" and the job now has {max_parallelism}; keyed state cannot be restored with "
                "another max parallelism"
            )
    assignment: dict[SubtaskId, dict[str, OperatorRestore]] = {}
    for plan in graph.subtasks:
        vertex = plan.vertex
        per_operator: dict[str, OperatorRestore] = {}
        own_range = key_group_range_for_subtask(max_parallelism, vertex.parallelism, plan.subtask)
        for node in vertex.chain:
            op = metadata.operator(node.uid)
            if op is None:
                continue
            operator_states = [None] * op.parallelism
            keyed = []
            for s in op.subtasks:
                operator_states[s.subtask] = s.operator_state
                for handle in s.keyed_state:
                    kg = KeyGroupRange(handle.key_group_start, handle.key_group_end)
                    if len(kg.intersection(own_range)):
                        keyed.append(handle)
            per_operator[node.uid] = OperatorRestore(operator_states, keyed)
        assignment[plan.id] = per_operator
    return assignment
