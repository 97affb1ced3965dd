"""The environment's, checkpoint config's, backend's and builders' methods that PyFlink's own
tests call, behaving as PyFlink 2.3's; the changelog state backend refused, naming what to
use instead; operator chaining switched off for real."""

from __future__ import annotations

import pytest

from barrierflow.api.slot_sharing_group import MemorySize
from barrierflow.client.planning import plan_job
from barrierflow.common import Configuration, Types
from barrierflow.datastream import (
    BroadcastProcessFunction,
    CheckpointingMode,
    EmbeddedRocksDBStateBackend,
    KeyedBroadcastProcessFunction,
    SlotSharingGroup,
    StreamExecutionEnvironment,
)
from barrierflow.datastream.connectors.discarding import DiscardingSink
from barrierflow.datastream.connectors.file_system import OutputFileConfig
from barrierflow.errors import ConfigurationError


def test_checkpointing_mode_shorthands_read_the_checkpoint_config():
    env = StreamExecutionEnvironment()
    assert env.get_checkpointing_mode() is CheckpointingMode.EXACTLY_ONCE
    env.enable_checkpointing(30000, CheckpointingMode.AT_LEAST_ONCE)
    assert env.get_checkpointing_mode() is CheckpointingMode.AT_LEAST_ONCE
    assert env.get_checkpointing_consistency_mode() is CheckpointingMode.AT_LEAST_ONCE


def test_operator_chaining_switched_off_gives_each_operator_a_vertex():
    env = StreamExecutionEnvironment()
    env.from_collection([1, 2]).map(str).map(len).sink_to(DiscardingSink())
    assert env.is_chaining_enabled()
    assert len(plan_job(env._pipeline("chained")).graph.job_graph.vertices) == 1
    env.disable_operator_chaining()
    assert not env.is_chaining_enabled()
    assert len(plan_job(env._pipeline("unchained")).graph.job_graph.vertices) == 4


def test_operator_chaining_is_a_configuration_key_under_flinks_old_name_too():
    conf = Configuration()
    conf.set_string("pipeline.operator-chaining", "false")
    env = StreamExecutionEnvironment.get_execution_environment(conf)
    assert env.is_chaining_enabled() is False


def test_the_changelog_state_backend_is_refused_naming_incremental_rocksdb_checkpoints():
    env = StreamExecutionEnvironment()
    assert env.is_changelog_state_backend_enabled() is None
    with pytest.raises(ConfigurationError, match="incremental RocksDB checkpoints"):
        env.enable_changelog_state_backend(True)
    with pytest.raises(ConfigurationError, match=r"state\.changelog\.enabled"):
        env.configure({"state.changelog.enabled": "true"})
    env.enable_changelog_state_backend(False)
    assert env.is_changelog_state_backend_enabled() is False


def test_default_local_parallelism_and_savepoint_directory_read_back():
    env = StreamExecutionEnvironment()
    before = env.get_default_local_parallelism()
    try:
        env.set_default_local_parallelism(8)
        assert StreamExecutionEnvironment().get_default_local_parallelism() == 8
        assert env.get_parallelism() == 1  # it does not change an environment's parallelism
    finally:
        env.set_default_local_parallelism(before)
    env.set_default_savepoint_directory("file:///tmp/savepoints")
    assert env.get_default_savepoint_directory() == "file:///tmp/savepoints"


def test_checkpoint_config_old_names_of_failures_and_alignment_timeout():
    config = StreamExecutionEnvironment().get_checkpoint_config()
    assert config.is_fail_on_checkpointing_errors()
    config.set_fail_on_checkpointing_errors(False)
    assert config.get_tolerable_checkpoint_failure_number() == 2**31 - 1
    assert not config.is_fail_on_checkpointing_errors()
    config.set_alignment_timeout(1500)
    assert config.get_alignment_timeout().total_seconds() == 1.5


