"""FileSink: exactly-once JSON Lines files by two-phase commit.

Lifecycle of a part file of subtask *s*::

    .part-<s>-<uuid>.inprogress   being written (hidden)
    .part-<s>-<uuid>.pending      closed at a barrier, recorded in the checkpoint (hidden)
    part-<s>-<checkpoint>-<uuid>.jsonl   committed once the checkpoint completed (visible)

Only committed files are visible: readers skip names starting with "." or "_". Commit is a
rename and is idempotent: a committable whose final file exists is done. A committable names
its directory, so that a job restored with another output directory (from a savepoint, say)
still commits, or finds committed, what the snapshot recorded, where it was written.
"""

from __future__ import annotations

import os
import uuid
from typing import Any

import msgspec

from barrierflow.connectors.sink import SinkWriter

_json_lines = msgspec.json.Encoder()
_ENCODING_ERRORS = (TypeError, ValueError, OverflowError, RecursionError, msgspec.EncodeError)


class RecordEncodingError(ValueError):
    """A record the sink cannot write as JSON."""


class FileSink:
    def __init__(self, directory: str) -> None:
        if not isinstance(directory, str) or not directory:
            raise ValueError(f"FileSink needs a directory, got {directory!r}")
        self.directory = directory.removeprefix("file://")

    def create_writer(self, subtask: int, attempt: int) -> SinkWriter:
        return FileSinkWriter(self.directory, subtask)

    def __repr__(self) -> str:
        return f"FileSink({self.directory!r})"


class FileSinkWriter:
    def __init__(self, directory: str, subtask: int) -> None:
        os.makedirs(directory, exist_ok=True)
        self._dir = directory
        self._subtask = subtask
        self._file = None
        self._name: str | None = None

    def write(self, records: list[Any]) -> None:
        if not records:
            return
        try:
            data = _json_lines.encode_lines(records)
        except _ENCODING_ERRORS:
            data = b"".join(self._encode_one(r) for r in records)
        if self._file is None:
            self._name = f".part-{self._subtask}-{uuid.uuid4().hex}"
            path = os.path.join(self._dir, self._name + ".inprogress")
            self._file = open(path, "wb")  # noqa: SIM115 - open across calls until the barrier
        self._file.write(data)

    @staticmethod
    def _encode_one(record: Any) -> bytes:
        try:
            return _json_lines.encode_lines([record])
        except _ENCODING_ERRORS as e:
            raise RecordEncodingError(
                f"FileSink cannot write record {record!r:.200} as JSON: {e}"
            ) from e

    def prepare_commit(self, checkpoint_id: int) -> list[dict]:
        if self._file is None:
            return []
        self._file.flush()
        os.fsync(self._file.fileno())
        self._file.close()
        self._file = None
        base = os.path.join(self._dir, self._name)
        os.replace(base + ".inprogress", base + ".pending")
        final = f"part-{self._subtask}-{max(checkpoint_id, 0):06d}-{self._name[-12:]}.jsonl"
        return [{"dir": self._dir, "pending": self._name + ".pending", "final": final}]

    def commit(self, committables: list[dict]) -> None:
        for c in committables:
            directory = c.get("dir", self._dir)  # no "dir": written before committables named it
            pending = os.path.join(directory, c["pending"])
            final = os.path.join(directory, c["final"])
            if os.path.exists(final):
                continue
            try:
                os.replace(pending, final)
            except FileNotFoundError:
                if os.path.exists(final):
                    continue  # committed concurrently by another subtask after a rescale
                raise RuntimeError(
                    f"FileSink cannot commit {c['final']}: neither it nor its pending file "
                    f"{c['pending']} exists in {directory}; files were removed by hand?"
                ) from None

    def recover(self, committables: list[dict], parallelism: int) -> None:
        """``committables``: those of *every* subtask of the restored checkpoint (union state),
        so that each is committed before any subtask deletes leftovers by file name."""
        self.commit(committables)
        for name in os.listdir(self._dir):
            if not name.startswith(".part-"):
                continue
            owner = int(name.split("-", 2)[1])
            if owner == self._subtask or (self._subtask == 0 and owner >= parallelism):
                os.remove(os.path.join(self._dir, name))

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None


class DiscardingSink:
    """Drops every record; for benchmarks and tests of the pipeline alone."""

    def create_writer(self, subtask: int, attempt: int) -> SinkWriter:
        return _DiscardingWriter()


class _DiscardingWriter:
    def write(self, records: list[Any]) -> None:
        pass

    def prepare_commit(self, checkpoint_id: int) -> list[dict]:
        return []

    def commit(self, committables: list[dict]) -> None:
        pass

    def recover(self, committables: list[dict], parallelism: int) -> None:
        pass

    def close(self) -> None:
        pass
