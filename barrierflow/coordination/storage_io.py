"""How the checkpoint coordinator's storage I/O runs: metadata and history writes, deletes and
sweeps are handed to a ``StorageIo`` rather than done in place, so that the JobMaster's
supervising thread, which also keeps the heartbeats, never waits on slow object storage.

Work runs in the order it was given (a checkpoint's ``_metadata`` before the deletes its
completion allows; history writes in order). ``done`` runs on the coordinator's own thread,
with the work's error or None: what happens next (notify the tasks, abort) is decided there.

``InlineStorageIo`` runs both at once, on the caller's thread: the coordinator's unit tests see
every effect when a call returns. Performs no I/O itself.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Protocol

log = logging.getLogger("barrierflow.checkpoint")

Done = Callable[[BaseException | None], None]


class StorageIo(Protocol):
    def run(self, work: Callable[[], object], done: Done | None = None) -> None:
        """Runs ``work`` after all work given before; then, on the coordinator's thread,
        ``done`` with the exception ``work`` raised, or None. Without ``done``, an exception is
        logged (the work logs its expected storage errors itself)."""


class InlineStorageIo:
    def run(self, work: Callable[[], object], done: Done | None = None) -> None:
        error: BaseException | None = None
        try:
            work()
        except Exception as e:  # noqa: BLE001 - handed to done, or logged
            error = e
        if done is not None:
            done(error)
        elif error is not None:
            log.error("Storage work failed: %s", error, exc_info=error)
