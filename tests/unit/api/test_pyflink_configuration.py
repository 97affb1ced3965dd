"""Configuration, ExecutionConfig, runtime modes and metric groups as PyFlink programs use them,
without Spark."""

from __future__ import annotations

import logging

import pytest

from barrierflow.common import Configuration
from barrierflow.datastream import RuntimeExecutionMode, StreamExecutionEnvironment
from barrierflow.datastream.connectors.base import Boundedness, Source
from barrierflow.datastream.connectors.discarding import DiscardingSink
from barrierflow.datastream.functions.one_input import RuntimeContext
from barrierflow.errors import ConfigurationError
from barrierflow.metrics import MetricRegistry


def test_configuration_has_pyflinks_typed_getters_and_setters():
    config = Configuration()
    config.set_integer("parallelism.default", 3).set_boolean(
        "execution.checkpointing.unaligned.enabled", True
    )
    config.set_string("pipeline.auto-watermark-interval", "1 s")
    assert config.get_integer("parallelism.default", 1) == 3
    assert config.get_boolean("execution.checkpointing.unaligned.enabled", False) is True
    assert config.get_string("execution.checkpointing.unaligned.enabled", "") == "true"
    assert config.get_integer("pipeline.auto-watermark-interval", 0) == 1000
    assert config.get_integer("pipeline.max-parallelism", 7) == 7  # not set: the default given
    assert config.contains_key("parallelism.default") and "parallelism.default" in config.key_set()
    assert config.remove_config("parallelism.default") and not config.contains_key(
        "parallelism.default"
    )
    assert Configuration.from_dict({"parallelism.default": "2"}).to_dict() == {
        "parallelism.default": "2"
    }
    with pytest.raises(ConfigurationError, match="unknown configuration key 'parallelism'"):
        config.set_string("parallelism", "2")


def test_pyflinks_own_keys_are_kept_with_a_warning_that_they_do_nothing(caplog):
    with caplog.at_level(logging.WARNING, logger="barrierflow.config"):
        config = Configuration().set_string("python.fn-execution.bundle.size", "1000")
        config.set_string("pipeline.jars", "file:///kafka.jar")
    assert "python.fn-execution.bundle.size is a setting of PyFlink's Java runtime" in caplog.text
    assert config.get_string("pipeline.jars", "") == "file:///kafka.jar"
    env = StreamExecutionEnvironment.get_execution_environment(config)
    assert env.get_configuration().contains_key("pipeline.jars")


def test_add_jars_keeps_the_jars_with_the_warning_that_they_do_nothing(caplog):
    env = StreamExecutionEnvironment()
    with caplog.at_level(logging.WARNING, logger="barrierflow.config"):
        env.add_jars("file:///a.jar", "file:///b.jar")
        env.add_classpaths("file:///classes")
    assert "pipeline.jars is a setting of PyFlink's Java runtime" in caplog.text
    assert "pipeline.classpaths is a setting" in caplog.text
    assert env.get_configuration().get_string("pipeline.jars", "") == (
        "file:///a.jar;file:///b.jar"
    )


def test_get_config_sets_the_watermark_interval_and_the_job_parameters():
    env = StreamExecutionEnvironment.get_execution_environment()
    env.get_config().set_auto_watermark_interval(50).set_global_job_parameters({"k": 1})
    assert env.get_config().get_auto_watermark_interval() == 50
    assert env.get_config().get_global_job_parameters() == {"k": "1"}
    env.configure({"pipeline.global-job-parameters": "a:1, b:x:y"})
    assert env.get_config().get_global_job_parameters() == {"a": "1", "b": "x:y"}
    with pytest.raises(ConfigurationError, match="takes a dict"):
        env.get_config().set_global_job_parameters(["k"])
    with pytest.raises(ConfigurationError, match="key:value pairs"):
        env.configure({"pipeline.global-job-parameters": "just-a-key"})


