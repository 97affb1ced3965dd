"""The JobMaster's storage I/O thread: runs the checkpoint coordinator's storage work in order,
off the supervising thread, and posts each ``done`` back into the JobMaster's mailbox.

**Threading:** ``run`` from the JobMaster's thread; the work on this module's one thread;
``drain`` and ``close`` from the JobMaster's thread. **Lifecycle:** started at construction;
``drain`` before an attempt starts (a sweep must not run while new tasks upload) and when the
job ends (so ``_metadata`` and the history are on storage before ``execute`` returns);
``close`` last.
"""

from __future__ import annotations

import functools
import logging
import threading
import time
from collections import deque
from collections.abc import Callable

from barrierflow.coordination.storage_io import Done

log = logging.getLogger("barrierflow.jobmaster")

_SLOW_REPORT_S = 10.0


class StorageIoThread:
    def __init__(self, post: Callable[[Callable[[], None]], object]) -> None:
        """``post``: puts a callable into the JobMaster's mailbox."""
        self._post = post
        self._work: deque[tuple[Callable[[], object], Done | None]] = deque()
        self._busy = False
        self._closed = False
        self._changed = threading.Condition()
        self._thread = threading.Thread(target=self._loop, name="storage-io", daemon=True)
        self._thread.start()

    def run(self, work: Callable[[], object], done: Done | None = None) -> None:
        with self._changed:
            if self._closed:
                raise RuntimeError("the JobMaster's storage I/O thread is closed")
            self._work.append((work, done))
            self._changed.notify_all()

    def drain(self, what: str) -> None:
        """Waits until every piece of work given so far ran; says so when that takes long
        (``what``: why it waits, for the log)."""
        started = time.monotonic()
        next_report = started + _SLOW_REPORT_S
        with self._changed:
            while self._work or self._busy:
                self._changed.wait(max(0.05, next_report - time.monotonic()))
                if time.monotonic() >= next_report and (self._work or self._busy):
                    log.warning(
                        "%s waits for checkpoint storage: %d operation(s) queued after %.0f s "
                        "(slow or unreachable storage?)",
                        what,
                        len(self._work) + int(self._busy),
                        time.monotonic() - started,
                    )
                    next_report += _SLOW_REPORT_S

    def close(self) -> None:
        with self._changed:
            self._closed = True
            self._changed.notify_all()
        self._thread.join()

    def _loop(self) -> None:
        while True:
            with self._changed:
                while not self._work and not self._closed:
                    self._changed.wait()
                if not self._work:
                    return  # closed, and nothing left
                work, done = self._work.popleft()
                self._busy = True
            error: BaseException | None = None
            try:
                work()
            except BaseException as e:  # noqa: BLE001 - handed to done, or logged
                error = e
            if done is not None:
                self._post(functools.partial(done, error))
            elif error is not None:
                log.error("Checkpoint storage work failed: %s", error, exc_info=error)
            with self._changed:
                self._busy = False
                self._changed.notify_all()
