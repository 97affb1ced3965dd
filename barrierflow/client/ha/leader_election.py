"""Leader election for one cluster id: wait as a standby until the lease is free, take the next
epoch, then keep it renewed, and tell whoever acts for the job the moment it may no longer.

The rules are ``lease.py``'s; this module reads and writes the lease files (``ha_files.py``),
keeps the time and looks at the holder's process.

**Threading:** ``acquire`` blocks the caller's thread. Once leader, a daemon thread renews the
lease; ``check``, ``valid`` and ``epoch`` may be called from any thread; ``on_lost`` is called
once, from the renewal thread. **I/O:** the HA storage, and ``/proc`` for the holder's process.
"""

from __future__ import annotations

import logging
import os
import socket
import threading
import time
import uuid
from collections.abc import Callable

from barrierflow.checkpoint.storage_layout import epoch_file, parse_epoch_file
from barrierflow.client.ha.ha_files import HaFiles
from barrierflow.client.ha.lease import (
    RENEWALS_PER_DURATION,
    Holder,
    LeaderTerm,
    Lease,
    LeaseObserver,
    Observation,
    Verdict,
)
from barrierflow.client.ha.records import LeaseRecord, decode, encode
from barrierflow.cluster.process_identity import process_alive, this_process_start
from barrierflow.errors import LeadershipLostError

log = logging.getLogger("barrierflow.ha")

POLL_S = 0.5  # how often a standby reads the lease


