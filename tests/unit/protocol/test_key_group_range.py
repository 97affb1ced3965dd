"""Key-group ranges: the ranges owned by subtasks, and the subtask that owns a key group."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given
from hypothesis import strategies as st

from barrierflow.protocol.key_group_range import (
    UPPER_BOUND_MAX_PARALLELISM,
    KeyGroupRange,
    key_group_range_for_subtask,
    subtask_for_key_group,
)


@given(max_parallelism=st.integers(1, UPPER_BOUND_MAX_PARALLELISM), data=st.data())
def test_key_group_ranges_are_contiguous_disjoint_and_cover_all_key_groups(max_parallelism, data):
    parallelism = data.draw(st.integers(1, min(max_parallelism, 400)), label="parallelism")
    ranges = [
        key_group_range_for_subtask(max_parallelism, parallelism, i) for i in range(parallelism)
    ]
    assert ranges[0].start == 0
    assert ranges[-1].end == max_parallelism - 1
    for before, after in itertools.pairwise(ranges):
        assert after.start == before.end + 1
    sizes = [len(r) for r in ranges]
    assert sum(sizes) == max_parallelism
    assert min(sizes) >= 1 and max(sizes) - min(sizes) <= 1


@given(max_parallelism=st.integers(1, UPPER_BOUND_MAX_PARALLELISM), data=st.data())
def test_subtask_for_key_group_agrees_with_the_ranges(max_parallelism, data):
    parallelism = data.draw(st.integers(1, max_parallelism), label="parallelism")
    subtask = data.draw(st.integers(0, parallelism - 1), label="subtask")
    r = key_group_range_for_subtask(max_parallelism, parallelism, subtask)
    key_group = data.draw(st.integers(r.start, r.end), label="key group")
    for kg in (r.start, key_group, r.end):
        assert subtask_for_key_group(max_parallelism, parallelism, kg) == subtask


@pytest.mark.parametrize(("max_parallelism", "parallelism"), [(128, 3), (7, 7), (10, 4), (1, 1)])
def test_every_key_group_belongs_to_the_subtask_whose_range_contains_it(
    max_parallelism, parallelism
):
    for kg in range(max_parallelism):
        subtask = subtask_for_key_group(max_parallelism, parallelism, kg)
        assert kg in key_group_range_for_subtask(max_parallelism, parallelism, subtask)


def test_key_group_range_membership_length_and_intersection():
    r = KeyGroupRange(3, 6)
    assert list(r) == [3, 4, 5, 6] and len(r) == 4
    assert 3 in r and 6 in r and 7 not in r and "4" not in r
    assert r.intersection(KeyGroupRange(5, 9)) == KeyGroupRange(5, 6)
    assert len(r.intersection(KeyGroupRange(7, 9))) == 0
    assert list(KeyGroupRange(5, 4)) == []
