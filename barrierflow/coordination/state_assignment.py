"""Assigns the state of a completed checkpoint to the subtasks of a (re)starting job.

Operator state: each subtask receives every old subtask's handle and picks its share (split)
or all (union). Keyed state: each subtask receives the handles whose key-group range overlaps
its own, so parallelism may change between the checkpoint and the restore. Channel state (the
data in flight of an unaligned checkpoint, kept with the first operator of a chain): each
subtask receives every old subtask's, and takes its share (``StreamTask``).
Performs no I/O.
"""

from __future__ import annotations

from barrierflow.checkpoint.metadata import CheckpointMetadata, KeyedStateHandle, StreamHandle
from barrierflow.checkpoint.restore import OperatorRestore
from barrierflow.coordination.state_mapping import map_state
from barrierflow.errors import ConfigurationError
from barrierflow.graph.execution_graph import ExecutionGraph, SubtaskId
from barrierflow.protocol.key_group_range import KeyGroupRange, key_group_range_for_subtask


def assign_state(
    metadata: CheckpointMetadata, graph: ExecutionGraph, allow_non_restored_state: bool = False
) -> dict[SubtaskId, dict[str, OperatorRestore]]:
    """Raises ``ConfigurationError`` with every reason when the state does not fit the job
    (``state_mapping.StateMapping.problems``); state left behind is skipped if allowed."""
    max_parallelism = graph.job_graph.max_parallelism
    problems = map_state(metadata, graph.job_graph).problems(allow_non_restored_state)
    if problems:
        raise ConfigurationError("; ".join(problems))
    assignment: dict[SubtaskId, dict[str, OperatorRestore]] = {}
    for plan in graph.subtasks:
        vertex = plan.vertex
        per_operator: dict[str, OperatorRestore] = {}
        own_range = key_group_range_for_subtask(max_parallelism, vertex.parallelism, plan.subtask)
        for position, node in enumerate(vertex.chain):
            op = metadata.operator(node.uid)
            if op is None:
                continue
            operator_states: list[StreamHandle | None] = [None] * op.parallelism
            keyed: list[KeyedStateHandle] = []
            channel_states = [(s.subtask, s.channel_state) for s in op.subtasks if s.channel_state]
            if channel_states and position:
                raise ConfigurationError(
                    f"checkpoint {metadata.checkpoint_id} holds data in flight (an unaligned "
                    f"checkpoint) received by operator {node.uid!r}, which is no longer the "
                    "first of its chain: restore it into the job that took it, or take a "
                    "savepoint of that job and restore the savepoint"
                )
            for s in op.subtasks:
                operator_states[s.subtask] = s.operator_state
                for handle in s.keyed_state:
                    kg = KeyGroupRange(handle.key_group_start, handle.key_group_end)
                    if len(kg.intersection(own_range)):
                        keyed.append(handle)
            per_operator[node.uid] = OperatorRestore(operator_states, keyed, channel_states)
        assignment[plan.id] = per_operator
    return assignment
