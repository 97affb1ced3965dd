"""What a sink needs to know of a catalog's table (where its files are, their format and
schema), and what it needs of the catalog: to describe a table on the driver and to refresh
it after a commit. Spark's session catalog implements it in ``cluster/spark/session_catalog.py``;
tests use a directory. Performs no I/O.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import pyarrow as pa


@dataclass(frozen=True)
class CatalogTable:
    """``location``: the table's directory as barrierflow's file systems take it (a local
    path, or ``s3://...``); ``provider``: its format as the catalog names it (``parquet``)."""

    name: str
    location: str
    provider: str
    schema: pa.Schema
    partition_columns: tuple[str, ...] = ()


class TableCatalog(ABC):
    """Used on the driver only: ``describe`` when the job is checked, ``refresh`` by the
    global committer on the JobMaster after each commit. Never shipped to the executors."""

    @abstractmethod
    def describe(self, table_name: str) -> CatalogTable:
        """Raises ``ConfigurationError`` if there is no such table."""

    def refresh(self, table_name: str) -> None:  # noqa: B027 - a catalog may cache nothing
        """Forgets what the catalog cached of the table's files, so that its next read lists
        the files just committed (metadata only: no job)."""
