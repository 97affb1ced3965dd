"""``AsyncDataStream``: PyFlink's way to apply an ``AsyncFunction`` to a stream.

It records an async wait transformation (``runtime/async_wait_operator.py`` runs it) and checks
what PyFlink checks when the job is built: ``async_invoke`` must be a coroutine function, a
retry strategy needs a timeout, and the strategy must have a retry predicate.
"""

from __future__ import annotations

import inspect
from typing import Any

from barrierflow.api.datastream import DataStream
from barrierflow.common.typeinfo import TypeInformation, checked_type
from barrierflow.datastream.functions.async_io import (
    NO_RETRY_STRATEGY,
    AsyncFunction,
    AsyncFunctionDescriptor,
    AsyncRetryStrategy,
)
from barrierflow.errors import ConfigurationError
from barrierflow.eventtime.durations import millis_of
from barrierflow.graph.transformation import TransformationKind

_Mode = AsyncFunctionDescriptor.OutputMode


class AsyncDataStream:
    """Adds an ``AsyncFunction`` to a stream: up to ``capacity`` calls run at once; a call
    that did not complete within ``timeout`` gets the function's ``timeout(value)``.
    ``unordered_wait`` emits results as they complete (in order only between watermarks),
    ``ordered_wait`` in the order of the inputs. Records still in flight at a checkpoint are
    in it, and called again after a restore."""

    @staticmethod
    def unordered_wait(
        data_stream: DataStream,
        async_function: AsyncFunction,
        timeout: Any,
        capacity: int = 100,
        output_type: TypeInformation | None = None,
    ) -> DataStream:
        return AsyncDataStream.unordered_wait_with_retry(
            data_stream, async_function, timeout, NO_RETRY_STRATEGY, capacity, output_type
        )

    @staticmethod
    def unordered_wait_with_retry(
        data_stream: DataStream,
        async_function: AsyncFunction,
        timeout: Any,
        async_retry_strategy: AsyncRetryStrategy,
        capacity: int = 100,
        output_type: TypeInformation | None = None,
    ) -> DataStream:
        return _async_wait(
            data_stream, async_function, timeout, async_retry_strategy, capacity, output_type,
            _Mode.UNORDERED,
        )  # fmt: skip

    @staticmethod
    def ordered_wait(
        data_stream: DataStream,
        async_function: AsyncFunction,
        timeout: Any,
        capacity: int = 100,
        output_type: TypeInformation | None = None,
    ) -> DataStream:
        return AsyncDataStream.ordered_wait_with_retry(
            data_stream, async_function, timeout, NO_RETRY_STRATEGY, capacity, output_type
        )

    @staticmethod
    def ordered_wait_with_retry(
        data_stream: DataStream,
        async_function: AsyncFunction,
        timeout: Any,
        async_retry_strategy: AsyncRetryStrategy,
        capacity: int = 100,
        output_type: TypeInformation | None = None,
    ) -> DataStream:
        return _async_wait(
            data_stream, async_function, timeout, async_retry_strategy, capacity, output_type,
            _Mode.ORDERED,
        )  # fmt: skip


def _async_wait(
    data_stream: DataStream,
    function: AsyncFunction,
    timeout: Any,
    strategy: AsyncRetryStrategy,
    capacity: int,
    output_type: TypeInformation | None,
    mode: AsyncFunctionDescriptor.OutputMode,
) -> DataStream:
    name = type(function).__name__
    if not inspect.iscoroutinefunction(getattr(function, "async_invoke", None)):
        raise ConfigurationError(
            f"{name}.async_invoke must be declared 'async def async_invoke(self, value)': "
            "AsyncDataStream runs it as a coroutine on an event loop"
        )
    timeout_ms = millis_of(timeout, "AsyncDataStream: the timeout")
    if strategy is None:
        raise ConfigurationError(
            "AsyncDataStream: the retry strategy is None; pass NO_RETRY_STRATEGY (from "
            "async_retry_strategies) or use unordered_wait / ordered_wait"
        )
    if strategy is not NO_RETRY_STRATEGY and timeout_ms <= 0:
        raise ConfigurationError(
            f"AsyncDataStream: a retry strategy needs a positive timeout, not {timeout_ms} ms "
            "(it bounds the attempts of a call); give Time.seconds(...)"
        )
    if strategy.get_retry_predicate() is None:
        raise ConfigurationError(
            f"AsyncDataStream: the retry predicate of {type(strategy).__name__} is None; "
            "get_retry_predicate() must return an AsyncRetryPredicate"
        )
    if isinstance(capacity, bool) or not isinstance(capacity, int) or capacity < 1:
        raise ConfigurationError(
            f"AsyncDataStream: the capacity is the number of calls in flight at once and must "
            f"be at least 1, not {capacity!r}"
        )
    descriptor = AsyncFunctionDescriptor(function, timeout, capacity, strategy, mode)
    return data_stream._then(
        TransformationKind.ASYNC_WAIT,
        "async wait operator",
        descriptor,
        output_type=checked_type(output_type, "AsyncDataStream"),
    )
