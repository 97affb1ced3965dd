"""FileSource: files read by a stream format (lines of text, one record per line, by default;
CSV, Avro and Parquet in ``connectors/formats/``) or a bulk format (Parquet's columns).

Each path is a file or a directory (its non-hidden files, in name order), local or any URI
pyarrow.fs understands (``s3://bucket/in`` with the job's ``s3.*`` settings:
``checkpoint/file_systems.py``). Each file is a split: the enumerator hands them out one at a
time to the readers that ask (``file_enumerator.py``); a reader reads lines from a byte offset,
decompressing ``.gz``, ``.gzip``, ``.bz2`` and ``.xz`` files as Flink does (``file_reader.py``).

PyFlink's form, ``FileSource.for_record_stream_format(StreamFormat.text_line_format(), *paths)
.build()``, reads what is there when the job starts and ends; with
``.monitor_continuously(Duration)`` it never ends: the enumerator lists the directories every
interval and hands out each new file once, across restores at any parallelism. A file must be
complete when it appears (moved in, not written in place), as with Flink's.

**I/O:** lists the paths (on the driver before the job starts, and in the enumerator).
"""

from __future__ import annotations

import logging
import os
from typing import Any
from urllib.parse import urlsplit

import pyarrow.fs as pafs

from barrierflow.checkpoint.storage import resolve_filesystem
from barrierflow.connectors.base.struct_codec import StructCodec
from barrierflow.connectors.files.file_enumerator import FileEnumeratorState, FileSplitEnumerator
from barrierflow.connectors.files.file_reader import FileReader, SplitRecords, TextLines
from barrierflow.connectors.files.file_source_providers import (
    FileEnumeratorProvider,
    FileSplitAssignerProvider,
    FileSplitting,
)
from barrierflow.connectors.files.file_split import (
    FILE_ENUMERATOR_STATES,
    FILE_SPLITS,
    FileSplit,
)
from barrierflow.connectors.interfaces.job_settings import JobSettings
from barrierflow.connectors.interfaces.source import Boundedness, Source, SourceReaderContext
from barrierflow.connectors.interfaces.split_enumerator import SplitEnumeratorContext
from barrierflow.errors import ConfigurationError
from barrierflow.eventtime.durations import millis_of

log = logging.getLogger("barrierflow.connectors.files")


def _files(path: str) -> list[str]:
    """The file ``path``, or the visible files under the directory ``path`` (in its
    subdirectories too, as Flink's enumerators), in path order. Visible: no name on the way
    from ``path`` starts with "." or "_" (a FileSink's files in progress, a hidden bucket)."""
    fs, root = resolve_filesystem(path)
    info = fs.get_file_info(root)
    if info.type == pafs.FileType.NotFound:
        raise FileNotFoundError(f"FileSource: {path} does not exist")
    if info.type == pafs.FileType.File:
        return [root]
    infos = fs.get_file_info(pafs.FileSelector(root, recursive=True))
    base = root.rstrip("/") + "/"
    return sorted(
        i.path
        for i in infos
        if i.type == pafs.FileType.File
        and not any(part.startswith((".", "_")) for part in i.path.removeprefix(base).split("/"))
    )


class FileSource(Source):
    """``record_format``: how files become records (a StreamFormat or BulkFormat); lines of
    text in ``encoding`` when not given."""

    def __init__(
        self,
        path: str | list[str],
        encoding: str = "utf-8",
        record_format: StreamFormat | BulkFormat | None = None,
    ) -> None:
        paths = [path] if isinstance(path, str) else list(path)
        if not paths or not all(isinstance(p, str) and p for p in paths):
            raise ValueError(f"FileSource needs one or more paths, got {path!r}")
        # a relative path is the driver's: executors run in other directories
        self.paths = [p if "://" in p else os.path.abspath(p) for p in paths]
        # the reader opens every file on the first path's file system (and bucket, or host)
        systems = {urlsplit(p)[:2] if "://" in p else ("file", "") for p in self.paths}
        if len(systems) > 1:
            named = sorted(f"{scheme}://{where}" for scheme, where in systems)
            raise ValueError(
                f"FileSource reads from one file system; {self.paths} are on {named}: "
                "use one source per file system and union them"
            )
        self.encoding = encoding
        self.record_format = record_format or StreamFormat(encoding)

    def check(self, job: JobSettings | None = None) -> None:
        """On the driver, before the job is submitted: every path exists."""
        for p in self.paths:
            try:
                _files(p)
            except FileNotFoundError:
                raise ConfigurationError(f"FileSource: {p} does not exist") from None

    @property
    def path(self) -> str:
        return self.paths[0]

    @staticmethod
    def for_record_stream_format(stream_format: StreamFormat, *paths: str) -> FileSourceBuilder:
        """PyFlink's builder: ``StreamFormat.text_line_format()`` over files or directories."""
        if not isinstance(stream_format, StreamFormat):
            raise ValueError(
                "for_record_stream_format() takes a StreamFormat such as "
                f"StreamFormat.text_line_format(), got {stream_format!r}"
            )
        return FileSourceBuilder(stream_format, paths)

    @staticmethod
    def for_bulk_file_format(bulk_format: BulkFormat, *paths: str) -> FileSourceBuilder:
        """PyFlink's builder for a bulk format (``ParquetColumnarRowInputFormat``)."""
        if not isinstance(bulk_format, BulkFormat):
            raise ValueError(
                "for_bulk_file_format() takes a BulkFormat such as "
                f"ParquetColumnarRowInputFormat(row_type), got {bulk_format!r}"
            )
        return FileSourceBuilder(bulk_format, paths)

    def _files(self) -> list[str]:
        """Every file of the paths, once (a file and its directory may both be named)."""
        return list(dict.fromkeys(f for p in self.paths for f in _files(p)))

    def _splits(self) -> list[FileSplit]:
        return [FileSplit(f) for f in self._files()]

    def create_enumerator(self, context: SplitEnumeratorContext) -> FileSplitEnumerator:
        """Lists the files now, on the JobMaster, as Flink's bounded FileSource does."""
        return FileSplitEnumerator(context, self._splits())

    def restore_enumerator(
        self, context: SplitEnumeratorContext, state: FileEnumeratorState[FileSplit]
    ) -> FileSplitEnumerator:
        return FileSplitEnumerator.restore(context, state)

    def create_reader(self, context: SourceReaderContext) -> FileReader:
        return FileReader(self.path, self.record_format, context)

    def split_codec(self) -> StructCodec[FileSplit]:
        return FILE_SPLITS

    def enumerator_state_codec(self) -> StructCodec[FileEnumeratorState[FileSplit]]:
        return FILE_ENUMERATOR_STATES

    def __repr__(self) -> str:
        return f"FileSource({', '.join(map(repr, self.paths))})"


