"""NumberSequenceSource: PyFlink's bounds and Java's parallel split of the sequence."""

from __future__ import annotations

import pytest

from barrierflow.datastream.connectors import Source
from barrierflow.datastream.connectors.number_seq import NumberSequenceSource


def numbers(splits):
    return [list(range(s.next, s.end + 1)) for s in splits]


def test_number_sequence_is_a_pyflink_source():
    assert isinstance(NumberSequenceSource(1, 3), Source)
    assert NumberSequenceSource(1, 3).is_bounded()


def test_split_gives_the_first_subsequences_the_remainder_as_java_does():
    assert numbers(NumberSequenceSource(0, 9).splits(3)) == [
        [0, 1, 2, 3],
        [4, 5, 6],
        [7, 8, 9],
    ]


def test_split_at_parallelism_one_is_the_whole_sequence_in_order():
    assert numbers(NumberSequenceSource(-2, 2).splits(1)) == [[-2, -1, 0, 1, 2]]


def test_split_of_fewer_numbers_than_subtasks_leaves_the_rest_empty():
    assert numbers(NumberSequenceSource(5, 6).splits(4)) == [[5], [6]]


def test_splits_cover_every_number_once():
    source = NumberSequenceSource(-7, 93)
    for parallelism in range(1, 12):
        covered = [n for split in numbers(source.splits(parallelism)) for n in split]
        assert covered == list(range(-7, 94))


def test_a_single_number_is_a_sequence():
    assert numbers(NumberSequenceSource(4, 4).splits(2)) == [[4]]


@pytest.mark.parametrize(
    ("start", "end", "error"),
    [
        (3, 2, ValueError),
        (0, 2**63, ValueError),
        (-(2**63) - 1, 0, ValueError),
        (0.5, 2, TypeError),
        (True, 2, TypeError),
    ],
)
def test_bounds_outside_a_java_long_range_or_reversed_are_refused(start, end, error):
    with pytest.raises(error, match="NumberSequenceSource"):
        NumberSequenceSource(start, end)


def test_the_extreme_longs_are_accepted():
    source = NumberSequenceSource(2**63 - 3, 2**63 - 1)
    assert numbers(source.splits(2)) == [[2**63 - 3, 2**63 - 2], [2**63 - 1]]
