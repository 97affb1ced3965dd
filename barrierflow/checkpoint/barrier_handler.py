"""Barrier handling of one input gate, as a pure state machine.

The task feeds it what arrives on its input channels (barriers, cancel markers, end of
partition) and the passing of time, and executes the actions it returns: block a channel, take
the snapshot and forward the barrier, record channel state, unblock, or decline a checkpoint.

``ExactlyOnceBarrierHandler`` takes each checkpoint as its options say:

- **aligned**: a channel that delivered barrier N is blocked until barrier N arrived on every
  open channel; then the task snapshots and all channels unblock;
- **unaligned**: barriers travel as priority events; the task snapshots at the *first* barrier
  of N and forwards it at once, every channel keeps flowing, and the buffers that precede
  barrier N on each channel become N's channel state: those queued before the barrier when it
  arrives, and, on a channel without barrier N yet, every buffer taken until it comes;
- **aligned with a timeout**: aligned, until the alignment has lasted longer than the timeout,
  counted from the checkpoint's start (its barrier's timestamp, as Flink does), or a barrier
  arrives as a priority event (its producer's timeout passed): then unaligned, for the channels
  still without barrier N (the blocked ones unblock: what they queued follows the barrier).

A newer barrier, or a cancel marker, declines the checkpoint being taken.
``AtLeastOnceBarrierHandler`` never blocks; the task snapshots when the last barrier of N
arrives, so records that overtook it on early channels are in the snapshot *and* replayed.

Times are wall-clock nanoseconds (``time.time_ns()``), compared with barrier timestamps.
Performs no I/O.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from barrierflow.protocol.checkpoint_barrier import Alignment, CheckpointBarrier, DeclineReason


@dataclass(frozen=True, slots=True)
class BlockChannel:
    channel: int


@dataclass(frozen=True, slots=True)
class SnapshotNow:
    """Take the snapshot of checkpoint N and forward its barrier downstream (as a priority
    event, overtaking the output buffers, if ``unaligned``)."""

    barrier: CheckpointBarrier
    alignment_started_ns: int
    unaligned: bool = False


@dataclass(frozen=True, slots=True)
class CaptureChannels:
    """Record every buffer taken from ``channels`` from now on as channel state of N (each
    until its barrier N arrives)."""

    checkpoint_id: int
    channels: frozenset[int]


@dataclass(frozen=True, slots=True)
class EndChannelCapture:
    """Barrier N arrived on ``channel``: the buffers queued before it are channel state of N
    too, and nothing after it."""

    checkpoint_id: int
    channel: int


@dataclass(frozen=True, slots=True)
class InputStateComplete:
    """Every open channel delivered barrier N: N's input channel state is complete."""

    checkpoint_id: int


@dataclass(frozen=True, slots=True)
class UnblockAll:
    pass


@dataclass(frozen=True, slots=True)
class Decline:
    """Decline checkpoint N (and drop what was recorded of its channel state)."""

    checkpoint_id: int
    reason: DeclineReason


Action = (
    BlockChannel
    | SnapshotNow
    | CaptureChannels
    | EndChannelCapture
    | InputStateComplete
    | UnblockAll
    | Decline
)


@dataclass(slots=True)
class _Alignment:
    barrier: CheckpointBarrier
    started_ns: int
    arrived: set[int] = field(default_factory=set)
    unaligned: bool = False  # the snapshot was taken unaligned: channels are being recorded


