"""Async I/O as PyFlink programs write it: an ``AsyncFunction`` whose ``async_invoke`` is a
coroutine, what ``AsyncDataStream`` records of it, and the retry strategies and predicates that
decide when a call is made again.

The strategies keep PyFlink's semantics, so that a program behaves the same on both: attempts
are counted from 1, ``can_retry(n)`` is asked after attempt *n* failed or returned a result the
result predicate rejects, and ``max_attempts`` is therefore the number of retries;
``ExponentialBackoffDelayRetryStrategy`` keeps its last delay on the strategy object, as
PyFlink's does. A predicate left as None never asks for a retry. Performs no I/O.
"""

from __future__ import annotations

import enum
from collections.abc import Callable
from typing import Any, Generic, TypeVar

from barrierflow.datastream.functions.one_input import Function

IN = TypeVar("IN")
OUT = TypeVar("OUT")

ResultPredicate = Callable[[list[Any]], bool]
ExceptionPredicate = Callable[[Exception], bool]


class AsyncFunction(Function, Generic[IN, OUT]):
    """Subclass it with ``async def async_invoke(self, value) -> list``: the values it returns
    are the element's outputs. Up to the operator's capacity of calls run at once on an
    asyncio event loop of the subtask; a call that raises fails the job, unless the retry
    strategy asks for another attempt. ``timeout(value)`` gives the outputs of a call that
    did not complete in time; by default it raises ``TimeoutError``, which fails the job."""

    async def async_invoke(self, value: IN) -> list[OUT]:
        raise NotImplementedError(
            f"{type(self).__name__} must define 'async def async_invoke(self, value)'"
        )

    def timeout(self, value: IN) -> list[OUT]:
        raise TimeoutError(f"Async function call has timed out for input: {value}")


class AsyncRetryPredicate(Generic[OUT]):
    """When an attempt is retried: on its result (``result_predicate``, given the list) or on
    its exception (``exception_predicate``); either may be None."""

    def result_predicate(self) -> ResultPredicate | None:
        raise NotImplementedError

    def exception_predicate(self) -> ExceptionPredicate | None:
        raise NotImplementedError


class AsyncRetryStrategy(Generic[OUT]):
    """Whether and when a failed attempt is made again."""

    def can_retry(self, current_attempts: int) -> bool:
        raise NotImplementedError

    def get_backoff_time_millis(self, current_attempts: int) -> int:
        raise NotImplementedError

    def get_retry_predicate(self) -> AsyncRetryPredicate[OUT]:
        raise NotImplementedError

    @staticmethod
    def no_restart() -> AsyncRetryStrategy:
        return NO_RETRY_STRATEGY

    @staticmethod
    def fixed_delay(
        max_attempts: int,
        backoff_time_millis: int,
        result_predicate: ResultPredicate | None,
        exception_predicate: ExceptionPredicate | None,
    ) -> FixedDelayRetryStrategy:
        return FixedDelayRetryStrategy(
            max_attempts, backoff_time_millis, result_predicate, exception_predicate
        )

    @staticmethod
    def exponential_backoff(
        max_attempts: int,
        initial_delay: int,
        max_retry_delay: int,
        multiplier: float,
        result_predicate: ResultPredicate | None,
        exception_predicate: ExceptionPredicate | None,
    ) -> ExponentialBackoffDelayRetryStrategy:
        return ExponentialBackoffDelayRetryStrategy(
            max_attempts,
            initial_delay,
            max_retry_delay,
            multiplier,
            result_predicate,
            exception_predicate,
        )


class RetryPredicate(AsyncRetryPredicate, Generic[OUT]):
    def __init__(
        self,
        result_predicate: ResultPredicate | None,
        exception_predicate: ExceptionPredicate | None,
    ) -> None:
        self._result_predicate = result_predicate
        self._exception_predicate = exception_predicate

    def result_predicate(self) -> ResultPredicate | None:
        return self._result_predicate

    def exception_predicate(self) -> ExceptionPredicate | None:
        return self._exception_predicate


class NoRetryStrategy(AsyncRetryStrategy, Generic[OUT]):
    def can_retry(self, current_attempts: int) -> bool:
        return False

    def get_backoff_time_millis(self, current_attempts: int) -> int:
        return -1

    def get_retry_predicate(self) -> AsyncRetryPredicate[OUT]:
        return RetryPredicate(None, None)


