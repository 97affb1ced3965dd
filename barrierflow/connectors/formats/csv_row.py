"""PyFlink's CSV row schemas: a row as one line of CSV, its fields in the order of the row type
(``CsvRowSerializationSchema.Builder(type_info).build()``), for Kafka messages.

Lines are written as Flink's CSV format writes them (``csv_line.py``, compared with PyFlink's
bytes), ending with the line delimiter (``\\n`` by default), and read with Python's ``csv``
module (RFC 4180). Performs no I/O.
"""

from __future__ import annotations

import csv
from typing import Any

from barrierflow.common.typeinfo import TypeInformation
from barrierflow.connectors.formats.csv_fields import (
    FieldCodec,
    field_codec,
    read_field,
    write_field,
)
from barrierflow.connectors.formats.csv_line import CsvLineFormat, one_char
from barrierflow.connectors.formats.row_fields import field_names, make_row, row_type, row_values
from barrierflow.errors import ConfigurationError


def codecs_of(type_info: TypeInformation, array_delimiter: str) -> list[FieldCodec]:
    names = field_names(type_info)
    return [
        field_codec(n, t, array_delimiter) for n, t in zip(names, type_info.fields, strict=True)
    ]


class CsvRowSerializationSchema:
    def __init__(
        self,
        type_info: TypeInformation,
        field_delimiter: str = ",",
        line_delimiter: str = "\n",
        array_element_delimiter: str = ";",
        quote_character: str | None = '"',
        escape_character: str | None = None,
        null_literal: str = "",
    ) -> None:
        self.type_info = row_type(type_info, "CsvRowSerializationSchema")
        self._codecs = codecs_of(self.type_info, array_element_delimiter)
        self._null = null_literal
        self._line = CsvLineFormat(
            field_delimiter, quote_character, escape_character, line_delimiter
        )

    def serialize(self, value: Any) -> bytes:
        try:
            values = row_values(value, self.type_info)
            fields = [
                (write_field(c, v), c.is_text) for c, v in zip(self._codecs, values, strict=True)
            ]
        except (TypeError, ValueError) as e:
            raise ValueError(f"cannot write {value!r:.200} as CSV: {e}") from e
        return self._line.line(fields, self._null).encode("utf-8")

    def __repr__(self) -> str:
        return f"CsvRowSerializationSchema({self.type_info!r})"


class _SerializationBuilder:
    def __init__(self, type_info: TypeInformation) -> None:
        if type_info is None:
            raise TypeError("Type information must not be None")
        self._type_info = type_info
        self._options: dict[str, Any] = {}

    def set_field_delimiter(self, c: str) -> _SerializationBuilder:
        self._options["field_delimiter"] = one_char(c, "the field delimiter")
        return self

    def set_line_delimiter(self, delimiter: str) -> _SerializationBuilder:
        if delimiter not in ("\n", "\r", "\r\n", ""):
            raise ConfigurationError(
                f"the line delimiter must be \\n, \\r, \\r\\n or empty, got {delimiter!r}"
            )
        self._options["line_delimiter"] = delimiter
        return self

    def set_array_element_delimiter(self, delimiter: str) -> _SerializationBuilder:
        self._options["array_element_delimiter"] = delimiter
        return self

    def disable_quote_character(self) -> _SerializationBuilder:
        self._options["quote_character"] = None
        return self

    def set_quote_character(self, c: str) -> _SerializationBuilder:
        self._options["quote_character"] = one_char(c, "the quote character")
        return self

    def set_escape_character(self, c: str) -> _SerializationBuilder:
        self._options["escape_character"] = one_char(c, "the escape character")
        return self

    def set_null_literal(self, s: str) -> _SerializationBuilder:
        self._options["null_literal"] = s
        return self

    def build(self) -> CsvRowSerializationSchema:
        return CsvRowSerializationSchema(self._type_info, **self._options)


CsvRowSerializationSchema.Builder = _SerializationBuilder  # type: ignore[attr-defined]


class CsvRowDeserializationSchema:
    """A line of CSV as a row of the type. A message of the wrong arity, or a field that is not
    of its type, raises ``ValueError`` naming the field; with ``set_ignore_parse_errors(True)``
    it is skipped (None), as is a ``#`` comment line with ``set_allow_comments(True)``."""

    def __init__(
        self,
        type_info: TypeInformation,
        field_delimiter: str = ",",
        array_element_delimiter: str = ";",
        quote_character: str | None = '"',
        escape_character: str | None = None,
        null_literal: str | None = None,
        allow_comments: bool = False,
        ignore_parse_errors: bool = False,
    ) -> None:
        self.type_info = row_type(type_info, "CsvRowDeserializationSchema")
        self._codecs = codecs_of(self.type_info, array_element_delimiter)
        self._names = field_names(self.type_info)
        self._null = null_literal
        self._allow_comments = allow_comments
        self._ignore = ignore_parse_errors
        self._dialect: dict[str, Any] = {  # csv.reader's keyword arguments
            "delimiter": field_delimiter,
            "quotechar": quote_character,
            "escapechar": escape_character,
            "quoting": csv.QUOTE_MINIMAL if quote_character else csv.QUOTE_NONE,
            "doublequote": escape_character is None,
            "strict": True,
        }

    def deserialize(self, message: bytes) -> Any:
        try:
            text = message.decode("utf-8").rstrip("\r\n")
            if self._allow_comments and text.startswith("#"):
                return None
            return self.row_of(next(csv.reader([text], **self._dialect), []))
        except (UnicodeDecodeError, ValueError, csv.Error) as e:
            if self._ignore:
                return None
            raise ValueError(f"not a CSV row of {self.type_info!r}: {e}") from None

    def row_of(self, fields: list[str]) -> Any:
        if len(fields) != len(self._codecs):
            raise ValueError(f"{len(fields)} fields, the row type has {len(self._codecs)}")
        values = [read_field(c, f, self._null) for c, f in zip(self._codecs, fields, strict=True)]
        return make_row(values, self._names)

    def __repr__(self) -> str:
        return f"CsvRowDeserializationSchema({self.type_info!r})"


class _DeserializationBuilder:
    def __init__(self, type_info: TypeInformation) -> None:
        if type_info is None:
            raise TypeError("Type information must not be None")
        self._type_info = type_info
        self._options: dict[str, Any] = {}

    def set_field_delimiter(self, delimiter: str) -> _DeserializationBuilder:
        self._options["field_delimiter"] = one_char(delimiter, "the field delimiter")
        return self

    def set_allow_comments(self, allow_comments: bool) -> _DeserializationBuilder:
        self._options["allow_comments"] = bool(allow_comments)
        return self

    def set_array_element_delimiter(self, delimiter: str) -> _DeserializationBuilder:
        self._options["array_element_delimiter"] = delimiter
        return self

    def set_quote_character(self, c: str) -> _DeserializationBuilder:
        self._options["quote_character"] = one_char(c, "the quote character")
        return self

    def set_escape_character(self, c: str) -> _DeserializationBuilder:
        self._options["escape_character"] = one_char(c, "the escape character")
        return self

    def set_null_literal(self, null_literal: str) -> _DeserializationBuilder:
        self._options["null_literal"] = null_literal
        return self

    def set_ignore_parse_errors(self, ignore_parse_errors: bool) -> _DeserializationBuilder:
        self._options["ignore_parse_errors"] = bool(ignore_parse_errors)
        return self

    def build(self) -> CsvRowDeserializationSchema:
        return CsvRowDeserializationSchema(self._type_info, **self._options)


CsvRowDeserializationSchema.Builder = _DeserializationBuilder  # type: ignore[attr-defined]
