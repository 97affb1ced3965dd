"""Flink-style configuration: keys, YAML (nested and flat), -D, deprecated aliases, errors."""

from __future__ import annotations

import logging

import pytest

from barrierflow.api.checkpoint_config import ExternalizedCheckpointRetention
from barrierflow.api.config_options import OPTIONS, parse_duration_ms, parse_memory_bytes
from barrierflow.api.configuration import ENV_VARIABLE, Configuration
from barrierflow.cluster.restart_strategy import (
    ExponentialDelayRestart,
    FailureRateRestart,
    FixedDelayRestart,
    NoRestart,
    from_configuration,
)
from barrierflow.datastream import CheckpointingMode, StreamExecutionEnvironment
from barrierflow.errors import ConfigurationError


@pytest.mark.parametrize(
    ("text", "ms"),
    [
        ("500 ms", 500),
        ("10s", 10_000),
        ("1 min", 60_000),
        ("2 h", 7_200_000),
        ("250", 250),
        (1500, 1500),
        ("1.5 s", 1500),
        ("1 d", 86_400_000),
    ],
)
def test_durations_are_read_in_flinks_syntax(text, ms):
    assert parse_duration_ms(text) == ms


@pytest.mark.parametrize(("text", "size"), [("20kb", 20480), ("1 mb", 1048576), ("4096", 4096)])
def test_memory_sizes_are_read_in_flinks_syntax(text, size):
    assert parse_memory_bytes(text) == size


def test_defaults_are_flinks():
    conf = Configuration()
    assert conf.get("execution.checkpointing.timeout") == 600_000
    assert conf.get("execution.checkpointing.min-pause") == 0
    assert conf.get("execution.checkpointing.max-concurrent-checkpoints") == 1
    assert conf.get("execution.checkpointing.tolerable-failed-checkpoints") == 0
    assert conf.get("execution.checkpointing.num-retained") == 1
    assert conf.get("execution.checkpointing.data-inline-threshold") == 20 * 1024
    assert conf.get("execution.checkpointing.checkpoints-after-tasks-finish") is True
    assert conf.get("execution.checkpointing.incremental") is False
    assert conf.get("execution.checkpointing.mode") == "EXACTLY_ONCE"
    assert conf.get("execution.buffer-timeout") == 100


def test_a_nested_yaml_file_configures_the_environment(tmp_path):
    path = tmp_path / "config.yaml"
    path.write_text(
        "execution:\n"
        "  checkpointing:\n"
        "    interval: 2 s\n"
        "    mode: AT_LEAST_ONCE\n"
        "    externalized-checkpoint-retention: RETAIN_ON_CANCELLATION\n"
        "    min-pause: 500 ms\n"
        "parallelism.default: 3\n"
        "pipeline.max-parallelism: 64\n"
    )
    env = StreamExecutionEnvironment.get_execution_environment(
        Configuration.from_yaml_file(str(path))
    )
    cc = env.get_checkpoint_config()
    assert cc.get_checkpoint_interval() == 2000
    assert cc.get_checkpointing_mode() is CheckpointingMode.AT_LEAST_ONCE
    assert cc.get_externalized_checkpoint_retention() is (
        ExternalizedCheckpointRetention.RETAIN_ON_CANCELLATION
    )
    assert cc.get_min_pause_between_checkpoints() == 500
    assert env.get_parallelism() == 3 and env.get_max_parallelism() == 64


def test_the_environment_variable_names_a_file_and_code_settings_win(tmp_path, monkeypatch):
    path = tmp_path / "conf.yaml"
    path.write_text("execution.checkpointing.interval: 5 s\nparallelism.default: 4\n")
    monkeypatch.setenv(ENV_VARIABLE, str(path))
    env = StreamExecutionEnvironment()
    assert env.get_checkpoint_interval() == 5000
    env.set_parallelism(2)  # code after configuration wins, as in Flink
    assert env.get_parallelism() == 2


def test_dynamic_properties_override_the_file(tmp_path):
    path = tmp_path / "conf.yaml"
    path.write_text("execution.checkpointing.num-retained: 2\n")
    merged = Configuration.from_yaml_file(str(path)).merge(
        Configuration.from_dynamic_properties(["execution.checkpointing.num-retained=5"])
    )
    assert merged.get("execution.checkpointing.num-retained") == 5


@pytest.mark.parametrize(
    ("old", "new", "value", "parsed"),
    [
        ("state.checkpoints.dir", "execution.checkpointing.dir", "/tmp/x", "/tmp/x"),
        ("state.checkpoints.num-retained", "execution.checkpointing.num-retained", "3", 3),
        ("state.backend.incremental", "execution.checkpointing.incremental", "true", True),
        (
            "state.storage.fs.memory-threshold",
            "execution.checkpointing.data-inline-threshold",
            "1kb",
            1024,
        ),
        ("state.savepoints.dir", "execution.checkpointing.savepoint-dir", "/tmp/s", "/tmp/s"),
        ("state.backend.local-recovery", "execution.state-recovery.from-local", "true", True),
    ],
)
def test_flink_1_names_are_accepted_with_a_deprecation_warning(old, new, value, parsed, caplog):
    with caplog.at_level(logging.WARNING, logger="barrierflow.config"):
        conf = Configuration({old: value})
    assert conf.get(new) == parsed
    assert any(old in r.getMessage() and new in r.getMessage() for r in caplog.records)


