"""How a snapshot's state maps onto a job's operators by uid: restored, new, left behind; the
problems that stop a restore; and the report a dry run prints."""

from __future__ import annotations

from barrierflow import StreamExecutionEnvironment
from barrierflow.checkpoint.metadata import (
    CheckpointMetadata,
    InlineHandle,
    KeyGroupsHandle,
    OperatorCoordinatorState,
    OperatorState,
    OperatorSubtaskState,
)
from barrierflow.connectors import DiscardingSink, SequenceSource
from barrierflow.coordination.state_mapping import OperatorFate, map_state
from barrierflow.graph.job_graph import build_job_graph
from barrierflow.graph.stream_graph import build_stream_graph
from barrierflow.protocol.checkpoint_barrier import CheckpointKind, SnapshotFormat


def job(uids: list[str], max_parallelism: int = 128, parallelism: int = 3):
    env = StreamExecutionEnvironment()
    stream = env.from_source(SequenceSource(1, 10), "numbers").uid("numbers")
    for uid in uids:
        stream = stream.map(lambda x: x).uid(uid)
    stream.sink_to(DiscardingSink()).uid("sink")
    return build_job_graph(
        build_stream_graph("job", env._transformations, parallelism, max_parallelism)
    )


def keyed(uid: str, max_parallelism: int = 128) -> OperatorState:
    handle = KeyGroupsHandle(0, 127, [(5, 0, 3)], InlineHandle(b"abc"), states={"count": "value"})
    return OperatorState(
        uid, "Count", 2, max_parallelism, [OperatorSubtaskState(0, None, [handle])]
    )


def with_operator_state(uid: str) -> OperatorState:
    return OperatorState(uid, "Source", 2, 128, [OperatorSubtaskState(0, InlineHandle(b"xy"))])


def savepoint(*operators: OperatorState) -> CheckpointMetadata:
    return CheckpointMetadata(
        "old", "old", 9, 1, 2, list(operators), [], CheckpointKind.SAVEPOINT, SnapshotFormat.NATIVE
    )


def test_each_operator_is_restored_new_or_left_behind():
    mapping = map_state(
        savepoint(with_operator_state("numbers"), keyed("count"), keyed("gone")),
        job(["count", "fresh"]),
    )
    assert mapping.of_fate(OperatorFate.RESTORED) == ["numbers", "count"]
    assert mapping.of_fate(OperatorFate.NEW) == ["fresh", "sink"]
    assert mapping.of_fate(OperatorFate.LEFT_BEHIND) == ["gone"]


def test_state_left_behind_is_a_problem_naming_the_uids_unless_allowed():
    mapping = map_state(savepoint(keyed("gone"), keyed("lost")), job([]))
    (problem,) = mapping.problems(allow_non_restored_state=False)
    assert "savepoint (native) 9 has state for operators ['gone', 'lost']" in problem
    assert "-n (--allow-non-restored-state)" in problem
    assert mapping.problems(allow_non_restored_state=True) == []


def test_another_max_parallelism_is_a_problem_naming_both_values_even_when_allowed():
    mapping = map_state(savepoint(keyed("count", max_parallelism=64)), job(["count"]))
    (problem,) = mapping.problems(allow_non_restored_state=True)
    assert "max parallelism 64 and the job now has 128" in problem
    left = map_state(savepoint(keyed("gone", max_parallelism=64)), job([]))
    assert left.problems(allow_non_restored_state=True) == []  # not restored: no matter


def test_the_report_says_per_uid_what_happens():
    lines = map_state(
        savepoint(with_operator_state("numbers"), keyed("count"), keyed("gone")),
        job(["count", "fresh"]),
    ).describe()
    assert lines[0] == "numbers (numbers): restored, operator state, 2 B, parallelism 2 -> 3"
    assert lines[1] == (
        "count (Map): restored, keyed state count (value), key groups 0-127, 3 B, "
        "parallelism 2 -> 3"
    )
    assert lines[2] == "fresh (Map): new, no state in the snapshot: starts empty"
    assert lines[4] == "gone (Count): left behind, keyed state count (value), key groups 0-127, 3 B"


def test_coordinator_state_alone_restores_an_operator_and_is_reported_with_its_size():
    coordinated = OperatorState(
        "numbers", "Source", 2, 128, [], OperatorCoordinatorState(b"x" * 10)
    )
    gone = OperatorState("gone", "Source", 2, 128, [], OperatorCoordinatorState(b"y"))
    mapping = map_state(savepoint(coordinated, gone), job([]))
    assert mapping.of_fate(OperatorFate.RESTORED) == ["numbers"]
    assert mapping.of_fate(OperatorFate.LEFT_BEHIND) == ["gone"]
    lines = mapping.describe()
    assert (
        lines[0] == "numbers (numbers): restored, coordinator state 10 B, 0 B, parallelism 2 -> 3"
    )
    assert lines[-1] == "gone (Source): left behind, coordinator state 1 B, 0 B"
