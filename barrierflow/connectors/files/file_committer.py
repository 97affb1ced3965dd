"""FileSink's committer: a pending part file becomes visible under its final name; what failed
attempts left hidden is deleted.

**Threading:** the task thread. **I/O:** renames (or copies, on object stores) and deletes
part files (``part_files.py``).
"""

from __future__ import annotations

import re

from barrierflow.connectors.files.file_committable import FileCommittable
from barrierflow.connectors.files.part_files import PART_PREFIX, PartDirectories
from barrierflow.connectors.interfaces.committables import Committable, Recovery
from barrierflow.connectors.interfaces.sink import Committer

# A hidden part file a FileSink wrote: ``.part-<subtask>-<uuid>.inprogress|pending``.
_PART_NAME = re.compile(re.escape(PART_PREFIX) + r"(\d+)-[0-9a-f]{32}\.(?:inprogress|pending)")


class FileCommitter(Committer):
    """``directory``: the sink's base path."""

    def __init__(self, directory: str) -> None:
        self._dir = directory
        self._part_dirs = PartDirectories()

    def commit(self, committables: list[Committable]) -> None:
        for c in committables:
            f: FileCommittable = c.data
            if not self._part_dirs.get(f.dir).publish(f.pending, f.final):
                raise RuntimeError(
                    f"FileSink cannot commit {f.final}: neither it nor its pending file "
                    f"{f.pending} exists in {f.dir}; files were removed by hand?"
                )

    def abort_lingering(self, recovery: Recovery) -> None:
        """Deletes the hidden part files of the old subtasks this one answers for, by name: in
        the base path and in the buckets under it that the restored checkpoint names. (A
        bucket first written after the checkpoint keeps its hidden leftovers, as Flink's do:
        looking through every directory under the base path would also find other sinks'
        files.)"""
        under = self._dir.rstrip("/") + "/"
        buckets = {c.data.dir for c in recovery.committables if c.data.dir.startswith(under)}
        for directory in [self._dir, *sorted(buckets)]:
            parts = self._part_dirs.get(directory)
            for name in parts.leftovers():
                match = _PART_NAME.fullmatch(name)
                if match is None:
                    continue  # not a part file of a FileSink (a checksum file, say)
                if recovery.owns(int(match.group(1))):
                    parts.delete(name)
