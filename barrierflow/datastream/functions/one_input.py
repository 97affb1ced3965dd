"""User functions, PyFlink-style.

Plain callables work wherever a function is expected (``map(lambda x: ...)``); the classes
here add ``open``/``close`` and, for keyed processing, a runtime context to declare state and
a timer service.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable
from typing import Any, Generic, Protocol, TypeVar

from barrierflow.datastream.output_tag import OutputTag, SideOutput
from barrierflow.errors import ConfigurationError
from barrierflow.eventtime.timestamps import NO_TIMESTAMP
from barrierflow.metrics import MetricGroup, MetricRegistry

# Type parameters, as PyFlink's classes take them (``WindowFunction[tuple, tuple, str,
# TimeWindow]``): they document a function's types and change nothing at run time.
IN = TypeVar("IN")
OUT = TypeVar("OUT")
KEY = TypeVar("KEY")
W = TypeVar("W")
W2 = TypeVar("W2")


class TimeDomain(enum.Enum):
    """Which clock a timer follows: the watermark (event time) or the wall clock."""

    EVENT_TIME = 0
    PROCESSING_TIME = 1


class TimerService(Protocol):
    """What ``ctx.timer_service()`` gives a keyed function: timers of the current key, in epoch
    milliseconds. One timer per key and time: registering it again does nothing."""

    def current_processing_time(self) -> int: ...
    def current_watermark(self) -> int: ...
    def register_event_time_timer(self, timestamp: int) -> None: ...
    def register_processing_time_timer(self, timestamp: int) -> None: ...
    def delete_event_time_timer(self, timestamp: int) -> None: ...
    def delete_processing_time_timer(self, timestamp: int) -> None: ...


class RuntimeContext:
    """What an ``open()`` sees: the subtask, the job's parameters, the operator's metrics
    and, for keyed functions, its state (``keyed_backend``: a ``KeyedStateStore``)."""

    def __init__(
        self,
        task_name: str,
        subtask: int,
        parallelism: int,
        keyed_backend=None,
        *,
        max_parallelism: int = 128,
        attempt_number: int = 0,
        job_parameters: dict[str, str] | None = None,
        metrics: MetricGroup | None = None,
    ):
        self._task_name = task_name
        self._subtask = subtask
        self._parallelism = parallelism
        self._keyed_backend = keyed_backend
        self._max_parallelism = max_parallelism
        self._attempt_number = attempt_number
        self._job_parameters = job_parameters or {}
        self._metrics = metrics if metrics is not None else MetricRegistry().group(task_name)

    def get_task_name(self) -> str:
        return self._task_name

    def get_index_of_this_subtask(self) -> int:
        return self._subtask

    def get_number_of_parallel_subtasks(self) -> int:
        return self._parallelism

    def get_max_number_of_parallel_subtasks(self) -> int:
        """The job's max parallelism: its number of key groups."""
        return self._max_parallelism

    def get_attempt_number(self) -> int:
        """0 in the job's first attempt, one more after each restart."""
        return self._attempt_number

    def get_task_name_with_subtasks(self) -> str:
        return f"{self._task_name} ({self._subtask + 1}/{self._parallelism})"

    def get_job_parameter(self, key: str, default_value: str | None = None) -> str | None:
        """A global job parameter (``env.get_config().set_global_job_parameters``)."""
        return self._job_parameters.get(key, default_value)

    def get_metrics_group(self) -> MetricGroup:
        return self._metrics

    def _backend(self):
        if self._keyed_backend is None:
            raise RuntimeError(
                "keyed state is only available in functions applied to a KeyedStream "
                "(call key_by() before process())"
            )
        return self._keyed_backend

    def get_state(self, descriptor):
        return self._backend().get_state(descriptor)

    def get_list_state(self, descriptor):
        return self._backend().get_state(descriptor)

    def get_map_state(self, descriptor):
        return self._backend().get_state(descriptor)

    def get_reducing_state(self, descriptor):
        return self._backend().get_reducing_state(descriptor)

    def get_aggregating_state(self, descriptor):
        return self._backend().get_aggregating_state(descriptor)


