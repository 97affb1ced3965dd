"""FileSource: newline-delimited text files, one record (a str, without its newline) per line.

Each path is a file or a directory (its non-hidden files, in name order), local or any URI
pyarrow.fs understands (``s3://bucket/in`` with the job's ``s3.*`` settings:
``checkpoint/file_systems.py``). Files are split across subtasks; a split's position is a byte
offset, so a restored reader resumes at the first line after the checkpoint. A file named
``.gz``, ``.gzip``, ``.bz2`` or ``.xz`` is read decompressed, as Flink reads it (its position is
then an offset in its decompressed bytes).

PyFlink's form, ``FileSource.for_record_stream_format(StreamFormat.text_line_format(), *paths)
.build()``, reads what is there and ends; with ``.monitor_continuously(Duration)`` it never
ends and reads each new file of its directories once: each subtask lists them every interval
and takes the files whose name hashes to it (crc32, the same in every process). Its state is
then every file it took, read or not (union state), so that after a restore, at any
parallelism, each file is read by one subtask, from where it was, and none again. A file must
be complete when it appears (moved in, not written in place), as with Flink's.
"""

from __future__ import annotations

import bz2
import gzip
import lzma
import os
import time
import zlib
from collections.abc import Callable
from typing import Any
from urllib.parse import urlsplit

import pyarrow.fs as pafs

from barrierflow.checkpoint.storage import resolve_filesystem
from barrierflow.connectors.source import SourceReaderContext
from barrierflow.errors import ConfigurationError
from barrierflow.eventtime.durations import millis_of

_CHUNK = 1 << 20


def _files(path: str) -> list[str]:
    """The file ``path``, or the visible files of the directory ``path``, in name order."""
    fs, root = resolve_filesystem(path)
    info = fs.get_file_info(root)
    if info.type == pafs.FileType.NotFound:
        raise FileNotFoundError(f"FileSource: {path} does not exist")
    if info.type == pafs.FileType.File:
        return [root]
    infos = fs.get_file_info(pafs.FileSelector(root, recursive=False))
    return sorted(
        i.path
        for i in infos
        if i.type == pafs.FileType.File and not i.base_name.startswith((".", "_"))
    )


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


def _owner(path: str, parallelism: int) -> int:
    """The subtask that reads ``path`` when files are discovered: a hash every process agrees
    on (Python's own hash of a str differs between processes)."""
    return zlib.crc32(path.encode()) % parallelism


class FileSource:
    def __init__(self, path: str | list[str], encoding: str = "utf-8") -> None:
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

    def check(self, job: Any = None) -> None:
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

    def is_bounded(self) -> bool:
        return True

    def _files(self) -> list[str]:
        """Every file of the paths, once (a file and its directory may both be named)."""
        return list(dict.fromkeys(f for p in self.paths for f in _files(p)))

    def initial_splits(self, subtask: int, parallelism: int) -> list[dict]:
        return [{"path": f, "offset": 0} for f in self._files()[subtask::parallelism]]

    def create_reader(self, splits: list[dict], context: SourceReaderContext) -> _FileReader:
        return _FileReader(self.path, [dict(s) for s in splits], self.encoding)

    def __repr__(self) -> str:
        return f"FileSource({', '.join(map(repr, self.paths))})"


class ContinuousFileSource(FileSource):
    """A FileSource that lists its directories every ``interval_ms`` and never ends."""

    def __init__(self, paths: list[str], encoding: str, interval_ms: int) -> None:
        super().__init__(paths, encoding)
        self.interval_ms = interval_ms

    def is_bounded(self) -> bool:
        return False

    def initial_splits(self, subtask: int, parallelism: int) -> list[dict]:
        return []  # the reader discovers its files

    def assign_splits(self, everyone: list[dict], subtask: int, parallelism: int) -> list[dict]:
        """On restore: of the files every old subtask took, those this subtask reads now."""
        return [s for s in everyone if _owner(s["path"], parallelism) == subtask]

    def create_reader(self, splits: list[dict], context: SourceReaderContext) -> _FileReader:
        reader = _FileReader(self.path, [dict(s) for s in splits], self.encoding)
        reader.discover(self, context.subtask, context.parallelism)
        return reader

    def __repr__(self) -> str:
        return f"{super().__repr__()[:-1]}, monitored every {self.interval_ms} ms)"


class StreamFormat:
    """How a file's bytes become records: lines of text in a charset."""

    def __init__(self, charset: str) -> None:
        try:
            "".encode(charset)
        except LookupError:
            raise ValueError(f"StreamFormat: unknown charset {charset!r}") from None
        self.charset = charset

    @staticmethod
    def text_line_format(charset_name: str = "UTF-8") -> StreamFormat:
        return StreamFormat(charset_name)

    def __repr__(self) -> str:
        return f"StreamFormat.text_line_format({self.charset!r})"


class FileSourceBuilder:
    def __init__(self, stream_format: StreamFormat, paths: tuple[str, ...]) -> None:
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

    def build(self) -> FileSource:
        if self._interval_ms is None:
            return FileSource(self._paths, self._format.charset)
        return ContinuousFileSource(self._paths, self._format.charset, self._interval_ms)


class _FileReader:
    def __init__(self, uri: str, splits: list[dict], encoding: str) -> None:
        self._fs, _ = resolve_filesystem(uri)
        self._splits = splits
        self._encoding = encoding
        self._current: int | None = None
        self._file = None
        self._lines: list[bytes] = []
        self._line_index = 0
        self._last: list[tuple[str, int]] = []
        self._finished: list[str] = []
        self._source: ContinuousFileSource | None = None  # set when it discovers files

    def discover(self, source: ContinuousFileSource, subtask: int, parallelism: int) -> None:
        """Never end; every ``source.interval_ms``, take this subtask's new files."""
        self._source, self._subtask, self._parallelism = source, subtask, parallelism
        self._next_listing = 0.0

    def _discovered(self) -> bool:
        """Whether a listing due now found new files of this subtask."""
        now = time.monotonic()
        if now < self._next_listing:
            return False
        self._next_listing = now + self._source.interval_ms / 1000
        known = {s["path"] for s in self._splits}
        new = [
            f
            for f in self._source._files()
            if f not in known and _owner(f, self._parallelism) == self._subtask
        ]
        self._splits += [{"path": f, "offset": 0} for f in new]
        return bool(new)

    def _open_next(self) -> bool:
        for i, split in enumerate(self._splits):
            if split["offset"] >= 0:
                self._current = i
                self._file = _open_at(self._fs, split["path"], split["offset"])
                return True
        return False

    def poll(self, max_records: int) -> list[Any] | None:
        if self._file is None and not self._open_next():
            if self._source is None:
                return None  # bounded: every file read
            if not (self._discovered() and self._open_next()):
                self._last = []
                return []
        split = self._splits[self._current]
        out: list[str] = []
        while len(out) < max_records:
            if self._line_index >= len(self._lines) and not self._fill():
                self._file.close()
                self._file = None
                split["offset"] = -1  # done
                self._finished.append(split["path"])
                break
            line = self._lines[self._line_index]
            self._line_index += 1
            split["offset"] += len(line)
            out.append(line.rstrip(b"\r\n").decode(self._encoding))
        self._last = [(split["path"], len(out))]
        return out

    def last_poll_splits(self) -> list[tuple[str, int]]:
        return self._last

    def finished_splits(self) -> list[str]:
        done, self._finished = self._finished, []
        return done

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

    def snapshot(self) -> list[dict]:
        return [dict(s) for s in self._splits]

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
