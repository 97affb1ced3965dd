"""JdbcSink's mapping onto PostgresSink, without a server: JDBC URLs as libpq URIs, ``?``
placeholders as psycopg's, options checked at the job's definition; SourceFunction and
SinkFunction wrap barrierflow's sources and sinks and refuse Java ones."""

from __future__ import annotations

import pytest

from barrierflow.common import Types
from barrierflow.connectors.postgres.jdbc import JdbcConnection, psycopg_statement
from barrierflow.datastream import StreamExecutionEnvironment
from barrierflow.datastream.connectors import DeliveryGuarantee
from barrierflow.datastream.connectors.jdbc import (
    JdbcConnectionOptions,
    JdbcExecutionOptions,
    JdbcSink,
)
from barrierflow.datastream.connectors.number_seq import NumberSequenceSource
from barrierflow.datastream.connectors.postgres import PostgresSink
from barrierflow.datastream.functions import SinkFunction, SourceFunction
from barrierflow.errors import ConfigurationError

ROW = Types.ROW([Types.INT(), Types.STRING()])


def options(url: str = "jdbc:postgresql://db:5433/shop", **more) -> JdbcConnectionOptions:
    builder = JdbcConnectionOptions.JdbcConnectionOptionsBuilder().with_url(url)
    for name, value in more.items():
        getattr(builder, f"with_{name}")(value)
    return builder.build()


def test_a_postgresql_url_becomes_a_libpq_uri_with_its_credentials():
    built = options(user_name="app", password="s3 cret", driver_name="org.postgresql.Driver")
    assert built._options.conninfo() == "postgresql://db:5433/shop?user=app&password=s3%20cret"
    assert JdbcConnection("jdbc:postgresql:shop?ssl=true").conninfo() == (
        "postgresql:///shop?sslmode=require"
    )
    assert (built.get_db_url(), built.get_user_name()) == ("jdbc:postgresql://db:5433/shop", "app")


def test_other_databases_drivers_and_unknown_parameters_are_refused_naming_them():
    with pytest.raises(ConfigurationError, match="not a PostgreSQL JDBC URL"):
        options("jdbc:mysql://db/shop")
    with pytest.raises(ConfigurationError, match=r"com\.mysql\.cj\.jdbc\.Driver"):
        options(driver_name="com.mysql.cj.jdbc.Driver")
    with pytest.raises(ConfigurationError, match="'prepareThreshold'"):
        options("jdbc:postgresql://db/shop?prepareThreshold=0")


def test_placeholders_become_psycopgs_outside_quotes_and_must_match_the_row():
    sql = "INSERT INTO t VALUES (?, ?) ON CONFLICT DO UPDATE SET s = '?' || '%'"
    assert psycopg_statement(sql, ROW) == (
        "INSERT INTO t VALUES (%s, %s) ON CONFLICT DO UPDATE SET s = '?' || '%%'"
    )
    with pytest.raises(ConfigurationError, match=r"1 \? placeholders.*2 fields"):
        psycopg_statement("INSERT INTO t VALUES (?)", ROW)
    with pytest.raises(ConfigurationError, match="row type"):
        psycopg_statement("INSERT INTO t VALUES (?)", Types.INT())


def test_sink_is_at_least_once_and_exactly_once_sink_uses_prepared_transactions():
    execution = JdbcExecutionOptions.builder().with_batch_size(10).with_max_retries(1).build()
    sink = JdbcSink.sink("INSERT INTO t VALUES (?, ?)", ROW, options(), execution).wrapped_sink
    assert isinstance(sink, PostgresSink)
    assert (sink.delivery_guarantee, sink.batch_size, sink.max_retries) == (
        DeliveryGuarantee.AT_LEAST_ONCE, 10, 1,
    )  # fmt: skip
    exactly = JdbcSink.exactly_once_sink("INSERT INTO t VALUES (?, ?)", ROW, options())
    assert exactly.wrapped_sink.delivery_guarantee is DeliveryGuarantee.EXACTLY_ONCE
    assert JdbcExecutionOptions.defaults().get_batch_size() == 5000


def test_execution_options_are_checked_and_an_interval_is_refused_exactly_once():
    with pytest.raises(ConfigurationError, match="batch_size must be an integer >= 1"):
        JdbcExecutionOptions.builder().with_batch_size(0).build()
    interval = JdbcExecutionOptions.builder().with_batch_interval_ms(200).build()
    at_least_once = JdbcSink.sink("INSERT INTO t VALUES (?, ?)", ROW, options(), interval)
    assert at_least_once.wrapped_sink.commit_interval_ms == 200
    with pytest.raises(ConfigurationError, match="commit interval"):
        JdbcSink.exactly_once_sink("INSERT INTO t VALUES (?, ?)", ROW, options(), interval)


def test_add_sink_and_add_source_unwrap_functions_and_java_ones_are_refused():
    env = StreamExecutionEnvironment()
    stream = env.add_source(SourceFunction(NumberSequenceSource(1, 3)), "numbers")
    jdbc = JdbcSink.sink("INSERT INTO t VALUES (?, ?)", ROW, options())
    sink = stream.map(lambda x: (x, str(x))).add_sink(jdbc)
    assert sink._transformation.function is jdbc.wrapped_sink
    assert isinstance(jdbc, SinkFunction)
    with pytest.raises(ConfigurationError, match="needs the JVM"):
        SinkFunction("org.example.MySink")
    with pytest.raises(ConfigurationError, match="needs the JVM"):
        SourceFunction("org.example.MySource")
