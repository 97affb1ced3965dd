"""PyFlink's ``pyflink.datastream.formats.avro`` (fastavro is needed when a job uses Avro:
``pip install 'barrierflow[avro]'``)."""

from barrierflow.connectors.formats.avro_file import AvroBulkWriters, AvroInputFormat
from barrierflow.connectors.formats.avro_row import (
    AvroRowDeserializationSchema,
    AvroRowSerializationSchema,
)
from barrierflow.connectors.formats.avro_schema import AvroSchema, GenericRecordAvroTypeInfo

__all__ = [
    "AvroBulkWriters",
    "AvroInputFormat",
    "AvroRowDeserializationSchema",
    "AvroRowSerializationSchema",
    "AvroSchema",
    "GenericRecordAvroTypeInfo",
]
