"""Barrier handling of one input gate, as a pure state machine.

The task feeds it what arrives on its input channels (barriers, cancel markers, end of
partition) and executes the actions it returns: block a channel, take the snapshot and forward
the barrier, unblock, or decline a checkpoint. Two modes:

- ``ExactlyOnceBarrierHandler`` (aligned): a channel that delivered barrier N is blocked until
  barrier N arrived on every open channel; then the task snapshots and all channels unblock.
- ``AtLeastOnceBarrierHandler``: never blocks; the task snapshots when the last barrier of N
  arrives, so records that overtook it on early channels are in the snapshot *and* replayed.

Performs no I/O.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from barrierflow.protocol.checkpoint_barrier import CheckpointBarrier
from barrierflow.protocol.messages import DeclineReason


@dataclass(frozen=True, slots=True)
class BlockChannel:
    channel: int


@dataclass(frozen=True, slots=True)
class SnapshotNow:
    """Take the snapshot of checkpoint N and forward its barrier downstream."""

    barrier: CheckpointBarrier
    alignment_started_ns: int


@dataclass(frozen=True, slots=True)
class UnblockAll:
    pass


@dataclass(frozen=True, slots=True)
class Decline:
    checkpoint_id: int
    reason: DeclineReason


Action = BlockChannel | SnapshotNow | UnblockAll | Decline


@dataclass(slots=True)
class _Alignment:
    barrier: CheckpointBarrier
    started_ns: int
    arrived: set[int] = field(default_factory=set)


class ExactlyOnceBarrierHandler:
    """Aligned barriers: states are *waiting* (no alignment) and *aligning N* (blocked set)."""

    def __init__(self, num_channels: int) -> None:
        self._open = set(range(num_channels))
        self._alignment: _Alignment | None = None
        self._latest_seen = -1

    @property
    def aligning_checkpoint_id(self) -> int | None:
        return self._alignment.barrier.checkpoint_id if self._alignment else None

    def on_barrier(self, channel: int, barrier: CheckpointBarrier, now_ns: int) -> list[Action]:
        cid = barrier.checkpoint_id
        if cid < self._latest_seen or (cid == self._latest_seen and self._alignment is None):
            return []  # late barrier of a checkpoint already completed or aborted here
        actions: list[Action] = []
        if self._alignment is not None and cid > self._alignment.barrier.checkpoint_id:
            actions += self._abort(DeclineReason.SUBSUMED)
        self._latest_seen = cid
        if self._alignment is None:
            self._alignment = _Alignment(barrier, now_ns)
        self._alignment.arrived.add(channel)
        if self._open <= self._alignment.arrived:
            return actions + self._complete()
        return [*actions, BlockChannel(channel)]

    def on_cancel_marker(self, checkpoint_id: int) -> list[Action]:
        """Aborts the alignment of ``checkpoint_id`` or an older one; a first marker of a newer
        checkpoint declines it here too, so the task forwards the marker downstream."""
        actions: list[Action] = []
        aligning = self.aligning_checkpoint_id
        if aligning is not None and aligning <= checkpoint_id:
            actions += self._abort(
                DeclineReason.CANCELED if aligning == checkpoint_id else DeclineReason.SUBSUMED
            )
            if aligning == checkpoint_id:
                return actions
        if checkpoint_id > self._latest_seen:
            self._latest_seen = checkpoint_id
            actions.append(Decline(checkpoint_id, DeclineReason.CANCELED))
        return actions

    def on_end_of_partition(self, channel: int) -> list[Action]:
        """A finished channel sends no more barriers: stop waiting for it."""
        self._open.discard(channel)
        if self._alignment is None:
            return []
        self._alignment.arrived.discard(channel)
        if self._open <= self._alignment.arrived:
            return self._complete()
        return []

    def _complete(self) -> list[Action]:
        assert self._alignment is not None
        alignment, self._alignment = self._alignment, None
        return [SnapshotNow(alignment.barrier, alignment.started_ns), UnblockAll()]

    def _abort(self, reason: DeclineReason) -> list[Action]:
        assert self._alignment is not None
        cid = self._alignment.barrier.checkpoint_id
        self._alignment = None
        return [Decline(cid, reason), UnblockAll()]


class AtLeastOnceBarrierHandler:
    """Unaligned counting of barriers: never blocks; several checkpoints may be in flight."""

    def __init__(self, num_channels: int) -> None:
        self._open = set(range(num_channels))
        self._pending: dict[int, _Alignment] = {}
        self._latest_completed = -1
        self._aborted: set[int] = set()  # canceled here: their late barriers are ignored

    @property
    def aligning_checkpoint_id(self) -> int | None:
        return min(self._pending) if self._pending else None

    def on_barrier(self, channel: int, barrier: CheckpointBarrier, now_ns: int) -> list[Action]:
        cid = barrier.checkpoint_id
        if cid <= self._latest_completed or cid in self._aborted:
            return []
        pending = self._pending.setdefault(cid, _Alignment(barrier, now_ns))
        pending.arrived.add(channel)
        if self._open <= pending.arrived:
            return self._complete(cid)
        return []

    def on_cancel_marker(self, checkpoint_id: int) -> list[Action]:
        if checkpoint_id <= self._latest_completed or checkpoint_id in self._aborted:
            return []
        self._pending.pop(checkpoint_id, None)
        self._aborted.add(checkpoint_id)
        return [Decline(checkpoint_id, DeclineReason.CANCELED)]

    def on_end_of_partition(self, channel: int) -> list[Action]:
        self._open.discard(channel)
        actions: list[Action] = []
        for cid in sorted(self._pending):
            if cid in self._pending and self._open <= self._pending[cid].arrived:
                actions += self._complete(cid)
        return actions

    def _complete(self, cid: int) -> list[Action]:
        actions: list[Action] = [
            Decline(older, DeclineReason.SUBSUMED) for older in sorted(self._pending) if older < cid
        ]
        pending = self._pending.pop(cid)
        self._pending = {k: v for k, v in self._pending.items() if k > cid}
        self._latest_completed = cid
        self._aborted = {a for a in self._aborted if a > cid}
        return [*actions, SnapshotNow(pending.barrier, pending.started_ns)]


BarrierHandler = ExactlyOnceBarrierHandler | AtLeastOnceBarrierHandler
