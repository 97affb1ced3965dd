"""Transformations: what each call of the DataStream API records, and how an edge partitions.

The API builds these; the graph translation reads them. Performs no I/O.
"""

from __future__ import annotations

import enum
import itertools
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any


class TransformationKind(enum.Enum):
    SOURCE = "source"
    MAP = "map"
    FLAT_MAP = "flat_map"
    FILTER = "filter"
    PROCESS = "process"
    CO_PROCESS = "co_process"  # connect(stream).map/flat_map/process(...): two inputs
    BROADCAST_PROCESS = "broadcast_process"  # connect(broadcast stream).process(...): two inputs
    SINK = "sink"
    TIMESTAMPS = "timestamps"  # assigns event timestamps and generates watermarks
    WINDOW = "window"
    ASYNC_WAIT = "async_wait"  # AsyncDataStream: an AsyncFunction's calls, their results later
    PARTITION = "partition"  # virtual: sets the partitioner of the edge to the next operator
    UNION = "union"  # virtual: the next operator reads all inputs
    SIDE_OUTPUT = "side_output"  # virtual: the next operator reads the side output ``function``

    @property
    def takes_two_inputs(self) -> bool:
        """Its operator reads two inputs, ``inputs[0]`` and ``inputs[1]``, each through its
        own edges (Flink's two-input operators)."""
        return self in _TWO_INPUTS

    @property
    def uid_prefix(self) -> str:
        """How an operator of this kind without a uid is named (with its position). A
        connect's operator was a process operator, reading its inputs tagged and unioned,
        before it had two inputs: it keeps that name, so its state restores."""
        return "process" if self is TransformationKind.CO_PROCESS else self.value


_TWO_INPUTS = frozenset({TransformationKind.CO_PROCESS, TransformationKind.BROADCAST_PROCESS})


class Partitioning(enum.Enum):
    FORWARD = "forward"  # subtask i to subtask i, chained where it can be
    REBALANCE = "rebalance"  # round robin over all consumers
    RESCALE = "rescale"  # round robin over a local share of the consumers
    SHUFFLE = "shuffle"  # a consumer drawn at random per record
    BROADCAST = "broadcast"  # every record to every consumer
    KEY_GROUPS = "key_groups"  # by the key's key group (key_by)
    CUSTOM = "custom"  # by the program's partitioner of the key (partition_custom)


class ChainingStrategy(enum.Enum):
    """Whether an operator joins its upstream operator's chain (one thread, no serialization
    between them) where the edge allows it."""

    ALWAYS = "always"
    HEAD = "head"  # start_new_chain(): begins a chain; its consumers may join it
    NEVER = "never"  # disable_chaining(): a chain of its own


@dataclass(frozen=True)
class PartitionerSpec:
    kind: Partitioning
    key_selector: Callable[[Any], Any] | None = None
    side_output: str | None = None  # the edge carries this side output of its producer
    # CUSTOM: ``partition(key, number of consumers)`` -> the consumer's index
    partition: Callable[[Any, int], int] | None = None
    explicit: bool = False  # forward() asked for: a change of parallelism is an error
    # FORWARD from reinterpret_as_keyed_stream: the records are partitioned as key groups
    # would partition them already, so the keyed operator chains to its input, and checks them
    reinterpreted: bool = False


_ids = itertools.count()


def new_id() -> int:
    """A node id no transformation has (for nodes the translation adds)."""
    return next(_ids)


@dataclass(eq=False)
class Transformation:
    kind: TransformationKind
    name: str
    inputs: list[Transformation] = field(default_factory=list)
    function: Any = None
    key_selector: Callable[[Any], Any] | None = None  # of the (first) input
    key_type: Any = None  # key_by's declared TypeInformation: recorded with the keyed state
    partitioner: PartitionerSpec | None = None
    parallelism: int | None = None
    uid: str | None = None
    watermark_strategy: Any = None  # a source's: timestamps and watermarks right after it
    output_type: Any = None  # a declared TypeInformation (``output_type=``): results converted
    chaining: ChainingStrategy = ChainingStrategy.ALWAYS
    slot_sharing_group: str | None = None  # recorded: every subtask of a job shares slots
    key_selector2: Callable[[Any], Any] | None = None  # a two-input operator's, of input 2
    # the side output (tag id) records the function fails on go to, instead of failing the job
    dead_letters: str | None = None
    # runs as one subtask whatever the parallelism (from_collection, to keep its order): a
    # rescale or the autoscaler leaves it so
    non_parallel: bool = False
    id: int = field(default_factory=lambda: next(_ids))

    @property
    def is_virtual(self) -> bool:
        return self.kind in (
            TransformationKind.PARTITION,
            TransformationKind.UNION,
            TransformationKind.SIDE_OUTPUT,
        )
