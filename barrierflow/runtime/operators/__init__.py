"""Internal: stream operators. No public names: user functions are
``barrierflow.datastream.functions``' (docs/public-api.md).

Stream operators by kind: the contract every operator keeps (``stream_operator.py``), the
stateless operators (``stateless.py``), where event time starts
(``timestamps_and_watermarks.py``), the keyed operators (``keyed.py``) and the window operator
with its two paths (``window_operator.py``, ``aligned_window_path.py``,
``general_window_path.py``).

The names below are re-exported so that the rest of the runtime imports operators from one
short path; modules of this package import each other by their own paths. The window operator
is imported from its module (``runtime/operator_factory.py`` alone makes one).
"""

from barrierflow.runtime.operators.keyed import KeyedOperator, KeyedProcessOperator
from barrierflow.runtime.operators.stateless import (
    FilterOperator,
    FlatMapOperator,
    MapOperator,
    ProcessOperator,
)
from barrierflow.runtime.operators.stream_operator import (
    Operator,
    OperatorContext,
    OperatorEventError,
    OperatorSnapshot,
    OperatorSpec,
    TwoInputOperator,
    UserFunctionError,
    restore_operator_state,
)
from barrierflow.runtime.operators.timestamps_and_watermarks import (
    TimestampsAndWatermarksOperator,
)

__all__ = [
    "FilterOperator",
    "FlatMapOperator",
    "KeyedOperator",
    "KeyedProcessOperator",
    "MapOperator",
    "Operator",
    "OperatorContext",
    "OperatorEventError",
    "OperatorSnapshot",
    "OperatorSpec",
    "ProcessOperator",
    "TimestampsAndWatermarksOperator",
    "TwoInputOperator",
    "UserFunctionError",
    "restore_operator_state",
]
