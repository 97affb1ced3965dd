"""PyFlink's ``pyflink.datastream.formats``: each format's names are in its module (``json``,
``csv``, ``avro``, ``parquet``, ``orc``), built in ``barrierflow/connectors/formats/``."""

__all__: list[str] = []