class Function:
    def open(self, runtime_context: RuntimeContext) -> None:
        pass

    def close(self) -> None:
        pass


class MapFunction(Function):
    def map(self, value: Any) -> Any:
        raise NotImplementedError


class FlatMapFunction(Function):
    def flat_map(self, value: Any) -> Iterable[Any]:
        raise NotImplementedError


class FilterFunction(Function):
    def filter(self, value: Any) -> bool:
        raise NotImplementedError


class _ElementContext:
    """The context of one record (or one timer): its timestamp, the key, the timers."""

    __slots__ = ("_key_context", "_side", "_side_outputs", "_timer_service", "_timestamp")

    def __init__(
        self,
        key_context,
        timer_service: TimerService | None,
        side_outputs: frozenset[str] = frozenset(),
    ) -> None:
        self._key_context = key_context
        self._timer_service = timer_service
        self._timestamp: int | None = None
        self._side_outputs = side_outputs  # the tags someone consumes
        self._side: list[tuple[SideOutput, int | None]] = []  # taken by the operator

    def output(self, output_tag: OutputTag, value: Any) -> None:
        """Emits ``value`` to the side output ``output_tag`` (``get_side_output(tag)``)."""
        if not isinstance(output_tag, OutputTag):
            raise TypeError(f"output() takes an OutputTag first, not {output_tag!r}")
        if output_tag.tag_id in self._side_outputs:
            self._side.append((SideOutput(output_tag.tag_id, value), self._timestamp))

    def timestamp(self) -> int | None:
        """The record's event timestamp (the timer's time in ``on_timer``); None if the
        stream has no event time."""
        timestamp = self._timestamp
        return None if timestamp is None or timestamp == NO_TIMESTAMP else timestamp

    def timer_service(self) -> TimerService:
        if self._timer_service is None:
            raise RuntimeError(
                "timers are only available in functions applied to a KeyedStream "
                "(call key_by() before process())"
            )
        return self._timer_service

    def get_current_key(self) -> Any:
        return self._key_context.key


class _OnTimerContext(_ElementContext):
    __slots__ = ("_time_domain",)

    def __init__(
        self,
        key_context,
        timer_service: TimerService | None,
        side_outputs: frozenset[str] = frozenset(),
    ) -> None:
        super().__init__(key_context, timer_service, side_outputs)
        self._time_domain = TimeDomain.EVENT_TIME

    def time_domain(self) -> TimeDomain:
        return self._time_domain


class KeyedProcessFunction(Function):
    """Processes each record of a KeyedStream with access to the state and the timers of its
    key. ``on_timer`` runs when a timer of the key fires, on the task's thread between records
    (never at the same time as ``process_element``), with that key current."""

    Context = _ElementContext
    OnTimerContext = _OnTimerContext

    def process_element(self, value: Any, ctx: _ElementContext) -> Iterable[Any]:
        raise NotImplementedError

    def on_timer(self, timestamp: int, ctx: _OnTimerContext) -> Iterable[Any] | None:
        pass


class ProcessFunction(Function):
    """Processes each record of a (not keyed) DataStream; ``ctx.timestamp()`` is the record's
    event timestamp. Timers need keys: use a KeyedProcessFunction after key_by()."""

    Context = _ElementContext

    def process_element(self, value: Any, ctx: _ElementContext) -> Iterable[Any]:
        raise NotImplementedError


class ReduceFunction(Function):
    """Combines two values of the same key (and window) into one."""

    def reduce(self, value1: Any, value2: Any) -> Any:
        raise NotImplementedError


