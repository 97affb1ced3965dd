"""ORC part files for FileSink, on pyarrow: ``OrcBulkWriters.for_row_type(row_type)``. Records
are converted as FileSink's Parquet format converts them (a record that does not fit the
schema fails naming it) and written as stripes; the file's footer is written at the barrier
that closes the part file.

``writer_properties`` take ORC's keys ``orc.compress`` and ``orc.stripe.size``; any other key
is refused, as is a non-empty Hadoop configuration (pyarrow's file systems read and write).

**Threading:** the task thread. **I/O:** writes the open file it is given.
"""

from __future__ import annotations

from typing import Any, BinaryIO

import pyarrow as pa
import pyarrow.orc as orc

from barrierflow.connectors.files.file_format import PartWriter
from barrierflow.connectors.files.parquet import ParquetPart, ParquetWriterFactory
from barrierflow.connectors.formats.arrow_types import arrow_schema_of_row_type
from barrierflow.connectors.formats.parquet_file import no_hadoop
from barrierflow.errors import ConfigurationError

_PROPERTIES = {"orc.compress": "compression", "orc.stripe.size": "stripe_size"}


class OrcWriterFactory(ParquetWriterFactory):
    suffix = ".orc"

    def __init__(self, schema: pa.Schema, options: dict[str, Any]) -> None:
        super().__init__(schema)
        self.options = options

    def open_part(self, file: BinaryIO) -> PartWriter:
        return _OrcPart(self, file)

    def __repr__(self) -> str:
        return f"OrcBulkWriters.for_row_type({self.schema.names})"


class _OrcPart(ParquetPart):
    """Parquet's part writer with ORC's writer: the same conversion, other bytes."""

    def __init__(self, factory: OrcWriterFactory, file: BinaryIO) -> None:
        self._factory = factory
        self._schema = factory.schema
        self._writer = orc.ORCWriter(file, **factory.options)
        self._batches = []
        self._rows = 0

    def _write_row_group(self) -> None:
        if self._batches:
            self._writer.write(pa.Table.from_batches(self._batches, self._schema))
            self._batches = []
            self._rows = 0


class OrcBulkWriters:
    @staticmethod
    def for_row_type(
        row_type: Any, writer_properties: Any = None, hadoop_config: Any = None
    ) -> OrcWriterFactory:
        no_hadoop(hadoop_config, "OrcBulkWriters.for_row_type()")
        properties: dict[str, Any] = {}
        if writer_properties is not None:
            properties = (
                writer_properties.to_dict()
                if hasattr(writer_properties, "to_dict")
                else dict(writer_properties)
            )
        unknown = sorted(set(properties) - set(_PROPERTIES))
        if unknown:
            raise ConfigurationError(
                f"OrcBulkWriters.for_row_type(): writer properties {unknown} are not supported; "
                f"barrierflow's ORC writer takes {sorted(_PROPERTIES)}"
            )
        options: dict[str, Any] = {}
        for key, value in properties.items():
            option = _PROPERTIES[key]
            options[option] = int(value) if option == "stripe_size" else str(value).lower()
        schema = arrow_schema_of_row_type(row_type, "OrcBulkWriters.for_row_type()")
        return OrcWriterFactory(schema, options)
