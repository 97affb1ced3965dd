"""A state file copied from one snapshot's directory into another's, at the same relative path,
checked against its handle's size and checksum on the way (a Spark task of
``SavepointWriter.write``).

**Threading:** the Spark task's thread. **I/O:** both directories, and a local temporary file.
"""

from __future__ import annotations

import os
import tempfile

from barrierflow.checkpoint import file_systems
from barrierflow.checkpoint.metadata import FileHandle
from barrierflow.checkpoint.storage import CheckpointDirectory
from barrierflow.errors import CorruptCheckpointError


def copy_state_file(
    settings: file_systems.FileSystemSettings, source: str, target: str, handle: FileHandle
) -> None:
    file_systems.initialize(settings)
    fd, local = tempfile.mkstemp(prefix="barrierflow-copy-")
    os.close(fd)
    try:
        CheckpointDirectory(source).download_file(handle, local)
        copied = CheckpointDirectory(target).upload_file(handle.path, local)
        if (copied.size, copied.checksum) != (handle.size, handle.checksum):
            raise CorruptCheckpointError(
                f"{target}/{handle.path}", "the copy differs from what was read; copy again"
            )
    finally:
        if os.path.exists(local):
            os.remove(local)
