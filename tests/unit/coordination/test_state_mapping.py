"""How a snapshot's state maps onto a job's operators by uid: restored, new, left behind; the
problems that stop a restore (a changed key type among them); and the report a dry run prints,
with what becomes of each state the job declares."""

from __future__ import annotations

from barrierflow.checkpoint.metadata import (
    CheckpointMetadata,
    InlineHandle,
    KeyGroupsHandle,
    OperatorCoordinatorState,
    OperatorState,
    OperatorSubtaskState,
)
from barrierflow.common import Types
from barrierflow.coordination.state_mapping import OperatorFate, map_state
from barrierflow.datastream import StreamExecutionEnvironment
from barrierflow.datastream.connectors.discarding import DiscardingSink
from barrierflow.datastream.connectors.number_seq import NumberSequenceSource
from barrierflow.datastream.functions.one_input import KeyedProcessFunction
from barrierflow.datastream.state import ValueStateDescriptor
from barrierflow.graph.job_graph import build_job_graph
from barrierflow.graph.stream_graph import build_stream_graph
from barrierflow.protocol.checkpoint_barrier import CheckpointKind, SnapshotFormat
from barrierflow.state.declared_states import declared_states_of


def job(uids: list[str], max_parallelism: int = 128, parallelism: int = 3):
    env = StreamExecutionEnvironment()
    stream = env.from_source(NumberSequenceSource(1, 10), "numbers").uid("numbers")
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


class Profiles(KeyedProcessFunction):
    """Declares a profile row (evolved), a count narrowed from LONG and a new state."""

    def __init__(self, fail: bool = False) -> None:
        self.fail = fail

    def open(self, runtime_context):
        if self.fail:
            raise RuntimeError("no database")
        row = Types.ROW_NAMED(["id", "zip"], [Types.LONG(), Types.STRING()])
        runtime_context.get_state(ValueStateDescriptor("profile", row))
        runtime_context.get_state(ValueStateDescriptor("count", Types.INT()))
        runtime_context.get_state(ValueStateDescriptor("fresh"))

    def process_element(self, value, ctx):
        yield value


def keyed_job(function, key_type=None):
    env = StreamExecutionEnvironment()
    (
        env.from_source(NumberSequenceSource(1, 10), "numbers")
        .key_by(lambda x: x, key_type)
        .process(function)
        .uid("profiles")
        .sink_to(DiscardingSink())
        .uid("sink")
    )
    return build_job_graph(build_stream_graph("job", env._transformations, 2, 128))


def profiles(key_type: str = "") -> OperatorState:
    handle = KeyGroupsHandle(
        0, 127, [(5, 0, 3)], InlineHandle(b"abc"),
        states={"profile": "value", "count": "value", "old": "list"},
        types={"profile": "ROW_NAMED<id:INT>", "count": "LONG"},
    )  # fmt: skip
    subtasks = [OperatorSubtaskState(0, None, [handle])]
    return OperatorState("profiles", "Profiles", 2, 128, subtasks, key_type=key_type)


def test_the_dry_run_says_per_state_unchanged_will_migrate_or_incompatible():
    graph = keyed_job(Profiles())
    mapping = map_state(savepoint(profiles()), graph, declared_states_of(graph))
    (operator,) = [o for o in mapping.operators if o.uid == "profiles"]
    assert operator.describe_states() == [
        "state 'count': incompatible: the value narrows from LONG to INT",
        "state 'fresh': new: starts empty",
        "state 'old': not declared by the job: kept in its snapshots as it is",
        "state 'profile': will migrate: field 'zip' added (default None); field 'id' widens "
        "from INT to LONG",
    ]
    (problem,) = mapping.problems(allow_non_restored_state=False)
    assert problem == (
        "operator 'profiles': state 'count' is incompatible: the value narrows from LONG to INT"
    )
    assert "  state 'count': incompatible" in "\n".join(mapping.describe())


def test_without_the_jobs_declarations_states_are_not_compared():
    mapping = map_state(savepoint(profiles()), keyed_job(Profiles()))
    assert mapping.problems(allow_non_restored_state=False) == []


def test_a_function_whose_open_fails_leaves_its_states_unknown():
    graph = keyed_job(Profiles(fail=True))
    mapping = map_state(savepoint(profiles()), graph, declared_states_of(graph))
    (operator,) = [o for o in mapping.operators if o.uid == "profiles"]
    assert operator.describe_states()[-1] == (
        "its states are unknown: opening its function raised RuntimeError: no database"
    )


def test_a_changed_key_type_is_a_problem_where_both_jobs_declare_one():
    changed = map_state(savepoint(profiles("LONG")), keyed_job(Profiles(), Types.STRING()))
    (problem,) = changed.problems(allow_non_restored_state=True)
    assert "operator 'profiles' keeps keyed state under keys of type LONG" in problem
    assert "now declares key type STRING" in problem
    for old, new in (("LONG", Types.LONG()), ("", Types.STRING()), ("LONG", None)):
        same = map_state(savepoint(profiles(old)), keyed_job(Profiles(), new))
        assert same.problems(allow_non_restored_state=True) == []
