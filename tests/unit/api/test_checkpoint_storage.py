"""PyFlink's checkpoint storage objects choose barrierflow's storage: its path and the two
thresholds; what cannot apply is refused with the reason."""

from __future__ import annotations

import logging

import pytest

from barrierflow.client.planning import plan_job
from barrierflow.datastream import (
    FileSystemCheckpointStorage,
    JobManagerCheckpointStorage,
    SlotSharingGroup,
    StreamExecutionEnvironment,
)
from barrierflow.datastream.connectors.discarding import DiscardingSink
from barrierflow.errors import ConfigurationError


def test_file_system_storage_sets_the_path_and_its_thresholds(tmp_path):
    env = StreamExecutionEnvironment().enable_checkpointing(1000)
    config = env.get_checkpoint_config()
    config.set_checkpoint_storage(
        FileSystemCheckpointStorage(f"file://{tmp_path}", 512, write_buffer_size=8192)
    )
    assert config.storage == f"file://{tmp_path}"
    assert (config.data_inline_threshold_bytes, config.write_buffer_size) == (512, 8192)
    storage = config.get_checkpoint_storage()
    assert isinstance(storage, FileSystemCheckpointStorage)
    assert storage.get_checkpoint_path() == f"file://{tmp_path}"
    env.from_collection([1]).sink_to(DiscardingSink())
    assert plan_job(env._pipeline("job")).task_config.storage_uri.startswith(f"file://{tmp_path}/")


def test_file_system_storage_keeps_the_configured_thresholds_by_default(tmp_path):
    config = StreamExecutionEnvironment().get_checkpoint_config()
    before = (config.data_inline_threshold_bytes, config.write_buffer_size)
    config.set_checkpoint_storage(FileSystemCheckpointStorage(str(tmp_path)))
    assert (config.data_inline_threshold_bytes, config.write_buffer_size) == before


def test_job_manager_storage_is_the_default_local_directory_or_its_path(tmp_path):
    config = StreamExecutionEnvironment().get_checkpoint_config()
    assert isinstance(config.get_checkpoint_storage(), JobManagerCheckpointStorage)
    config.set_checkpoint_storage(JobManagerCheckpointStorage())
    assert config.storage is None
    config.set_checkpoint_storage(JobManagerCheckpointStorage(str(tmp_path)))
    assert config.storage == str(tmp_path)


def test_a_bound_on_state_in_the_job_managers_memory_reads_back_as_pyflinks():
    assert JobManagerCheckpointStorage.DEFAULT_MAX_STATE_SIZE == 5 * 1024 * 1024
    assert JobManagerCheckpointStorage().get_max_state_size() == 5 * 1024 * 1024
    assert JobManagerCheckpointStorage("file://var/cp/", 50000).get_max_state_size() == 50000
    with pytest.raises(ConfigurationError, match="max_state_size must be a positive"):
        JobManagerCheckpointStorage(max_state_size=-1)


def test_storage_paths_and_thresholds_read_back_as_pyflinks():
    storage = FileSystemCheckpointStorage("file://var/checkpoints/")
    assert storage.get_checkpoint_path() == "file://var/checkpoints"
    assert (storage.get_min_file_size_threshold(), storage.get_write_buffer_size()) == (20480, 4096)
    storage = FileSystemCheckpointStorage("s3://bucket/cp", 2048, 1024)
    assert storage.get_checkpoint_path() == "s3://bucket/cp"
    assert (storage.get_min_file_size_threshold(), storage.get_write_buffer_size()) == (2048, 1024)
    assert JobManagerCheckpointStorage("file://var/cp/").get_checkpoint_path() == "file://var/cp"


def test_a_slot_sharing_group_asking_for_resources_says_they_are_not_applied(caplog):
    env = StreamExecutionEnvironment()
    plain = SlotSharingGroup.builder("plain").build()
    sized = SlotSharingGroup.builder("sized").set_cpu_cores(2.0).set_task_heap_memory_mb(64)
    group = sized.build()
    assert group.get_task_heap_memory().get_mebi_bytes() == 64
    with caplog.at_level(logging.WARNING, logger="barrierflow"):
        stream = env.from_collection([1]).map(str).slot_sharing_group(plain)
        stream.map(str).slot_sharing_group(group)
    assert [r.getMessage().split(" asks")[0] for r in caplog.records] == [
        "Slot sharing group 'sized'"
    ]
    assert stream.get_transformation().slot_sharing_group == "plain"
