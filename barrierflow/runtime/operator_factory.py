"""Which operator class runs each kind of transformation. Performs no I/O."""

from __future__ import annotations

from barrierflow.common.typeinfo import TypeInformation
from barrierflow.declared_types.conversion import batch_converter, value_converter
from barrierflow.graph.transformation import TransformationKind
from barrierflow.runtime.async_wait_operator import AsyncWaitOperator
from barrierflow.runtime.broadcast_process import (
    BroadcastProcessOperator,
    KeyedBroadcastProcessOperator,
)
from barrierflow.runtime.co_process import CoProcessOperator, KeyedCoProcessOperator
from barrierflow.runtime.operators import (
    FilterOperator,
    FlatMapOperator,
    KeyedProcessOperator,
    MapOperator,
    Operator,
    OperatorSpec,
    ProcessOperator,
    TimestampsAndWatermarksOperator,
)
from barrierflow.runtime.operators.window_operator import WindowOperator
from barrierflow.runtime.sink_operator import SinkOperator
from barrierflow.runtime.source_operator import SourceOperator
from barrierflow.runtime.typed_output import TypedOutput

_OPERATORS: dict[TransformationKind, type[Operator]] = {
    TransformationKind.SOURCE: SourceOperator,
    TransformationKind.MAP: MapOperator,
    TransformationKind.FLAT_MAP: FlatMapOperator,
    TransformationKind.FILTER: FilterOperator,
    TransformationKind.SINK: SinkOperator,
    TransformationKind.TIMESTAMPS: TimestampsAndWatermarksOperator,
    TransformationKind.WINDOW: WindowOperator,
    TransformationKind.ASYNC_WAIT: AsyncWaitOperator,
}


def converted_type(spec: OperatorSpec) -> TypeInformation | None:
    """The declared type the operator's results are converted to (by ``TypedOutput``), or
    None: a source's records are of its type already (from_collection converted them)."""
    if spec.output_type is None or spec.kind is TransformationKind.SOURCE:
        return None
    return spec.output_type if value_converter(spec.output_type) is not None else None


# The process operators by kind: (not keyed, keyed)
_PROCESS: dict[TransformationKind, tuple[type[Operator], type[Operator]]] = {
    TransformationKind.PROCESS: (ProcessOperator, KeyedProcessOperator),
    TransformationKind.CO_PROCESS: (CoProcessOperator, KeyedCoProcessOperator),
    TransformationKind.BROADCAST_PROCESS: (
        BroadcastProcessOperator,
        KeyedBroadcastProcessOperator,
    ),
}


def create_operator(spec: OperatorSpec) -> Operator | TypedOutput:
    process = _PROCESS.get(spec.kind)
    if process is not None:
        op = process[spec.key_selector is not None](spec)
    else:
        op = _OPERATORS[spec.kind](spec)
    output_type = converted_type(spec)
    if output_type is None:
        return op
    convert = value_converter(output_type)
    assert convert is not None  # converted_type: a type whose values are converted
    return TypedOutput(op, convert, batch_converter(output_type))
