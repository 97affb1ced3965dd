"""Invalid configuration fails in execute() before any Spark session or job starts, with a
message that says what to change."""

from __future__ import annotations

import datetime
import os

import pytest

from barrierflow.client.planning import plan_job
from barrierflow.cluster.spark import session
from barrierflow.datastream import StreamExecutionEnvironment
from barrierflow.datastream.connectors.discarding import DiscardingSink
from barrierflow.datastream.connectors.number_seq import NumberSequenceSource
from barrierflow.datastream.state_backend import EmbeddedRocksDBStateBackend
from barrierflow.errors import ConfigurationError
from barrierflow.protocol.checkpoint_barrier import Alignment


@pytest.fixture(autouse=True)
def no_spark(monkeypatch):
    def refuse(*_args, **_kwargs):
        raise AssertionError("Spark was started for an invalid job")

    monkeypatch.setattr(session, "get_or_create_session", refuse)


def _job(env: StreamExecutionEnvironment) -> StreamExecutionEnvironment:
    env.from_source(NumberSequenceSource(1, 10), "numbers").sink_to(DiscardingSink())
    return env


@pytest.mark.parametrize("interval", [-1, 0, 5, 1.5, "100"])
def test_a_bad_checkpoint_interval_is_refused_with_the_rule(interval):
    with pytest.raises(ConfigurationError, match="checkpoint interval must be an integer"):
        StreamExecutionEnvironment().enable_checkpointing(interval)


@pytest.mark.parametrize("parallelism", [0, -2, 2.0])
def test_a_bad_parallelism_is_refused(parallelism):
    with pytest.raises(ConfigurationError, match="parallelism must be a positive integer"):
        StreamExecutionEnvironment().set_parallelism(parallelism)
    env = StreamExecutionEnvironment()
    with pytest.raises(ConfigurationError, match="parallelism must be a positive integer"):
        env.from_source(NumberSequenceSource(1, 2), "s").set_parallelism(parallelism)


def test_parallelism_above_max_parallelism_is_refused_before_spark():
    env = _job(StreamExecutionEnvironment().set_parallelism(8).set_max_parallelism(4))
    with pytest.raises(ConfigurationError, match="above the max parallelism 4"):
        env.execute("too-wide")


def test_an_unknown_storage_scheme_is_refused_before_spark():
    env = _job(StreamExecutionEnvironment())
    env.enable_checkpointing(100)
    env.get_checkpoint_config().set_checkpoint_storage("nosuchscheme://bucket/ckpt")
    with pytest.raises(ConfigurationError, match=r"nosuchscheme.*cannot be used.*file:///path"):
        env.execute("bad-scheme")


def test_an_unwritable_checkpoint_directory_is_refused_before_spark(tmp_path):
    blocker = tmp_path / "a-file"
    blocker.write_text("not a directory")
    env = _job(StreamExecutionEnvironment())
    env.enable_checkpointing(100)
    env.get_checkpoint_config().set_checkpoint_storage(str(blocker / "ckpt"))
    with pytest.raises(ConfigurationError, match="is not writable"):
        env.execute("unwritable")


def test_checkpointing_without_storage_uses_a_local_directory_and_says_where(caplog):
    """As a PyFlink program expects (Flink keeps them in the JobManager's memory)."""
    import logging
    import tempfile

    env = _job(StreamExecutionEnvironment())
    env.enable_checkpointing(100)
    with caplog.at_level(logging.INFO, logger="barrierflow"):
        plan = plan_job(env._pipeline("no-storage"))
    default = os.path.join(tempfile.gettempdir(), "barrierflow", "checkpoints")
    assert plan.task_config.storage_uri.startswith(f"file://{default}/")
    assert f"checkpoints go to {default} (set_checkpoint_storage()" in caplog.text


def test_restoring_from_a_path_that_is_not_a_checkpoint_names_the_path(tmp_path):
    env = _job(StreamExecutionEnvironment()).set_restore_path(str(tmp_path / "nothing"))
    with pytest.raises(ConfigurationError, match=r"cannot restore from .*nothing"):
        env.execute("restore-nothing")


def test_a_corrupt_metadata_file_to_restore_from_is_named(tmp_path):
    chk = tmp_path / "job" / "chk-3"
    chk.mkdir(parents=True)
    (chk / "_metadata").write_bytes(b"BFLWMETA garbage")
    env = _job(StreamExecutionEnvironment()).set_restore_path(str(chk))
    with pytest.raises(ConfigurationError, match=r"chk-3/_metadata is unusable: truncated"):
        env.execute("restore-corrupt")


