"""Where a RocksDB backend keeps its native checkpoints on local disk.

Without local recovery a native checkpoint is deleted once uploaded. With it
(``execution.state-recovery.from-local``) the directory of the last completed checkpoint is
kept outside the backend's own directory, and a restart of the same subtask on the same machine
opens it instead of downloading (``intact_copy``); older ones go as newer ones complete.

**Threading:** the task thread, except ``uploaded`` (a snapshot thread). **I/O:** the local
directory.
"""

from __future__ import annotations

import contextlib
import logging
import os
import shutil
from collections.abc import Callable

from barrierflow.checkpoint.metadata import IncrementalKeyedHandle, stream_size
from barrierflow.checkpoint.storage_layout import checkpoint_dir, parse_checkpoint_dir

log = logging.getLogger("barrierflow.state")


class LocalCheckpoints:
    def __init__(self, directory: str, keep: bool) -> None:
        """``keep``: local recovery is on, and ``directory`` outlives the backend."""
        self.directory = directory
        self.keep = keep

    def path(self, checkpoint_id: int) -> str:
        return os.path.join(self.directory, checkpoint_dir(checkpoint_id))

    def uploaded(self, path: str) -> None:
        """The native checkpoint at ``path`` was uploaded (or its upload failed)."""
        if not self.keep:
            shutil.rmtree(path, ignore_errors=True)

    def delete(self, which: Callable[[int], bool]) -> None:
        """Deletes the kept checkpoints whose id ``which`` selects."""
        with contextlib.suppress(FileNotFoundError):
            for entry in os.listdir(self.directory):
                cid = parse_checkpoint_dir(entry)
                if cid is not None and which(cid):
                    shutil.rmtree(os.path.join(self.directory, entry), ignore_errors=True)

    def intact_copy(self, handle: IncrementalKeyedHandle) -> str | None:
        """The kept directory of ``handle``'s checkpoint, if every file of it is there with its
        recorded size."""
        if not self.keep:
            return None
        directory = self.path(handle.checkpoint_id)
        expected = {s.local_name: s.file.size for s in handle.shared}
        expected.update((name, stream_size(h)) for name, h in handle.private.items())
        try:
            for name, size in expected.items():
                if os.stat(os.path.join(directory, name)).st_size != size:
                    raise FileNotFoundError(name)
        except OSError:
            if os.path.isdir(directory):
                log.warning(
                    "Local copy %s does not match checkpoint %d; downloading it",
                    directory,
                    handle.checkpoint_id,
                )
            return None
        return directory
