"""What completing checkpoint N decides, step by step, from what the coordinator knows: its
metadata from every task's acknowledgement; the shared files it reuses that may already be
deleted (N is aborted instead); and, once its ``_metadata`` is written, what registering and
retaining N lets go.

These are the shared state registry's and the completed store's part of the protocol that
``CheckpointCoordinator._complete`` runs, in its order; the coordinator writes the metadata and
``StorageHousekeeping.let_go`` deletes what ``retain`` returns. A savepoint uses
``build_metadata`` only: nothing of it is shared, registered or retained. Performs no I/O.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from barrierflow.checkpoint.metadata import (
    CheckpointMetadata,
    OperatorCoordinatorState,
    OperatorState,
    OperatorSubtaskState,
)
from barrierflow.coordination.completed_checkpoint_store import CompletedCheckpointStore
from barrierflow.coordination.pending_checkpoint import PendingCheckpoint
from barrierflow.coordination.shared_state_registry import SharedStateKey, SharedStateRegistry
from barrierflow.graph.job_graph import JobGraph
from barrierflow.state.state_schema import type_text


@dataclass(frozen=True)
class Retention:
    """What retaining a completed checkpoint lets go, in the order it is deleted."""

    released: list[SharedStateKey]  # held only for the checkpoint, which ended without them
    subsumed: list[int]  # checkpoints the store dropped: their ``chk-N`` directories
    unreferenced: list[SharedStateKey]  # no retained checkpoint references them any more
    num_retained: int  # completed checkpoints the store holds now


def build_metadata(
    job_id: str,
    graph: JobGraph,
    pending: PendingCheckpoint,
    completion_timestamp_ms: int,
    leader_epoch: int = 0,
) -> CheckpointMetadata:
    """The ``_metadata`` of a fully acknowledged checkpoint or savepoint: one section per
    operator of the job, with its subtasks' states and its coordinator's."""
    operators = []
    for vertex in graph.vertices:
        for node in vertex.chain:
            subtasks: list[OperatorSubtaskState] = []
            for i in range(vertex.parallelism):
                state = pending.acknowledged[(vertex.id, i)].operator_states.get(node.uid)
                if state is not None:
                    subtasks.append(state)
            coordinator = pending.coordinator_states.get(node.uid)
            operators.append(
                OperatorState(
                    node.uid,
                    node.name,
                    vertex.parallelism,
                    graph.max_parallelism,
                    subtasks,
                    None if coordinator is None else OperatorCoordinatorState(coordinator),
                    key_type=type_text(node.key_type) if node.key_type else "",
                )
            )
    return CheckpointMetadata(
        job_id=job_id,
        job_name=graph.job_name,
        checkpoint_id=pending.checkpoint_id,
        trigger_timestamp_ms=pending.trigger_timestamp_ms,
        completion_timestamp_ms=completion_timestamp_ms,
        operators=operators,
        stats=[a.stats for a in pending.acknowledged.values()],
        kind=pending.options.kind,
        snapshot_format=pending.options.snapshot_format,
        leader_epoch=leader_epoch,
    )


def uploaded_by(checkpoint_id: int, states: Iterable[OperatorSubtaskState]) -> list[str]:
    """The shared files that ``checkpoint_id`` itself uploaded, in these subtask states."""
    return [path for state in states for path in state.shared_paths(uploaded_by=checkpoint_id)]


def stale_references(
    registry: SharedStateRegistry, metadata: CheckpointMetadata
) -> frozenset[SharedStateKey]:
    """Step 1: the shared files checkpoint N reuses (references without having uploaded them)
    that may already be deleted. N must be aborted if there is one; if there is none, none
    goes before N ends (``SharedStateRegistry.validate_references``)."""
    cid = metadata.checkpoint_id
    states = [s for op in metadata.operators for s in op.subtasks]
    reused = metadata.shared_paths() - set(uploaded_by(cid, states))
    return registry.validate_references(cid, reused)


def retain(
    registry: SharedStateRegistry, store: CompletedCheckpointStore, metadata: CheckpointMetadata
) -> Retention:
    """Steps 3 and 4, once checkpoint N's ``_metadata`` is written: 3. register every shared
    file N references (N stops being pending for the registry, which releases what it held for
    N alone); 4. add N to the completed store, and unregister the checkpoints it subsumed."""
    cid = metadata.checkpoint_id
    # 3. register N's shared files
    released = registry.register_checkpoint(cid, metadata.shared_paths())
    # 4. retain N, and let go of what it subsumed
    subsumed = [c.checkpoint_id for c in store.add(metadata)]
    unreferenced = registry.subsume(subsumed)
    return Retention(released, subsumed, unreferenced, len(store.all()))
