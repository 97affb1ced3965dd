"""Run with PyFlink's Python: reads cases as JSON on standard input, writes each row with
PyFlink's JSON and CSV row serialization schemas (their Java classes, through PyFlink's
gateway JVM; no cluster) and prints the bytes of each, hex-encoded, one JSON list per line.

A case: {"format": "json" | "csv", "names": [...], "types": [...], "rows": [[...]],
"csv_options": {"set_field_delimiter": "|", ...}}. Types are PyFlink's ``Types`` names
(``STRING``, ``INT``, ``DOUBLE``, ``BOOLEAN``, ``BIG_DEC``, ``SQL_DATE``, ``SQL_TIME``,
``SQL_TIMESTAMP``, ``STRING_ARRAY``); values are JSON, dates and times as their Java text.
"""

import json
import sys

from pyflink.common import Types
from pyflink.datastream.formats.csv import CsvRowSerializationSchema
from pyflink.datastream.formats.json import JsonRowSerializationSchema
from pyflink.java_gateway import get_gateway

gateway = get_gateway()
jvm = gateway.jvm


def type_of(name):
    if name == "STRING_ARRAY":
        return Types.BASIC_ARRAY(Types.STRING())
    return getattr(Types, name)()


def java_value(name, value):
    if value is None:
        return None
    if name == "BIG_DEC":
        return jvm.java.math.BigDecimal(value)
    if name == "SQL_DATE":
        return jvm.java.sql.Date.valueOf(value)
    if name == "SQL_TIME":
        return jvm.java.sql.Time.valueOf(value)
    if name == "SQL_TIMESTAMP":
        return jvm.java.sql.Timestamp.valueOf(value)
    if name == "STRING_ARRAY":
        array = gateway.new_array(jvm.String, len(value))
        for i, v in enumerate(value):
            array[i] = v
        return array
    return value


def schema_of(case):
    row_type = Types.ROW_NAMED(case["names"], [type_of(t) for t in case["types"]])
    if case["format"] == "json":
        schema = JsonRowSerializationSchema.builder().with_type_info(row_type).build()
    else:
        builder = CsvRowSerializationSchema.Builder(row_type)
        for option, value in case.get("csv_options", {}).items():
            getattr(builder, option)(*([] if value is None else [value]))
        schema = builder.build()
    java_schema = schema._j_serialization_schema
    java_schema.open(None)
    return java_schema


for line in sys.stdin:
    case = json.loads(line)
    schema = schema_of(case)
    out = []
    for row in case["rows"]:
        values = gateway.new_array(jvm.Object, len(row))
        for i, (name, value) in enumerate(zip(case["types"], row, strict=True)):
            values[i] = java_value(name, value)
        out.append(bytes(schema.serialize(jvm.org.apache.flink.types.Row.of(values))).hex())
    print(json.dumps(out), flush=True)
