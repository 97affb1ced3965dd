"""Which operator class runs each kind of transformation. Performs no I/O."""

from __future__ import annotations

from barrierflow.graph.transformation import TransformationKind
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
from barrierflow.runtime.window_operator import WindowOperator

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


def create_operator(spec: OperatorSpec) -> Operator:
    if spec.kind is TransformationKind.PROCESS and spec.key_selector is None:
        return ProcessOperator(spec)  # a ProcessFunction on a stream that is not keyed
    return _OPERATORS[spec.kind](spec)
