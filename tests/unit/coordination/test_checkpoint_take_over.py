"""What a coordinator that takes a job over reads of the checkpoints a previous one left."""

from __future__ import annotations

from barrierflow.checkpoint import storage_layout as layout
from barrierflow.checkpoint.history import CheckpointHistory, CheckpointRecord, CheckpointStatus
from barrierflow.checkpoint.metadata import CheckpointMetadata
from barrierflow.coordination.checkpoint_take_over import first_unused_id, read_retained
from barrierflow.coordination.in_memory_storage import InMemoryCheckpointStorage


def test_the_newest_readable_checkpoints_are_read_oldest_first_past_a_torn_one():
    storage = InMemoryCheckpointStorage()
    for cid in (1, 2, 3, 4):
        storage.write_metadata(CheckpointMetadata("job", "job", cid, 1, 2, []))
    storage.files[layout.metadata_path(4)] = b"torn"
    assert [m.checkpoint_id for m in read_retained(storage, 2)] == [2, 3]
    assert [m.checkpoint_id for m in read_retained(storage, 5)] == [1, 2, 3]


def test_the_first_unused_id_is_past_directories_the_history_and_shared_file_names():
    storage = InMemoryCheckpointStorage()
    history = CheckpointHistory("job", "job")
    assert first_unused_id(storage, history, next_id=5) == 5
    storage.add_file(f"{layout.checkpoint_dir(6)}/state")
    assert first_unused_id(storage, history, next_id=5) == 7
    history.add(CheckpointRecord(8, CheckpointStatus.FAILED, 1, 2, 1.0, 0, 0, 1, 0))
    assert first_unused_id(storage, history, next_id=5) == 9
    storage.add_file(layout.shared_state_file(11, "op", 0, "000012.sst", "u"))
    assert first_unused_id(storage, history, next_id=5) == 12
