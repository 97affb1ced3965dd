"""FileSink's writer: part files per bucket, rolled by the rolling policy and sealed at every
barrier (``file_sink.py`` has their lifecycle).

**Threading:** the task thread. **I/O:** writes part files (``part_files.py``).
"""

from __future__ import annotations

import posixpath
import time
import uuid
from typing import Any

from barrierflow.connectors.files.bucket_assigner import BucketAssigner
from barrierflow.connectors.files.file_committable import FileCommittable
from barrierflow.connectors.files.file_format import FileFormat, PartWriter
from barrierflow.connectors.files.file_sink_options import OutputFileConfig, RollingPolicy
from barrierflow.connectors.files.part_files import PART_PREFIX, PartDirectories, PartDirectory
from barrierflow.connectors.interfaces.sink import SinkWriter


class _OpenPart:
    """The part file a bucket is writing, open across calls until the barrier or a roll."""

    __slots__ = ("directory", "file", "name", "opened_s", "part", "parts", "written_s")

    def __init__(self, directory: str, parts: PartDirectory, name: str, now: float) -> None:
        self.directory, self.parts, self.name = directory, parts, name
        self.file = parts.open(name)
        self.part: PartWriter  # once the file is open (FileSinkWriter._new_part)
        self.opened_s = self.written_s = now


class FileSinkWriter(SinkWriter):
    def __init__(
        self,
        directory: str,
        subtask: int,
        file_format: FileFormat,
        names: OutputFileConfig | None = None,
        rolling: RollingPolicy | None = None,
        buckets: BucketAssigner | None = None,
    ) -> None:
        self._dir = directory
        self._subtask = subtask
        self._format = file_format
        self._names = names or OutputFileConfig(part_suffix=file_format.suffix)
        self._rolling = rolling or RollingPolicy.on_checkpoint_rolling_policy()
        self._buckets = buckets or BucketAssigner.base_path_bucket_assigner()
        self._part_dirs = PartDirectories()
        self._open: dict[str, _OpenPart] = {}  # by bucket
        self._sealed: list[tuple[str, str, str]] = []  # (dir, pending, id) rolled since the barrier

    def write(self, records: list[Any]) -> None:
        """``records`` go to one bucket: the assigner's for the time they are written."""
        if not records:
            return
        now = time.monotonic()
        bucket = self._buckets.bucket_id(time.time())
        open_part = self._open.get(bucket)
        if open_part is not None and self._rolling.should_roll(
            open_part.file.tell(), open_part.opened_s, open_part.written_s, now
        ):
            self._seal(bucket)
            open_part = None
        if open_part is None:
            open_part = self._open[bucket] = self._new_part(bucket, now)
        open_part.part.add(records)
        open_part.written_s = now

    def _new_part(self, bucket: str, now: float) -> _OpenPart:
        directory = posixpath.join(self._dir, bucket) if bucket else self._dir
        name = f"{PART_PREFIX}{self._subtask}-{uuid.uuid4().hex}"
        open_part = _OpenPart(directory, self._part_dirs.get(directory), name, now)
        open_part.part = self._format.open_part(open_part.file)
        return open_part

    def _seal(self, bucket: str) -> None:
        """Closes the bucket's open part file: complete and durable, visible once committed."""
        p = self._open.pop(bucket)
        p.part.finish()
        self._sealed.append((p.directory, p.parts.seal(p.name, p.file), p.name[-12:]))

    def prepare_commit(self, checkpoint_id: int) -> list[FileCommittable]:
        for bucket in list(self._open):
            self._seal(bucket)
        sealed, self._sealed = self._sealed, []
        prefix, suffix = self._names.part_prefix, self._names.part_suffix
        checkpoint = f"{max(checkpoint_id, 0):06d}"
        return [
            FileCommittable(
                directory, pending, f"{prefix}-{self._subtask}-{checkpoint}-{file_id}{suffix}"
            )
            for directory, pending, file_id in sealed
        ]

    def close(self) -> None:
        for p in self._open.values():
            p.parts.discard(p.name, p.file)
        self._open = {}
        self._sealed = []  # rolled, in no checkpoint: recovery deletes them, by name
