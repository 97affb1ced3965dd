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


class SimpleStringEncoder:
    """PyFlink's ``Encoder.simple_string_encoder()``: each record as ``str(record)`` and a
    newline, in a charset."""

    suffix = ""

    def __init__(self, charset: str = "UTF-8") -> None:
        try:
            "".encode(charset)
        except LookupError:
            raise ValueError(f"simple_string_encoder(): unknown charset {charset!r}") from None
        self.charset = charset

    def open_part(self, file: BinaryIO) -> PartWriter:
        return _StringPart(file, self.charset)

    def __repr__(self) -> str:
        return f"Encoder.simple_string_encoder({self.charset!r})"


class _StringPart:
    def __init__(self, file: BinaryIO, charset: str) -> None:
        self._file = file
        self._charset = charset

    def add(self, records: list[Any]) -> None:
        text = "".join(f"{r}\n" for r in records)
        try:
            self._file.write(text.encode(self._charset))
        except UnicodeEncodeError as e:
            bad = next(r for r in records if not _encodes(f"{r}\n", self._charset))
            raise RecordEncodingError(
                f"record {bad!r:.200} cannot be written in {self._charset}: {e.reason}"
            ) from None

    def finish(self) -> None:
        pass


def _encodes(text: str, charset: str) -> bool:
    try:
        text.encode(charset)
    except UnicodeEncodeError:
        return False
    return True


class Encoder:
    """PyFlink's row encoders, for ``FileSink.for_row_format(path, encoder)``."""

    @staticmethod
    def simple_string_encoder(charset_name: str = "UTF-8") -> SimpleStringEncoder:
        return SimpleStringEncoder(charset_name)
