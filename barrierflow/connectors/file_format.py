"""How FileSink writes the records of one part file: the row format (JSON Lines, one record per
line, appended as they come) or a bulk format (Parquet, in ``connectors/parquet.py``).

A part file is written by one ``PartWriter`` from its first record to the barrier that closes
it, so a format may buffer and write a footer at ``finish``: bulk formats roll their part files
at every checkpoint (Flink's rule), which is what FileSink does for every format.

**Threading:** the subtask's task thread only.
**I/O:** writes the open file it is given; never opens, renames or syncs it.
"""

from __future__ import annotations

from typing import Any, BinaryIO, Protocol

import msgspec

_json_lines = msgspec.json.Encoder()
_ENCODING_ERRORS = (TypeError, ValueError, OverflowError, RecursionError, msgspec.EncodeError)


class RecordEncodingError(ValueError):
    """A record the format cannot write; the message names it."""


class PartWriter(Protocol):
    def add(self, records: list[Any]) -> None:
        """Raises ``RecordEncodingError`` naming the first record it cannot write."""

    def finish(self) -> None:
        """Writes what is buffered and any footer; the file is then complete."""


class FileFormat(Protocol):
    suffix: str  # of committed part files, with its dot

    def open_part(self, file: BinaryIO) -> PartWriter: ...


class JsonLines:
    """The row format: each record as one line of JSON."""

    suffix = ".jsonl"

    def open_part(self, file: BinaryIO) -> PartWriter:
        return _JsonLinesPart(file)

    def __repr__(self) -> str:
        return "JsonLines()"


class _JsonLinesPart:
    def __init__(self, file: BinaryIO) -> None:
        self._file = file

    def add(self, records: list[Any]) -> None:
        try:
            data = _json_lines.encode_lines(records)
        except _ENCODING_ERRORS:
            data = b"".join(_encode_one(r) for r in records)
        self._file.write(data)

    def finish(self) -> None:
        pass


def _encode_one(record: Any) -> bytes:
    try:
        return _json_lines.encode_lines([record])
    except _ENCODING_ERRORS as e:
        raise RecordEncodingError(f"cannot write record {record!r:.200} as JSON: {e}") from e
