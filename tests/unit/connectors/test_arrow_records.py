"""Records as Arrow: schemas from PyFlink types, records by name or by position, and the record
that does not fit named."""

from __future__ import annotations

import re

import pyarrow as pa
import pytest

from barrierflow.common import Types
from barrierflow.common.types import Row
from barrierflow.connectors.files.file_format import RecordEncodingError
from barrierflow.connectors.tables.arrow_records import arrow_schema, to_record_batch
from barrierflow.errors import ConfigurationError

SCHEMA = pa.schema([("k", pa.string()), ("n", pa.int64())])


def test_row_named_types_become_arrow_columns_nested_ones_too():
    t = Types.ROW_NAMED(
        ["s", "i", "f", "tags", "point"],
        [Types.STRING(), Types.INT(), Types.FLOAT(), Types.LIST(Types.STRING()),
         Types.ROW_NAMED(["x", "y"], [Types.DOUBLE(), Types.DOUBLE()])],
    )  # fmt: skip
    assert arrow_schema(t, "here") == pa.schema(
        [("s", pa.string()), ("i", pa.int32()), ("f", pa.float32()),
         ("tags", pa.list_(pa.string())),
         ("point", pa.struct([("x", pa.float64()), ("y", pa.float64())]))]
    )  # fmt: skip


def test_a_schema_that_is_not_one_is_refused_naming_where():
    with pytest.raises(ConfigurationError, match=r"DeltaSink.*pyarrow\.Schema or Types\.ROW_NAMED"):
        arrow_schema(Types.TUPLE([Types.INT()]), "DeltaSink('t')")


def test_named_rows_and_dicts_by_name_tuples_and_unnamed_rows_by_position():
    named = Row(n=1, k="a")
    by_name = to_record_batch([named, {"n": 2, "k": "b"}], SCHEMA, "here")
    by_position = to_record_batch([("c", 3), Row("d", 4)], SCHEMA, "here")
    assert by_name.to_pylist() == [{"k": "a", "n": 1}, {"k": "b", "n": 2}]
    assert by_position.to_pylist() == [{"k": "c", "n": 3}, {"k": "d", "n": 4}]


@pytest.mark.parametrize(
    "records",
    [[("a", 1), {"k": "b", "n": 2}], [{"k": "a", "n": 1}, {"k": "b"}], [("a", 1), ("b", "x")]],
    ids=["mixed", "missing-field", "wrong-type"],
)
def test_the_record_that_does_not_fit_is_named(records):
    with pytest.raises(RecordEncodingError, match=re.escape(f"record {records[1]!r} as a table")):
        to_record_batch(records, SCHEMA, "a table")
