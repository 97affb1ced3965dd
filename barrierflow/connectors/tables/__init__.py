"""Internal: what the table connectors share. No public names (docs/public-api.md).

What the table connectors share (Delta, Iceberg, Spark tables, and ``env.from_spark``'s
staged files): records as Arrow (``arrow_records.py``), data files written by partition with
their statistics (``table_files.py``), and data files read as splits (``table_file_split.py``,
``parquet_split_reader.py``) by the table sources (``table_snapshot_source.py``,
``staged_files_source.py``)."""
