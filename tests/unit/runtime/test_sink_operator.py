"""The sink operator's two-phase commit, driven by the operator harness over a real FileSink:
committables go into the snapshot at the barrier, are committed when the checkpoint completes,
and a restore commits those of the restored checkpoint and discards what came after."""

from __future__ import annotations

import json
import os

from barrierflow.datastream.connectors.file_system import FileSink
from barrierflow.graph.transformation import TransformationKind
from barrierflow.runtime.sink_operator import SinkOperator
from barrierflow.state.operator_state import OperatorStateStore
from barrierflow.testing.harness import OperatorHarness, operator


def committed(directory) -> list[list]:
    """The records of every visible part file, one list per file, in name order."""
    files = sorted(n for n in os.listdir(directory) if not n.startswith((".", "_")))
    return [[json.loads(line) for line in open(directory / f, "rb")] for f in files]


def hidden(directory) -> list[str]:
    return sorted(n for n in os.listdir(directory) if n.startswith("."))


def pending_committables(state) -> list[dict]:
    store = OperatorStateStore()
    store.restore([state.operator_state.data], 0, 1)
    return store.get_union_list_state(SinkOperator.PENDING).get()


def test_committables_are_stored_at_the_barrier_and_committed_when_the_checkpoint_completes(
    tmp_path,
):
    h = OperatorHarness(operator(TransformationKind.SINK, FileSink(str(tmp_path)), uid="sink"))
    h.process([1, 2])
    first = h.snapshot(1)
    h.process([3])
    second = h.snapshot(2)
    assert committed(tmp_path) == []
    assert [p["checkpoint_id"] for p in pending_committables(first)] == [1]
    assert [p["checkpoint_id"] for p in pending_committables(second)] == [1, 2]

    h.notify_complete(1)
    assert committed(tmp_path) == [[1, 2]]
    third = h.snapshot(3)  # nothing written since 2: only 2 is still pending
    assert [p["checkpoint_id"] for p in pending_committables(third)] == [2]
    h.notify_complete(3)  # completes 2 as well
    assert committed(tmp_path) == [[1, 2], [3]]
    assert hidden(tmp_path) == []
    h.close()


def test_a_restore_commits_the_restored_checkpoints_committables_and_discards_later_writes(
    tmp_path,
):
    h = OperatorHarness(operator(TransformationKind.SINK, FileSink(str(tmp_path)), uid="sink"))
    h.process(["a"])
    h.snapshot(1)
    h.process(["b"])
    second = h.snapshot(2)  # completes, but the task fails before it is notified
    h.process(["lost"])  # after checkpoint 2: replayed by the sources after the restore
    h.snapshot(3)  # never completes
    h.close()
    assert committed(tmp_path) == []

    restored = h.restored(second)
    assert committed(tmp_path) == [["a"], ["b"]]
    assert hidden(tmp_path) == []
    restored.process(["lost"])
    restored.notify_complete(4)  # nothing pending yet: nothing happens
    restored.snapshot(4)
    restored.notify_complete(4)
    assert committed(tmp_path) == [["a"], ["b"], ["lost"]]
    restored.close()


def test_without_checkpointing_the_sink_commits_everything_at_the_end_of_input(tmp_path):
    h = OperatorHarness(
        operator(TransformationKind.SINK, FileSink(str(tmp_path)), uid="sink"), checkpointing=False
    )
    h.process([1])
    h.process([2])
    assert committed(tmp_path) == []
    h.finish()
    assert committed(tmp_path) == [[1, 2]]
    h.close()