class AggregateFunction(Function):
    """An accumulator per key and window: ``add`` each value, ``get_result`` when it fires,
    ``merge`` two when session windows merge."""

    def create_accumulator(self) -> Any:
        raise NotImplementedError

    def add(self, value: Any, accumulator: Any) -> Any:
        raise NotImplementedError

    def get_result(self, accumulator: Any) -> Any:
        raise NotImplementedError

    def merge(self, acc_a: Any, acc_b: Any) -> Any:
        raise NotImplementedError


class ProcessWindowFunction(Function, Generic[IN, OUT, KEY, W]):
    """Called once per firing of a window with all its elements (or the one result of a
    ``reduce``/``aggregate`` given it)."""

    class Context(Protocol[W2]):
        def window(self) -> W2: ...
        def current_processing_time(self) -> int: ...
        def current_watermark(self) -> int: ...

    def process(self, key: Any, context: Any, elements: Iterable[Any]) -> Iterable[Any]:
        raise NotImplementedError

    def clear(self, context: Any) -> None:
        pass


class WindowFunction(Function, Generic[IN, OUT, KEY, W]):
    """The older form of ``ProcessWindowFunction``: the window instead of a context."""

    def apply(self, key: Any, window: Any, inputs: Iterable[Any]) -> Iterable[Any]:
        raise NotImplementedError


class KeySelector(Function):
    """``key_by(selector)`` takes one of these as well as a function."""

    def get_key(self, value: Any) -> Any:
        raise NotImplementedError


class ProcessAllWindowFunction(Function, Generic[IN, OUT, W]):
    """``ProcessWindowFunction`` for ``window_all``: no key."""

    class Context(Protocol[W2]):
        def window(self) -> W2: ...
        def current_processing_time(self) -> int: ...
        def current_watermark(self) -> int: ...

    def process(self, context: Any, elements: Iterable[Any]) -> Iterable[Any]:
        raise NotImplementedError

    def clear(self, context: Any) -> None:
        pass


class AllWindowFunction(Function, Generic[IN, OUT, W]):
    """``WindowFunction`` for ``window_all``: no key."""

    def apply(self, window: Any, inputs: Iterable[Any]) -> Iterable[Any]:
        raise NotImplementedError


class Partitioner(Function):
    """``partition_custom``: which of ``num_partitions`` subtasks takes a key."""

    def partition(self, key: Any, num_partitions: int) -> int:
        raise NotImplementedError


class SourceFunction(Function):
    """PyFlink's ``SourceFunction`` wraps a Java source function (an object, or its class
    name) for ``env.add_source``; a Python subclass cannot read records itself. barrierflow has
    no JVM, so what a SourceFunction wraps here is one of barrierflow's sources (a subclass
    passes it to ``__init__``, as PyFlink's connectors pass their Java object); a Java class
    name is refused, saying so."""

    def __init__(self, source_func: Any) -> None:
        if isinstance(source_func, str) or not callable(
            getattr(source_func, "create_reader", None)
        ):
            raise ConfigurationError(
                f"SourceFunction({source_func!r:.100}) would wrap a Java source function, which "
                "needs the JVM; barrierflow's sources are Python: pass one (FileSource, "
                "KafkaSource, a Source of your own) to env.from_source or env.add_source"
            )
        self.wrapped_source = source_func


class SinkFunction(Function):
    """PyFlink's ``SinkFunction`` wraps a Java sink function (an object, or its class name)
    for ``stream.add_sink``; ``JdbcSink`` is one. Here it wraps one of barrierflow's sinks; a
    Java class name is refused, saying so."""

    def __init__(self, sink_func: Any) -> None:
        if isinstance(sink_func, str) or not callable(getattr(sink_func, "create_writer", None)):
            raise ConfigurationError(
                f"SinkFunction({sink_func!r:.100}) would wrap a Java sink function, which needs "
                "the JVM; barrierflow's sinks are Python: pass one (FileSink, KafkaSink, "
                "PostgresSink, a Sink of your own) to stream.sink_to or stream.add_sink"
            )
        self.wrapped_sink = sink_func