@pytest.mark.parametrize(
    ("in_code", "conf", "incremental"),
    [
        (EmbeddedRocksDBStateBackend(), {"execution.checkpointing.incremental": True}, True),
        (EmbeddedRocksDBStateBackend(True), {"state.backend.type": "rocksdb"}, True),
        (EmbeddedRocksDBStateBackend(False), {"execution.checkpointing.incremental": True}, False),
        (
            None,
            {"state.backend.type": "rocksdb", "execution.checkpointing.incremental": True},
            True,
        ),
        (None, {"execution.checkpointing.incremental": True}, False),  # hashmap: always full
    ],
)
def test_incremental_checkpoints_come_from_the_backend_set_in_code_else_the_configuration(
    tmp_path, in_code, conf, incremental
):
    env = StreamExecutionEnvironment()
    if in_code is not None:
        env.set_state_backend(in_code)
    env.configure(conf)
    env.enable_checkpointing(1000).get_checkpoint_config().set_checkpoint_storage(str(tmp_path))
    plan = plan_job(_job(env)._pipeline("job"))
    assert plan.task_config.state_backend.incremental is incremental


def test_resuming_needs_checkpointing_and_no_restore_path(tmp_path):
    env = _job(StreamExecutionEnvironment()).resume_job("abc123")
    with pytest.raises(ConfigurationError, match="needs checkpointing enabled"):
        plan_job(env._pipeline("job"))
    with pytest.raises(ConfigurationError, match="letters and digits"):
        env.resume_job("../etc")


def _unaligned_plan(tmp_path, conf: dict):
    env = StreamExecutionEnvironment()
    env.configure({"execution.checkpointing.interval": "1 s", **conf})
    env.get_checkpoint_config().set_checkpoint_storage(str(tmp_path))
    return plan_job(_job(env)._pipeline("job"))


@pytest.mark.parametrize(
    ("conf", "alignment", "timeout_ms"),
    [
        ({}, Alignment.ALIGNED, 0),
        ({"execution.checkpointing.unaligned.enabled": True}, Alignment.UNALIGNED, 0),
        (
            {
                "execution.checkpointing.unaligned.enabled": "true",
                "execution.checkpointing.aligned-checkpoint-timeout": "100 ms",
            },
            Alignment.ALIGNED_WITH_TIMEOUT,
            100,
        ),
        ({"execution.checkpointing.aligned-checkpoint-timeout": "1 s"}, Alignment.ALIGNED, 0),
    ],
)
def test_periodic_checkpoints_align_as_the_unaligned_settings_say(
    tmp_path, conf, alignment, timeout_ms
):
    options = _unaligned_plan(tmp_path, conf).coordinator_config.checkpoint_options
    assert (options.alignment, options.aligned_timeout_ms) == (alignment, timeout_ms)


def test_the_unaligned_settings_reach_the_tasks(tmp_path):
    plan = _unaligned_plan(
        tmp_path,
        {
            "execution.checkpointing.unaligned.enabled": True,
            "execution.checkpointing.aligned-checkpoint-timeout": "250 ms",
        },
    )
    assert plan.task_config.unaligned_checkpoints
    assert plan.task_config.aligned_checkpoint_timeout_ms == 250


@pytest.mark.parametrize(
    ("conf", "named"),
    [
        ({"execution.checkpointing.mode": "AT_LEAST_ONCE"}, "execution.checkpointing.mode"),
        (
            {"execution.checkpointing.max-concurrent-checkpoints": 2},
            "execution.checkpointing.max-concurrent-checkpoints",
        ),
    ],
)
def test_unaligned_checkpoints_where_flink_restricts_them_are_refused_naming_the_keys(
    tmp_path, conf, named
):
    with pytest.raises(ConfigurationError, match=named) as raised:
        _unaligned_plan(tmp_path, {"execution.checkpointing.unaligned.enabled": True, **conf})
    assert "execution.checkpointing.unaligned.enabled" in str(raised.value)


def test_the_pyflink_setters_of_unaligned_checkpoints():
    cc = StreamExecutionEnvironment().get_checkpoint_config()
    assert not cc.is_unaligned_checkpoints_enabled()
    cc.enable_unaligned_checkpoints()
    assert cc.is_unaligned_checkpoints_enabled()
    cc.set_aligned_checkpoint_timeout(datetime.timedelta(milliseconds=1500))
    assert cc.get_aligned_checkpoint_timeout() == datetime.timedelta(seconds=1.5)
    cc.set_aligned_checkpoint_timeout(20)
    assert cc.aligned_checkpoint_timeout_ms == 20
    cc.set_force_unaligned_checkpoints(True)
    assert cc.is_force_unaligned_checkpoints()
    cc.disable_unaligned_checkpoints()
    assert not cc.is_unaligned_checkpoints_enabled()
    with pytest.raises(ConfigurationError, match="non-negative"):
        cc.set_aligned_checkpoint_timeout(-1)
