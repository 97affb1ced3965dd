"""PyFlink's RestartStrategies: configurations that make a fresh barrierflow strategy for each
job, with PyFlink's getters and delays in milliseconds or as timedeltas."""

from __future__ import annotations

import datetime

import pytest

from barrierflow.client.planning import plan_job
from barrierflow.common import RestartStrategies, RestartStrategyConfiguration
from barrierflow.datastream import StreamExecutionEnvironment
from barrierflow.datastream.connectors.discarding import DiscardingSink
from barrierflow.errors import ConfigurationError


def test_fixed_delay_takes_milliseconds_or_a_timedelta_and_says_what_it_is():
    by_ms = RestartStrategies.fixed_delay_restart(3, 2500)
    by_delta = RestartStrategies.fixed_delay_restart(3, datetime.timedelta(seconds=2.5))
    assert by_ms == by_delta and isinstance(by_ms, RestartStrategyConfiguration)
    assert by_ms.get_restart_attempts() == 3
    assert by_ms.get_delay_between_attempts_interval() == datetime.timedelta(milliseconds=2500)
    assert by_ms.get_description() == "fixed-delay (3 attempts, 2.5 s apart)"


def test_each_job_gets_a_fresh_strategy_with_no_failures_counted():
    config = RestartStrategies.fixed_delay_restart(1, 10)
    first = config.create()
    assert first.on_failure(0.0) == 0.01 and first.on_failure(1.0) is None
    assert config.create().on_failure(2.0) == 0.01


def test_failure_rate_and_no_restart_map_onto_barrierflows_strategies():
    rate = RestartStrategies.failure_rate_restart(1, datetime.timedelta(seconds=10), 500)
    assert rate.get_max_failure_rate() == 1
    assert rate.get_failure_interval() == datetime.timedelta(seconds=10)
    strategy = rate.create()
    assert strategy.on_failure(0.0) == 0.5 and strategy.on_failure(1.0) is None
    assert RestartStrategies.no_restart().create().on_failure(0.0) is None


def test_fall_back_leaves_it_to_the_configuration():
    env = StreamExecutionEnvironment()
    env.configure({"restart-strategy.type": "fixed-delay"})
    env.from_collection([1]).sink_to(DiscardingSink())
    assert env.get_restart_strategy() == RestartStrategies.fall_back_restart()
    assert plan_job(env._pipeline("job")).restart_strategy.description.startswith("fixed-delay")
    env.set_restart_strategy(RestartStrategies.no_restart())
    assert plan_job(env._pipeline("job")).restart_strategy.description == "no restarts"


@pytest.mark.parametrize("bad", [object(), "none", None])
def test_anything_else_is_refused_naming_what_set_restart_strategy_takes(bad):
    with pytest.raises(ConfigurationError, match="RestartStrategies"):
        StreamExecutionEnvironment().set_restart_strategy(bad)


def test_a_delay_is_refused_when_it_is_neither_milliseconds_nor_a_timedelta():
    with pytest.raises(ValueError, match="delay_between_attempts"):
        RestartStrategies.fixed_delay_restart(3, 2.5)
