"""Leader election by a lease: who may act for a job, decided from what the HA storage holds
and from this process's own clock, apart from the storage that holds it.

A lease is a record per *epoch*: the first leader of a cluster id creates epoch 1, each leader
after it the next, with an exclusive create, so that of two standbys that race for one epoch
exactly one wins. An epoch only grows. The leader of epoch N rewrites its own record every third
of the lease's duration, counting ``renewals`` up; a standby that sees the newest record
unchanged for a whole duration, by its own monotonic clock, takes the next epoch. No clock is
compared across machines: each side measures only time it saw pass itself.

A leader considers itself leader only until a margin before its lease could have run out for a
standby (``LeaderTerm.valid``): a leader that was paused, or cut off from the storage, stops
acting before anyone else starts. A newer epoch in the storage ends a term at once. A standby
on the holder's own host may also take over at once when the holder's process is gone
(``holder_alive`` False): the same command restarted by a supervisor need not wait out the lease
of the process it replaces.

Performs no I/O: the storage is ``lease_store.py``'s, the clock and the process check are the
caller's (``leader_election.py``).
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

RENEWALS_PER_DURATION = 3  # a leader renews every third of its lease's duration
SAFETY_MARGIN = 0.25  # of the duration: a leader stops acting this long before a standby may act


@dataclass(frozen=True)
class Holder:
    """One JobMaster: its process (host, pid and the start time the OS gives it, so that a
    reused pid is not taken for it) and a token of its own."""

    host: str
    pid: int
    process_start: int  # the OS's start time of the process (Linux: clock ticks since boot)
    token: str


@dataclass(frozen=True)
class Lease:
    """The record of one epoch, as the storage holds it."""

    epoch: int
    holder: Holder
    duration_ms: int
    renewals: int = 0  # a new value at each renewal: a standby sees the leader alive by it
    released: bool = False  # the leader ended its term (its job ended, or it stepped down)
    reserved_checkpoint_ids: int = 0  # checkpoint ids below it may have been used in this epoch


class Verdict(enum.Enum):
    HELD = "held"  # a live leader holds it: wait
    FREE = "free"  # take the next epoch


@dataclass(frozen=True)
class Observation:
    verdict: Verdict
    next_epoch: int  # the epoch to create when FREE
    reason: str  # for the standby's console line and the log
    wait_s: float = 0.0  # when HELD: how long until the lease can run out, as seen so far


class LeaseObserver:
    """A standby's view of the newest lease: whether it is held, from when it last changed.

    Call ``observe`` each time the storage was read, with the time it was read (monotonic
    seconds) and, when the holder is on this host, whether its process is alive."""

    def __init__(self) -> None:
        self._seen: tuple[int, int] | None = None  # (epoch, renewals) last seen
        self._since = 0.0  # when it was first seen so

    def observe(self, lease: Lease | None, now: float, holder_alive: bool | None) -> Observation:
        if lease is None:
            return Observation(Verdict.FREE, 1, "no leader yet")
        next_epoch = lease.epoch + 1
        if lease.released:
            return Observation(Verdict.FREE, next_epoch, f"the leader of epoch {lease.epoch} left")
        if holder_alive is False:
            return Observation(
                Verdict.FREE,
                next_epoch,
                f"the leader of epoch {lease.epoch} (pid {lease.holder.pid}) is gone",
            )
        key = (lease.epoch, lease.renewals)
        if key != self._seen:
            self._seen, self._since = key, now
        left = lease.duration_ms / 1000 - (now - self._since)
        if left <= 0:
            return Observation(
                Verdict.FREE,
                next_epoch,
                f"the lease of epoch {lease.epoch} ran out ({lease.duration_ms / 1000:g} s "
                "without a renewal)",
            )
        return Observation(
            Verdict.HELD,
            next_epoch,
            f"epoch {lease.epoch} is held by {lease.holder.host} pid {lease.holder.pid}",
            wait_s=left,
        )


class LeaderTerm:
    """A leader's own view of its lease: whether it may still act, and when to renew.

    Times are monotonic seconds of this process. A renewal counts from when it *started*: the
    write may have reached the storage at any point until it returned."""

    def __init__(self, epoch: int, duration_s: float, acquired_at: float) -> None:
        self.epoch = epoch
        self.duration_s = duration_s
        self._renewed_at = acquired_at  # the start of the last write that succeeded
        self.lost_to: int | None = None  # the newer epoch that ended the term

    def renewed(self, started_at: float) -> None:
        """A renewal that started at ``started_at`` was written."""
        self._renewed_at = max(self._renewed_at, started_at)

    def newer_epoch_seen(self, epoch: int) -> None:
        """The storage holds ``epoch``: if it is newer than this term's, the term is over."""
        if epoch > self.epoch and (self.lost_to is None or epoch > self.lost_to):
            self.lost_to = epoch

    def valid(self, now: float) -> bool:
        """Whether the leader may act now: no newer epoch seen, and its last renewal recent
        enough that no standby can have taken over yet, with a margin for the time between
        this check and the action."""
        if self.lost_to is not None:
            return False
        return now < self._renewed_at + self.duration_s * (1 - SAFETY_MARGIN)

    def renewal_due(self, now: float) -> bool:
        return now >= self._renewed_at + self.duration_s / RENEWALS_PER_DURATION

    def valid_for_s(self, now: float) -> float:
        """How long the term stays valid without another renewal (0 once it is not)."""
        if self.lost_to is not None:
            return 0.0
        return max(0.0, self._renewed_at + self.duration_s * (1 - SAFETY_MARGIN) - now)
