"""Full snapshots of the RocksDB backend, in the key-group format (so any backend restores them).

The synchronous phase creates one iterator per state; each reads the state as it is at that
moment, whatever the task writes later. (Not ``Rdict.snapshot()``: rocksdict 0.3.29's
``Snapshot.items()`` and ``Snapshot.iter()`` drop the snapshot and read the live data.) The
asynchronous phase scans them into sections, then writes the stream.

An iterator keeps its database open, so a backend must be able to stop its snapshots before it
closes: the ``SnapshotGuard`` does that. The iterators live only in the snapshot (and are
reached by index while scanning), so that ``release()``, or the end of the scan, drops them even
if an exception's traceback outlives the scan.

**Threading:** ``SnapshotGuard.register``, ``check_open`` and ``dispose`` on the task thread;
a ``FullSnapshot`` runs once, on a snapshot thread.
"""

from __future__ import annotations

import threading
import weakref

from rocksdict import ReadOptions

from barrierflow.checkpoint.key_group_format import encode_key_groups
from barrierflow.checkpoint.metadata import KeyGroupsHandle
from barrierflow.protocol.key_group_range import KeyGroupRange
from barrierflow.state.backend import SnapshotStreams
from barrierflow.state.backends.rocksdb.key_codec import Cursor, sections_of_rows

BACKEND_NAME = "rocksdb"  # what snapshots record as their writer: registry.py's name of it


class SnapshotGuard:
    """Between a backend and its running snapshots: ``dispose()`` releases those not started,
    stops those running at their next key group, and waits for them. ``lock`` also guards
    whatever else the backend shares with its snapshot threads."""

    def __init__(self, describe: str) -> None:
        self.lock = threading.Condition()
        self._describe = describe  # names the backend in errors
        self._pending: weakref.WeakSet[FullSnapshot] = weakref.WeakSet()
        self._running = 0
        self.disposed = False

    def register(self, snapshot: FullSnapshot) -> None:
        with self.lock:
            self._pending.add(snapshot)

    def start(self, snapshot: FullSnapshot) -> list[Cursor]:
        """The snapshot's cursors, taken to scan them; refused once disposed or run before."""
        with self.lock:
            cursors = snapshot.take_cursors()
            if cursors is None:
                reason = "was disposed" if self.disposed else "already wrote this snapshot"
                raise RuntimeError(f"the RocksDB state backend in {self._describe} {reason}")
            self._pending.discard(snapshot)
            self._running += 1
            return cursors

    def finish(self) -> None:
        with self.lock:
            self._running -= 1
            self.lock.notify_all()

    def check_open(self) -> None:
        if self.disposed:
            raise RuntimeError(f"the RocksDB state backend in {self._describe} was disposed")

    def dispose(self) -> bool:
        """Stops every snapshot; False if it was disposed before."""
        with self.lock:
            if self.disposed:
                return False
            self.disposed = True
            for snapshot in list(self._pending):
                cursors = snapshot.take_cursors()
                if cursors is not None:
                    cursors.clear()  # drops the iterators, which keep the database open
            self._pending.clear()
            while self._running:
                self.lock.wait()
        return True


class FullSnapshot:
    def __init__(
        self,
        guard: SnapshotGuard,
        cursors: list[Cursor],
        read_options: ReadOptions,
        key_group_range: KeyGroupRange,
        types: dict[str, str] | None = None,
    ) -> None:
        """``types``: the declared type of each state, as the snapshot records them."""
        self._guard = guard
        self._types = types or {}
        self._cursors: list[Cursor] | None = cursors
        self._read_options = read_options  # lives as long as the iterators
        self._range = key_group_range
        guard.register(self)

    def take_cursors(self) -> list[Cursor] | None:
        """Hands the cursors over once (under the guard's lock); None afterwards."""
        cursors, self._cursors = self._cursors, None
        return cursors

    def __call__(self, streams: SnapshotStreams) -> list[KeyGroupsHandle]:
        cursors = self._guard.start(self)
        try:
            encoded = encode_key_groups(
                sections_of_rows(cursors, self._guard.check_open), self._range
            )
        finally:
            cursors.clear()
            self._guard.finish()
        return encoded.write(streams.write, BACKEND_NAME, self._types)