def test_batch_mode_needs_bounded_sources_and_automatic_picks_by_them():
    class Endless(Source):
        boundedness = Boundedness.CONTINUOUS_UNBOUNDED

        def create_enumerator(self, context):
            raise NotImplementedError

        def restore_enumerator(self, context, state):
            raise NotImplementedError

        def create_reader(self, context):
            raise NotImplementedError

    env = StreamExecutionEnvironment()
    env.from_collection([1]).sink_to(DiscardingSink())
    assert not env._pipeline("job").is_batch()
    env.set_runtime_mode(RuntimeExecutionMode.AUTOMATIC)
    assert env._pipeline("job").is_batch()
    env.from_source(Endless(), "endless").sink_to(DiscardingSink())
    assert not env._pipeline("job").is_batch()
    env.set_runtime_mode(RuntimeExecutionMode.BATCH)
    with pytest.raises(ConfigurationError, match="BATCH needs bounded sources; 'endless'"):
        env._pipeline("job").is_batch()
    with pytest.raises(ConfigurationError, match="one of STREAMING, BATCH, AUTOMATIC"):
        env.set_runtime_mode("FAST")


def test_runtime_context_tells_the_attempt_parameters_and_max_parallelism():
    context = RuntimeContext(
        "t", 1, 2, max_parallelism=64, attempt_number=2, job_parameters={"k": "v"}
    )
    assert context.get_max_number_of_parallel_subtasks() == 64
    assert context.get_attempt_number() == 2
    assert context.get_job_parameter("k") == "v" and context.get_job_parameter("x", "d") == "d"
    assert context.get_task_name_with_subtasks() == "t (2/2)"


def test_metric_groups_sample_counters_meters_gauges_and_distributions(caplog):
    registry = MetricRegistry()
    group = registry.group("op").add_group("io", "in")
    counter = group.counter("records")
    counter.inc(5)
    counter.dec()
    assert group.counter("records") is counter  # asked again: the same one
    meter = group.meter("events")
    meter.mark_event(10)
    group.gauge("depth", lambda: 7)
    group.gauge("broken", lambda: 1 / 0)
    d = group.distribution("sizes")
    for v in (3, 1, 2):
        d.update(v)
    with caplog.at_level(logging.WARNING, logger="barrierflow.metrics"):
        sample = {name: value for _, name, value in registry.sample()}
        registry.sample()
    assert sample["io.in.records"] == 4 and sample["io.in.events"] == 10
    assert sample["io.in.depth"] == 7 and "io.in.broken" not in sample
    assert caplog.text.count("'io.in.broken'") == 1  # reported once
    assert [sample[f"io.in.sizes.{p}"] for p in ("count", "sum", "min", "max")] == [3, 6, 1, 3]
    with pytest.raises(ValueError, match="already registered"):
        group.meter("records")
    with pytest.raises(ValueError, match="letters, digits"):
        group.counter("has space")


def test_a_meter_rates_events_over_its_span():
    from barrierflow.metrics import Meter

    meter = Meter(time_span_in_seconds=10)
    assert meter.get_rate(now=0.0) == 0.0
    meter.mark_event(50)
    assert meter.get_rate(now=5.0) == 10.0
    meter.mark_event(100)
    assert meter.get_rate(now=15.0) == 10.0  # the sample at 0 s fell out: 100 from 5 to 15 s


def test_add_source_and_add_sink_are_from_source_and_sink_to():
    from barrierflow.common import Types
    from barrierflow.datastream.connectors.number_seq import NumberSequenceSource

    env = StreamExecutionEnvironment()
    stream = env.add_source(NumberSequenceSource(1, 3), "numbers", type_info=Types.LONG())
    assert stream.get_type() == Types.LONG() and stream.get_transformation().name == "numbers"
    sink = stream.add_sink(DiscardingSink())
    assert sink.get_transformation().function.__class__ is DiscardingSink
    with pytest.raises(ConfigurationError, match="from_source\\(\\): the type"):
        env.add_source(NumberSequenceSource(1, 3), type_info=int)
