"""What completing a checkpoint decides (checkpoint_completion.py), without a coordinator: the
metadata built from the acknowledgements, the stale references that abort a checkpoint, and
what registering and retaining a checkpoint lets go."""

from __future__ import annotations

from barrierflow.checkpoint.metadata import (
    CheckpointMetadata,
    FileHandle,
    IncrementalKeyedHandle,
    InlineHandle,
    OperatorState,
    OperatorSubtaskState,
    SharedFileHandle,
    SubtaskCheckpointStats,
)
from barrierflow.coordination.checkpoint_completion import (
    Retention,
    build_metadata,
    retain,
    stale_references,
    uploaded_by,
)
from barrierflow.coordination.completed_checkpoint_store import CompletedCheckpointStore
from barrierflow.coordination.pending_checkpoint import PendingCheckpoint, TaskAcknowledgement
from barrierflow.coordination.shared_state_registry import SharedStateRegistry
from tests.unit.coordination.test_checkpoint_coordinator import two_vertex_graph


def subtask_state(cid: int, shared: dict[str, int]) -> OperatorSubtaskState:
    """A subtask's incremental state referencing ``shared/<name>``, each uploaded by the
    checkpoint its value names."""
    files = [
        SharedFileHandle(name, FileHandle(f"shared/{name}", 1, "c"), uploader)
        for name, uploader in shared.items()
    ]
    handle = IncrementalKeyedHandle(0, 127, cid, files, {"CURRENT": InlineHandle(b"M\n")}, {})
    return OperatorSubtaskState(0, None, [handle])


def metadata(cid: int, shared: dict[str, int]) -> CheckpointMetadata:
    operator = OperatorState("op", "op", 1, 128, [subtask_state(cid, shared)])
    return CheckpointMetadata("job", "job", cid, 1, 2, [operator])


def test_the_metadata_has_every_operator_with_its_subtasks_states_and_its_coordinators():
    graph = two_vertex_graph().job_graph
    source, sink = graph.vertices
    pending = PendingCheckpoint(
        7,
        1_000,
        frozenset({(source.id, 0), (source.id, 1), (sink.id, 0)}),
        coordinator_states={source.chain[0].uid: b"enumerator"},
    )
    for vertex in (source, sink):
        for i in range(vertex.parallelism):
            states = {vertex.chain[0].uid: OperatorSubtaskState(i, InlineHandle(b"s"))}
            stats = SubtaskCheckpointStats(vertex.id, i, 1.0, 2.0, 0.0, 1)
            pending.acknowledge(TaskAcknowledgement((vertex.id, i), states, stats))

    result = build_metadata("job-id", graph, pending, completion_timestamp_ms=2_000)

    assert (result.job_id, result.checkpoint_id, len(result.stats)) == ("job-id", 7, 3)
    assert (result.trigger_timestamp_ms, result.completion_timestamp_ms) == (1_000, 2_000)
    by_uid = {op.uid: op for op in result.operators}
    assert [s.subtask for s in by_uid[source.chain[0].uid].subtasks] == [0, 1]
    assert by_uid[source.chain[0].uid].coordinator.data == b"enumerator"
    assert by_uid[sink.chain[0].uid].coordinator is None
    assert {op.max_parallelism for op in result.operators} == {graph.max_parallelism}


def test_only_a_reused_file_the_registry_no_longer_holds_is_a_stale_reference():
    registry = SharedStateRegistry()
    registry.checkpoint_triggered(1)
    registry.register_checkpoint(1, ["shared/kept"])
    registry.checkpoint_triggered(2)
    two = metadata(2, {"kept": 1, "gone": 1, "new": 2})

    assert uploaded_by(2, two.operators[0].subtasks) == ["shared/new"]
    assert stale_references(registry, two) == {"shared/gone"}


def test_retaining_registers_the_checkpoint_and_lets_go_of_what_it_subsumed():
    registry, store = SharedStateRegistry(), CompletedCheckpointStore(max_retained=1)
    registry.checkpoint_triggered(1)
    assert retain(registry, store, metadata(1, {"a": 1})) == Retention([], [], [], 1)
    registry.checkpoint_triggered(2)
    registry.checkpoint_triggered(3)

    # 1's file is held for 3, pending when 2 subsumed 1: 3 might still reference it
    assert retain(registry, store, metadata(2, {"b": 2})) == Retention([], [1], [], 1)
    # 3 completed without it: it goes, and so does 2's, which nothing pending holds
    assert retain(registry, store, metadata(3, {"c": 3})) == Retention(
        ["shared/a"], [2], ["shared/b"], 1
    )
    assert [c.checkpoint_id for c in store.all()] == [3]
    assert registry.known_keys() == {"shared/c"}
