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
    SINK = "sink"
    TIMESTAMPS = "timestamps"  # assigns event timestamps and generates watermarks
    WINDOW = "window"
    PARTITION = "partition"  # virtual: sets the partitioner of the edge to the next operator
    UNION = "union"  # virtual: the next operator reads all inputs
    SIDE_OUTPUT = "side_output"  # virtual: the next operator reads the side output ``function``


class Partitioning(enum.Enum):
    FORWARD = "forward"
    REBALANCE = "rebalance"
    KEY_GROUPS = "key_groups"


@dataclass(frozen=True)
class PartitionerSpec:
    kind: Partitioning
    key_selector: Callable[[Any], Any] | None = None
    side_output: str | None = None  # the edge carries this side output of its producer


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
    key_selector: Callable[[Any], Any] | None = None
    partitioner: PartitionerSpec | None = None
    parallelism: int | None = None
    uid: str | None = None
    watermark_strategy: Any = None  # a source's: timestamps and watermarks right after it
    output_type: Any = None  # a declared TypeInformation (``output_type=``): results converted
    id: int = field(default_factory=lambda: next(_ids))

    @property
    def is_virtual(self) -> bool:
        return self.kind in (
            TransformationKind.PARTITION,
            TransformationKind.UNION,
            TransformationKind.SIDE_OUTPUT,
        )
