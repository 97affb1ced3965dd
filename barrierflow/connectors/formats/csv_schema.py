"""PyFlink's ``CsvSchema`` and its builder: the columns of a CSV file (names and types) and
how it is written (separators, quoting, header), for ``CsvReaderFormat`` and
``CsvBulkWriters``.

PyFlink types columns with the Table API's ``DataTypes``; barrierflow has no Table API, so a
column's type is type information (``add_number_column('id', Types.INT())``, default LONG;
an array column's elements default to STRING). Performs no I/O.
"""

from __future__ import annotations

import csv
from dataclasses import dataclass, replace
from typing import Any

from barrierflow.common.typeinfo import TypeInformation, Types
from barrierflow.connectors.formats.csv_fields import FieldCodec, field_codec
from barrierflow.connectors.formats.csv_line import CsvLineFormat, one_char
from barrierflow.errors import ConfigurationError

_NUMBERS = ("BYTE", "SHORT", "INT", "LONG", "FLOAT", "DOUBLE", "BIG_INT", "BIG_DEC")


@dataclass(frozen=True)
class CsvColumn:
    name: str
    type_info: TypeInformation
    array_separator: str | None = None  # an array column's own separator


@dataclass(frozen=True)
class CsvSchema:
    columns: tuple[CsvColumn, ...] = ()
    column_separator: str = ","
    quote_char: str | None = '"'
    escape_char: str | None = None
    line_separator: str = "\n"
    null_value: str | None = None
    array_element_separator: str = ";"
    use_header: bool = False
    skip_first_data_row: bool = False
    strict_headers: bool = False
    allow_comments: bool = False

    @staticmethod
    def builder() -> CsvSchemaBuilder:
        return CsvSchemaBuilder()

    def size(self) -> int:
        return len(self.columns)

    def __len__(self) -> int:
        return self.size()

    @property
    def row_type(self) -> TypeInformation:
        """The type of the rows read: ``Types.ROW_NAMED`` of the columns."""
        return Types.ROW_NAMED([c.name for c in self.columns], [c.type_info for c in self.columns])

    def codecs(self) -> list[FieldCodec]:
        return [
            field_codec(
                c.name,
                c.type_info,
                self.array_element_separator if c.array_separator is None else c.array_separator,
            )
            for c in self.columns
        ]

    def dialect(self) -> dict[str, Any]:
        """The options of Python's ``csv`` module that read this schema."""
        return {
            "delimiter": self.column_separator,
            "quotechar": self.quote_char,
            "escapechar": self.escape_char,
            "quoting": csv.QUOTE_MINIMAL if self.quote_char else csv.QUOTE_NONE,
        }

    def line_format(self) -> CsvLineFormat:
        """How this schema's lines are written."""
        return CsvLineFormat(
            self.column_separator, self.quote_char, self.escape_char, self.line_separator
        )

    def __str__(self) -> str:
        columns = ", ".join(f"{c.name}: {c.type_info!r}" for c in self.columns)
        return f"CsvSchema([{columns}], separator {self.column_separator!r})"


class CsvSchemaBuilder:
    def __init__(self) -> None:
        self._schema = CsvSchema()

    def _set(self, **changes: Any) -> CsvSchemaBuilder:
        self._schema = replace(self._schema, **changes)
        return self

    def _add(self, column: CsvColumn) -> CsvSchemaBuilder:
        if not isinstance(column.type_info, TypeInformation):
            raise ConfigurationError(
                f"CSV column {column.name!r}: its type must be type information such as "
                f"Types.INT() (barrierflow has no Table API DataTypes), got {column.type_info!r}"
            )
        return self._set(columns=(*self._schema.columns, column))

    def build(self) -> CsvSchema:
        self._schema.codecs()  # a column a CSV field cannot hold fails here
        return self._schema

    def add_array_column(
        self, name: str, separator: str = ";", element_type: TypeInformation | None = None
    ) -> CsvSchemaBuilder:
        element = Types.STRING() if element_type is None else element_type
        if not isinstance(element, TypeInformation):
            raise ConfigurationError(f"CSV column {name!r}: element_type must be type information")
        return self._add(CsvColumn(name, Types.LIST(element), separator))

    def add_boolean_column(self, name: str) -> CsvSchemaBuilder:
        return self._add(CsvColumn(name, Types.BOOLEAN()))

    def add_number_column(
        self, name: str, number_type: TypeInformation | None = None
    ) -> CsvSchemaBuilder:
        number = Types.LONG() if number_type is None else number_type
        if not isinstance(number, TypeInformation) or number.name not in _NUMBERS:
            raise ConfigurationError(
                f"CSV column {name!r}: number_type must be a numeric type such as Types.INT(), "
                f"got {number!r}"
            )
        return self._add(CsvColumn(name, number))

    def add_string_column(self, name: str) -> CsvSchemaBuilder:
        return self._add(CsvColumn(name, Types.STRING()))

    def add_columns_from(self, schema: CsvSchema) -> CsvSchemaBuilder:
        return self._set(columns=(*self._schema.columns, *schema.columns))

    def clear_columns(self) -> CsvSchemaBuilder:
        return self._set(columns=())

    def set_allow_comments(self, allow: bool = True) -> CsvSchemaBuilder:
        return self._set(allow_comments=allow)

    def set_any_property_name(self, name: str) -> CsvSchemaBuilder:
        raise ConfigurationError(
            f"set_any_property_name({name!r}) gathers the columns a schema does not name into "
            "one property of a Java object; barrierflow's rows have only the schema's columns: "
            "add a column for each"
        )

    def disable_array_element_separator(self) -> CsvSchemaBuilder:
        return self._set(array_element_separator="")

    def remove_array_element_separator(self, index: int) -> CsvSchemaBuilder:
        columns = list(self._schema.columns)
        columns[index] = replace(columns[index], array_separator="")
        return self._set(columns=tuple(columns))

    def set_array_element_separator(self, separator: str) -> CsvSchemaBuilder:
        return self._set(array_element_separator=separator)

    def set_column_separator(self, char: str) -> CsvSchemaBuilder:
        return self._set(column_separator=one_char(char, "Column separator"))

    def disable_escape_char(self) -> CsvSchemaBuilder:
        return self._set(escape_char=None)

    def set_escape_char(self, char: str) -> CsvSchemaBuilder:
        return self._set(escape_char=one_char(char, "Escape char"))

    def set_line_separator(self, separator: str) -> CsvSchemaBuilder:
        return self._set(line_separator=separator)

    def set_null_value(self, null_value: str) -> CsvSchemaBuilder:
        return self._set(null_value=null_value)

    def disable_quote_char(self) -> CsvSchemaBuilder:
        return self._set(quote_char=None)

    def set_quote_char(self, char: str) -> CsvSchemaBuilder:
        return self._set(quote_char=one_char(char, "Quote char"))

    def set_skip_first_data_row(self, skip: bool = True) -> CsvSchemaBuilder:
        return self._set(skip_first_data_row=skip)

    def set_strict_headers(self, strict: bool = True) -> CsvSchemaBuilder:
        return self._set(strict_headers=strict)

    def set_use_header(self, use: bool = True) -> CsvSchemaBuilder:
        return self._set(use_header=use)

    def size(self) -> int:
        return len(self._schema.columns)

    def __len__(self) -> int:
        return self.size()