class ExactlyOnceBarrierHandler:
    """States: *waiting* (no checkpoint), *aligning N* (blocked channels), *recording N* (the
    unaligned snapshot was taken; channels without barrier N are recorded)."""

    def __init__(self, num_channels: int) -> None:
        self._open = set(range(num_channels))
        self._alignment: _Alignment | None = None
        self._latest_seen = -1

    @property
    def aligning_checkpoint_id(self) -> int | None:
        return self._alignment.barrier.checkpoint_id if self._alignment else None

    def on_barrier(
        self, channel: int, barrier: CheckpointBarrier, now_ns: int, priority: bool = False
    ) -> list[Action]:
        """``priority``: the barrier overtook the buffers queued on its channel."""
        cid = barrier.checkpoint_id
        if cid < self._latest_seen or (cid == self._latest_seen and self._alignment is None):
            return []  # late barrier of a checkpoint already completed or aborted here
        actions: list[Action] = []
        if self._alignment is not None and cid > self._alignment.barrier.checkpoint_id:
            actions += self._abort(DeclineReason.SUBSUMED)
        self._latest_seen = cid
        if self._alignment is None:
            self._alignment = _Alignment(barrier, now_ns)
        alignment = self._alignment
        alignment.arrived.add(channel)
        if alignment.unaligned:
            return [*actions, EndChannelCapture(cid, channel), *self._input_complete()]
        mode = barrier.options.alignment
        deadline = alignment.barrier.timeout_deadline_ns
        if mode is Alignment.UNALIGNED or (
            deadline is not None and (priority or now_ns > deadline)
        ):
            return actions + self._go_unaligned(channel)
        if self._open <= alignment.arrived:
            return actions + self._complete()
        return [*actions, BlockChannel(channel)]

    def on_alignment_timer(self, now_ns: int) -> list[Action]:
        """Call while aligning: switches to unaligned once the alignment timed out."""
        alignment = self._alignment
        if alignment is None or alignment.unaligned:
            return []
        deadline = alignment.barrier.timeout_deadline_ns
        if deadline is None or now_ns <= deadline:
            return []
        return self._go_unaligned(None)

    def on_cancel_marker(self, checkpoint_id: int) -> list[Action]:
        """Aborts the checkpoint ``checkpoint_id`` or an older one being taken; a first marker
        of a newer checkpoint declines it here too, so the task forwards the marker."""
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
        """A finished channel sends no more barriers: stop waiting for it (a recorded one has
        nothing queued: all it sent was taken before its end)."""
        self._open.discard(channel)
        alignment = self._alignment
        if alignment is None:
            return []
        alignment.arrived.discard(channel)
        if alignment.unaligned:
            return self._input_complete()
        if self._open <= alignment.arrived:
            return self._complete()
        return []

    def _go_unaligned(self, channel: int | None) -> list[Action]:
        """The snapshot now; the channels without barrier N are recorded until it comes."""
        alignment = self._alignment
        assert alignment is not None
        cid = alignment.barrier.checkpoint_id
        blocked = alignment.arrived - {channel} if channel is not None else set(alignment.arrived)
        alignment.unaligned = True
        actions: list[Action] = [SnapshotNow(alignment.barrier, alignment.started_ns, True)]
        if channel is not None:
            actions.append(EndChannelCapture(cid, channel))
        if blocked:
            actions.append(UnblockAll())  # they queued what follows barrier N: not recorded
        recorded = frozenset(self._open - alignment.arrived)
        if recorded:
            actions.append(CaptureChannels(cid, recorded))
        return actions + self._input_complete()

    def _input_complete(self) -> list[Action]:
        alignment = self._alignment
        assert alignment is not None
        if not self._open <= alignment.arrived:
            return []
        self._alignment = None
        return [InputStateComplete(alignment.barrier.checkpoint_id)]

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

    def on_barrier(
        self, channel: int, barrier: CheckpointBarrier, now_ns: int, priority: bool = False
    ) -> list[Action]:
        cid = barrier.checkpoint_id
        if cid <= self._latest_completed or cid in self._aborted:
            return []
        pending = self._pending.setdefault(cid, _Alignment(barrier, now_ns))
        pending.arrived.add(channel)
        if self._open <= pending.arrived:
            return self._complete(cid)
        return []

    def on_alignment_timer(self, now_ns: int) -> list[Action]:
        return []  # nothing is ever blocked

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
