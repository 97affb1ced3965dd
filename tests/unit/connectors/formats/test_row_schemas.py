"""The JSON, CSV and Avro row schemas: round trips over every type they hold, the bytes their
formats' specifications give, and bad messages refused naming the field (or skipped where the
program asked). PyFlink's own schemas run in its JVM, so the expected bytes come from the
formats' specifications (RFC 8259 and Flink's JSON time formats, RFC 4180, Avro's binary
encoding)."""

from __future__ import annotations

import datetime
import decimal

import pytest

from barrierflow.common import Types
from barrierflow.common.types import Row
from barrierflow.datastream.formats.avro import (
    AvroRowDeserializationSchema,
    AvroRowSerializationSchema,
)
from barrierflow.datastream.formats.csv import (
    CsvRowDeserializationSchema,
    CsvRowSerializationSchema,
)
from barrierflow.datastream.formats.json import (
    JsonRowDeserializationSchema,
    JsonRowSerializationSchema,
)
from barrierflow.errors import ConfigurationError

WIDE = Types.ROW_NAMED(
    ["i", "s", "b", "d", "dec", "day", "at", "tags", "raw", "m"],
    [
        Types.INT(),
        Types.STRING(),
        Types.BOOLEAN(),
        Types.DOUBLE(),
        Types.BIG_DEC(),
        Types.SQL_DATE(),
        Types.SQL_TIMESTAMP(),
        Types.LIST(Types.STRING()),
        Types.PRIMITIVE_ARRAY(Types.BYTE()),
        Types.MAP(Types.STRING(), Types.LONG()),
    ],
)


def named(names: str, *values) -> Row:
    """A Row with its fields in the order given (``Row(a=..)`` sorts them, as PyFlink's)."""
    row = Row(*values)
    row.set_field_names(names.split())
    return row


WIDE_ROW = named(
    "i s b d dec day at tags raw m",
    7,
    'say "hi", then go',
    True,
    2.5,
    decimal.Decimal("12.34"),
    datetime.date(2026, 1, 31),
    datetime.datetime(2026, 1, 31, 12, 30, 0, 500000),
    ["a", "b"],
    b"\x00\xff",
    {"k": 1},
)


def json_schemas(type_info):
    return (
        JsonRowSerializationSchema.builder().with_type_info(type_info).build(),
        JsonRowDeserializationSchema.builder().type_info(type_info).build(),
    )


def test_json_writes_a_row_as_flinks_json_format_writes_it():
    out, _ = json_schemas(WIDE)
    assert out.serialize(WIDE_ROW) == (
        b'{"i":7,"s":"say \\"hi\\", then go","b":true,"d":2.5,"dec":12.34,'
        b'"day":"2026-01-31","at":"2026-01-31T12:30:00.5Z","tags":["a","b"],'
        b'"raw":"AP8=","m":{"k":1}}'
    )


def test_json_round_trips_every_type_and_names_unnamed_fields_f0_f1():
    out, back = json_schemas(WIDE)
    assert back.deserialize(out.serialize(WIDE_ROW)) == WIDE_ROW
    unnamed = Types.ROW([Types.INT(), Types.STRING()])
    out, back = json_schemas(unnamed)
    assert out.serialize((1, "a")) == b'{"f0":1,"f1":"a"}'
    assert back.deserialize(b'{"f1":"a","f0":1}') == Row(f0=1, f1="a")


def test_json_missing_fields_are_null_unless_the_program_asks_to_fail():
    t = Types.ROW_NAMED(["a", "b"], [Types.INT(), Types.STRING()])
    assert JsonRowDeserializationSchema.builder().type_info(t).build().deserialize(
        b'{"a":1}'
    ) == Row(a=1, b=None)
    strict = JsonRowDeserializationSchema.builder().type_info(t).fail_on_missing_field().build()
    with pytest.raises(ValueError, match="'b' is missing"):
        strict.deserialize(b'{"a":1}')


def test_json_bad_messages_name_the_field_or_are_skipped_when_asked():
    t = Types.ROW_NAMED(["a"], [Types.INT()])
    _, back = json_schemas(t)
    with pytest.raises(ValueError, match=r"field 'a'.*not an integer"):
        back.deserialize(b'{"a":"x"}')
    with pytest.raises(ValueError, match="not JSON"):
        back.deserialize(b"{oops")
    lenient = JsonRowDeserializationSchema.builder().type_info(t).ignore_parse_errors().build()
    assert lenient.deserialize(b"{oops") is None
    assert lenient.deserialize(b'{"a":"x"}') is None


def test_json_refuses_a_record_that_is_not_the_row_naming_it():
    out, _ = json_schemas(Types.ROW_NAMED(["a", "b"], [Types.INT(), Types.STRING()]))
    with pytest.raises(ValueError, match=r"cannot write \(1,\).*1 fields"):
        out.serialize((1,))


def test_json_schemas_need_a_row_type_and_refuse_the_java_schema_converter():
    with pytest.raises(ConfigurationError, match="needs a row type"):
        JsonRowSerializationSchema.builder().with_type_info(Types.INT()).build()
    with pytest.raises(ConfigurationError, match="type_info"):
        JsonRowDeserializationSchema.builder().json_schema("{}")


def test_json_without_a_type_writes_and_reads_plain_values():
    assert JsonRowSerializationSchema().serialize({"a": [1]}) == b'{"a":[1]}'
    assert JsonRowDeserializationSchema().deserialize(b'{"a":[1]}') == {"a": [1]}


CSV_TYPE = Types.ROW([Types.INT(), Types.STRING(), Types.LIST(Types.INT()), Types.DOUBLE()])


