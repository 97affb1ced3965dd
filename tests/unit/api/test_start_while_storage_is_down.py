"""A job started from a snapshot (``run -s``) while its storage is briefly unreachable: the
start waits for it, a bounded number of times, instead of ending the job for good; storage that
stays down ends the start with an error naming the snapshot's path. Played without Spark:
planning a job is where the snapshot is read."""

from __future__ import annotations

import logging

import pyarrow.fs as pafs
import pytest

from barrierflow.checkpoint import file_systems, storage_retry
from barrierflow.checkpoint.metadata import CheckpointMetadata
from barrierflow.checkpoint.storage import CheckpointDirectory
from barrierflow.checkpoint.storage_retry import StorageUnavailableError
from barrierflow.client.planning import plan_job
from barrierflow.datastream import StreamExecutionEnvironment
from barrierflow.datastream.connectors.discarding import DiscardingSink
from barrierflow.datastream.connectors.number_seq import NumberSequenceSource
from barrierflow.testing.storage_faults import FaultInjectingHandler, StorageFaults


class _UnreachableForAWhile:
    """A file system wrapper whose reads of ``_metadata`` fail as an S3 server that is down
    fails them, ``failures`` times in all, then pass."""

    def __init__(self, failures: int, control_dir: str) -> None:
        self.left = failures
        self.faults = StorageFaults(control_dir)  # nothing armed: the handler only delegates

    def wrap(self, fs: pafs.FileSystem) -> pafs.FileSystem:
        return pafs.PyFileSystem(_Handler(fs, self))


class _Handler(FaultInjectingHandler):
    def __init__(self, inner: pafs.FileSystem, outage: _UnreachableForAWhile) -> None:
        super().__init__(inner, outage.faults)
        self._outage = outage

    def open_input_stream(self, path: str):
        if path.endswith("_metadata") and self._outage.left > 0:
            self._outage.left -= 1
            raise OSError(
                f"When reading information for key '{path}': AWS Error NETWORK_CONNECTION "
                "during GetObject operation: curlCode: 7, Could not connect to server"
            )
        return super().open_input_stream(path)


@pytest.fixture
def outage(tmp_path):
    def install(failures: int) -> _UnreachableForAWhile:
        wrapper = _UnreachableForAWhile(failures, str(tmp_path / "no-faults-armed"))
        file_systems.install_wrapper(wrapper)
        return wrapper

    yield install
    file_systems.install_wrapper(None)
    file_systems.initialize(file_systems.FileSystemSettings())


def _snapshot(tmp_path) -> str:
    """A completed checkpoint's directory, the ``-s`` path."""
    CheckpointDirectory(str(tmp_path / "earlier")).write_metadata(
        CheckpointMetadata("earlier", "job", 4, 0, 0, [])
    )
    return str(tmp_path / "earlier" / "chk-4")


def _started_from(tmp_path, snapshot: str) -> StreamExecutionEnvironment:
    env = StreamExecutionEnvironment()
    env.enable_checkpointing(50)
    env.get_checkpoint_config().set_checkpoint_storage(f"file://{tmp_path}/jobs")
    env.from_source(NumberSequenceSource(1, 10), "s").sink_to(DiscardingSink()).set_parallelism(1)
    env.set_restore_path(snapshot)
    return env


def test_seed_1079_a_start_from_a_savepoint_waits_for_storage_that_comes_back(
    tmp_path, outage, slept, caplog
):
    snapshot = _snapshot(tmp_path)
    wrapper = outage(3)

    with caplog.at_level(logging.WARNING, "barrierflow.storage"):
        plan = plan_job(_started_from(tmp_path, snapshot)._pipeline("job"))

    assert plan.restore_from.checkpoint_id == 4
    assert wrapper.left == 0 and slept == [0.5, 1.0, 2.0]
    retries = [r.getMessage() for r in caplog.records if "may be restarting" in r.getMessage()]
    assert len(retries) == 3 and snapshot in retries[0] and "NETWORK_CONNECTION" in retries[0]


def test_storage_that_stays_down_ends_the_start_naming_the_snapshot(tmp_path, outage, slept):
    snapshot = _snapshot(tmp_path)
    outage(1000)

    with pytest.raises(StorageUnavailableError) as raised:
        plan_job(_started_from(tmp_path, snapshot)._pipeline("job"))

    assert f"could not read the snapshot {snapshot}" in str(raised.value)
    assert len(slept) == storage_retry.StorageRetryPolicy().tries - 1
