"""Which task reads what: a range of key groups per task with only the handles that hold some
of it, an incremental handle per task, operator state per old subtask; tasks travel as
MessagePack."""

from __future__ import annotations

from barrierflow.checkpoint.metadata import (
    FileHandle,
    IncrementalKeyedHandle,
    InlineHandle,
    KeyGroupsHandle,
    OperatorState,
    OperatorSubtaskState,
)
from barrierflow.state_processor.read_plan import (
    decode_task,
    encode_task,
    plan_keyed_read,
    plan_operator_read,
)


def full(start: int, end: int, key_groups: list[int]) -> KeyGroupsHandle:
    offsets = [(kg, i * 10, 10) for i, kg in enumerate(key_groups)]
    return KeyGroupsHandle(start, end, offsets, FileHandle(f"chk-1/{start}.keyed", 99, "c"))


def operator(*handles, operator_state=None) -> OperatorState:
    subtasks = [OperatorSubtaskState(i, operator_state, [h]) for i, h in enumerate(handles)]
    return OperatorState("count", "Count", len(handles), 128, subtasks)


def test_a_task_per_range_of_key_groups_with_the_handles_that_hold_some_of_it():
    low, high = full(0, 63, [1, 10, 40]), full(64, 127, [64, 100])
    tasks = plan_keyed_read("file:///sp", operator(low, high), 4)
    assert [(t.key_group_start, t.key_group_end) for t in tasks] == [(0, 31), (32, 63), (64, 95),
                                                                      (96, 127)]  # fmt: skip
    assert [t.keyed for t in tasks] == [[low], [low], [high], [high]]


def test_ranges_without_state_make_no_task_and_tasks_never_split_a_key_group():
    sparse = full(0, 127, [5])
    tasks = plan_keyed_read("root", operator(sparse), 500)
    assert [(t.key_group_start, t.key_group_end) for t in tasks] == [(5, 5)]


def test_an_incremental_handle_is_a_task_of_its_own_over_its_range():
    rocks = IncrementalKeyedHandle(64, 127, 3, [], {}, {"count": "value"})
    (task,) = plan_keyed_read("root", operator(rocks), 8)
    assert (task.key_group_start, task.key_group_end, task.keyed) == (64, 127, [rocks])


def test_operator_state_is_a_task_per_old_subtask_and_tasks_survive_the_trip():
    op = operator(full(0, 127, [1]), full(0, 127, [2]), operator_state=InlineHandle(b"x"))
    tasks = plan_operator_read("root", op)
    assert [t.operator_states for t in tasks] == [[InlineHandle(b"x")]] * 2
    keyed = plan_keyed_read("root", op, 2)[0]
    assert decode_task(encode_task(keyed)) == keyed
