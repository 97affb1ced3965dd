"""Committables, as the sink framework keeps them: with the checkpoint that prepared them and
the subtask that produced them, in the checkpoint until committed; and the one rule of which
subtask answers for which old subtask's committables and leftovers after a rescale.
Performs no I/O.

A committable is a connector's value (a transaction id, a pending file name) that says how to
make what a writer prepared at a barrier visible; its sink's ``committable_codec`` gives its
bytes (``versioned_codec.py``).
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Any

from barrierflow.connectors.interfaces.versioned_codec import (
    Stored,
    VersionedCodec,
    decode_stored,
    encode_stored,
)

END_OF_INPUT = 0  # the checkpoint id of what a job without checkpointing commits at its end


def owner_of(old_subtask: int, parallelism: int) -> int:
    """The subtask that commits old subtask ``old_subtask``'s committables, and cleans up what
    it left, at ``parallelism``: every subtask applies the same rule, so no two race on one."""
    return old_subtask % parallelism


@dataclass(frozen=True)
class Committable:
    """What ``SinkWriter.prepare_commit`` returned at checkpoint ``checkpoint_id`` in subtask
    ``subtask``: ``data``, the connector's own."""

    checkpoint_id: int
    subtask: int
    data: Any


@dataclass(frozen=True)
class Recovery:
    """What the framework knows when a sink subtask starts, for its committer's clean-up
    (``Committer.abort_lingering``): the parallelism of the restored snapshot (None: a fresh
    start), and every committable it names (all subtasks'), which are committed by then."""

    subtask: int
    parallelism: int
    previous_parallelism: int | None = None
    committables: tuple[Committable, ...] = ()

    def owns(self, old_subtask: int) -> bool:
        """Whether this subtask answers for what ``old_subtask`` (of any earlier attempt) left."""
        return owner_of(old_subtask, self.parallelism) == self.subtask

    def owned_subtasks(self) -> range:
        """The old subtasks it answers for, of the restored checkpoint's parallelism and of the
        current one (earlier attempts ran at either)."""
        return range(
            self.subtask, max(self.previous_parallelism or 0, self.parallelism), self.parallelism
        )


class JobEndFate(enum.Enum):
    """What becomes of a transaction a sink left prepared when its job ended for good."""

    COMMIT = "commit"  # a completed checkpoint named it: its output is part of the job's
    ROLL_BACK = "roll back"  # no completed checkpoint names it: nothing will ever commit it


def fate_at_job_end(prepared_for: int, last_completed: int | None) -> JobEndFate:
    """The fate of a transaction prepared at the barrier of checkpoint ``prepared_for`` once
    the job ended for good (its restart strategy gave up, or it refused to start), with
    ``last_completed`` the newest checkpoint the job completed or restored (None: none).

    A checkpoint names only transactions prepared for it or before it (an aborted checkpoint's
    are carried into the next snapshot), and each attempt's start rolled back what earlier
    attempts left unnamed, so: prepared up to ``last_completed``, a completed checkpoint named
    it, and it is committed as a restore would, never rolled back; prepared after, none does.
    """
    if last_completed is not None and prepared_for <= last_completed:
        return JobEndFate.COMMIT
    return JobEndFate.ROLL_BACK


class PendingCommittables:
    """Committables prepared at barriers and not yet known to be committed. A checkpoint that
    was aborted keeps its committables here: the next one to complete commits them (they are in
    its snapshot too)."""

    def __init__(self, restored: list[Committable] | None = None) -> None:
        self._pending: list[Committable] = list(restored or [])

    def add(self, checkpoint_id: int, subtask: int, committables: list[Any]) -> None:
        self._pending += [Committable(checkpoint_id, subtask, c) for c in committables]

    def up_to(self, checkpoint_id: int) -> list[Committable]:
        return [c for c in self._pending if c.checkpoint_id <= checkpoint_id]

    def drop_up_to(self, checkpoint_id: int) -> None:
        self._pending = [c for c in self._pending if c.checkpoint_id > checkpoint_id]

    def all(self) -> list[Committable]:
        return list(self._pending)

    def __bool__(self) -> bool:
        return bool(self._pending)


def to_state(committables: list[Committable], codec: VersionedCodec[Any]) -> list[dict[str, Any]]:
    """Entries of operator state: one per checkpoint and subtask, each committable as its
    codec stores it (``[version, bytes]``)."""
    entries: dict[tuple[int, int], list[Stored]] = {}
    for c in committables:
        entries.setdefault((c.checkpoint_id, c.subtask), []).append(encode_stored(codec, c.data))
    return [
        {"checkpoint_id": cid, "subtask": subtask, "committables": stored}
        for (cid, subtask), stored in entries.items()
    ]


def from_state(entries: list[dict[str, Any]], codec: VersionedCodec[Any]) -> list[Committable]:
    """The committables of ``to_state``'s entries."""
    return [
        Committable(checkpoint_id, subtask, decode_stored(codec, stored))
        for checkpoint_id, subtask, stored in stored_in(entries)
    ]


def stored_in(entries: list[dict[str, Any]]) -> list[tuple[int, int, Stored]]:
    """(checkpoint id, subtask, the committable as stored) of each committable of
    ``to_state``'s entries, not decoded (a sink that cannot read them need not). An entry an
    earlier barrierflow wrote names no subtask: each of its committables (plain dicts then)
    names its own, or it is 0."""
    return [
        (e["checkpoint_id"], _subtask(e, stored), stored)
        for e in entries
        for stored in e["committables"]
    ]


def _subtask(entry: dict[str, Any], stored: Stored) -> int:
    if "subtask" in entry:
        subtask: int = entry["subtask"]
        return subtask
    return stored.get("subtask", 0) if isinstance(stored, dict) else 0
