"""barrierflow's JSON and CSV row serialization schemas write the bytes PyFlink's write, row
for row. PyFlink's schemas are Java classes: ``pyflink_format_bytes.py`` runs them through
PyFlink's gateway JVM (no cluster) in the Python ``PYFLINK_PYTHON`` names. Avro's are
compared with Avro's specification in the unit tests: PyFlink's wheel ships no Avro jar.
"""

from __future__ import annotations

import datetime
import decimal
import json
import os
import subprocess
from pathlib import Path

import pytest

from barrierflow.common import Types
from barrierflow.datastream.formats.csv import CsvRowSerializationSchema
from barrierflow.datastream.formats.json import JsonRowSerializationSchema

HELPER = Path(__file__).parent / "pyflink_format_bytes.py"
TYPES = ["STRING", "INT", "DOUBLE", "BOOLEAN", "BIG_DEC", "SQL_DATE", "SQL_TIME", "SQL_TIMESTAMP"]
NAMES = ["s", "i", "d", "b", "dec", "day", "tm", "ts", "tags"]
ROWS = [
    ["plain", 7, 2.5, True, "12.340", "2026-01-31", "12:30:05", "2026-01-31 12:30:00.5", ["a"]],
    [
        'say "hi", then go',
        -1,
        1e20,
        False,
        "0.5",
        "1999-12-31",
        "00:00:00",
        "2026-01-31 12:30:00",
        [],
    ],
    ["a b#c+d!e", 0, 1e-4, None, None, None, None, None, ["x y", "b,c"]],
    [
        "y" * 25,
        2**31 - 1,
        123456789.0,
        True,
        "1",
        "2000-02-29",
        "23:59:59",
        "2000-02-29 00:00:00.123",
        None,
    ],
    ["", None, None, None, None, None, None, None, ["a;b"]],
    [
        "back\\\\slash",
        1,
        0.1,
        False,
        "-3.25",
        "2026-01-01",
        "01:02:03",
        "2026-01-01 01:02:03.000456",
        ["\\\\"],
    ],
]
CSV_OPTIONS = [
    {},
    {"set_field_delimiter": "|", "set_array_element_delimiter": ","},
    {"set_quote_character": "'", "set_null_literal": "NULL"},
    {"set_escape_character": "\\"},
    {"disable_quote_character": None, "set_line_delimiter": "\r\n"},
]


def python_value(type_name: str, value):
    if value is None:
        return None
    return {
        "BIG_DEC": decimal.Decimal,
        "SQL_DATE": datetime.date.fromisoformat,
        "SQL_TIME": datetime.time.fromisoformat,
        "SQL_TIMESTAMP": datetime.datetime.fromisoformat,
    }.get(type_name, lambda v: v)(value)


def ours(case: dict) -> list[str]:
    row_type = Types.ROW_NAMED(
        case["names"],
        [
            Types.BASIC_ARRAY(Types.STRING()) if t == "STRING_ARRAY" else getattr(Types, t)()
            for t in case["types"]
        ],
    )
    if case["format"] == "json":
        schema = JsonRowSerializationSchema.builder().with_type_info(row_type).build()
    else:
        builder = CsvRowSerializationSchema.Builder(row_type)
        for option, value in case.get("csv_options", {}).items():
            getattr(builder, option)(*([] if value is None else [value]))
        schema = builder.build()
    return [
        schema.serialize(
            tuple(python_value(t, v) for t, v in zip(case["types"], row, strict=True))
        ).hex()
        for row in case["rows"]
    ]


def cases() -> list[dict]:
    base = {"names": NAMES, "types": [*TYPES, "STRING_ARRAY"], "rows": ROWS}
    return [{**base, "format": "json"}] + [
        {**base, "format": "csv", "csv_options": options} for options in CSV_OPTIONS
    ]


def test_json_and_csv_row_schemas_write_pyflinks_bytes():
    python = os.environ.get("PYFLINK_PYTHON")
    if not python:
        pytest.skip("PYFLINK_PYTHON names no Python with PyFlink (pip install apache-flink)")
    done = subprocess.run(
        [python, str(HELPER)],
        input="".join(json.dumps(c) + "\n" for c in cases()),
        capture_output=True,
        text=True,
        timeout=300,
        check=True,
    )
    theirs = [json.loads(line) for line in done.stdout.splitlines()]
    for case, expected in zip(cases(), theirs, strict=True):
        for row, mine, pyflink in zip(case["rows"], ours(case), expected, strict=True):
            assert bytes.fromhex(mine) == bytes.fromhex(pyflink), (
                case["format"],
                case.get("csv_options"),
                row,
            )
