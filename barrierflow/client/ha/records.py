"""What the HA storage holds for a cluster id, as versioned JSON decoded only into these types:
the lease of each epoch, the job (its id and name, its operators, the checkpoint storage it
writes, how it started and whether it ended), and the checkpoint id counter.

A file of a format version this barrierflow does not know, or that does not decode, is refused
with an error naming it: a leader never acts on a record it could not read. Performs no I/O.
"""

from __future__ import annotations

import enum
from typing import TypeVar

import msgspec

from barrierflow.client.ha.lease import Holder, Lease

FORMAT_VERSION = 1


class UnreadableRecordError(Exception):
    """A file of the HA storage that is damaged, or of a format this barrierflow does not know."""

    def __init__(self, where: str, reason: str) -> None:
        super().__init__(
            f"the high-availability record {where} cannot be read: {reason}. No leader acts "
            "on a record it cannot read: restore the file, or use a new "
            "high-availability.cluster-id"
        )
        self.where = where


class _Versioned(msgspec.Struct, frozen=True, kw_only=True):
    format_version: int = FORMAT_VERSION


class LeaseRecord(_Versioned, frozen=True, kw_only=True):
    epoch: int
    host: str
    pid: int
    process_start: int
    token: str
    duration_ms: int
    renewals: int = 0
    released: bool = False
    reserved_checkpoint_ids: int = 0  # ids below it may have been used by this epoch
    written_at_ms: int = 0  # this host's wall clock: for people, never for the lease's rules

    @classmethod
    def of(cls, lease: Lease, written_at_ms: int) -> LeaseRecord:
        h = lease.holder
        return cls(
            epoch=lease.epoch,
            host=h.host,
            pid=h.pid,
            process_start=h.process_start,
            token=h.token,
            duration_ms=lease.duration_ms,
            renewals=lease.renewals,
            released=lease.released,
            reserved_checkpoint_ids=lease.reserved_checkpoint_ids,
            written_at_ms=written_at_ms,
        )

    def lease(self) -> Lease:
        holder = Holder(self.host, self.pid, self.process_start, self.token)
        return Lease(
            self.epoch,
            holder,
            self.duration_ms,
            self.renewals,
            self.released,
            self.reserved_checkpoint_ids,
        )


class JobState(enum.Enum):
    RUNNING = "RUNNING"
    FINISHED = "FINISHED"
    CANCELED = "CANCELED"
    FAILED = "FAILED"

    @property
    def ended(self) -> bool:
        return self is not JobState.RUNNING


class JobRecord(_Versioned, frozen=True, kw_only=True):
    """The job a cluster id runs, across its drivers."""

    cluster_id: str
    job_id: str
    job_name: str
    operator_uids: list[str]
    checkpoint_storage: str | None = None  # as the program set it (None: the default one)
    started_from: str | None = None  # the savepoint or checkpoint given to -s
    state: JobState = JobState.RUNNING
    epoch: int = 0  # of the leader that wrote this record last
    created_ms: int = 0
    updated_ms: int = 0
    failure: str | None = None  # how it ended, when it failed


class CheckpointIdCounter(_Versioned, frozen=True, kw_only=True):
    """The next checkpoint id any leader of the cluster id may use (Flink's
    ``CheckpointIDCounter``): each leader starts past every id an earlier one may have used."""

    next_id: int
    epoch: int


V = TypeVar("V", bound=_Versioned)


def encode(record: _Versioned) -> bytes:
    return msgspec.json.encode(record)


def decode(data: bytes, kind: type[V], where: str) -> V:
    """``data`` as ``kind``; an ``UnreadableRecordError`` naming ``where`` if it cannot be."""
    try:
        version = msgspec.json.decode(data, type=_Versioned).format_version
    except (msgspec.DecodeError, msgspec.ValidationError) as e:
        raise UnreadableRecordError(where, f"not a {kind.__name__}: {e}") from e
    if version != FORMAT_VERSION:
        raise UnreadableRecordError(
            where,
            f"format version {version}, which this barrierflow does not know (it reads "
            f"{FORMAT_VERSION}): written by a newer barrierflow?",
        )
    try:
        return msgspec.json.decode(data, type=kind)
    except (msgspec.DecodeError, msgspec.ValidationError) as e:
        raise UnreadableRecordError(where, f"not a {kind.__name__}: {e}") from e
