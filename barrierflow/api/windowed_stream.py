"""WindowedStream: a keyed stream cut into windows, as PyFlink builds it
(``key_by(...).window(assigner)``, ``.count_window(n)``, ``window_all(assigner)``), then given a
trigger, an allowed lateness and the function that turns each firing window into results.

Nothing runs here: the window function call records a WINDOW transformation whose function is
a ``WindowSpec``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from barrierflow.common.typeinfo import checked_type
from barrierflow.datastream.output_tag import OutputTag
from barrierflow.errors import ConfigurationError
from barrierflow.eventtime.durations import millis_of
from barrierflow.graph.transformation import TransformationKind
from barrierflow.windowing.window_assigners import WindowAssigner
from barrierflow.windowing.window_spec import Contents, WindowSpec
from barrierflow.windowing.window_triggers import CountEvictor, Trigger, default_trigger

if TYPE_CHECKING:
    from barrierflow.api.datastream import DataStream, KeyedStream


class _AllWindowsFunction:
    """Adapts PyFlink's ProcessAllWindowFunction / AllWindowFunction (no key) to the keyed
    window operator, which runs ``window_all`` with one key."""

    def __init__(self, fn: Any) -> None:
        self.fn = fn

    def open(self, runtime_context: Any) -> None:
        if hasattr(self.fn, "open"):
            self.fn.open(runtime_context)

    def close(self) -> None:
        if hasattr(self.fn, "close"):
            self.fn.close()

    def process(self, key: Any, context: Any, elements: list[Any]) -> Any:
        if hasattr(self.fn, "process"):
            return self.fn.process(context, elements)
        apply = getattr(self.fn, "apply", self.fn)
        return apply(context.window(), elements)


class WindowedStream:
    def __init__(
        self,
        keyed: KeyedStream,
        assigner: WindowAssigner,
        all_windows: bool = False,
        trigger: Trigger | None = None,
        evictor: CountEvictor | None = None,
    ) -> None:
        if not isinstance(assigner, WindowAssigner):
            raise ConfigurationError(
                "window() needs a window assigner such as TumblingEventTimeWindows.of("
                f"Time.seconds(10)), got {assigner!r}"
            )
        self._keyed = keyed
        self._assigner = assigner
        self._all = all_windows
        self._trigger = trigger or default_trigger(assigner)
        self._evictor = evictor
        self._lateness_ms = 0
        self._late_tag: str | None = None

    def trigger(self, trigger: Trigger) -> WindowedStream:
        if not isinstance(trigger, Trigger):
            raise ConfigurationError(f"trigger() needs a Trigger, got {trigger!r}")
        self._trigger = trigger
        return self

    def allowed_lateness(self, time_ms: int) -> WindowedStream:
        lateness = millis_of(time_ms, "allowed_lateness")
        if lateness < 0:
            raise ConfigurationError(f"allowed_lateness must not be negative, got {lateness} ms")
        if lateness and not self._assigner.is_event_time():
            raise ConfigurationError("allowed_lateness applies to event-time windows only")
        self._lateness_ms = lateness
        return self

    def side_output_late_data(self, output_tag: OutputTag) -> WindowedStream:
        """Late records (all their windows past the allowed lateness) go to this side output
        of the window's result stream (``get_side_output(output_tag)``) instead of being
        dropped."""
        if not isinstance(output_tag, OutputTag):
            raise ConfigurationError(
                f"side_output_late_data() needs an OutputTag, got {output_tag!r}"
            )
        if not self._assigner.is_event_time():
            raise ConfigurationError("late data exists for event-time windows only")
        self._late_tag = output_tag.tag_id
        return self

    # --- window functions ---------------------------------------------------------------------

    def reduce(
        self, reduce_function: Any, window_function: Any = None, output_type: Any = None
    ) -> DataStream:
        if not callable(getattr(reduce_function, "reduce", reduce_function)):
            raise ConfigurationError(
                f"reduce() needs a ReduceFunction or a function of two values, got "
                f"{reduce_function!r}"
            )
        if window_function is None:
            output_type = self._keyed.get_type()  # a reduction keeps its input's type
        return self._build(Contents.REDUCE, reduce_function, window_function, "Reduce", output_type)

    def aggregate(
        self,
        aggregate_function: Any,
        window_function: Any = None,
        accumulator_type: Any = None,
        output_type: Any = None,
    ) -> DataStream:
        for method in ("create_accumulator", "add", "get_result", "merge"):
            if not callable(getattr(aggregate_function, method, None)):
                raise ConfigurationError(
                    f"aggregate() needs an AggregateFunction; {aggregate_function!r} has no "
                    f"{method}()"
                )
        return self._build(
            Contents.AGGREGATE, aggregate_function, window_function, "Aggregate", output_type
        )

    def process(self, process_window_function: Any, output_type: Any = None) -> DataStream:
        if not callable(getattr(process_window_function, "process", None)):
            raise ConfigurationError(
                f"process() needs a ProcessWindowFunction, got {process_window_function!r}"
            )
        return self._build(Contents.ELEMENTS, None, process_window_function, "Process", output_type)

    def apply(self, window_function: Any, output_type: Any = None) -> DataStream:
        if not callable(getattr(window_function, "apply", window_function)):
            raise ConfigurationError(f"apply() needs a WindowFunction, got {window_function!r}")
        if hasattr(window_function, "apply") or self._all:
            fn = window_function
        else:  # a plain function of (key, window, inputs)
            fn = _ApplyFunction(window_function)
        return self._build(Contents.ELEMENTS, None, fn, "Apply", output_type)

    def _build(
        self,
        contents: Contents,
        function: Any,
        window_function: Any,
        what: str,
        output_type: Any,
    ) -> DataStream:
        if window_function is not None and self._all:
            window_function = _AllWindowsFunction(window_function)
        spec = WindowSpec(
            self._assigner,
            self._trigger,
            contents,
            function,
            window_function,
            self._evictor,
            self._lateness_ms,
            self._late_tag,
        )
        name = f"Window({type(self._assigner).__name__}, {type(self._trigger).__name__}, {what})"
        stream = self._keyed._then(
            TransformationKind.WINDOW,
            name,
            spec,
            key_selector=self._keyed._key_selector,
            key_type=self._keyed._key_type,
            output_type=checked_type(output_type, f"window {what.lower()}()"),
        )
        if self._all:
            stream.set_parallelism(1)
        return stream


class _ApplyFunction:
    def __init__(self, fn: Any) -> None:
        self.apply = fn
