"""A job's checkpoint storage in a dict: the files of its directory by relative path.

For a job without a checkpoint directory (its checkpoint history then lives as long as its
JobMaster), and for unit tests of the coordinator. Metadata goes through the real format
(encoded, checksummed, decoded), so a test can corrupt it byte by byte.

**Threading:** one thread.
"""

from __future__ import annotations

from barrierflow.checkpoint import storage_layout as layout
from barrierflow.checkpoint.history import (
    HISTORY_FILE,
    CheckpointHistory,
    decode_history,
    encode_history,
)
from barrierflow.checkpoint.metadata import CheckpointMetadata, decode_metadata, encode_metadata
from barrierflow.errors import CorruptCheckpointError


class InMemoryCheckpointStorage:
    def __init__(self) -> None:
        self.files: dict[str, bytes] = {}
        self.fail_writes_with: OSError | None = None  # set to make every write fail

    def _write(self, path: str, data: bytes) -> None:
        if self.fail_writes_with is not None:
            raise self.fail_writes_with
        self.files[path] = data

    def add_file(self, path: str, data: bytes = b"") -> None:
        """A file a task wrote (a state file, a shared SST file)."""
        self.files[path] = data

    def write_metadata(self, metadata: CheckpointMetadata) -> str:
        path = layout.metadata_path(metadata.checkpoint_id)
        self._write(path, encode_metadata(metadata))
        return path

    def read_metadata(self, checkpoint_id: int) -> CheckpointMetadata:
        path = layout.metadata_path(checkpoint_id)
        if path not in self.files:
            raise CorruptCheckpointError(path, "no such file")
        return decode_metadata(self.files[path], path)

    def list_completed(self) -> list[int]:
        return sorted(
            c for c in self.list_checkpoint_dirs() if layout.metadata_path(c) in self.files
        )

    def list_checkpoint_dirs(self) -> list[int]:
        ids = {layout.parse_checkpoint_dir(path.split("/", 1)[0]) for path in self.files}
        return sorted(c for c in ids if c is not None)

    def discard_checkpoint_dir(self, checkpoint_id: int) -> None:
        prefix = layout.checkpoint_dir(checkpoint_id) + "/"
        for path in [p for p in self.files if p.startswith(prefix)]:
            del self.files[path]

    def list_shared(self) -> list[str]:
        return sorted(p for p in self.files if p.startswith(layout.SHARED_DIR + "/"))

    def delete_files(self, rel_paths: list[str]) -> None:
        for path in rel_paths:
            self.files.pop(path, None)

    def read_history(self) -> CheckpointHistory | None:
        data = self.files.get(HISTORY_FILE)
        return decode_history(data) if data is not None else None

    def write_history(self, history: CheckpointHistory) -> None:
        self._write(HISTORY_FILE, encode_history(history))
