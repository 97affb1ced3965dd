"""RocksDB's predefined option sets: PyFlink's names, Flink's precedence (configuration over
preset over defaults), and the settings a RocksDB instance really opens with (read back from
the OPTIONS file RocksDB writes)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from barrierflow.client.planning import state_backend_config
from barrierflow.common import Configuration
from barrierflow.datastream import (
    EmbeddedRocksDBStateBackend,
    PredefinedOptions,
    StreamExecutionEnvironment,
)
from barrierflow.errors import ConfigurationError
from barrierflow.protocol.key_group_range import KeyGroupRange
from barrierflow.state.backends.predefined_options import PRESETS
from barrierflow.state.backends.registry import StateBackendConfig, rocksdb_tuning
from barrierflow.state.backends.rocksdb import RocksDBKeyedStateBackend

MiB = 1024**2
PRESET_KEY = "state.backend.rocksdb.predefined-options"


def test_predefined_options_are_pyflinks_members_and_values():
    assert {p.name: p.value for p in PredefinedOptions} == {
        "DEFAULT": 0,
        "SPINNING_DISK_OPTIMIZED": 1,
        "SPINNING_DISK_OPTIMIZED_HIGH_MEM": 2,
        "FLASH_SSD_OPTIMIZED": 3,
    }


def test_the_backend_object_gives_back_the_preset_set_and_default_otherwise():
    backend = EmbeddedRocksDBStateBackend()
    assert backend.get_predefined_options() is PredefinedOptions.DEFAULT
    backend.set_predefined_options(PredefinedOptions.FLASH_SSD_OPTIMIZED)
    assert backend.get_predefined_options() is PredefinedOptions.FLASH_SSD_OPTIMIZED
    with pytest.raises(ConfigurationError, match="takes a PredefinedOptions member"):
        backend.set_predefined_options("FLASH_SSD_OPTIMIZED")


def config(**options) -> StateBackendConfig:
    return StateBackendConfig(kind="rocksdb", options=tuple(options.items()))


def test_high_mem_sets_its_sizes_over_barrierflows_defaults():
    tuning = rocksdb_tuning(
        config(**{PRESET_KEY: PredefinedOptions.SPINNING_DISK_OPTIMIZED_HIGH_MEM})
    )
    assert tuning.block_cache_bytes == 256 * MiB
    assert tuning.target_file_size_bytes == 256 * MiB
    assert tuning.level_base_bytes == 1024 * MiB
    assert tuning.max_write_buffer_number == 4


def test_an_option_set_in_the_configuration_wins_over_the_preset():
    tuning = rocksdb_tuning(
        config(
            **{
                PRESET_KEY: PredefinedOptions.SPINNING_DISK_OPTIMIZED_HIGH_MEM,
                "state.backend.rocksdb.block.cache-size": 8 * MiB,
            }
        )
    )
    assert tuning.block_cache_bytes == 8 * MiB
    assert tuning.level_base_bytes == 1024 * MiB


def test_default_changes_nothing():
    tuning = rocksdb_tuning(config())
    assert tuning.block_cache_bytes == 64 * MiB and tuning.max_background_jobs is None


def backend_config(env) -> dict:
    return dict(state_backend_config(env._pipeline("job")).options)


def test_the_preset_of_the_backend_object_wins_over_the_configurations():
    env = StreamExecutionEnvironment.get_execution_environment(
        Configuration().set_string(PRESET_KEY, "flash_ssd_optimized")
    )
    env.set_state_backend(EmbeddedRocksDBStateBackend())
    assert backend_config(env)[PRESET_KEY] is PredefinedOptions.FLASH_SSD_OPTIMIZED
    backend = EmbeddedRocksDBStateBackend()
    backend.set_predefined_options(PredefinedOptions.SPINNING_DISK_OPTIMIZED)
    env.set_state_backend(backend)
    assert backend_config(env)[PRESET_KEY] is PredefinedOptions.SPINNING_DISK_OPTIMIZED


def test_an_unknown_preset_name_in_the_configuration_is_refused():
    with pytest.raises(ConfigurationError, match="FLASH_SSD_OPTIMIZED"):
        Configuration().set_string(PRESET_KEY, "fast")


def opened_options(tmp_path: Path, preset: PredefinedOptions) -> str:
    tuning = rocksdb_tuning(config(**{PRESET_KEY: preset}))
    backend = RocksDBKeyedStateBackend(
        128,
        KeyGroupRange(0, 127),
        str(tmp_path / "local"),
        block_cache_bytes=tuning.block_cache_bytes,
        write_buffer_bytes=tuning.write_buffer_bytes,
        target_file_size_bytes=tuning.target_file_size_bytes,
        level_base_bytes=tuning.level_base_bytes,
        tuning=tuning,
    )
    try:
        (options_file,) = sorted((tmp_path / "local").rglob("OPTIONS-*"))[-1:]
        return options_file.read_text()
    finally:
        backend.dispose()


def setting(text: str, name: str) -> str:
    return re.search(rf"^\s*{name}=(.*)$", text, re.MULTILINE).group(1)


def test_rocksdb_opens_with_the_high_mem_settings(tmp_path):
    text = opened_options(tmp_path, PredefinedOptions.SPINNING_DISK_OPTIMIZED_HIGH_MEM)
    assert setting(text, "max_background_jobs") == "4"
    assert setting(text, "max_open_files") == "-1"
    assert setting(text, "block_size") == str(128 * 1024)
    assert setting(text, "max_write_buffer_number") == "4"
    assert setting(text, "min_write_buffer_number_to_merge") == "3"
    assert setting(text, "level_compaction_dynamic_level_bytes") == "true"
    assert setting(text, "target_file_size_base") == str(256 * MiB)
    assert setting(text, "max_bytes_for_level_base") == str(1024 * MiB)


def test_every_preset_opens(tmp_path):
    for preset in PRESETS:
        text = opened_options(tmp_path / preset.name, preset)
        assert setting(text, "write_buffer_size") == str(64 * MiB)