def test_an_unknown_key_is_named_with_close_matches():
    with pytest.raises(
        ConfigurationError,
        match=r"'execution\.checkpointing\.intervall'.*"
        r"did you mean execution\.checkpointing\.interval",
    ):
        Configuration({"execution.checkpointing.intervall": "1 s"})


@pytest.mark.parametrize(
    ("key", "value", "accepted"),
    [
        ("execution.checkpointing.mode", "SOMETIMES", "one of EXACTLY_ONCE, AT_LEAST_ONCE"),
        ("execution.checkpointing.timeout", "soon", "a duration such as"),
        ("execution.checkpointing.max-concurrent-checkpoints", "two", "an integer"),
        ("execution.checkpointing.max-concurrent-checkpoints", "0", "must be at least 1"),
        ("execution.checkpointing.data-inline-threshold", "2 mb", "between 0 and 1 mb"),
        ("execution.checkpointing.incremental", "yes", "true or false"),
        ("restart-strategy.type", "sometimes", "one of disable, none"),
        ("execution.checkpointing.interval", "5 ms", "at least 10 ms"),
    ],
)
def test_a_wrong_value_names_the_key_and_what_it_accepts(key, value, accepted):
    with pytest.raises(ConfigurationError, match=rf"{key}: '{value}' is not valid.*"):
        Configuration({key: value})
    try:
        Configuration({key: value})
    except ConfigurationError as e:
        assert accepted in str(e)


def test_a_malformed_dynamic_property_is_refused():
    with pytest.raises(ConfigurationError, match="expected key=value"):
        Configuration.from_dynamic_properties(["parallelism.default"])


def test_a_yaml_file_that_is_not_a_mapping_is_refused(tmp_path):
    path = tmp_path / "bad.yaml"
    path.write_text("- just\n- a list\n")
    with pytest.raises(ConfigurationError, match="must hold a mapping"):
        Configuration.from_yaml_file(str(path))


def test_every_option_has_a_description_and_a_parsable_default():
    for option in OPTIONS:
        assert option.description
        if option.default is not None:
            option.value_of(option.default, option.key)


def test_restart_strategy_defaults_follow_flink():
    assert isinstance(
        from_configuration(Configuration(), checkpointing=True), ExponentialDelayRestart
    )
    assert isinstance(from_configuration(Configuration(), checkpointing=False), NoRestart)


def test_restart_strategies_take_their_parameters_from_the_configuration():
    fixed = from_configuration(
        Configuration(
            {
                "restart-strategy.type": "fixed-delay",
                "restart-strategy.fixed-delay.attempts": "3",
                "restart-strategy.fixed-delay.delay": "2 s",
            }
        ),
        checkpointing=True,
    )
    assert isinstance(fixed, FixedDelayRestart) and (fixed.attempts, fixed.delay_s) == (3, 2.0)
    rate = from_configuration(
        Configuration(
            {
                "restart-strategy.type": "failurerate",
                "restart-strategy.failure-rate.max-failures-per-interval": "2",
                "restart-strategy.failure-rate.failure-rate-interval": "1 min",
            }
        ),
        checkpointing=True,
    )
    assert isinstance(rate, FailureRateRestart) and rate.interval_s == 60
    assert isinstance(
        from_configuration(Configuration({"restart-strategy.type": "disable"}), checkpointing=True),
        NoRestart,
    )


def test_every_option_is_documented():
    from pathlib import Path

    doc = (Path(__file__).parents[3] / "docs" / "configuration.md").read_text()
    missing = [o.key for o in OPTIONS if f"`{o.key}`" not in doc]
    assert not missing, f"add these keys to docs/configuration.md: {missing}"


def test_every_checkpointing_option_reaches_the_values_a_job_is_planned_with():
    cp = "execution.checkpointing."
    env = StreamExecutionEnvironment().configure(
        {
            cp + "interval": "2 s",
            cp + "mode": "AT_LEAST_ONCE",
            cp + "timeout": "5 s",
            cp + "min-pause": 7,
            cp + "max-concurrent-checkpoints": 3,
            cp + "tolerable-failed-checkpoints": 2,
            cp + "externalized-checkpoint-retention": "RETAIN_ON_CANCELLATION",
            cp + "checkpoints-after-tasks-finish": False,
            cp + "dir": "file:///checkpoints",
            cp + "savepoint-dir": "file:///savepoints",
            cp + "num-retained": 4,
            cp + "data-inline-threshold": "1 kb",
            cp + "write-buffer-size": "8 kb",
            cp + "unaligned.enabled": True,
            cp + "aligned-checkpoint-timeout": 10,
            cp + "unaligned.forced": True,
            cp + "unaligned.max-subtasks-per-channel-state-file": 2,
        }
    )
    cc = env.get_checkpoint_config()
    assert (cc.force_unaligned, cc.max_subtasks_per_channel_state_file) == (True, 2)
    values = cc.checkpointing()
    assert (values.interval_ms, values.exactly_once, values.timeout_ms) == (2000, False, 5000)
    assert (values.min_pause_ms, values.max_concurrent, values.tolerable_failures) == (7, 3, 2)
    assert values.retain_on_cancel and not values.checkpoints_after_tasks_finish
    assert (values.storage, values.savepoint_dir) == ("file:///checkpoints", "file:///savepoints")
    assert (values.num_retained, values.data_inline_threshold_bytes) == (4, 1024)
    assert (values.write_buffer_size, values.unaligned) == (8192, True)
    assert values.aligned_checkpoint_timeout_ms == 10
