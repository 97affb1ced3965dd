"""What a Delta sink's writers prepare at a barrier: the Parquet files they staged, as Delta
``add`` actions, for the global committer to commit in one transaction; and its versioned
codec. Performs no I/O."""

from __future__ import annotations

from typing import Any

import msgspec

from barrierflow.connectors.base.struct_codec import StructCodec


class DeltaAddFile(msgspec.Struct, frozen=True):
    """A staged data file: its ``path`` relative to the table (delta-rs escapes it in the log),
    size in bytes, partition values as Delta's text, modification time (ms) and Delta's column
    statistics."""

    path: str
    size: int
    partition_values: dict[str, str | None]
    modification_time: int
    stats: dict[str, Any]


class DeltaCommittable(msgspec.Struct, frozen=True):
    """``app_id``: the ``SetTransaction`` application whose version the commit sets (the job
    and the sink: ``delta_writer.app_id``)."""

    app_id: str
    files: list[DeltaAddFile]


DELTA_COMMITTABLES = StructCodec(DeltaCommittable)
