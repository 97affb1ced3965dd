"""Which operator class runs each kind of transformation. Performs no I/O."""

from __future__ import annotations

from barrierflow.graph.transformation import TransformationKind
from barrierflow.runtime.broadcast_process import (
    BroadcastProcessOperator,
    KeyedBroadcastProcessOperator,
)
from barrierflow.runtime.operators import (
    FilterOperator,
    FlatMapOperator,
    KeyedProcessOperator,
    MapOperator,
    Operator,
    OperatorSpec,
    ProcessOperator,
    SinkOperator,
    SourceOperator,
    TimestampsAndWatermarksOperator,
)
from barrierflow.runtime.typed_output import TypedOutput
from barrierflow.runtime.window_operator import WindowOperator
from barrierflow.type_conversion import batch_converter, value_converter

_OPERATORS: dict[TransformationKind, type[Operator]] = {
    TransformationKind.SOURCE: SourceOperator,
    TransformationKind.MAP: MapOperator,
    TransformationKind.FLAT_MAP: FlatMapOperator,
    TransformationKind.FILTER: FilterOperator,
    TransformationKind.PROCESS: KeyedProcessOperator,
    TransformationKind.SINK: SinkOperator,
    TransformationKind.TIMESTAMPS: TimestampsAndWatermarksOperator,
    TransformationKind.WINDOW: WindowOperator,
}


def create_operator(spec: OperatorSpec) -> Operator | TypedOutput:
    if spec.kind is TransformationKind.PROCESS and spec.key_selector is None:
        op = ProcessOperator(spec)  # a ProcessFunction on a stream that is not keyed
    elif spec.kind is TransformationKind.BROADCAST_PROCESS:
        keyed = spec.key_selector is not None
        op = (KeyedBroadcastProcessOperator if keyed else BroadcastProcessOperator)(spec)
    else:
        op = _OPERATORS[spec.kind](spec)
    if spec.output_type is None or spec.kind is TransformationKind.SOURCE:
        return op  # a source's records are of its type (from_collection converted them)
    convert = value_converter(spec.output_type)
    if convert is None:
        return op
    return TypedOutput(op, convert, batch_converter(spec.output_type))
