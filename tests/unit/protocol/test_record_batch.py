"""RecordBatch: the values of a buffer with an optional timestamp column, which the helpers
carry along when records are dropped, sliced, joined or multiplied, and leave out when absent."""

from __future__ import annotations

from barrierflow.eventtime.timestamps import NO_TIMESTAMP
from barrierflow.protocol.record_batch import RecordBatch, repeat_per_output


def test_compress_keeps_the_flagged_records_with_their_timestamps():
    assert RecordBatch([1, 2, 3], [10, 20, 30]).compress([1, 0, 1]) == RecordBatch([1, 3], [10, 30])
    assert RecordBatch([1, 2, 3]).compress([0, 1, 1]) == RecordBatch([2, 3])


def test_slice_cuts_both_columns_alike():
    assert RecordBatch([1, 2, 3], [10, 20, 30]).slice(1) == RecordBatch([2, 3], [20, 30])
    assert RecordBatch([1, 2, 3]).slice(0, 2) == RecordBatch([1, 2])


def test_concat_gives_records_without_a_timestamp_none_where_the_other_has_a_column():
    timed, plain = RecordBatch([1], [10]), RecordBatch([2, 3])
    assert plain.concat(timed) == RecordBatch([2, 3, 1], [NO_TIMESTAMP, NO_TIMESTAMP, 10])
    assert plain.concat(plain) == RecordBatch([2, 3, 2, 3])
    assert timed.concat(RecordBatch([])) is timed


def test_each_output_gets_the_timestamp_of_the_input_it_came_from():
    # input 0 gave two outputs, input 1 none, input 2 one
    assert repeat_per_output([10, 20, 30], [2, 2, 3]) == [10, 10, 30]
    assert repeat_per_output([10, 20], [0, 0]) == []


def test_one_output_per_input_keeps_the_column_itself():
    timestamps = [10, 20, 30]
    assert repeat_per_output(timestamps, [1, 2, 3]) is timestamps
