"""A bounded source of Parquet files staged on the driver before the job starts: what
``env.from_spark(df)`` reads (``cluster/spark/dataframe_staging.py`` writes a file per
DataFrame partition). Each file is a split, handed out one at a time to the readers that ask
(``files/file_enumerator.py``); a reader's position is the rows it emitted from its file
(``parquet_split_reader.py``), so a restore at any parallelism reads every row once.

``stage`` runs once, on the driver, when the job is checked before submission; it is not
shipped to the executors (it holds the DataFrame, which only the driver has).

**I/O:** ``stage`` (a Spark job); the readers read the files; ``job_ended`` removes a
temporary directory of them.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable
from typing import Any

import pyarrow as pa

from barrierflow.connectors.base.struct_codec import StructCodec
from barrierflow.connectors.files.file_enumerator import FileEnumeratorState, FileSplitEnumerator
from barrierflow.connectors.interfaces.job_settings import JobSettings
from barrierflow.connectors.interfaces.source import Source, SourceReaderContext
from barrierflow.connectors.interfaces.split_enumerator import SplitEnumeratorContext
from barrierflow.connectors.tables.parquet_split_reader import ParquetSplitReader
from barrierflow.connectors.tables.table_file_split import (
    TABLE_FILE_ENUMERATOR_STATES,
    TABLE_FILE_SPLITS,
    TableFileSplit,
)

Stage = Callable[[], tuple[pa.Schema, list[str]]]


class StagedFilesSource(Source):
    """``temporary_dir``: a directory made for the job's staged files alone, removed when the
    job ended."""

    def __init__(self, stage: Stage, what: str, temporary_dir: str | None = None) -> None:
        self._stage: Stage | None = stage
        self.what = what
        self._temporary_dir = temporary_dir
        self.schema: pa.Schema | None = None
        self.paths: list[str] | None = None

    def check(self, job: JobSettings | None = None) -> None:
        """Stages the files, once (a job checked again, or restarted, reads the same)."""
        if self.paths is None:
            if self._stage is None:
                raise RuntimeError(f"{self.what}: staged nowhere; it runs from the driver only")
            self.schema, self.paths = self._stage()

    def create_enumerator(self, context: SplitEnumeratorContext) -> FileSplitEnumerator:
        self.check()
        assert self.paths is not None
        return FileSplitEnumerator(context, [TableFileSplit(p) for p in self.paths])

    def restore_enumerator(
        self, context: SplitEnumeratorContext, state: FileEnumeratorState[TableFileSplit]
    ) -> FileSplitEnumerator:
        return FileSplitEnumerator.restore(context, state)

    def split_codec(self) -> StructCodec[TableFileSplit]:
        return TABLE_FILE_SPLITS

    def enumerator_state_codec(self) -> StructCodec[FileEnumeratorState[TableFileSplit]]:
        return TABLE_FILE_ENUMERATOR_STATES

    def create_reader(self, context: SourceReaderContext) -> ParquetSplitReader:
        self.check()
        assert self.schema is not None
        return ParquetSplitReader(self.schema, context)

    def job_ended(self) -> None:
        if self._temporary_dir is not None:
            shutil.rmtree(self._temporary_dir, ignore_errors=True)

    def __getstate__(self) -> dict[str, Any]:
        return {**self.__dict__, "_stage": None}  # the DataFrame stays on the driver

    def __repr__(self) -> str:
        return f"StagedFilesSource({self.what})"
