"""What a connector may check its configuration against on the driver, before the job is
submitted (``Source.check``, ``Sink.check``): the job's settings, and the Spark session's table
catalog (reached only if a connector asks). Performs no I/O."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from barrierflow.connectors.spark_table.catalog_table import TableCatalog


@dataclass(frozen=True)
class JobSettings:
    checkpointing: bool
    exactly_once: bool  # the checkpointing mode
    interval_ms: int
    timeout_ms: int
    max_concurrent: int = 1
    table_catalog: TableCatalog | None = None  # the session's, on the driver only
