"""The job's exception history on storage: ``<checkpoint-dir>/<job-id>/_exceptions.json``, so
that ``barrierflow exceptions`` shows the failures of a job's attempts after its JobMaster (and
its REST API) is gone.

The file is JSON (msgspec, decoded only into these types; never pickle)::

    {"format_version": 1, "checksum": "<BLAKE2b-128 hex of the exceptions array's bytes>",
     "exceptions": [{"timestamp_ms": ..., "attempt": ..., "error": ..., "traceback": ...}]}

oldest first, as ``JobStatusSnapshot.exceptions``. Another format version, a checksum that does
not match or a body that does not decode is refused with ``CorruptCheckpointError`` naming the
file: a damaged history must not be shown as the job's.

**I/O:** ``encode_exceptions`` and ``decode_exceptions`` perform none; ``write_exceptions`` and
``read_exceptions`` read and write the file through ``CheckpointDirectory`` (whole, never half).
**Threading:** any thread; the JobMaster writes from its own, after each failed attempt.
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Sequence

import msgspec

from barrierflow.checkpoint import storage_layout as layout
from barrierflow.checkpoint.storage import CheckpointDirectory
from barrierflow.cluster.job_status import JobException
from barrierflow.errors import CorruptCheckpointError

FORMAT_VERSION = 1

log = logging.getLogger("barrierflow")


class _StoredException(msgspec.Struct, frozen=True):
    """The file's record: its own type, so that a change to ``JobException`` cannot change
    the format unnoticed."""

    timestamp_ms: int
    attempt: int
    error: str
    traceback: str


class _Header(msgspec.Struct):
    format_version: int


class _File(msgspec.Struct):
    format_version: int
    checksum: str
    exceptions: msgspec.Raw  # checksummed as written, byte for byte


_header_decoder = msgspec.json.Decoder(_Header)
_file_decoder = msgspec.json.Decoder(_File)
_exceptions_decoder = msgspec.json.Decoder(list[_StoredException])


def _checksum(data: bytes | memoryview) -> str:
    return hashlib.blake2b(data, digest_size=16).hexdigest()


def encode_exceptions(exceptions: Sequence[JobException]) -> bytes:
    """The file's bytes for ``exceptions`` (oldest first)."""
    body = msgspec.json.encode(
        [_StoredException(e.timestamp_ms, e.attempt, e.error, e.traceback) for e in exceptions]
    )
    return msgspec.json.encode(_File(FORMAT_VERSION, _checksum(body), msgspec.Raw(body)))


def decode_exceptions(data: bytes, path: str = layout.EXCEPTIONS_FILE) -> tuple[JobException, ...]:
    """The exceptions in a file's bytes, oldest first; ``path`` names the file in errors.

    Raises ``CorruptCheckpointError`` for a file of another format version, or a damaged one.
    """
    try:
        version = _header_decoder.decode(data).format_version
    except msgspec.DecodeError as e:
        raise CorruptCheckpointError(
            path, f"not an exception history ({e}); it was damaged or is not barrierflow's"
        ) from e
    if version != FORMAT_VERSION:
        raise CorruptCheckpointError(
            path,
            f"exception history of format version {version}; this barrierflow reads version "
            f"{FORMAT_VERSION}: read it with the barrierflow version that ran the job",
        )
    try:
        stored = _file_decoder.decode(data)
        if _checksum(stored.exceptions) != stored.checksum:
            raise CorruptCheckpointError(
                path, "checksum mismatch: the exception history was changed or damaged"
            )
        records = _exceptions_decoder.decode(stored.exceptions)
    except msgspec.DecodeError as e:
        raise CorruptCheckpointError(path, f"damaged exception history: {e}") from e
    return tuple(JobException(r.timestamp_ms, r.attempt, r.error, r.traceback) for r in records)


def write_exceptions(
    storage: CheckpointDirectory | None, exceptions: Sequence[JobException]
) -> None:
    """Replaces the job's exception history with ``exceptions`` (oldest first); nothing for a
    job without a checkpoint directory (``storage`` None).

    A storage error is logged, not raised: the history is for people reading it later, and
    must not fail the job (or its restart) that it describes.
    """
    if storage is None:
        return
    try:
        storage.write_small_file(layout.EXCEPTIONS_FILE, encode_exceptions(exceptions))
    except OSError as e:
        log.warning(
            "Could not write the exception history %s: %s; `barrierflow exceptions` will not "
            "show the latest failure (the job's log has it)",
            storage.absolute(layout.EXCEPTIONS_FILE),
            e,
        )


def read_exceptions(storage: CheckpointDirectory) -> tuple[JobException, ...] | None:
    """The job's exceptions, oldest first; None when it recorded none (no file).

    Raises ``CorruptCheckpointError`` for a damaged file or one of another format version.
    """
    data = storage.read_small_file(layout.EXCEPTIONS_FILE)
    if data is None:
        return None
    return decode_exceptions(data, storage.absolute(layout.EXCEPTIONS_FILE))
