"""What the table sources (``DeltaSource``, ``IcebergSource``) share: a table's data files are
the splits, read as Parquet rows (``parquet_split_reader.py``). Bounded, the files of one
version of the table; with a discovery interval, those of the version current at the start,
then every interval those that newer versions added (``files/file_enumerator.py`` keeps every path
it found in its state, so each file is read once across restores at any parallelism).

A subclass lists a version's data files (``_splits``) and learns the table's schema
(``check``, on the driver).
"""

from __future__ import annotations

import pyarrow as pa

from barrierflow.connectors.base.struct_codec import StructCodec
from barrierflow.connectors.files.file_enumerator import FileEnumeratorState, FileSplitEnumerator
from barrierflow.connectors.interfaces.job_settings import JobSettings
from barrierflow.connectors.interfaces.source import Boundedness, Source, SourceReaderContext
from barrierflow.connectors.interfaces.split_enumerator import SplitEnumeratorContext
from barrierflow.connectors.tables.parquet_split_reader import ParquetSplitReader
from barrierflow.connectors.tables.table_file_split import (
    TABLE_FILE_ENUMERATOR_STATES,
    TABLE_FILE_SPLITS,
    TableFileSplit,
)


class TableSnapshotSource(Source):
    interval_ms: int | None  # None: bounded
    schema: pa.Schema | None  # the table's, known after check()

    def check(self, job: JobSettings | None = None) -> None:
        raise NotImplementedError

    def _splits(self) -> list[TableFileSplit]:
        """A split per data file of the version to read (at the start: the one asked for, or
        the latest; later, with discovery: the latest)."""
        raise NotImplementedError

    @property
    def boundedness(self) -> Boundedness:
        if self.interval_ms is None:
            return Boundedness.BOUNDED
        return Boundedness.CONTINUOUS_UNBOUNDED

    def create_enumerator(self, context: SplitEnumeratorContext) -> FileSplitEnumerator:
        if self.interval_ms is None:
            return FileSplitEnumerator(context, self._splits())
        return FileSplitEnumerator(context, [], [], self._splits, self.interval_ms / 1000)

    def restore_enumerator(
        self, context: SplitEnumeratorContext, state: FileEnumeratorState[TableFileSplit]
    ) -> FileSplitEnumerator:
        if self.interval_ms is None:
            return FileSplitEnumerator.restore(context, state)
        return FileSplitEnumerator.restore(context, state, self._splits, self.interval_ms / 1000)

    def create_reader(self, context: SourceReaderContext) -> ParquetSplitReader:
        if self.schema is None:  # check() did not run (a test harness)
            self.check()
        assert self.schema is not None
        return ParquetSplitReader(self.schema, context)

    def split_codec(self) -> StructCodec[TableFileSplit]:
        return TABLE_FILE_SPLITS

    def enumerator_state_codec(self) -> StructCodec[FileEnumeratorState[TableFileSplit]]:
        return TABLE_FILE_ENUMERATOR_STATES
