"""Rolling reductions per key (KeyedStream.reduce, sum, min, max, min_by, max_by), as PyFlink
emits them, on tuples, lists, dicts, objects and plain numbers, by position and by name."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from barrierflow.api.keyed_reductions import FieldAggregation, RollingReduce
from barrierflow.graph.transformation import TransformationKind
from barrierflow.testing.harness import OperatorHarness, operator


def rolling(fn, records, key=lambda r: 0):
    h = OperatorHarness(operator(TransformationKind.PROCESS, fn, key_selector=key))
    return h.process(records)


def test_reduce_emits_the_running_reduction_of_each_key():
    out = rolling(RollingReduce(lambda a, b: a + b), [1, 2, 3, 10], key=lambda v: v > 5)
    assert out == [1, 3, 6, 10]


@pytest.mark.parametrize(
    ("kind", "expected"),
    [
        ("sum", [("a", 1, "x"), ("a", 4, "x"), ("a", 6, "x")]),
        ("min", [("a", 1, "x"), ("a", 1, "x"), ("a", 1, "x")]),
        ("max", [("a", 1, "x"), ("a", 3, "x"), ("a", 3, "x")]),
        ("min_by", [("a", 1, "x"), ("a", 1, "x"), ("a", 1, "x")]),
        ("max_by", [("a", 1, "x"), ("a", 3, "y"), ("a", 3, "y")]),
    ],
)
def test_field_aggregations_on_tuples_by_position(kind, expected):
    records = [("a", 1, "x"), ("a", 3, "y"), ("a", 2, "z")]
    assert rolling(FieldAggregation(kind, 1), records) == expected


def test_field_aggregations_by_name_on_dicts_and_objects_and_on_plain_numbers():
    dicts = [{"k": "a", "n": 2}, {"k": "a", "n": 5}]
    assert rolling(FieldAggregation("sum", "n"), dicts)[-1] == {"k": "a", "n": 7}
    objects = [SimpleNamespace(k="a", n=2), SimpleNamespace(k="a", n=5)]
    assert rolling(FieldAggregation("max", "n"), objects)[-1].n == 5
    assert objects[0].n == 2, "the stored record was changed in place"
    assert rolling(FieldAggregation("sum", 0), [1, 2, 3.5]) == [1, 3, 6.5]
    assert rolling(FieldAggregation("min_by", 1), [[1, 9], [2, 4], [3, 4]])[-1] == [2, 4]


def test_a_field_must_be_a_position_or_a_name():
    with pytest.raises(TypeError, match="field position or name"):
        FieldAggregation("sum", 1.5)


def test_field_aggregations_on_rows_by_name_and_by_position_keep_names_and_kind():
    from barrierflow.common import Row, RowKind

    def named(k, n):
        row = Row(k=k, n=n)
        row.set_row_kind(RowKind.UPDATE_AFTER)
        return row

    out = rolling(FieldAggregation("sum", "n"), [named("a", 2), named("a", 5)])
    assert out[-1] == named("a", 7) and out[-1].get_field_names() == ["k", "n"]
    assert out[0] == named("a", 2), "the first record was changed in place"
    positional = rolling(FieldAggregation("max", 1), [Row("a", 2), Row("a", 9), Row("a", 4)])
    assert [r[1] for r in positional] == [2, 9, 9]
    assert rolling(FieldAggregation("min_by", "n"), [named("a", 3), named("b", 1)])[-1].k == "b"


def test_a_key_that_is_a_list_keys_state_and_timers_as_pyflink_does():
    from barrierflow.api.keyed_reductions import FinalResult
    from barrierflow.state.key_groups import KeyList, hashable_keys, stable_hash

    select = hashable_keys(lambda r: [r[0]])
    out = rolling(FieldAggregation("min_by", 1), [("a", 3), ("a", 1), ("b", 2)], key=select)
    assert out == [("a", 3), ("a", 1), ("b", 2)]
    assert select(("a", 1)) == ["a"] and isinstance(select(("a", 1)), KeyList)
    assert stable_hash(select(("a", 1))) == stable_hash(("a",))
    h = OperatorHarness(
        operator(TransformationKind.PROCESS, FinalResult(FieldAggregation("max_by", 1)),
                 key_selector=select)
    )  # fmt: skip
    assert h.process([("a", 3), ("a", 5), ("b", 2)]) == []
    assert sorted(h.watermark(2**63 - 1)[0]) == [("a", 5), ("b", 2)]
