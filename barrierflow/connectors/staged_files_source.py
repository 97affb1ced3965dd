"""``StagedFilesSource``'s path as ``env.from_spark`` imports it (``tables/
staged_files_source.py`` defines it)."""

from barrierflow.connectors.tables.staged_files_source import StagedFilesSource

__all__ = ["StagedFilesSource"]
