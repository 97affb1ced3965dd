"""Internal: record formats; their public names are in ``barrierflow.datastream.formats``.

Record formats on pyarrow and fastavro: row serialization schemas (JSON, CSV, Avro) for
Kafka and any connector that takes a schema, and file formats (CSV, Avro, Parquet, ORC) for
FileSource and FileSink. PyFlink's names are at their PyFlink paths, in
``barrierflow.datastream.formats``. fastavro is imported only where Avro is used. Decisions:
docs/adr/0020-formats-and-jdbc.md."""
