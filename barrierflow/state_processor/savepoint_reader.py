"""``SavepointReader``: the state of a savepoint or retained checkpoint, as Spark DataFrames
(Flink's State Processor API, in Python, on Spark).

The driver reads only the snapshot's metadata; each read is a Spark job with one task per range
of key groups (``read_plan.py``), which reads only those key groups' files, and of the
key-group format only their bytes (``state_reading.py``). A declared type gives a column its
Spark type; an untyped column's type is found in a sample of its values, which a first Spark
job reads (a few rows of the first task). DataFrames are lazy: each action reads the state
again (``.cache()`` keeps it).

**Threading:** the caller's (the Spark driver's). **I/O:** the snapshot's metadata; the state
through Spark jobs.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import TYPE_CHECKING, Any

from barrierflow.checkpoint import file_systems
from barrierflow.checkpoint.metadata import CheckpointMetadata, OperatorState
from barrierflow.checkpoint.storage import locate_snapshot
from barrierflow.common.typeinfo import TypeInformation, Types, checked_type
from barrierflow.errors import ConfigurationError
from barrierflow.state.declared_states import declared_states
from barrierflow.state.descriptors import MapStateDescriptor, StateDescriptor, StateKind
from barrierflow.state.operator_state import DistributionMode
from barrierflow.state.state_schema import parse_type, state_type_info
from barrierflow.state_processor import keyed_rows
from barrierflow.state_processor.functions import KeyedStateReaderFunction
from barrierflow.state_processor.read_plan import (
    ReadTask,
    decode_task,
    encode_task,
    plan_keyed_read,
    plan_operator_read,
)
from barrierflow.state_processor.spark_types import converter, infer_type, spark_type

if TYPE_CHECKING:  # Spark loads when a read runs
    from pyspark.sql import DataFrame, SparkSession

SAMPLE_ROWS = 100  # rows looked at to type an untyped column
Column = tuple[str, Any]  # (name, Spark type, or None: found in a sample)


class SavepointReader:
    """Reads one savepoint or retained checkpoint; ``SavepointReader.read(spark, path)``."""

    def __init__(
        self, spark: SparkSession, root_uri: str, metadata: CheckpointMetadata, parallelism: int
    ) -> None:
        self._spark = spark
        self._root = root_uri
        self.metadata = metadata
        self._parallelism = parallelism

    @staticmethod
    def read(
        spark: SparkSession, path: str, state_backend: Any = None, parallelism: int | None = None
    ) -> SavepointReader:
        """Opens the savepoint or retained checkpoint at ``path`` (its directory or its
        ``_metadata``), in either format, written by either backend: ``state_backend`` is
        accepted as Flink takes it, and not needed. ``parallelism``: the tasks of a keyed read
        (default: Spark's default parallelism)."""
        try:
            root, metadata = locate_snapshot(path)
        except Exception as e:
            raise ConfigurationError(f"cannot read state from {path}: {e}") from e
        tasks = parallelism or spark.sparkContext.defaultParallelism
        return SavepointReader(spark, root, metadata, max(1, tasks))

    # --- what is in it ------------------------------------------------------------------------

    def operator(self, uid: str) -> OperatorState:
        found = self.metadata.operator(uid)
        if found is None or not found.subtasks:
            having = sorted(op.uid for op in self.metadata.operators if op.subtasks)
            raise ConfigurationError(
                f"{self._what()} has no state of an operator with uid {uid!r}; it has state "
                f"of {having}"
            )
        return found

    def keyed_state_descriptors(self, uid: str) -> list[StateDescriptor]:
        """A descriptor of each keyed state of ``uid`` as the snapshot records it (its kind
        and declared type), barrierflow's own (timers, windows) left out."""
        kinds, types = _recorded(self.operator(uid))
        return [
            StateDescriptor(name, state_type_info(StateKind(kind), types.get(name)),
                            StateKind(kind))
            for name, kind in sorted(kinds.items())
            if not name.startswith("__")
        ]  # fmt: skip

    # --- keyed state ----------------------------------------------------------------------------

    def read_keyed_state(
        self,
        uid: str,
        function: KeyedStateReaderFunction | StateDescriptor | Iterable[StateDescriptor],
        key_type: TypeInformation | None = None,
        output_type: TypeInformation | None = None,
    ) -> DataFrame:
        """The keyed state of operator ``uid`` as a DataFrame.

        With state descriptors (one, or a list): a ``key`` column and one column per state,
        named after it (a list state's values as an array, a map state's as a map), a row per
        key that holds any of them. With a ``KeyedStateReaderFunction``: the rows it yields
        (typed by ``output_type``, a ``Types.ROW_NAMED``, or by a sample of them). ``key_type``
        types the key column where the job did not declare one (``key_by(f, key_type)``)."""
        op = self.operator(uid)
        checked_type(key_type, "read_keyed_state(key_type=)")
        checked_type(output_type, "read_keyed_state(output_type=)")
        kinds, types = _recorded(op)
        where = f"reading operator {uid!r} of {self._what()}"
        if isinstance(function, KeyedStateReaderFunction):
            self._check_declarations(op, function, kinds, types, where)
            rows: Any = keyed_rows.ReaderFunctionRows(function, uid, op.max_parallelism)
            tasks = plan_keyed_read(self._root, op, self._parallelism)
            return self._frame_of_rows(tasks, _keyed_producer(rows), output_type, where)
        descriptors = [function] if isinstance(function, StateDescriptor) else list(function)
        if not descriptors or not all(isinstance(d, StateDescriptor) for d in descriptors):
            raise ConfigurationError(
                "read_keyed_state() takes a KeyedStateReaderFunction or state descriptors "
                f"(ValueStateDescriptor, ...), not {function!r:.100}"
            )
        # Refused here, on the driver, what cannot be read as declared.
        keyed_rows.StateColumns(descriptors, where).open(kinds, types)
        rows = keyed_rows.StateColumns(descriptors, where)
        columns = [self._key_column(op, key_type)]
        columns += [(d.name, _state_column_type(d, types.get(d.name))) for d in descriptors]
        return self._keyed_frame(op, rows, columns, where)

    def read_window_contents(
        self, uid: str, contents_type: TypeInformation | None = None
    ) -> DataFrame:
        """The open windows of window operator ``uid``: a row per key and window, with the
        window (``window``, and ``window_start``, ``window_end`` for a time window) and its
        ``contents`` (the accumulator, or the elements where it keeps every element)."""
        from pyspark.sql import types as T

        op = self.operator(uid)
        contents = spark_type(checked_type(contents_type, "contents_type"), "contents")
        columns = [
            self._key_column(op, None),
            ("window", T.StringType()),
            ("window_start", T.LongType()),
            ("window_end", T.LongType()),
            ("contents", contents),
        ]
        where = f"window contents of operator {uid!r}"
        return self._keyed_frame(op, keyed_rows.WindowRows(), columns, where)

    def read_timers(self, uid: str) -> DataFrame:
        """The pending timers of operator ``uid``: key, ``time_domain`` ("event-time" or
        "processing-time"), ``timestamp`` and, for a window's timer, ``window_start`` and
        ``window_end``."""
        from pyspark.sql import types as T

        op = self.operator(uid)
        columns = [self._key_column(op, None), ("time_domain", T.StringType())]
        columns += [(n, T.LongType()) for n in ("timestamp", "window_start", "window_end")]
        return self._keyed_frame(op, keyed_rows.TimerRows(), columns, f"timers of {uid!r}")

    def _key_column(self, op: OperatorState, key_type: TypeInformation | None) -> Column:
        declared = key_type or (parse_type(op.key_type) if op.key_type else None)
        return "key", spark_type(declared, "key")

    def _keyed_frame(self, op: OperatorState, rows: Any, columns: list[Column], where: str):
        tasks = plan_keyed_read(self._root, op, self._parallelism)
        return self._frame(tasks, _keyed_producer(rows), columns, where)

    def _check_declarations(self, op, function, kinds, types, where) -> None:
        """Opens the reader function here too, to refuse on the driver what it declares in a
        way the snapshot's values cannot be read as."""
        declared = declared_states(function, op.uid, 1, op.max_parallelism)
        keyed_rows.StateColumns(list(declared.descriptors), where).open(kinds, types)

    # --- operator state -----------------------------------------------------------------------

    def read_list_state(
        self, uid: str, name: str, type_info: TypeInformation | None = None
    ) -> DataFrame:
        """Every entry of operator list state ``name`` of ``uid``, each subtask's, as a
        ``value`` column."""
        return self._operator_frame(uid, name, DistributionMode.SPLIT, type_info)

    def read_union_state(
        self, uid: str, name: str, type_info: TypeInformation | None = None
    ) -> DataFrame:
        """Every entry of operator union list state ``name`` of ``uid`` (every subtask's: each
        new subtask would restore them all), as a ``value`` column."""
        return self._operator_frame(uid, name, DistributionMode.UNION, type_info)

    def read_broadcast_state(
        self,
        uid: str,
        name: str | MapStateDescriptor,
        key_type: TypeInformation | None = None,
        value_type: TypeInformation | None = None,
    ) -> DataFrame:
        """Broadcast state ``name`` (or a ``MapStateDescriptor``, whose types type the
        columns) of ``uid``: ``key`` and ``value`` columns, from one subtask's copy (every
        subtask holds the same)."""
        if isinstance(name, MapStateDescriptor):
            key_type = key_type or name.type_info[0]
            value_type = value_type or name.type_info[1]
            name = name.name
        op = self.operator(uid)
        tasks = plan_operator_read(self._root, op)[:1]
        settings = file_systems.current_settings()

        def produce(data: bytes) -> Iterator[tuple]:
            from barrierflow.state_processor import state_reading

            for mode, copy in state_reading.operator_entries(decode_task(data), settings, name):
                if mode is DistributionMode.BROADCAST:
                    yield from state_reading.broadcast_entries(copy).items()
                    return

        columns = [("key", spark_type(key_type, "key")), ("value", spark_type(value_type, "value"))]
        return self._frame(tasks, produce, columns, f"broadcast state {name!r} of {uid!r}")

    def _operator_frame(
        self, uid: str, name: str, mode: DistributionMode, type_info: TypeInformation | None
    ) -> Any:
        op = self.operator(uid)
        settings = file_systems.current_settings()

        def produce(data: bytes) -> Iterator[tuple]:
            from barrierflow.state_processor import state_reading

            for found, entry in state_reading.operator_entries(decode_task(data), settings, name):
                if found is not mode:
                    raise ConfigurationError(
                        f"operator state {name!r} of {uid!r} is {found.value} list state, not "
                        f"{mode.value}; read it with the reader of its kind"
                    )
                yield (entry,)

        tasks = plan_operator_read(self._root, op)
        columns = [("value", spark_type(checked_type(type_info, "type_info"), "value"))]
        return self._frame(tasks, produce, columns, f"operator state {name!r} of {uid!r}")

    # --- DataFrames ---------------------------------------------------------------------------

    def _raw(self, tasks: list[ReadTask], produce: Callable[[bytes], Iterable[Any]]) -> Any:
        encoded = [encode_task(t) for t in tasks]
        return self._spark.sparkContext.parallelize(encoded, max(1, len(encoded))).flatMap(produce)

    def _frame(self, tasks: list[ReadTask], produce, columns: list[Column], what: str) -> Any:
        """A DataFrame of the rows ``produce`` makes of each task, its columns typed as given or
        by a sample."""
        from pyspark.sql import types as T

        raw = self._raw(tasks, produce)
        unknown = any(t is None for _, t in columns)
        if unknown:
            sample = raw.take(SAMPLE_ROWS)
            columns = [
                (n, infer_type((r[i] for r in sample), f"{what}, column {n!r}") if t is None else t)
                for i, (n, t) in enumerate(columns)
            ]
        schema = T.StructType([T.StructField(n, t, True) for n, t in columns])
        return self._dataframe(raw, schema, verify=unknown)

    def _frame_of_rows(self, tasks, produce, output_type: TypeInformation | None, what: str):
        """A DataFrame of whole rows (a reader function's), typed by ``output_type`` or by a
        sample."""
        from pyspark.sql import types as T

        raw = self._raw(tasks, produce)
        if output_type is not None:
            schema = spark_type(output_type, what)
            if not isinstance(schema, T.StructType):
                raise ConfigurationError(
                    f"{what}: output_type must be a row type (Types.ROW_NAMED), not {output_type}"
                )
            return self._dataframe(raw, schema, verify=False)
        sample = [_as_row(r) for r in raw.take(SAMPLE_ROWS)]
        schema = infer_type(sample, f"{what}, rows of the reader function")
        if isinstance(schema, T.NullType):
            schema = T.StructType([])
        return self._dataframe(raw.map(_as_row), schema, verify=True)

    def _dataframe(self, raw: Any, schema: Any, verify: bool) -> Any:
        convert = converter(schema)
        return self._spark.createDataFrame(raw.map(convert), schema, verifySchema=verify)

    def _what(self) -> str:
        kind = "savepoint" if self.metadata.is_savepoint else "checkpoint"
        return f"{kind} {self.metadata.checkpoint_id} at {self._root}"


def _recorded(op: OperatorState) -> tuple[dict[str, str], dict[str, str]]:
    kinds: dict[str, str] = {}
    types: dict[str, str] = {}
    for handle in (h for s in op.subtasks for h in s.keyed_state):
        kinds.update(handle.states)
        types.update(handle.types)
    return kinds, types


def _state_column_type(descriptor: StateDescriptor, recorded: str | None) -> Any:
    """The Spark type of a state's column: as ``descriptor`` declares it, else as the snapshot
    records it; None where neither declares it whole (then a sample tells)."""
    kind = descriptor.kind
    type_info = descriptor.type_info
    if kind is StateKind.MAP:
        if type_info == (None, None) and recorded is not None:
            type_info = state_type_info(kind, recorded)
        key, value = type_info
        if key is None or value is None:
            return None
        return spark_type(Types.MAP(key, value), descriptor.name)
    if type_info is None and recorded is not None:
        type_info = state_type_info(kind, recorded)
    if type_info is None:
        return None
    if kind is StateKind.LIST:
        type_info = Types.LIST(type_info)
    return spark_type(type_info, descriptor.name)


def _keyed_producer(rows: Any) -> Callable[[bytes], Iterator[Any]]:
    settings = file_systems.current_settings()

    def produce(data: bytes) -> Iterator[Any]:
        from barrierflow.state_processor.state_reading import read_keyed

        return read_keyed(decode_task(data), settings, rows)

    return produce


def _as_row(value: Any) -> Any:
    """A reader function's row: a dict becomes a Row of its keys (a struct, not a map)."""
    if isinstance(value, dict):
        from barrierflow.common.types import Row

        row = Row(*value.values())
        row.set_field_names([str(k) for k in value])
        return row
    return value
