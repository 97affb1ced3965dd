"""``from_collection``'s source: the values split over the subtasks, each read once, and a
restore, at any parallelism, rewinding exactly to the values not yet read."""

from __future__ import annotations

import pytest

from barrierflow.connectors.builtin.collection_source import CollectionSource
from barrierflow.graph.transformation import TransformationKind
from barrierflow.testing.harness import OperatorHarness, operator


def read_all(h: OperatorHarness, batch: int = 3) -> list:
    out = []
    while (records := h.poll(batch)) is not None:
        out += records
    return out


def test_a_collection_is_split_over_the_subtasks_and_each_value_read_once():
    values = [f"v{i}" for i in range(10)]
    spec = operator(TransformationKind.SOURCE, CollectionSource(values))
    assert [v for h in OperatorHarness.subtasks(spec, 3) for v in read_all(h)] == values


@pytest.mark.parametrize("new_parallelism", [1, 2, 4])
def test_a_restored_position_rewinds_exactly_to_the_unread_values(new_parallelism):
    values = list(range(23))
    spec = operator(TransformationKind.SOURCE, CollectionSource(values))
    old = OperatorHarness.subtasks(spec, 2)
    read_before = [v for h in old for v in h.poll(4)]
    states = [h.snapshot(1) for h in old]
    read_after = [
        v for h in OperatorHarness.rescaled(spec, states, new_parallelism) for v in read_all(h)
    ]
    assert sorted(read_before + read_after) == values


def test_a_collection_must_be_a_collection():
    with pytest.raises(TypeError, match="from_collection"):
        CollectionSource("abc")
    with pytest.raises(TypeError, match="from_collection"):
        CollectionSource(42)