def _positive(value: float, what: str, strategy: str) -> None:
    if isinstance(value, bool) or not isinstance(value, int | float) or value <= 0:
        raise ValueError(f"{strategy}: {what} must be greater than zero, not {value!r}")


class FixedDelayRetryStrategy(AsyncRetryStrategy, Generic[OUT]):
    """Up to ``max_attempts`` retries, ``backoff_time_millis`` apart."""

    def __init__(
        self,
        max_attempts: int,
        backoff_time_millis: int,
        result_predicate: ResultPredicate | None,
        exception_predicate: ExceptionPredicate | None,
    ) -> None:
        _positive(max_attempts, "max_attempts", "FixedDelayRetryStrategy")
        _positive(backoff_time_millis, "backoff_time_millis", "FixedDelayRetryStrategy")
        self._max_attempts = max_attempts
        self._backoff_time_millis = backoff_time_millis
        self._predicate = RetryPredicate(result_predicate, exception_predicate)

    def can_retry(self, current_attempts: int) -> bool:
        return current_attempts <= self._max_attempts

    def get_backoff_time_millis(self, current_attempts: int) -> int:
        return self._backoff_time_millis

    def get_retry_predicate(self) -> AsyncRetryPredicate[OUT]:
        return self._predicate


class ExponentialBackoffDelayRetryStrategy(AsyncRetryStrategy, Generic[OUT]):
    """Up to ``max_attempts`` retries; the first after ``initial_delay`` ms, each next one
    ``multiplier`` times later than the one before, at most ``max_retry_delay`` ms."""

    def __init__(
        self,
        max_attempts: int,
        initial_delay: int,
        max_retry_delay: int,
        multiplier: float,
        result_predicate: ResultPredicate | None,
        exception_predicate: ExceptionPredicate | None,
    ) -> None:
        name = "ExponentialBackoffDelayRetryStrategy"
        _positive(max_attempts, "max_attempts", name)
        _positive(initial_delay, "initial_delay", name)
        _positive(max_retry_delay, "max_retry_delay", name)
        _positive(multiplier, "multiplier", name)
        self._max_attempts = max_attempts
        self._initial_delay = initial_delay
        self._max_retry_delay = max_retry_delay
        self._multiplier = multiplier
        self._last_retry_delay = initial_delay
        self._predicate = RetryPredicate(result_predicate, exception_predicate)

    def can_retry(self, current_attempts: int) -> bool:
        return current_attempts <= self._max_attempts

    def get_backoff_time_millis(self, current_attempts: int) -> int:
        if current_attempts <= 1:
            self._last_retry_delay = self._initial_delay
        else:
            self._last_retry_delay = int(
                min(self._last_retry_delay * self._multiplier, self._max_retry_delay)
            )
        return self._last_retry_delay

    def get_retry_predicate(self) -> AsyncRetryPredicate[OUT]:
        return self._predicate


NO_RETRY_STRATEGY: AsyncRetryStrategy = NoRetryStrategy()


# --- predicates, as ``pyflink.datastream.async_retry_predicates`` names them -----------------


def empty_result_predicate(result: list[Any] | None) -> bool:
    """Retry a call that returned nothing."""
    return result is None or len(result) == 0


def has_exception_predicate(error: Exception | None) -> bool:
    """Retry a call that raised anything."""
    return error is not None


def exception_type_predicate(error: Exception | None, expected_error_type: type) -> bool:
    """Retry a call that raised ``expected_error_type`` (bind it with ``functools.partial``)."""
    return isinstance(error, expected_error_type)


# --- what AsyncDataStream records -----------------------------------------------------------


class AsyncFunctionDescriptor:
    """The async function of an operator with its settings, as the executors receive it."""

    class OutputMode(enum.Enum):
        ORDERED = 0  # outputs in the order of the inputs
        UNORDERED = 1  # outputs as calls complete, in order only between watermarks

    def __init__(
        self,
        async_function: AsyncFunction,
        timeout: Any,
        capacity: int,
        async_retry_strategy: AsyncRetryStrategy,
        output_mode: AsyncFunctionDescriptor.OutputMode,
    ) -> None:
        self.async_function = async_function
        self.timeout = timeout
        self.capacity = capacity
        self.async_retry_strategy = async_retry_strategy
        self.output_mode = output_mode
