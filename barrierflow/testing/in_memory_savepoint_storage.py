"""Savepoint directories in a dict, for unit tests of the coordinator.

**Threading:** one thread.
"""

from __future__ import annotations

from barrierflow.checkpoint import storage_layout as layout
from barrierflow.checkpoint.metadata import CheckpointMetadata, decode_metadata, encode_metadata
from barrierflow.errors import StorageConfigError


class InMemorySavepointStorage:
    """Savepoint directories in a dict: ``files`` by ``<location>/<relative path>``."""

    def __init__(self) -> None:
        self.files: dict[str, bytes] = {}
        self.locations: set[str] = set()  # created and not discarded
        self.disposed: list[tuple[str, int]] = []  # claimed snapshots deleted: (root, id)
        self.unwritable: set[str] = set()  # target directories that refuse savepoints
        self._next = 0

    def create(self, target_dir: str, job_id: str) -> str:
        if target_dir in self.unwritable:
            raise StorageConfigError(f"savepoint directory {target_dir} is not writable")
        self._next += 1
        location = f"{target_dir}/{layout.savepoint_dir_name(job_id, f'{self._next:012x}')}"
        self.locations.add(location)
        return location

    def write_metadata(self, location: str, metadata: CheckpointMetadata) -> str:
        path = f"{location}/{layout.METADATA_FILE}"
        self.files[path] = encode_metadata(metadata)
        return path

    def read_metadata(self, location: str) -> CheckpointMetadata:
        path = f"{location}/{layout.METADATA_FILE}"
        return decode_metadata(self.files[path], path)

    def discard(self, location: str) -> None:
        self.locations.discard(location)
        for path in [p for p in self.files if p.startswith(location + "/")]:
            del self.files[path]

    def dispose(self, root: str, metadata: CheckpointMetadata) -> None:
        self.disposed.append((root, metadata.checkpoint_id))
