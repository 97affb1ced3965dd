"""DataStream and KeyedStream: the PyFlink-style fluent API that records transformations.

Nothing runs here: each call adds a ``Transformation``; ``env.execute()`` translates them.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from barrierflow.api.collect_iterator import CloseableIterator
from barrierflow.api.connected_streams import (
    BroadcastConnectedStream,
    BroadcastStream,
    ConnectedStreams,
)
from barrierflow.api.function_adapters import (
    KeyedFilter,
    KeyedFlatMap,
    KeyedMap,
    Projection,
    opens,
)
from barrierflow.api.keyed_reductions import FieldAggregation, RollingReduce
from barrierflow.api.slot_sharing_group import SlotSharingGroup, resources_not_applied
from barrierflow.api.windowed_stream import WindowedStream
from barrierflow.cluster import collected_records
from barrierflow.cluster.collected_records import PrintCollector, QueueCollector
from barrierflow.common.typeinfo import TypeInformation, Types, checked_type
from barrierflow.connectors.builtin.collect_sink import CollectSink
from barrierflow.connectors.interfaces.sink import Sink
from barrierflow.connectors.interfaces.stream_transformer import SupportsPreprocessing
from barrierflow.datastream.functions.one_input import (
    FilterFunction,
    FlatMapFunction,
    KeyedProcessFunction,
    MapFunction,
    ProcessFunction,
    SinkFunction,
)
from barrierflow.datastream.output_tag import OutputTag
from barrierflow.declared_types.java_strings import printer
from barrierflow.errors import ConfigurationError
from barrierflow.eventtime.watermark_strategy import WatermarkStrategy
from barrierflow.graph.transformation import (
    ChainingStrategy,
    PartitionerSpec,
    Partitioning,
    Transformation,
    TransformationKind,
)
from barrierflow.state.key_groups import hashable_keys
from barrierflow.windowing.window_assigners import GlobalWindows, WindowAssigner
from barrierflow.windowing.window_triggers import CountEvictor, CountTrigger, PurgingTrigger

if TYPE_CHECKING:
    from barrierflow.api.environment import StreamExecutionEnvironment


def _check_callable(fn: Any, method: str, what: str) -> Callable[[Any], Any]:
    if hasattr(fn, method) and callable(getattr(fn, method)):
        return fn
    if callable(fn):
        return fn
    raise ConfigurationError(f"{what} needs a function or an object with {method}(), got {fn!r}")


# Operators whose output has their input's type.
_KEEPS_TYPE = (
    TransformationKind.FILTER,
    TransformationKind.PARTITION,
    TransformationKind.UNION,
    TransformationKind.TIMESTAMPS,
)


def declared_type(transformation: Transformation) -> TypeInformation | None:
    """The type a program declared for the records of ``transformation`` (None: Python objects)."""
    while transformation.output_type is None and transformation.kind in _KEEPS_TYPE:
        transformation = transformation.inputs[0]
    return transformation.output_type


_DEAD_LETTER_KINDS = frozenset(
    {
        TransformationKind.MAP,
        TransformationKind.FLAT_MAP,
        TransformationKind.FILTER,
        TransformationKind.PROCESS,
    }
)


class DataStream:
    def __init__(self, env: StreamExecutionEnvironment, transformation: Transformation) -> None:
        self._env = env
        self._transformation = transformation

    def get_transformation(self) -> Transformation:
        return self._transformation

    def get_type(self) -> TypeInformation | None:
        """The declared type of the records (``output_type=``); None when undeclared, where
        PyFlink says PICKLED_BYTE_ARRAY."""
        return declared_type(self._transformation)

    def _derived(self, transformation: Transformation) -> DataStream:
        """A stream of this environment made of ``transformation`` (for the API's other modules)."""
        return DataStream(self._env, transformation)

    def _then(self, kind: TransformationKind, name: str, function: Any = None, **kw) -> DataStream:
        transformation = Transformation(kind, name, [self._transformation], function, **kw)
        self._env._add(transformation)
        return DataStream(self._env, transformation)

    # --- operators --------------------------------------------------------------------------

    def map(self, func: Callable[[Any], Any] | MapFunction, output_type: Any = None) -> DataStream:
        fn = _check_callable(func, "map", "map()")
        output_type = checked_type(output_type, "map()")
        return self._then(TransformationKind.MAP, "Map", fn, output_type=output_type)

    def flat_map(
        self, func: Callable[[Any], Any] | FlatMapFunction, output_type: Any = None
    ) -> DataStream:
        fn = _check_callable(func, "flat_map", "flat_map()")
        output_type = checked_type(output_type, "flat_map()")
        return self._then(TransformationKind.FLAT_MAP, "FlatMap", fn, output_type=output_type)

    def filter(self, func: Callable[[Any], bool] | FilterFunction) -> DataStream:
        fn = _check_callable(func, "filter", "filter()")
        return self._then(TransformationKind.FILTER, "Filter", fn)

    def project(self, *field_indexes: int) -> DataStream:
        """A stream of tuples of the given fields of each record, as PyFlink's: the stream's
        declared type must be a ``Types.TUPLE``, and the result's is the tuple of those
        fields' types."""
        declared = self.get_type()
        if declared is None or declared.name != "TUPLE":
            raise ConfigurationError(
                f"project() applies to a stream of declared type Types.TUPLE([...]), this one "
                f"is {declared or 'undeclared'}: declare output_type= on the operator before, "
                "or use map()"
            )
        arity = len(declared.fields)
        if not field_indexes or any(
            isinstance(i, bool) or not isinstance(i, int) or not 0 <= i < arity
            for i in field_indexes
        ):
            raise ConfigurationError(
                f"project() takes field positions of the tuple (0 to {arity - 1}), got "
                f"{field_indexes!r}"
            )
        output_type = Types.TUPLE([declared.fields[i] for i in field_indexes])
        return self._then(
            TransformationKind.MAP, "Projection", Projection(field_indexes), output_type=output_type
        )

    def process(self, func: ProcessFunction, output_type: Any = None) -> DataStream:
        """A ProcessFunction on each record (no key: no state, no timers)."""
        if not (hasattr(func, "process_element") and callable(func.process_element)):
            raise ConfigurationError(f"process() needs a ProcessFunction, got {func!r}")
        output_type = checked_type(output_type, "process()")
        return self._then(
            TransformationKind.PROCESS, type(func).__name__, func, output_type=output_type
        )

    def assign_timestamps_and_watermarks(self, watermark_strategy: WatermarkStrategy) -> DataStream:
        """Gives the records event timestamps and generates watermarks, from here on; the
        watermarks of the stream before are replaced by these."""
        if not isinstance(watermark_strategy, WatermarkStrategy):
            raise ConfigurationError(
                "assign_timestamps_and_watermarks() needs a WatermarkStrategy (from "
                f"barrierflow.common), got {watermark_strategy!r}"
            )
        return self._then(
            TransformationKind.TIMESTAMPS, "Timestamps/Watermarks", watermark_strategy
        )

    def window_all(self, window_assigner: WindowAssigner) -> WindowedStream:
        """Windows over the whole stream, in one subtask (parallelism 1)."""
        return WindowedStream(self.key_by(_all_in_one), window_assigner, all_windows=True)

    def key_by(self, key_selector: Callable[[Any], Any], key_type: Any = None) -> KeyedStream:
        return keyed_stream(self, key_selector, key_type, reinterpreted=False)

    def _partitioned(self, name: str, spec: PartitionerSpec) -> DataStream:
        t = Transformation(
            TransformationKind.PARTITION, name, [self._transformation], partitioner=spec
        )
        return DataStream(self._env, t)

    def rebalance(self) -> DataStream:
        """Round robin over all subtasks of the next operator."""
        return self._partitioned("Rebalance", PartitionerSpec(Partitioning.REBALANCE))

    def rescale(self) -> DataStream:
        """Round robin over a local share of the next operator's subtasks: fewer channels
        than rebalance() when the parallelism changes."""
        return self._partitioned("Rescale", PartitionerSpec(Partitioning.RESCALE))

    def shuffle(self) -> DataStream:
        """Each record to a subtask of the next operator drawn at random."""
        return self._partitioned("Shuffle", PartitionerSpec(Partitioning.SHUFFLE))

    def forward(self) -> DataStream:
        """Subtask i to subtask i of the next operator, which must have the same
        parallelism."""
        return self._partitioned("Forward", PartitionerSpec(Partitioning.FORWARD, explicit=True))

    def broadcast(self, broadcast_state_descriptor: Any = None, *more: Any) -> Any:
        """Every record to every subtask of the next operator; with MapStateDescriptors, a
        BroadcastStream to ``connect`` to, whose records update that broadcast state."""
        if broadcast_state_descriptor is None:
            return self._partitioned("Broadcast", PartitionerSpec(Partitioning.BROADCAST))
        return BroadcastStream(self, (broadcast_state_descriptor, *more))

    def partition_custom(self, partitioner: Any, key_selector: Any) -> DataStream:
        """Each record to the subtask ``partitioner.partition(key, number of subtasks)``
        chooses for its key (a Partitioner, or a function of the key and the number)."""
        partition = getattr(partitioner, "partition", partitioner)
        select = getattr(key_selector, "get_key", key_selector)
        if not callable(partition) or not callable(select):
            raise ConfigurationError(
                "partition_custom() needs a Partitioner (or a function of key and number of "
                f"partitions) and a key selector, got {partitioner!r} and {key_selector!r}"
            )
        spec = PartitionerSpec(Partitioning.CUSTOM, select, partition=partition)
        return self._partitioned("CustomPartition", spec)

    def union(self, *streams: DataStream) -> DataStream:
        """The records of this stream and of ``streams``; a KeyedStream among them gives its
        records, no longer keyed (as in PyFlink: each passes a map of its own after its
        key_by, and the union reads those maps)."""
        for s in streams:
            if not isinstance(s, DataStream) or s._env is not self._env:
                raise ConfigurationError("union() takes DataStreams of the same environment")
        t = Transformation(
            TransformationKind.UNION,
            "Union",
            [self._transformation, *(s._values()._transformation for s in streams)],
        )
        return DataStream(self._env, t)

    def _values(self) -> DataStream:
        """The stream's records (a KeyedStream's, past its key_by)."""
        return self

    def connect(self, stream: Any) -> Any:
        """This stream and another into one operator with a method per input
        (ConnectedStreams), or with a BroadcastStream, whose records every subtask sees and
        keeps in broadcast state (BroadcastConnectedStream)."""
        if isinstance(stream, BroadcastStream):
            return BroadcastConnectedStream(self, stream)
        return ConnectedStreams(self, stream)

    def sink_to(self, sink: Any) -> DataStreamSink:
        """Writes the stream to ``sink``; a sink that ``SupportsPreprocessing`` is given the
        stream its transformer builds on this one, as in PyFlink."""
        if not isinstance(sink, Sink):
            raise ConfigurationError(
                f"sink_to() needs a sink such as FileSink(directory), got {sink!r}"
            )
        ds = self
        if isinstance(sink, SupportsPreprocessing) and sink.get_transformer() is not None:
            ds = sink.get_transformer().apply(self)
        sink.set_input_type(ds.get_type())
        t = Transformation(TransformationKind.SINK, type(sink).__name__, [ds._transformation], sink)
        self._env._add(t)
        return DataStreamSink(self._env, t)

    def add_sink(self, sink_func: Any) -> DataStreamSink:
        """PyFlink's older name of ``sink_to``; takes a sink, or a ``SinkFunction`` (such as
        ``JdbcSink``) wrapping one."""
        if isinstance(sink_func, SinkFunction):
            sink_func = sink_func.wrapped_sink
        return self.sink_to(sink_func)

    def get_side_output(self, output_tag: OutputTag) -> DataStream:
        """The records this operator sent to ``output_tag`` (``ctx.output(tag, value)``, or
        a window's ``side_output_late_data(tag)``)."""
        if not isinstance(output_tag, OutputTag):
            raise ConfigurationError(f"get_side_output() needs an OutputTag, got {output_tag!r}")
        producer = self._operator("get_side_output")
        t = Transformation(
            TransformationKind.SIDE_OUTPUT,
            f"SideOutput({output_tag.tag_id})",
            [producer],
            output_tag.tag_id,
            output_type=checked_type(output_tag.type_info, f"OutputTag({output_tag.tag_id!r})"),
        )
        return DataStream(self._env, t)

    def with_dead_letters(self, output_tag: OutputTag) -> DataStream:
        """Records this operator's function fails on go to the side output ``output_tag``, as
        ``DeadLetter(record, operator, error)``, and the job goes on (Kafka Streams'
        log-and-continue), instead of failing and replaying them for ever. Take them with
        ``get_side_output(output_tag)`` and sink them: a record goes either to the output or
        to the dead letters, exactly once. For ``map``, ``flat_map``, ``filter`` and
        ``process`` (keyed too); counted in ``numRecordsDeadLettered``. Records are then given
        to the function one at a time, which is slower; what the function did to keyed state
        before it raised stays done."""
        if not isinstance(output_tag, OutputTag):
            raise ConfigurationError(f"with_dead_letters() needs an OutputTag, got {output_tag!r}")
        t = self._operator("with_dead_letters")
        if t.kind not in _DEAD_LETTER_KINDS:
            raise ConfigurationError(
                f"with_dead_letters() applies to map, flat_map, filter and process, not to "
                f"{t.name!r} ({t.kind.value})"
            )
        t.dead_letters = output_tag.tag_id
        return self

    def print(self, sink_identifier: str | None = None) -> DataStreamSink:
        """Prints each record on the driver's standard output, a line each, as PyFlink does
        (``str(record)``, or Java's text of a record of a declared type): prefixed with the
        subtask's number and ``> `` when the sink runs in more than one subtask, and with
        ``sink_identifier`` if given. Exactly once with
        checkpointing (printed when a checkpoint completes); as written without."""
        collector = PrintCollector(sink_identifier, printer(self.get_type()))
        collected_records.register(collector)
        return self.sink_to(CollectSink(collector.id)).name("Print to Std. Out")

    def execute_and_collect(
        self, job_name: str | None = None, limit: int | None = None
    ) -> CloseableIterator | list[Any]:
        """Runs the job and returns its results on the driver: an iterator (close it, or use
        ``with``, to stop early), or, with ``limit``, a list of at most ``limit`` records. The
        collecting sink runs in one subtask, as Flink's: the records of a stream of
        parallelism 1 come in its order."""
        if limit is not None and (type(limit) is not int or limit < 1):
            raise ConfigurationError(f"limit must be a positive int, got {limit!r}")
        collector = QueueCollector()
        collected_records.register(collector)
        self.sink_to(CollectSink(collector.id)).name("Collect").set_parallelism(1)
        client = self._env.execute_async(job_name or "barrierflow job")
        results = CloseableIterator(client, collector)
        if limit is None:
            return results
        with results:
            return list(itertools.islice(results, limit))

    # --- properties of the last operator ----------------------------------------------------

    def _operator(self, what: str) -> Transformation:
        t = self._transformation
        if t.is_virtual:
            raise ConfigurationError(
                f"{what}() applies to an operator, not to {t.name.lower()}(): call it after "
                "map/process/sink_to"
            )
        return t

    def get_name(self) -> str:
        """The name of this stream's operator (``name()`` sets it)."""
        return self._transformation.name

    def uid(self, uid: str) -> DataStream:
        if not isinstance(uid, str) or not uid:
            raise ConfigurationError(f"uid must be a non-empty string, got {uid!r}")
        self._operator("uid").uid = uid
        return self

    def name(self, name: str) -> DataStream:
        self._operator("name").name = str(name)
        return self

    def set_parallelism(self, parallelism: int) -> DataStream:
        if not isinstance(parallelism, int) or parallelism < 1:
            raise ConfigurationError(f"parallelism must be a positive integer, got {parallelism!r}")
        self._operator("set_parallelism").parallelism = parallelism
        return self

    def force_non_parallel(self) -> DataStream:
        """This operator at parallelism 1, as PyFlink's (whose max parallelism becomes 1 too;
        here every operator shares the job's key groups, so only the parallelism is set)."""
        return self.set_parallelism(1)

    def get_execution_environment(self) -> StreamExecutionEnvironment:
        return self._env

    def get_execution_config(self) -> Any:
        return self._env.get_config()

    def start_new_chain(self) -> DataStream:
        """This operator begins a chain: it does not run in the thread of the one before."""
        self._operator("start_new_chain").chaining = ChainingStrategy.HEAD
        return self

    def disable_chaining(self) -> DataStream:
        """This operator runs in a chain of its own (its own thread and subtask)."""
        self._operator("disable_chaining").chaining = ChainingStrategy.NEVER
        return self

    def slot_sharing_group(self, slot_sharing_group: str | SlotSharingGroup) -> DataStream:
        """Recorded, for PyFlink programs: every subtask of a barrierflow job shares the
        job's task slots (a job needs as many slots as its largest parallelism); resources a
        ``SlotSharingGroup`` asks for are not applied, and the job logs so."""
        if isinstance(slot_sharing_group, SlotSharingGroup):
            resources_not_applied(slot_sharing_group)
            slot_sharing_group = slot_sharing_group.get_name()
        if not isinstance(slot_sharing_group, str) or not slot_sharing_group:
            raise ConfigurationError(
                f"slot_sharing_group() needs a name or a SlotSharingGroup, got "
                f"{slot_sharing_group!r}"
            )
        self._operator("slot_sharing_group").slot_sharing_group = slot_sharing_group
        return self


class KeyedStream(DataStream):
    def __init__(self, env, transformation: Transformation, key_selector, key_type=None) -> None:
        super().__init__(env, transformation)
        self._key_selector = key_selector
        self._key_type = key_type  # recorded with the keyed state of its operators

    def _partitioned(self, name: str, spec: PartitionerSpec) -> DataStream:
        raise ConfigurationError(
            f"{name.lower()}() on a KeyedStream: its records are partitioned by key; call "
            f"{name.lower()}() on the stream before key_by()"
        )

    # --- one record at a time, with the key's state ---------------------------------------

    def map(self, func: Callable[[Any], Any] | MapFunction, output_type: Any = None) -> DataStream:
        """As ``DataStream.map``; a function that opens may declare the key's state there."""
        if not opens(func):
            return super().map(func, output_type)
        _check_callable(func, "map", "map()")
        return self._keyed_call(KeyedMap(func), "Map", checked_type(output_type, "map()"))

    def flat_map(
        self, func: Callable[[Any], Any] | FlatMapFunction, output_type: Any = None
    ) -> DataStream:
        """As ``DataStream.flat_map``; a function that opens may declare the key's state."""
        if not opens(func):
            return super().flat_map(func, output_type)
        _check_callable(func, "flat_map", "flat_map()")
        output_type = checked_type(output_type, "flat_map()")
        return self._keyed_call(KeyedFlatMap(func), "FlatMap", output_type)

    def filter(self, func: Callable[[Any], bool] | FilterFunction) -> DataStream:
        """As ``DataStream.filter``; a function that opens may declare the key's state."""
        if not opens(func):
            return super().filter(func)
        _check_callable(func, "filter", "filter()")
        return self._keyed_call(KeyedFilter(func), "Filter", self.get_type())

    def _keyed_call(
        self, fn: KeyedProcessFunction, name: str, output_type: TypeInformation | None
    ) -> DataStream:
        return self._then(
            TransformationKind.PROCESS,
            name,
            fn,
            key_selector=self._key_selector,
            output_type=output_type,
        )

    def process(self, func: KeyedProcessFunction, output_type: Any = None) -> DataStream:
        if not (hasattr(func, "process_element") and callable(func.process_element)):
            raise ConfigurationError(f"process() needs a KeyedProcessFunction, got {func!r}")
        return self._then(
            TransformationKind.PROCESS,
            type(func).__name__,
            func,
            key_selector=self._key_selector,
            key_type=self._key_type,
            output_type=checked_type(output_type, "process()"),
        )

    def union(self, *streams: DataStream) -> DataStream:
        return self._values().union(*streams)

    def _values(self) -> DataStream:
        """This stream's records after the key_by, as PyFlink's plan has them: an identity map
        of its own, so that a union reads them like any stream's."""
        values = DataStream.map(self, _identity, output_type=self.get_type())
        values._transformation.name = KEYED_STREAM_VALUES
        return values

    # --- windows ----------------------------------------------------------------------------

    def window(self, window_assigner: WindowAssigner) -> WindowedStream:
        return WindowedStream(self, window_assigner)

    def count_window(self, size: int, slide: int | None = None) -> WindowedStream:
        """Windows of ``size`` records per key; with ``slide``, one every ``slide`` records
        holding the last ``size`` (Flink's GlobalWindows with a count trigger)."""
        for what, n in (("size", size), ("slide", slide)):
            if n is not None and (isinstance(n, bool) or not isinstance(n, int) or n < 1):
                raise ConfigurationError(
                    f"count_window(): {what} must be a positive int, got {n!r}"
                )
        if not slide:
            trigger = PurgingTrigger.of(CountTrigger.of(size))
            return WindowedStream(self, GlobalWindows.create(), trigger=trigger)
        return WindowedStream(
            self, GlobalWindows.create(), trigger=CountTrigger.of(slide),
            evictor=CountEvictor.of(size),
        )  # fmt: skip

    # --- rolling aggregations ---------------------------------------------------------------

    def reduce(self, func: Any) -> DataStream:
        """The running reduction of each key: one output per record."""
        if not callable(getattr(func, "reduce", func)):
            raise ConfigurationError(f"reduce() needs a ReduceFunction or a function, got {func!r}")
        return self._rolling(RollingReduce(func), "Reduce")

    def sum(self, position_to_sum: int | str = 0) -> DataStream:
        return self._rolling(FieldAggregation("sum", position_to_sum), "Sum")

    def min(self, position_to_min: int | str = 0) -> DataStream:
        return self._rolling(FieldAggregation("min", position_to_min), "Min")

    def max(self, position_to_max: int | str = 0) -> DataStream:
        return self._rolling(FieldAggregation("max", position_to_max), "Max")

    def min_by(self, position_to_min_by: int | str = 0) -> DataStream:
        return self._rolling(FieldAggregation("min_by", position_to_min_by), "MinBy")

    def max_by(self, position_to_max_by: int | str = 0) -> DataStream:
        return self._rolling(FieldAggregation("max_by", position_to_max_by), "MaxBy")

    def _rolling(self, fn: KeyedProcessFunction, name: str) -> DataStream:
        return self._then(
            TransformationKind.PROCESS,
            name,
            fn,
            key_selector=self._key_selector,
            key_type=self._key_type,
            output_type=self.get_type(),  # a reduction keeps its input's type
        )


def keyed_stream(
    stream: DataStream, key_selector: Any, key_type: Any, reinterpreted: bool
) -> KeyedStream:
    """``stream`` keyed by ``key_selector``: partitioned by key group (``key_by``), or, where
    it is ``reinterpreted`` (``DataStreamUtils.reinterpret_as_keyed_stream``), forwarded as
    it is partitioned already."""
    what = "reinterpret_as_keyed_stream()" if reinterpreted else "key_by()"
    key_selector = getattr(key_selector, "get_key", key_selector)  # a KeySelector
    if not callable(key_selector):
        raise ConfigurationError(f"{what} needs a function, got {key_selector!r}")
    key_selector = hashable_keys(key_selector)  # a list is a key, as in PyFlink
    if reinterpreted:
        spec = PartitionerSpec(Partitioning.FORWARD, key_selector, reinterpreted=True)
    else:
        spec = PartitionerSpec(Partitioning.KEY_GROUPS, key_selector)
    name = "ReinterpretAsKeyed" if reinterpreted else "KeyBy"
    t = Transformation(
        TransformationKind.PARTITION, name, [stream.get_transformation()], partitioner=spec
    )
    return KeyedStream(stream._env, t, key_selector, checked_type(key_type, what))


def _all_in_one(_record: Any) -> int:
    return 0


# PyFlink's name of the map that gives a KeyedStream's records to a union
KEYED_STREAM_VALUES = "_keyed_stream_values_operator"


def _identity(record: Any) -> Any:
    return record


class DataStreamSink(DataStream):
    """Returned by ``sink_to``: only ``uid``, ``name`` and ``set_parallelism`` apply."""
