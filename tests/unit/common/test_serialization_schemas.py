"""pyflink.common's serialization schemas: bytes as they are, one field of a row, and the
interfaces that every schema (barrierflow's and a program's own) satisfies."""

from __future__ import annotations

import pytest

from barrierflow.common import (
    ByteArraySchema,
    DeserializationSchema,
    Row,
    SerializationSchema,
    SimpleStringSchema,
)
from barrierflow.common.serialization import RowFieldExtractorSchema


def test_byte_array_schema_passes_bytes_through_both_ways():
    schema = ByteArraySchema()
    assert schema.serialize(bytearray(b"\x00\xff")) == b"\x00\xff"
    assert schema.deserialize(b"abc") == b"abc"
    with pytest.raises(TypeError, match="PRIMITIVE_ARRAY"):
        schema.serialize("text")


def test_row_field_extractor_takes_one_field_which_must_be_bytes():
    row = Row(b"user-1", b'{"a": 1}', None, "not bytes")
    assert RowFieldExtractorSchema(0).serialize(row) == b"user-1"
    assert RowFieldExtractorSchema(1).serialize(row) == b'{"a": 1}'
    assert RowFieldExtractorSchema(2).serialize(row) == b""
    with pytest.raises(TypeError, match="field 3 must be bytes"):
        RowFieldExtractorSchema(3).serialize(row)
    with pytest.raises(ValueError, match="needs a row with a field 7"):
        RowFieldExtractorSchema(7).serialize(row)
    with pytest.raises(ValueError, match="non-negative"):
        RowFieldExtractorSchema(-1)


def test_any_schema_with_the_methods_is_a_schema():
    class Upper:
        def serialize(self, value):
            return value.upper().encode()

    assert isinstance(Upper(), SerializationSchema)
    assert not isinstance(Upper(), DeserializationSchema)
    assert isinstance(SimpleStringSchema(), SerializationSchema)
    assert isinstance(SimpleStringSchema(), DeserializationSchema)
    assert isinstance(RowFieldExtractorSchema(0), SerializationSchema)
    assert not isinstance(object(), SerializationSchema)
