"""FileSource: newline-delimited text files, one record (a str, without its newline) per line.

``path`` is a file or a directory (its non-hidden files, in name order), local or any URI
pyarrow.fs understands (``s3://bucket/in`` with the job's ``s3.*`` settings:
``checkpoint/file_systems.py``). Files are split across subtasks; a split's position is a byte
offset, so a restored reader resumes at the first line after the checkpoint.
"""

from __future__ import annotations

from typing import Any

import pyarrow.fs as pafs

from barrierflow.checkpoint.storage import resolve_filesystem
from barrierflow.connectors.source import SourceReaderContext

_CHUNK = 1 << 20


class FileSource:
    def __init__(self, path: str, encoding: str = "utf-8") -> None:
        if not isinstance(path, str) or not path:
            raise ValueError(f"FileSource needs a path, got {path!r}")
        self.path = path
        self.encoding = encoding

    def _files(self) -> list[str]:
        fs, root = resolve_filesystem(self.path)
        info = fs.get_file_info(root)
        if info.type == pafs.FileType.NotFound:
            raise FileNotFoundError(f"FileSource: {self.path} does not exist")
        if info.type == pafs.FileType.File:
            return [root]
        infos = fs.get_file_info(pafs.FileSelector(root, recursive=False))
        return sorted(
            i.path
            for i in infos
            if i.type == pafs.FileType.File and not i.base_name.startswith((".", "_"))
        )

    def initial_splits(self, subtask: int, parallelism: int) -> list[dict]:
        return [{"path": f, "offset": 0} for f in self._files()[subtask::parallelism]]

    def create_reader(self, splits: list[dict], context: SourceReaderContext) -> _FileReader:
        return _FileReader(self.path, [dict(s) for s in splits], self.encoding)

    def __repr__(self) -> str:
        return f"FileSource({self.path!r})"


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

    def _open_next(self) -> bool:
        for i, split in enumerate(self._splits):
            if split["offset"] >= 0:
                self._current = i
                self._file = self._fs.open_input_file(split["path"])
                self._file.seek(split["offset"])
                return True
        return False

    def poll(self, max_records: int) -> list[Any] | None:
        if self._file is None and not self._open_next():
            return None
        split = self._splits[self._current]
        out: list[str] = []
        while len(out) < max_records:
            if self._line_index >= len(self._lines) and not self._fill():
                self._file.close()
                self._file = None
                split["offset"] = -1  # done
                break
            line = self._lines[self._line_index]
            self._line_index += 1
            split["offset"] += len(line)
            out.append(line.rstrip(b"\r\n").decode(self._encoding))
        self._last = [(split["path"], len(out))]
        return out

    def last_poll_splits(self) -> list[tuple[str, int]]:
        return self._last

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
