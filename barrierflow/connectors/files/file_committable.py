"""What a FileSink commits: a pending part file and the name it becomes visible under; and its
versioned codec. Performs no I/O."""

from __future__ import annotations

from typing import Any

import msgspec

from barrierflow.connectors.base.struct_codec import StructCodec


class FileCommittable(msgspec.Struct, frozen=True):
    """In directory ``dir`` (the base path or a bucket under it), the hidden ``pending`` file
    becomes ``final``. The directory is named, so that a job restored with another output
    directory (from a savepoint, say) still commits, or finds committed, what was written where
    it was written."""

    dir: str
    pending: str
    final: str


class FileCommittableCodec(StructCodec[FileCommittable]):
    """``directory``: the sink's base path, where the committables of the dict layout that name
    no directory (those of FileSinks before buckets) were written."""

    def __init__(self, directory: str) -> None:
        super().__init__(FileCommittable)
        self._directory = directory

    def from_dict_layout(self, fields: dict[str, Any]) -> FileCommittable:
        return FileCommittable(
            fields.get("dir", self._directory), fields["pending"], fields["final"]
        )