def test_csv_quotes_text_as_flinks_csv_writer_does():
    """The bytes PyFlink 2.3's CsvRowSerializationSchema wrote for these fields."""
    text = CsvRowSerializationSchema.Builder(Types.ROW([Types.STRING()])).build()
    seen_from_pyflink = {
        "a b": b'"a b"\n',
        "a+b": b'"a+b"\n',
        "a-b": b"a-b\n",
        "a;b": b"a;b\n",
        "#a": b'"#a"\n',
        "a\\b": b'"a\\b"\n',
        'a"b': b'"a""b"\n',
        "a\nb": b'"a\nb"\n',
        "x" * 24: b"x" * 24 + b"\n",
        "y" * 25: b'"' + b"y" * 25 + b'"\n',
        "": b"\n",
    }
    for value, expected in seen_from_pyflink.items():
        assert text.serialize((value,)) == expected, value
    out = CsvRowSerializationSchema.Builder(CSV_TYPE).build()
    assert out.serialize((1, 'a,"b"', [1, 2], 1e7)) == b'1,"a,""b""",1;2,1.0E7\n'
    piped = (
        CsvRowSerializationSchema.Builder(CSV_TYPE)
        .set_field_delimiter("|")
        .set_array_element_delimiter(",")
        .set_null_literal("NULL")
        .build()
    )
    # below the separator "|" every character is quoted, as Jackson's writer does
    assert piped.serialize((1, "a|b", [1, 2], None)) == b'1|"a|b"|"1,2"|NULL\n'


def test_csv_round_trips_with_and_without_options():
    row = named("f0 f1 f2 f3", 3, "x\ny", [4, None], 0.5)
    for options in ({}, {"set_field_delimiter": ";", "set_array_element_delimiter": "/"}):
        out = CsvRowSerializationSchema.Builder(CSV_TYPE)
        back = CsvRowDeserializationSchema.Builder(CSV_TYPE)
        for name, value in options.items():
            getattr(out, name)(value)
            getattr(back, name)(value)
        assert back.build().deserialize(out.build().serialize(row)) == row


def test_csv_bad_messages_name_the_field_or_are_skipped_when_asked():
    back = CsvRowDeserializationSchema.Builder(CSV_TYPE).build()
    with pytest.raises(ValueError, match=r"field 'f0'.*'x' is not a INT"):
        back.deserialize(b"x,a,1,2.0")
    with pytest.raises(ValueError, match="3 fields, the row type has 4"):
        back.deserialize(b"1,a,1")
    lenient = (
        CsvRowDeserializationSchema.Builder(CSV_TYPE)
        .set_ignore_parse_errors(True)
        .set_allow_comments(True)
        .build()
    )
    assert lenient.deserialize(b"x,a,1,2.0") is None
    assert lenient.deserialize(b"# a comment") is None


def test_csv_refuses_types_a_field_cannot_hold_at_the_jobs_definition():
    nested = Types.ROW([Types.ROW([Types.INT()])])
    with pytest.raises(ConfigurationError, match=r"column 'f0'.*cannot hold"):
        CsvRowSerializationSchema.Builder(nested).build()
    with pytest.raises(ConfigurationError, match="single char"):
        CsvRowSerializationSchema.Builder(CSV_TYPE).set_field_delimiter("||")


AVRO = (
    '{"type":"record","name":"User","fields":[{"name":"id","type":"int"},'
    '{"name":"name","type":"string"},{"name":"tags","type":{"type":"array","items":"string"}},'
    '{"name":"home","type":["null",{"type":"record","name":"Address","fields":'
    '[{"name":"city","type":"string"}]}]}]}'
)


def test_avro_writes_avros_binary_encoding_without_header():
    out = AvroRowSerializationSchema(avro_schema_string=AVRO)
    # id 1: zigzag 0x02; "ab": length 2 (0x04) then the bytes; tags: a block of 1 item, "x",
    # then the end block 0x00; home: union branch 1 (0x02) then city "c"
    assert out.serialize(Row(1, "ab", ["x"], Row("c"))) == (b"\x02\x04ab\x02\x02x\x00\x02\x02c")


def test_avro_round_trips_rows_by_position_and_dicts_by_name():
    out = AvroRowSerializationSchema(avro_schema_string=AVRO)
    back = AvroRowDeserializationSchema(avro_schema_string=AVRO)
    expected = named("id name tags home", 1, "ab", ["x"], named("city", "c"))
    assert back.deserialize(out.serialize((1, "ab", ["x"], ("c",)))) == expected
    as_dict = {"id": 1, "name": "ab", "tags": ["x"], "home": {"city": "c"}}
    assert back.deserialize(out.serialize(as_dict)) == expected
    assert back.deserialize(out.serialize((2, "n", [], None))) == named(
        "id name tags home", 2, "n", [], None
    )


def test_avro_bad_records_and_messages_are_refused_naming_them():
    out = AvroRowSerializationSchema(avro_schema_string=AVRO)
    with pytest.raises(ValueError, match=r"User.id is <x>"):
        out.serialize(("x", "ab", [], None))
    back = AvroRowDeserializationSchema(avro_schema_string=AVRO)
    with pytest.raises(ValueError, match="not Avro of"):
        back.deserialize(b"\x02")
    with pytest.raises(ValueError, match="bytes follow the record"):
        back.deserialize(out.serialize((1, "ab", [], None)) + b"\x00")


def test_avro_refuses_java_record_classes_and_schemas_that_are_not_records():
    with pytest.raises(ConfigurationError, match="needs the JVM"):
        AvroRowSerializationSchema(record_class="com.example.User")
    with pytest.raises(ConfigurationError, match="not a record"):
        AvroRowDeserializationSchema(avro_schema_string='"int"')
    with pytest.raises(TypeError, match="should be specified"):
        AvroRowSerializationSchema()