class LeaderElection:
    def __init__(
        self,
        files: HaFiles,
        duration_s: float,
        holder: Holder | None = None,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
        holder_alive: Callable[[Holder], bool | None] | None = None,
    ) -> None:
        self._files = files
        self._duration_s = duration_s
        self.holder = holder or this_process()
        self._clock = clock
        self._sleep = sleep
        self._holder_alive = holder_alive or holder_process_alive
        self._term: LeaderTerm | None = None
        self._renewals = 0
        self._reserved_ids = 0  # checkpoint ids below it are reserved (written in the lease)
        self._writing = threading.Lock()  # renewals and reservations write the lease in turn
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._on_lost: Callable[[LeadershipLostError], None] = lambda e: None

    # --- as a standby --------------------------------------------------------------------

    def acquire(self, on_standby: Callable[[Observation], None] = lambda o: None) -> int:
        """Waits until this process leads the cluster id; its epoch. ``on_standby`` hears each
        new holder this process waits for (to say so on the console)."""
        observer = LeaseObserver()
        told: tuple[int, str] | None = None
        while True:
            latest = self.latest()
            now = self._clock()
            alive = None if latest is None else self._holder_alive(latest.holder)
            seen = observer.observe(latest, now, alive)
            if seen.verdict is Verdict.FREE:
                started = self._clock()
                lease = Lease(seen.next_epoch, self.holder, round(self._duration_s * 1000))
                if self._files.create(epoch_file(lease.epoch), self._encode(lease)):
                    self._term = LeaderTerm(lease.epoch, self._duration_s, started)
                    log.info(
                        "Leading cluster %s as epoch %d (%s)",
                        self._files.uri,
                        lease.epoch,
                        seen.reason,
                    )
                    return lease.epoch
                continue  # another standby took that epoch first: look again
            if latest is not None and told != (latest.epoch, latest.holder.token):
                told = (latest.epoch, latest.holder.token)
                on_standby(seen)
            self._sleep(min(POLL_S, max(seen.wait_s, 0.01)))

    def latest(self) -> Lease | None:
        """The lease of the newest epoch, if any epoch was ever taken."""
        epochs = self._epochs()
        if not epochs:
            return None
        name = epoch_file(max(epochs))
        data = self._files.read(name)
        if data is None:  # cannot be: epochs are never deleted
            return None
        record = decode(data, LeaseRecord, f"{self._files.uri}/{name}")
        return record.lease()

    def _epochs(self) -> list[int]:
        names = self._files.list(epoch_file(0).split("/", 1)[0])
        return [e for e in map(parse_epoch_file, names) if e is not None]

    # --- as the leader -------------------------------------------------------------------

    @property
    def epoch(self) -> int:
        if self._term is None:
            raise RuntimeError("not the leader: acquire() first")
        return self._term.epoch

    def valid(self) -> bool:
        """Whether this process may act for the job now."""
        return self._term is not None and self._term.valid(self._clock())

    def check(self, action: str) -> None:
        """Raises ``LeadershipLostError`` unless this process may still do ``action``."""
        term = self._term
        if term is None or not term.valid(self._clock()):
            raise self.lost(action)

    def lost(self, action: str) -> LeadershipLostError:
        """The error that says why this process no longer leads (and so cannot ``action``)."""
        term = self._term
        epoch = 0 if term is None else term.epoch
        if term is not None and term.lost_to is not None:
            why = f"epoch {term.lost_to} took over"
        else:
            why = (
                f"its lease ran out ({self._duration_s:g} s) without a renewal: the process "
                "was paused or cut off from the HA storage"
            )
        return LeadershipLostError(epoch, term.lost_to if term else None, f"{why}; {action}")

    def start_renewing(self, on_lost: Callable[[LeadershipLostError], None]) -> None:
        """Renews the lease every third of its duration until ``release``; calls ``on_lost``
        once if the term ends (a newer epoch, or no renewal in time)."""
        self._on_lost = on_lost
        self._thread = threading.Thread(
            target=self._renew_until_stopped, name="barrierflow-lease", daemon=True
        )
        self._thread.start()

    def _renew_until_stopped(self) -> None:
        term = self._term
        assert term is not None
        interval = self._duration_s / RENEWALS_PER_DURATION
        while not self._stop.wait(min(interval / 3, POLL_S)):
            now = self._clock()
            if term.renewal_due(now):
                self.renew_once()
            if not term.valid(self._clock()):
                if not self._stop.is_set():
                    self._on_lost(self.lost("it stops acting for the job"))
                return

    def renew_once(self) -> bool:
        """One renewal: looks for a newer epoch, then rewrites this epoch's lease. False if
        the term is over or the storage failed (the term then runs out on its own)."""
        term = self._term
        assert term is not None
        started = self._clock()
        try:
            newest = max(self._epochs(), default=term.epoch)
            term.newer_epoch_seen(newest)
            if not term.valid(started):
                return False
            self._write_lease()
        except OSError as e:
            log.warning(
                "Could not renew the lease of epoch %d in %s: %s (valid for %.1f s more)",
                term.epoch,
                self._files.uri,
                e,
                term.valid_for_s(self._clock()),
            )
            return False
        term.renewed(started)
        return True

    def reserve_checkpoint_ids(self, up_to: int) -> None:
        """Writes in the lease that ids below ``up_to`` may be used by this epoch, before any
        is: the next leader starts past them. Raises ``LeadershipLostError`` if no longer the
        leader, ``OSError`` if the storage fails."""
        self.check(f"use checkpoint ids up to {up_to - 1}")
        with self._writing:
            self._reserved_ids = max(self._reserved_ids, up_to)
        self._write_lease()

    def _write_lease(self, released: bool = False) -> None:
        term = self._term
        assert term is not None
        with self._writing:
            self._renewals += 1
            lease = Lease(
                term.epoch,
                self.holder,
                round(self._duration_s * 1000),
                self._renewals,
                released,
                self._reserved_ids,
            )
            self._files.replace(epoch_file(term.epoch), self._encode(lease))

    def release(self) -> None:
        """Ends the term: stops renewing and, if still leader, marks the lease released, so
        that the next program of the cluster id takes over at once."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(self._duration_s)
        term = self._term
        if term is None or not term.valid(self._clock()):
            return
        try:
            self._write_lease(released=True)
        except OSError as e:
            log.warning("Could not release the lease of epoch %d: %s", term.epoch, e)
        self._term = None

    def _encode(self, lease: Lease) -> bytes:
        return encode(LeaseRecord.of(lease, written_at_ms=int(time.time() * 1000)))


# --- this process, and the holder's ----------------------------------------------------------


def this_process() -> Holder:
    return Holder(socket.gethostname(), os.getpid(), this_process_start(), uuid.uuid4().hex)


def holder_process_alive(holder: Holder) -> bool | None:
    """Whether the holder's process still runs (None: on another host, it cannot be known)."""
    return process_alive(holder.host, holder.pid, holder.process_start)
