"""The JobMaster with slow checkpoint storage, without Spark (the cluster of
test_job_master_fencing.py): while a checkpoint's ``_metadata`` write hangs, the JobMaster
keeps sending heartbeats and handling messages, and tells the tasks of the completion only
once the write returned."""

from __future__ import annotations

import threading

from barrierflow.checkpoint.storage import CheckpointDirectory
from barrierflow.control import messages as msg
from barrierflow.errors import JobCanceledError
from tests.unit.cluster.test_job_master_fencing import Cluster, wait_for


def test_a_hanging_metadata_write_holds_back_neither_heartbeats_nor_messages(tmp_path, monkeypatch):
    writing, release = threading.Event(), threading.Event()
    write_metadata = CheckpointDirectory.write_metadata

    def hanging_write(self, metadata, rel_path=None):
        writing.set()
        release.wait(30)
        return write_metadata(self, metadata, rel_path)

    monkeypatch.setattr(CheckpointDirectory, "write_metadata", hanging_write)
    cluster = Cluster(tmp_path)
    attempt = cluster.start(1)
    trigger = wait_for(lambda: cluster.all_sent(msg.TriggerCheckpoint))[0]
    cluster.acknowledge(1, attempt, trigger.checkpoint_id)
    assert writing.wait(10)

    beats = len(cluster.all_sent(msg.Heartbeat))
    assert wait_for(lambda: len(cluster.all_sent(msg.Heartbeat)) >= beats + 3)
    slot = attempt.slots[0].slot
    cluster.from_slot(attempt, slot, msg.SlotHeartbeat(1, slot, []))  # still taken in
    assert not cluster.all_sent(msg.NotifyCheckpointComplete)

    release.set()
    done = wait_for(lambda: cluster.all_sent(msg.NotifyCheckpointComplete))
    assert {m.checkpoint_id for m in done} == {trigger.checkpoint_id}
    storage = CheckpointDirectory(f"{tmp_path}/fencing")
    assert trigger.checkpoint_id in storage.list_completed()  # written before the tasks heard
    cluster.job_master.cancel()
    cluster.stop_when_told(attempt)
    wait_for(lambda: cluster.outcome)
    assert isinstance(cluster.outcome[0], JobCanceledError)
