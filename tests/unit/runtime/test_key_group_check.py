"""The run-time check of a stream reinterpreted as keyed: a record whose key's key group is
the subtask's passes; one of another subtask's key group fails with an error that names the
record, the key, its key group, the subtask and its range, and what it means; dead-letter
mode does not set such a record aside; an operator not told to check does not."""

from __future__ import annotations

from dataclasses import replace

import pytest

from barrierflow.datastream.functions.one_input import KeyedProcessFunction
from barrierflow.datastream.state import ValueStateDescriptor
from barrierflow.graph.transformation import TransformationKind
from barrierflow.protocol.key_group_range import (
    DEFAULT_MAX_PARALLELISM,
    KeyGroupRange,
    key_group_range_for_subtask,
    subtask_for_key_group,
)
from barrierflow.runtime.operators import UserFunctionError
from barrierflow.runtime.operators.key_group_check import KeyGroupCheck, KeyGroupMismatchError
from barrierflow.state.key_groups import assign_to_key_group
from barrierflow.testing.harness import OperatorHarness, operator

MAX = DEFAULT_MAX_PARALLELISM


def keys_of(subtask: int, parallelism: int, n: int = 5) -> list[int]:
    """The first ``n`` int keys whose key groups are ``subtask``'s."""
    found = []
    key = 0
    while len(found) < n:
        if subtask_for_key_group(MAX, parallelism, assign_to_key_group(key, MAX)) == subtask:
            found.append(key)
        key += 1
    return found


class Count(KeyedProcessFunction):
    def open(self, runtime_context):
        self.count = runtime_context.get_state(ValueStateDescriptor("count", None))

    def process_element(self, value, ctx):
        n = (self.count.value() or 0) + 1
        self.count.update(n)
        yield ctx.get_current_key(), n


def count_spec(checks: bool = True, dead_letters: str | None = None):
    spec = operator(TransformationKind.PROCESS, Count(), uid="count", key_selector=lambda r: r)
    return replace(spec, checks_key_groups=checks, dead_letters=dead_letters)


def test_keys_of_the_subtask_pass_and_come_back():
    mine = keys_of(1, 2)
    check = KeyGroupCheck(1, 2, MAX, key_group_range_for_subtask(MAX, 2, 1))
    select = check.checked(lambda r: r[0])
    assert [select((k, "v")) for k in mine * 2] == mine * 2


def test_a_key_of_another_subtask_fails_saying_what_it_means():
    (theirs,) = keys_of(0, 2, 1)
    key_group = assign_to_key_group(theirs, MAX)
    select = KeyGroupCheck(1, 2, MAX, KeyGroupRange(64, 127)).checked(lambda r: r)
    with pytest.raises(KeyGroupMismatchError) as e:
        select(theirs)
    message = str(e.value)
    assert f"key {theirs!r} is in key group {key_group}, which is subtask 0's" in message
    assert "not subtask 1's (key groups 64 to 127 of 128, at parallelism 2)" in message
    assert "not partitioned as key_by would partition it" in message
    assert "or use key_by" in message
    assert e.value.key == theirs


def test_a_remembered_key_is_not_hashed_again_and_the_memory_is_bounded(monkeypatch):
    from barrierflow.runtime.operators import key_group_check

    hashed = []
    real = key_group_check.assign_to_key_group
    monkeypatch.setattr(
        key_group_check, "assign_to_key_group", lambda k, m: hashed.append(k) or real(k, m)
    )
    mine = keys_of(0, 1, 3)
    select = KeyGroupCheck(0, 1, MAX, KeyGroupRange(0, 127), capacity=2).checked(lambda r: r)
    for key in mine[:2] * 3:
        select(key)
    assert hashed == mine[:2]
    select(mine[2])  # full: forgets, then remembers the new one
    select(mine[0])
    assert hashed == [*mine, mine[0]]


@pytest.mark.parametrize("timed", [False, True])
def test_the_keyed_operator_fails_on_a_record_of_another_subtask(timed):
    harness = OperatorHarness(count_spec(), subtask=1, parallelism=2)
    process = (lambda rs: harness.process_timed(rs, [1] * len(rs))[0]) if timed else harness.process
    mine, (theirs,) = keys_of(1, 2, 2), keys_of(0, 2, 1)
    assert process(mine) == [(mine[0], 1), (mine[1], 1)]
    with pytest.raises(UserFunctionError) as e:
        process([mine[0], theirs])
    message = str(e.value)
    assert f"operator 'count' (Count), subtask 1 failed on record {theirs} (key {theirs})" in (
        message
    )
    assert f"in key group {assign_to_key_group(theirs, MAX)}" in message
    assert "key groups 64 to 127" in message
    assert isinstance(e.value.__cause__, KeyGroupMismatchError)
    assert e.value.record == repr(theirs)  # a poison record: restarts stop on it
    harness.close()


def test_dead_letter_mode_does_not_set_a_mismatched_record_aside():
    harness = OperatorHarness(count_spec(dead_letters="dead"), subtask=1, parallelism=2)
    (theirs,) = keys_of(0, 2, 1)
    with pytest.raises(UserFunctionError, match="reinterpret_as_keyed_stream"):
        harness.process([theirs])
    harness.close()


def test_an_operator_not_told_to_check_takes_any_key():
    harness = OperatorHarness(count_spec(checks=False), subtask=1, parallelism=2)
    (theirs,) = keys_of(0, 2, 1)
    assert harness.process([theirs]) == [(theirs, 1)]
    harness.close()


def test_a_key_selector_that_fails_is_not_reported_with_the_key_before():
    spec = replace(count_spec(), key_selector=lambda r: r["k"])
    harness = OperatorHarness(spec, subtask=0, parallelism=1)
    with pytest.raises(UserFunctionError) as e:
        harness.process([{"k": "first"}, {"j": 1}])
    assert "failed on record {'j': 1}: KeyError" in str(e.value)
    assert "first" not in str(e.value)
    harness.close()