def test_rocksdb_storage_paths_reach_the_backend_config_and_transfer_threads_read_back(tmp_path):
    backend = EmbeddedRocksDBStateBackend()
    assert backend.get_number_of_transfer_threads() == 4
    backend.set_number_of_transfer_threads(8)
    assert backend.get_number_of_transfer_threads() == 8
    assert backend.get_db_storage_paths() == []
    backend.set_db_storage_paths(str(tmp_path / "a"), str(tmp_path / "b"))
    assert backend.get_db_storage_paths() == [str(tmp_path / "a"), str(tmp_path / "b")]
    env = StreamExecutionEnvironment().set_state_backend(backend)
    env.from_collection([1]).key_by(lambda x: x).sum(0).sink_to(DiscardingSink())
    plan = plan_job(env._pipeline("rocks"))
    assert plan.task_config.state_backend.local_root == str(tmp_path / "a")
    with pytest.raises(ConfigurationError, match="transfer threads"):
        backend.set_number_of_transfer_threads(0)


def test_slot_sharing_group_builders_refuse_what_flinks_refuse():
    group = SlotSharingGroup.builder("g").set_cpu_cores(1.0).set_task_heap_memory_mb(100).build()
    assert group.get_task_off_heap_memory() == MemorySize(0)
    assert group.get_managed_memory() == MemorySize(0)
    with pytest.raises(ConfigurationError, match="task heap memory should be"):
        SlotSharingGroup.builder("g").set_cpu_cores(1.0).set_task_heap_memory(MemorySize(0))
    with pytest.raises(ConfigurationError, match="cpu cores should be positive"):
        SlotSharingGroup.builder("g").set_cpu_cores(0)
    with pytest.raises(ConfigurationError, match="cpu cores and task heap memory are required"):
        SlotSharingGroup.builder("g").set_task_heap_memory_mb(100).set_task_off_heap_memory_mb(
            10
        ).build()
    assert not SlotSharingGroup.builder("plain").build().asks_for_resources()


def test_pyflink_nested_names_exist_where_pyflink_has_them():
    assert OutputFileConfig.OutputFileConfigBuilder().with_part_prefix("p").build() == (
        OutputFileConfig("p", "")
    )
    for cls in (BroadcastProcessFunction, KeyedBroadcastProcessFunction):
        assert hasattr(cls.ReadOnlyContext, "get_broadcast_state")
        assert hasattr(cls.Context, "get_broadcast_state")
    assert hasattr(KeyedBroadcastProcessFunction.ReadOnlyContext, "timer_service")


def test_force_non_parallel_sets_the_operators_parallelism_to_one():
    import json

    env = StreamExecutionEnvironment().set_parallelism(8)
    env.from_collection([1]).map(str, output_type=Types.STRING()).force_non_parallel().sink_to(
        DiscardingSink()
    )
    nodes = json.loads(env.get_execution_plan())["nodes"]
    assert [n["parallelism"] for n in nodes] == [1, 1, 8]


def test_execution_config_switches_of_flinks_runtime_read_back_with_flinks_defaults():
    config = StreamExecutionEnvironment().get_config()
    assert (config.PARALLELISM_DEFAULT, config.PARALLELISM_UNKNOWN) == (-1, -2)
    assert not config.is_object_reuse_enabled()
    assert config.enable_object_reuse().is_object_reuse_enabled()
    assert config.is_closure_cleaner_enabled()
    assert not config.disable_closure_cleaner().is_closure_cleaner_enabled()
    assert config.has_auto_generated_uids_enabled()
    assert not config.disable_auto_generated_uids().has_auto_generated_uids_enabled()
    assert config.set_use_snapshot_compression(True).is_use_snapshot_compression()
    assert config.get_latency_tracking_interval() == 0
    assert config.get_task_cancellation_interval() == 30000
    assert config.set_task_cancellation_timeout(3000).get_task_cancellation_timeout() == 3000


def test_small_pyflink_names_of_rows_durations_and_descriptors():
    from barrierflow.common import Duration, Row
    from barrierflow.common.types import RowKind
    from barrierflow.datastream.state import ListStateDescriptor, ReducingStateDescriptor

    row = Row(a=1, b=2)
    assert row.get_fields_by_names(["b", "a"]) == [2, 1]
    with pytest.raises(KeyError, match="'c'"):
        row.get_fields_by_names(["c"])
    assert Row.of_kind(RowKind.DELETE, 1).get_row_kind() is RowKind.DELETE
    assert Duration.of_nanos(5_000_000) == Duration.of_millis(5)
    add = lambda a, b: a + b  # noqa: E731
    assert ReducingStateDescriptor("sum", add).get_reduce_function() is add
    assert ListStateDescriptor("items").get_name() == "items"
