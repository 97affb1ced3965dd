"""``map`` and ``filter`` call their function over a batch in C (``map``); a record the
function fails on is still named, with the records before it not repeated."""

from __future__ import annotations

import pytest

from barrierflow.graph.transformation import TransformationKind
from barrierflow.runtime.operators import OperatorSpec, UserFunctionError
from barrierflow.testing.harness import OperatorHarness


def inverse(value: int) -> float:
    return 1 / value


@pytest.mark.parametrize("kind", [TransformationKind.MAP, TransformationKind.FILTER])
def test_the_failing_record_is_named_among_many(kind):
    calls: list[int] = []

    def function(value: int) -> float:
        calls.append(value)
        return inverse(value)

    harness = OperatorHarness(OperatorSpec("f", "f", kind, function))
    records = [5, 4, 3, 0, 2, 1]
    with pytest.raises(UserFunctionError, match=r"failed on record 0: ZeroDivisionError"):
        harness.process(records)
    assert calls == [5, 4, 3, 0]  # each called once, none after the failure


def test_map_and_filter_give_each_records_result_in_order():
    records = list(range(1, 2000))
    mapped = OperatorHarness(OperatorSpec("m", "m", TransformationKind.MAP, inverse))
    assert mapped.process(records) == [1 / v for v in records]
    kept = OperatorHarness(OperatorSpec("f", "f", TransformationKind.FILTER, lambda v: v % 3))
    assert kept.process(records) == [v for v in records if v % 3]
