"""A data file of a table (Delta, Iceberg) or of a staged DataFrame as a split, and the versioned
codecs of these splits and of their enumerator's state. Performs no I/O."""

from __future__ import annotations

import msgspec

from barrierflow.connectors.base.struct_codec import StructCodec
from barrierflow.connectors.files.file_enumerator import FileEnumeratorState


class TableFileSplit(msgspec.Struct, frozen=True):
    """The Parquet file at ``path`` (its name, and its split's), read from row ``offset`` (the
    rows already emitted); ``partition``: the values, as text, of partition columns the file
    does not hold (Delta's); ``version``: the Delta table version, ``snapshot``: the Iceberg
    snapshot, it was listed in."""

    path: str
    offset: int = 0
    partition: dict[str, str | None] = msgspec.field(default_factory=dict)
    version: int | None = None
    snapshot: int | None = None

    @property
    def split_id(self) -> str:
        return self.path


TABLE_FILE_SPLITS = StructCodec(TableFileSplit)
TABLE_FILE_ENUMERATOR_STATES = StructCodec(FileEnumeratorState[TableFileSplit])
