"""The reader of FileSource: the records of one file (a split) at a time, as the source's
format reads them, asking the enumerator for the next file when it has none left (Flink's way:
big and small files even out over the readers). A split's position is the format's: for lines
of text (and CSV) a byte offset, of the decompressed bytes for a file named ``.gz``,
``.gzip``, ``.bz2`` or ``.xz``; for Avro and Parquet the number of records read. A restored
reader resumes at the first record after the checkpoint.

**Threading:** the task thread. **I/O:** reads the files, through pyarrow's file systems.
"""

from __future__ import annotations

import bz2
import gzip
import lzma
import os
from collections.abc import Callable
from typing import Any, Protocol

import pyarrow.fs as pafs

from barrierflow.checkpoint.storage import resolve_filesystem
from barrierflow.connectors.base.sequential_split_reader import (
    UNREAD_FILES,
    SequentialSplitReader,
)
from barrierflow.connectors.files.file_split import FileSplit
from barrierflow.connectors.interfaces.source_reader import SourceReaderContext

_CHUNK = 1 << 20

# A file with one of these extensions is read decompressed, as Flink's FileSource reads it.
_DECOMPRESSORS: dict[str, Callable[[Any], Any]] = {
    ".gz": lambda raw: gzip.GzipFile(fileobj=raw, mode="rb"),
    ".gzip": lambda raw: gzip.GzipFile(fileobj=raw, mode="rb"),
    ".bz2": bz2.BZ2File,
    ".xz": lzma.LZMAFile,
}


class _Decompressed:
    """A compressed file read as its decompressed bytes; closing it closes the file too."""

    def __init__(self, opener: Callable[[Any], Any], raw: Any) -> None:
        self._raw = raw
        self._file = opener(raw)
        self.read = self._file.read

    def close(self) -> None:
        self._file.close()
        self._raw.close()


def _open_at(fs: pafs.FileSystem, path: str, offset: int) -> Any:
    """``path``, open at byte ``offset``: of its decompressed bytes where its extension names a
    compression (they are read up to there: a compressed stream cannot seek)."""
    opener = _DECOMPRESSORS.get(os.path.splitext(path)[1].lower())
    if opener is None:
        file = fs.open_input_file(path)
        file.seek(offset)
        return file
    file = _Decompressed(opener, fs.open_input_stream(path, compression=None))
    while offset > 0:
        skipped = len(file.read(min(offset, _CHUNK)))
        if skipped == 0:
            break  # shorter than the position: the file changed; read on from its end
        offset -= skipped
    return file


class SplitRecords(Protocol):
    """The records of one file, from a position on. ``position``: where a reader restored from
    a checkpoint taken now resumes (after the records ``read`` returned)."""

    @property
    def position(self) -> int: ...

    def read(self, max_records: int) -> list[Any]:
        """Up to ``max_records`` records; none at the end of the file."""

    def close(self) -> None: ...


class RecordFormat(Protocol):
    """How a file's bytes become records (FileSource's stream and bulk formats)."""

    def open_split(self, fs: pafs.FileSystem, path: str, position: int) -> SplitRecords: ...


class LineFile:
    """A file's lines (bytes, with their line break), from byte ``position`` on."""

    def __init__(self, fs: pafs.FileSystem, path: str, position: int) -> None:
        self._file = _open_at(fs, path, position)
        self.position = position
        self._lines: list[bytes] = []
        self._line_index = 0

    def next_line(self) -> bytes | None:
        if self._line_index >= len(self._lines) and not self._fill():
            return None
        line = self._lines[self._line_index]
        self._line_index += 1
        self.position += len(line)
        return line

    def _fill(self) -> bool:
        data = self._file.read(_CHUNK)
        if not data:
            return False
        while not data.endswith(b"\n"):
            more = self._file.read(_CHUNK)
            if not more:
                break
            data += more
        self._lines = data.splitlines(keepends=True)
        self._line_index = 0
        return True

    def close(self) -> None:
        self._file.close()


class TextLines:
    """Lines of text in a charset, each a record without its line break."""

    def __init__(self, fs: pafs.FileSystem, path: str, position: int, charset: str) -> None:
        self._file = LineFile(fs, path, position)
        self._charset = charset

    @property
    def position(self) -> int:
        return self._file.position

    def read(self, max_records: int) -> list[Any]:
        out: list[str] = []
        while len(out) < max_records:
            line = self._file.next_line()
            if line is None:
                break
            out.append(line.rstrip(b"\r\n").decode(self._charset))
        return out

    def close(self) -> None:
        self._file.close()


class FileReader(SequentialSplitReader[FileSplit]):
    """``uri``: any path of the source, naming the file system all its files are on."""

    backlog_label = UNREAD_FILES

    def __init__(self, uri: str, record_format: RecordFormat, context: SourceReaderContext):
        super().__init__(context.send_split_request)
        self._fs, _ = resolve_filesystem(uri)
        self._format = record_format
        self._file: SplitRecords | None = None

    def _open_split(self, split: FileSplit) -> None:
        self._file = self._format.open_split(self._fs, split.path, split.offset)

    def _read_split(self, split: FileSplit, max_records: int) -> tuple[list[Any], FileSplit, bool]:
        assert self._file is not None  # opened by _open_split
        try:
            out = self._file.read(max_records)
        except ValueError as e:
            raise ValueError(
                f"FileSource cannot read {split.path} after position {split.offset} "
                f"with {self._format!r}: {e}"
            ) from e
        return out, FileSplit(split.path, self._file.position), len(out) < max_records

    def _close_split(self) -> None:
        assert self._file is not None  # opened by _open_split
        self._file.close()
        self._file = None