class ContinuousFileSource(FileSource):
    """A FileSource that lists its directories every ``interval_ms`` and never ends."""

    def __init__(
        self, paths: list[str], record_format: StreamFormat | BulkFormat, interval_ms: int
    ) -> None:
        super().__init__(paths, record_format=record_format)
        self.interval_ms = interval_ms

    @property
    def boundedness(self) -> Boundedness:
        return Boundedness.CONTINUOUS_UNBOUNDED

    def create_enumerator(self, context: SplitEnumeratorContext) -> FileSplitEnumerator:
        return FileSplitEnumerator(context, [], [], self._splits, self.interval_ms / 1000)

    def restore_enumerator(
        self, context: SplitEnumeratorContext, state: FileEnumeratorState[FileSplit]
    ) -> FileSplitEnumerator:
        return FileSplitEnumerator.restore(context, state, self._splits, self.interval_ms / 1000)

    def __repr__(self) -> str:
        return f"{super().__repr__()[:-1]}, monitored every {self.interval_ms} ms)"


class StreamFormat:
    """How a file's bytes become records, read from a position: lines of text in a charset
    here; other formats override ``open_split`` (``connectors/formats/``)."""

    def __init__(self, charset: str = "UTF-8") -> None:
        try:
            "".encode(charset)
        except LookupError:
            raise ValueError(f"StreamFormat: unknown charset {charset!r}") from None
        self.charset = charset

    @staticmethod
    def text_line_format(charset_name: str = "UTF-8") -> StreamFormat:
        return StreamFormat(charset_name)

    def open_split(self, fs: pafs.FileSystem, path: str, position: int) -> SplitRecords:
        return TextLines(fs, path, position, self.charset)

    def __repr__(self) -> str:
        return f"StreamFormat.text_line_format({self.charset!r})"


class BulkFormat:
    """PyFlink's reader formats that read a file in batches of records (Parquet's columns);
    each overrides ``open_split``."""

    def open_split(self, fs: pafs.FileSystem, path: str, position: int) -> SplitRecords:
        raise NotImplementedError(f"{type(self).__name__} does not say how to read a file")


class FileSourceBuilder:
    def __init__(self, stream_format: StreamFormat | BulkFormat, paths: tuple[str, ...]) -> None:
        if not paths or not all(isinstance(p, str) and p for p in paths):
            raise ValueError(f"for_record_stream_format() needs one or more paths, got {paths!r}")
        self._format = stream_format
        self._paths = list(paths)
        self._interval_ms: int | None = None

    def monitor_continuously(self, discovery_interval: Any) -> FileSourceBuilder:
        """Never end: look for new files every ``discovery_interval`` (a Duration)."""
        interval_ms = millis_of(discovery_interval, "monitor_continuously()")
        if interval_ms <= 0:
            raise ValueError(f"monitor_continuously() needs a positive interval, got {interval_ms}")
        self._interval_ms = interval_ms
        return self

    def process_static_file_set(self) -> FileSourceBuilder:
        """Read the files there are, then end (the default)."""
        self._interval_ms = None
        return self

    def set_file_enumerator(self, file_enumerator: FileEnumeratorProvider) -> FileSourceBuilder:
        """Flink's enumerators over barrierflow's formats (``file_source_providers.py``)."""
        if not isinstance(file_enumerator, FileEnumeratorProvider):
            raise ValueError(
                "set_file_enumerator() takes FileEnumeratorProvider."
                "default_non_splittable_file_enumerator() or default_splittable_file_enumerator(), "
                f"got {file_enumerator!r:.200}"
            )
        if file_enumerator.splitting is FileSplitting.BLOCKS and isinstance(
            self._format, BulkFormat
        ):
            log.info(
                "FileSource: the splittable file enumerator reads each file of %r as one split "
                "(barrierflow does not split a file at its blocks); the records are the same",
                self._format,
            )
        return self

    def set_split_assigner(self, split_assigner: FileSplitAssignerProvider) -> FileSourceBuilder:
        """Flink's locality-aware assigner, which without hosts is barrierflow's own order."""
        if not isinstance(split_assigner, FileSplitAssignerProvider):
            raise ValueError(
                "set_split_assigner() takes FileSplitAssignerProvider."
                f"locality_aware_split_assigner(), got {split_assigner!r:.200}"
            )
        return self

    def build(self) -> FileSource:
        if self._interval_ms is None:
            return FileSource(self._paths, record_format=self._format)
        return ContinuousFileSource(self._paths, self._format, self._interval_ms)
