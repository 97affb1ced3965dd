"""PyFlink's ``pyflink.datastream.connectors.jdbc``: ``JdbcSink`` writes to PostgreSQL through
psycopg (``pip install 'barrierflow[postgres]'``), at least once with ``sink`` (make the
statement an upsert) or exactly once with ``exactly_once_sink`` (prepared transactions). The
mapping onto barrierflow's PostgreSQL sink is ``barrierflow/connectors/postgres/jdbc.py``."""

from __future__ import annotations

from typing import Any

from barrierflow.connectors.interfaces.delivery_guarantee import DeliveryGuarantee
from barrierflow.connectors.postgres.jdbc import JdbcConnection, JdbcExecution, jdbc_postgres_sink
from barrierflow.datastream.functions.one_input import SinkFunction

__all__ = ["JdbcConnectionOptions", "JdbcExecutionOptions", "JdbcSink"]


class JdbcConnectionOptions:
    def __init__(self, options: JdbcConnection) -> None:
        self._options = options

    def get_db_url(self) -> str:
        return self._options.url

    def get_driver_name(self) -> str | None:
        return self._options.driver_name

    def get_user_name(self) -> str | None:
        return self._options.user_name

    def get_password(self) -> str | None:
        return self._options.password

    class JdbcConnectionOptionsBuilder:
        def __init__(self) -> None:
            self._values: dict[str, Any] = {}

        def with_url(self, url: str) -> JdbcConnectionOptions.JdbcConnectionOptionsBuilder:
            self._values["url"] = url
            return self

        def with_driver_name(
            self, driver_name: str
        ) -> JdbcConnectionOptions.JdbcConnectionOptionsBuilder:
            self._values["driver_name"] = driver_name
            return self

        def with_user_name(
            self, user_name: str
        ) -> JdbcConnectionOptions.JdbcConnectionOptionsBuilder:
            self._values["user_name"] = user_name
            return self

        def with_password(
            self, password: str
        ) -> JdbcConnectionOptions.JdbcConnectionOptionsBuilder:
            self._values["password"] = password
            return self

        def build(self) -> JdbcConnectionOptions:
            if "url" not in self._values:
                raise ValueError("JdbcConnectionOptions: with_url(...) is required")
            options = JdbcConnection(**self._values)
            options.conninfo()  # a URL that cannot be mapped fails here, at the job's definition
            return JdbcConnectionOptions(options)


class JdbcExecutionOptions:
    def __init__(self, options: JdbcExecution) -> None:
        self._options = options

    def get_batch_interval_ms(self) -> int:
        return self._options.batch_interval_ms

    def get_batch_size(self) -> int:
        return self._options.batch_size

    def get_max_retries(self) -> int:
        return self._options.max_retries

    @staticmethod
    def defaults() -> JdbcExecutionOptions:
        return JdbcExecutionOptions(JdbcExecution())

    @staticmethod
    def builder() -> JdbcExecutionOptions.Builder:
        return JdbcExecutionOptions.Builder()

    class Builder:
        def __init__(self) -> None:
            self._values: dict[str, int] = {}

        def with_batch_size(self, size: int) -> JdbcExecutionOptions.Builder:
            self._values["batch_size"] = size
            return self

        def with_batch_interval_ms(self, interval_ms: int) -> JdbcExecutionOptions.Builder:
            self._values["batch_interval_ms"] = interval_ms
            return self

        def with_max_retries(self, max_retries: int) -> JdbcExecutionOptions.Builder:
            self._values["max_retries"] = max_retries
            return self

        def build(self) -> JdbcExecutionOptions:
            return JdbcExecutionOptions(JdbcExecution(**self._values))


class JdbcSink(SinkFunction):
    """``stream.add_sink(JdbcSink.sink(sql, type_info, connection_options))``: each record (a
    Row of ``type_info``) gives the statement's ``?`` parameters, in order."""

    @staticmethod
    def sink(
        sql: str,
        type_info: Any,
        jdbc_connection_options: JdbcConnectionOptions,
        jdbc_execution_options: JdbcExecutionOptions | None = None,
    ) -> JdbcSink:
        """At least once: batches committed at checkpoints (and at the batch interval)."""
        return JdbcSink._of(
            sql, type_info, jdbc_connection_options, jdbc_execution_options,
            DeliveryGuarantee.AT_LEAST_ONCE,
        )  # fmt: skip

    @staticmethod
    def exactly_once_sink(
        sql: str,
        type_info: Any,
        jdbc_connection_options: JdbcConnectionOptions,
        jdbc_execution_options: JdbcExecutionOptions | None = None,
    ) -> JdbcSink:
        """Exactly once, as Flink's ``JdbcSink.exactlyOnceSink`` (its XA transactions are
        PostgreSQL's prepared transactions here: the server needs ``max_prepared_transactions``
        > 0, and the job checkpointing). A batch interval is refused: rows show when the
        checkpoint that wrote them completes."""
        return JdbcSink._of(
            sql, type_info, jdbc_connection_options, jdbc_execution_options,
            DeliveryGuarantee.EXACTLY_ONCE,
        )  # fmt: skip

    @staticmethod
    def _of(
        sql: str,
        type_info: Any,
        connection: JdbcConnectionOptions,
        execution: JdbcExecutionOptions | None,
        guarantee: DeliveryGuarantee,
    ) -> JdbcSink:
        execution = execution if execution is not None else JdbcExecutionOptions.defaults()
        sink = jdbc_postgres_sink(
            sql, type_info, connection._options, execution._options, guarantee
        )
        return JdbcSink(sink)

    def __repr__(self) -> str:
        return f"JdbcSink({self.wrapped_sink!r})"
